import FragmentRing
import Syscall
import TimelineIndex

/// Where a window's payload lives. Each backing defines its own opaque `Handle`; callers never see the ring's or the
/// bundle's internals through it.
///
/// Extracting a clip from the live ring and reading a bundle back are one problem with two backings (seed 000).
public protocol PayloadBacking: Sendable {
    associatedtype Handle: Hashable, Sendable

    /// Freezes [startNs, endNs]: the fragments covering it (the first on a keyframe at or before `startNs`) and the
    /// timeline entries inside it.
    func freeze(startNs: Int64, endNs: Int64) throws(PayloadError) -> SwingWindow<Self>
    /// The bytes of one fragment of a window, checked against its checksum.
    func bytes(of handle: Handle) throws(PayloadError) -> [UInt8]
    /// Puts a copy of one fragment at `destination` without passing its bytes through user space where possible.
    func extract(_ handle: Handle, to destination: String) throws(PayloadError) -> FileSystem.CloneMethod
    /// Lets a frozen window's fragments go (the ring may recycle them). A no-op for backings that hold nothing.
    func release(_ window: SwingWindow<Self>) throws(PayloadError)
}

/// A frozen, bounded time-range view: the fragments and timeline entries of [startNs, endNs] on the capture clock.
public struct SwingWindow<Backing: PayloadBacking>: Sendable {
    public struct Fragment: Sendable, Equatable {
        public let info: FragmentInfo
        public let handle: Backing.Handle
    }

    public let startNs: Int64
    public let endNs: Int64
    public let fragments: [Fragment]
    public let timeline: TimelineSnapshot
    /// Discontinuities among the fragments, reported rather than hidden.
    public let gaps: [RingWindow.Gap]
    public let backing: Backing
    /// Set when the backing holds the fragments for this window (a ring pin).
    public let pin: PinToken?

    public init(
        startNs: Int64, endNs: Int64, fragments: [Fragment], timeline: TimelineSnapshot, gaps: [RingWindow.Gap],
        backing: Backing, pin: PinToken?
    ) {
        self.startNs = startNs
        self.endNs = endNs
        self.fragments = fragments
        self.timeline = timeline
        self.gaps = gaps
        self.backing = backing
        self.pin = pin
    }

    public func bytes(of fragment: Fragment) throws(PayloadError) -> [UInt8] { try backing.bytes(of: fragment.handle) }

    /// Frames in the window's fragments.
    public var frameCount: Int { fragments.reduce(0) { $0 + Int($1.info.frameCount) } }
}

/// Reading a window failed: gone from the ring, not yet written, or a damaged bundle.
public struct PayloadError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        public static let notRetained = Code("not-retained")
        public static let notYetWritten = Code("not-yet-written")
        public static let rolledAway = Code("rolled-away")
        public static let badBundle = Code("bad-bundle")
        public static let io = Code("io")
    }

    public let code: Code
    public let message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    init(_ e: RingError) {
        let code: Code =
            switch e.code {
            case .notRetained: .notRetained
            case .notYetWritten: .notYetWritten
            case .rolledAway: .rolledAway
            default: .io
            }
        self.init(code, e.message)
    }

    public var description: String { message }
}

// MARK: - The live ring

/// The live backing: a FragmentRing and a TimelineIndex. Freezing a window pins its fragments until `release`.
public struct RingPayloadSource: PayloadBacking {
    /// Opaque outside this module: which fragment, in which generation of the ring.
    public struct Handle: Hashable, Sendable {
        let fragment: FragmentHandle
    }

    public let ring: FragmentRing
    public let index: TimelineIndex

    public init(ring: FragmentRing, index: TimelineIndex) {
        self.ring = ring
        self.index = index
    }

    public func freeze(startNs: Int64, endNs: Int64) throws(PayloadError) -> SwingWindow<RingPayloadSource> {
        // Pin, then confirm the pinned run is still the window: a fragment recycled between lookup and pin fails the
        // pin, and the lookup is retried once against the ring as it now is.
        var attempt = 0
        while true {
            attempt += 1
            let w: RingWindow
            do { w = try ring.window(startNs: startNs, endNs: endNs) } catch { throw PayloadError(error) }
            guard let first = w.fragments.first, let last = w.fragments.last else {
                throw PayloadError(.notYetWritten, "no fragments cover [\(startNs), \(endNs)] ns")
            }
            let pin: PinToken
            do {
                pin = try ring.pin(from: first.sequence, through: last.sequence)
            } catch  where error.code == .rolledAway && attempt < 2 {
                continue
            } catch {
                throw PayloadError(error)
            }
            let fragments = w.fragments.map {
                SwingWindow<RingPayloadSource>.Fragment(info: $0, handle: Handle(fragment: $0.handle))
            }
            return SwingWindow(
                startNs: startNs, endNs: endNs, fragments: fragments,
                timeline: index.snapshot(startNs: startNs, endNs: endNs), gaps: w.gaps, backing: self, pin: pin)
        }
    }

    public func bytes(of handle: Handle) throws(PayloadError) -> [UInt8] {
        do { return try ring.read(handle.fragment) } catch { throw PayloadError(error) }
    }

    public func extract(_ handle: Handle, to destination: String) throws(PayloadError) -> FileSystem.CloneMethod {
        do { return try ring.extract(handle.fragment, to: destination) } catch { throw PayloadError(error) }
    }

    public func release(_ window: SwingWindow<RingPayloadSource>) throws(PayloadError) {
        guard let pin = window.pin else { return }
        do { try ring.unpin(pin) } catch { throw PayloadError(error) }
    }
}
