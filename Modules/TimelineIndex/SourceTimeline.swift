import Synchronization

/// Which stream an entry came from.
public struct SourceID: Hashable, Sendable, Comparable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(_ rawValue: UInt16) { self.rawValue = rawValue }
    public static func < (a: SourceID, b: SourceID) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "source \(rawValue)" }
}

/// What an entry records. Extensible: a struct, not an enum callers must switch over.
public struct EntryKind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    /// `reference` = fragment sequence; `value` = fragment duration, ns.
    public static let videoFragment = EntryKind(rawValue: 1)
    /// `reference` = frame index; `value` = fragment sequence holding it.
    public static let videoFrame = EntryKind(rawValue: 2)
    /// `reference` = index of the window's first sample; `value` = sample count.
    public static let audioWindow = EntryKind(rawValue: 3)
    /// `reference` = sample index in the IMU stream; `value` = packed rotation rate (see the IMU source).
    public static let imuSample = EntryKind(rawValue: 4)
    /// `reference` = interruption id; `value` = duration, ns (0 while open). `flags` bit 0 = resumed and verified.
    public static let interruption = EntryKind(rawValue: 5)
    /// `reference` = candidate id; `value` = onset sample index.
    public static let candidate = EntryKind(rawValue: 6)
    /// `reference` = candidate id that became the shot; `value` = clip id.
    public static let shot = EntryKind(rawValue: 7)
    /// `reference` = thermal level; `value` = millidegrees Celsius.
    public static let thermal = EntryKind(rawValue: 8)
    /// `reference` = first dropped frame index; `value` = frames dropped.
    public static let drop = EntryKind(rawValue: 9)

    public var description: String {
        switch rawValue {
        case 1: "video-fragment"
        case 2: "video-frame"
        case 3: "audio-window"
        case 4: "imu-sample"
        case 5: "interruption"
        case 6: "candidate"
        case 7: "shot"
        case 8: "thermal"
        case 9: "drop"
        default: "kind-\(rawValue)"
        }
    }
}

/// One fixed-size record on the timeline: when, from which source, what, and a reference to its payload.
/// Entries are not payloads: a video fragment entry names a fragment sequence, not its bytes.
public struct TimelineEntry: Sendable, Equatable, CustomStringConvertible {
    /// Nanoseconds on the capture clock (monotonic). Never microseconds.
    public var timeNs: Int64
    public var source: SourceID
    public var kind: EntryKind
    public var flags: UInt8
    /// The payload reference (kind-specific: a fragment sequence, a sample index, an id).
    public var reference: UInt64
    /// A kind-specific value (a duration, a count, an onset).
    public var value: Int64

    public init(timeNs: Int64, source: SourceID, kind: EntryKind, flags: UInt8 = 0, reference: UInt64, value: Int64 = 0) {
        self.timeNs = timeNs
        self.source = source
        self.kind = kind
        self.flags = flags
        self.reference = reference
        self.value = value
    }

    var tag: UInt64 { UInt64(source.rawValue) | UInt64(kind.rawValue) << 16 | UInt64(flags) << 24 }

    init(timeNs: Int64, tag: UInt64, reference: UInt64, value: Int64) {
        self.init(
            timeNs: timeNs, source: SourceID(UInt16(truncatingIfNeeded: tag)),
            kind: EntryKind(rawValue: UInt8(truncatingIfNeeded: tag >> 16)), flags: UInt8(truncatingIfNeeded: tag >> 24),
            reference: reference, value: value)
    }

    public var description: String { "\(timeNs) ns \(source) \(kind) ref=\(reference) value=\(value)" }
}

/// A power-of-two ring of timeline entries for one source: one producer, any number of readers.
///
/// Each slot is five 64-bit words: a sequence word, then time, tag, reference and value. The producer marks the
/// slot odd (`2p+1`), writes the four data words, then marks it `2p+2` with release ordering; a reader loads the
/// sequence (acquire), the data (relaxed), fences, and loads the sequence again: the read counts only when both loads
/// say `2p+2` for the very position it wanted. Data words are atomics, so a torn read is a detected retry, never a data
/// race. Appending takes no lock and allocates nothing.
public final class SourceTimeline: @unchecked Sendable {
    // @unchecked: `slots` is written only by the single producer (documented on `append`) and read through the
    // seqlock protocol above; every word is an Atomic, so concurrent access is well-defined.
    public let source: SourceID
    public let capacity: Int
    let mask: UInt64
    let slots: UnsafeMutablePointer<Atomic<UInt64>>
    /// Entries ever appended; the next position.
    let head = Atomic<UInt64>(0)
    let lastTime = Atomic<Int64>(Int64.min)
    let outOfOrder = Atomic<UInt64>(0)
    static let words = 5

    /// Position of the first entry ever appended. Positions count with wrapping arithmetic, so a timeline may start
    /// anywhere (a specification starts one just short of 2^64 to prove the wrap is harmless).
    let firstPosition: UInt64

    /// A ring of at least `minimumCapacity` entries (rounded up to a power of two).
    public convenience init(source: SourceID, minimumCapacity: Int) {
        self.init(source: source, minimumCapacity: minimumCapacity, firstPosition: 0)
    }

    init(source: SourceID, minimumCapacity: Int, firstPosition: UInt64) {
        precondition(minimumCapacity > 0)
        var c = 1
        while c < minimumCapacity { c <<= 1 }
        self.source = source
        self.capacity = c
        self.mask = UInt64(c - 1)
        self.firstPosition = firstPosition
        head.store(firstPosition, ordering: .relaxed)
        slots = .allocate(capacity: c * Self.words)
        // Mark every slot as holding no position: its sequence word can never equal 2p+2 for a live p.
        for i in 0..<(c * Self.words) { (slots + i).initialize(to: Atomic(i % Self.words == 0 ? 1 : 0)) }
    }

    deinit {
        slots.deinitialize(count: capacity * Self.words)
        slots.deallocate()
    }

    /// Appends an entry. Only the one producer of this source may call it. An entry older than the previous one is
    /// refused (returns false) and counted: readers rely on time order.
    @discardableResult
    @inline(__always)
    public func append(timeNs: Int64, kind: EntryKind, flags: UInt8 = 0, reference: UInt64, value: Int64 = 0) -> Bool {
        if timeNs < lastTime.load(ordering: .relaxed) {
            outOfOrder.wrappingAdd(1, ordering: .relaxed)
            return false
        }
        lastTime.store(timeNs, ordering: .relaxed)
        let p = head.load(ordering: .relaxed)
        let base = slots + Int(p & mask) * Self.words
        base[0].store(2 &* p &+ 1, ordering: .relaxed)
        atomicMemoryFence(ordering: .releasing)
        base[1].store(UInt64(bitPattern: timeNs), ordering: .relaxed)
        base[2].store(UInt64(source.rawValue) | UInt64(kind.rawValue) << 16 | UInt64(flags) << 24, ordering: .relaxed)
        base[3].store(reference, ordering: .relaxed)
        base[4].store(UInt64(bitPattern: value), ordering: .relaxed)
        base[0].store(2 &* p &+ 2, ordering: .releasing)
        head.store(p &+ 1, ordering: .releasing)
        return true
    }

    /// Appends an entry (its source must be this timeline's).
    @discardableResult
    public func append(_ e: TimelineEntry) -> Bool {
        precondition(e.source == source, "entry for \(e.source) appended to \(source)'s timeline")
        return append(timeNs: e.timeNs, kind: e.kind, flags: e.flags, reference: e.reference, value: e.value)
    }

    /// Entries ever appended.
    public var count: UInt64 { head.load(ordering: .acquiring) &- firstPosition }

    /// The next position to be written (wrapping).
    public var headPosition: UInt64 { head.load(ordering: .acquiring) }

    /// Appends refused because their time went backwards.
    public var outOfOrderCount: UInt64 { outOfOrder.load(ordering: .relaxed) }

    /// The entry at `position`, if it is still in the ring and was not torn by a concurrent overwrite.
    @inline(__always)
    public func read(position p: UInt64) -> TimelineEntry? {
        let base = slots + Int(p & mask) * Self.words
        let want = 2 &* p &+ 2
        guard base[0].load(ordering: .acquiring) == want else { return nil }
        let t = base[1].load(ordering: .relaxed)
        let tag = base[2].load(ordering: .relaxed)
        let r = base[3].load(ordering: .relaxed)
        let v = base[4].load(ordering: .relaxed)
        atomicMemoryFence(ordering: .acquiring)
        guard base[0].load(ordering: .relaxed) == want else { return nil }
        return TimelineEntry(timeNs: Int64(bitPattern: t), tag: tag, reference: r, value: Int64(bitPattern: v))
    }

    /// The positions currently readable, the last `capacity` appended: `count` positions from `first` (wrapping).
    public var retained: (first: UInt64, count: UInt64) {
        let h = head.load(ordering: .acquiring)
        let n = min(h &- firstPosition, UInt64(capacity))
        return (h &- n, n)
    }

    /// Appends to `out` every entry with `startNs <= timeNs <= endNs`, in time order, as a consistent copy.
    /// Entries overwritten while being read are skipped (they were outside the ring's window by then).
    public func collect(startNs: Int64, endNs: Int64, into out: inout [TimelineEntry]) {
        let (first, n) = retained
        // Binary search (over offsets from `first`, so positions may wrap) for the first entry with time >= startNs.
        var lo: UInt64 = 0
        var hi = n
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            guard let e = read(position: first &+ mid) else {
                lo = mid + 1  // overwritten: everything older is gone too
                continue
            }
            if e.timeNs < startNs { lo = mid + 1 } else { hi = mid }
        }
        var off = lo
        while off < n {
            defer { off += 1 }
            guard let e = read(position: first &+ off) else { continue }
            if e.timeNs > endNs { break }
            out.append(e)
        }
    }
}
