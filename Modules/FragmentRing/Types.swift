import Checksum

/// A fragment's 64-bit sequence number, compared with serial-number arithmetic (RFC 1982) so ordering survives
/// wrap-around: `a < b` when `b` is less than 2^63 steps after `a`. Live sequence numbers in a ring are always within a
/// few thousand of each other, far inside that bound.
public struct SequenceNumber: Hashable, Comparable, Sendable, CustomStringConvertible {
    public var rawValue: UInt64
    public init(_ rawValue: UInt64) { self.rawValue = rawValue }

    public static func < (a: SequenceNumber, b: SequenceNumber) -> Bool {
        Int64(bitPattern: a.rawValue &- b.rawValue) < 0
    }

    /// The number `n` steps later (wrapping).
    public func advanced(by n: UInt64) -> SequenceNumber { SequenceNumber(rawValue &+ n) }

    /// Signed steps from `self` to `other`.
    public func distance(to other: SequenceNumber) -> Int64 { Int64(bitPattern: other.rawValue &- rawValue) }

    /// Sixteen hex digits: fragment file names sort with it (within one wrap).
    public var hex: String { XXH3.hex(rawValue) }

    public var description: String { String(rawValue) }
}

/// What a fragment holds. Stored in each index record.
public struct FragmentCodec: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt16
    public init(rawValue: UInt16) { self.rawValue = rawValue }

    public static let opaque = FragmentCodec(rawValue: 0)
    public static let h264 = FragmentCodec(rawValue: 1)
    public static let hevc = FragmentCodec(rawValue: 2)
    /// NV12 frames compressed with libzstd, each fragment independent.
    public static let zstdNV12 = FragmentCodec(rawValue: 3)
    /// Motion JPEG as the camera sent it (every frame a keyframe), in NUT fragments.
    public static let mjpeg = FragmentCodec(rawValue: 4)

    public var description: String {
        switch rawValue {
        case 0: "opaque"
        case 1: "h264"
        case 2: "hevc"
        case 3: "zstd-nv12"
        case 4: "mjpeg"
        default: "codec-\(rawValue)"
        }
    }
}

/// One retained fragment: its identity, its span on the capture clock, and what is needed to verify its bytes.
public struct FragmentInfo: Sendable, Equatable {
    public var sequence: SequenceNumber
    /// The ring generation it was written in; a ``FragmentRing/reset()`` starts a new one.
    public var generation: UInt32
    /// First frame's capture time, nanoseconds on the capture clock.
    public var startNs: Int64
    /// End of the last frame (start of the next fragment), nanoseconds on the capture clock.
    public var endNs: Int64
    public var frameCount: UInt32
    public var startsWithKeyframe: Bool
    public var codec: FragmentCodec
    public var byteLength: Int64
    /// XXH3-64 of the fragment's bytes.
    public var checksum: UInt64

    public init(
        sequence: SequenceNumber, generation: UInt32, startNs: Int64, endNs: Int64, frameCount: UInt32,
        startsWithKeyframe: Bool, codec: FragmentCodec, byteLength: Int64, checksum: UInt64
    ) {
        self.sequence = sequence
        self.generation = generation
        self.startNs = startNs
        self.endNs = endNs
        self.frameCount = frameCount
        self.startsWithKeyframe = startsWithKeyframe
        self.codec = codec
        self.byteLength = byteLength
        self.checksum = checksum
    }

    /// The checksum as sixteen hex digits.
    public var checksumHex: String { XXH3.hex(checksum) }

    /// A handle a reader holds: valid only while this exact fragment is retained.
    public var handle: FragmentHandle { FragmentHandle(sequence: sequence, generation: generation) }
}

/// A reader's reference to one fragment, validated on every use by sequence and generation.
public struct FragmentHandle: Hashable, Sendable {
    public let sequence: SequenceNumber
    public let generation: UInt32
}

/// What the description of the metadata the writer gives when it publishes.
public struct FragmentTiming: Sendable, Equatable {
    public var startNs: Int64
    public var endNs: Int64
    public var frameCount: UInt32
    public var startsWithKeyframe: Bool
    public var codec: FragmentCodec

    public init(startNs: Int64, endNs: Int64, frameCount: UInt32, startsWithKeyframe: Bool, codec: FragmentCodec) {
        self.startNs = startNs
        self.endNs = endNs
        self.frameCount = frameCount
        self.startsWithKeyframe = startsWithKeyframe
        self.codec = codec
    }
}

/// A pin held on a run of fragments; they are not recycled until it is released.
public struct PinToken: Hashable, Sendable, CustomStringConvertible {
    public let id: UInt64
    public let first: SequenceNumber
    public let last: SequenceNumber

    /// A pin recorded elsewhere (a drain releasing what a session left pinned).
    public init(id: UInt64, first: SequenceNumber, last: SequenceNumber) {
        self.id = id
        self.first = first
        self.last = last
    }
    public var description: String { "pin \(id) on \(first)…\(last)" }
}

/// The result of a publish.
public enum PublishOutcome: Sendable, Equatable {
    /// Visible to readers, durable per the ring's policy; `recycled` lists the fragments it pushed out.
    case published(FragmentInfo, recycled: [SequenceNumber])
    /// The reservation's slot rolled away (or the ring was reset) while the writer held it; nothing changed.
    case noop(reason: String)
    /// Only pinned fragments remain and the policy refuses to evict them; the new fragment was discarded.
    case refused(reason: String)
}

/// A ring was misused, found damaged, or the disk refused.
public struct RingError: Error, Sendable, CustomStringConvertible {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        public let name: String
        public init(_ name: String) { self.name = name }
        public var description: String { name }

        public static let io = Code("io")
        public static let rolledAway = Code("rolled-away")
        public static let notRetained = Code("not-retained")
        public static let notYetWritten = Code("not-yet-written")
        public static let corrupt = Code("corrupt")
        public static let badDirectory = Code("bad-directory")
        public static let unknownPin = Code("unknown-pin")
    }

    public let code: Code
    public let message: String
    public let cause: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String { message }
}
