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
///
/// Stored as four 64-bit words — the same four the ring holds — so copying one is four loads and four stores.
public struct TimelineEntry: Sendable, Equatable, CustomStringConvertible {
    /// Nanoseconds on the capture clock (monotonic). Never microseconds.
    public var timeNs: Int64
    /// source | kind << 16 | flags << 24.
    var tag: UInt64
    /// The payload reference (kind-specific: a fragment sequence, a sample index, an id).
    public var reference: UInt64
    /// A kind-specific value (a duration, a count, an onset).
    public var value: Int64

    public init(timeNs: Int64, source: SourceID, kind: EntryKind, flags: UInt8 = 0, reference: UInt64, value: Int64 = 0)
    {
        self.timeNs = timeNs
        self.tag = UInt64(source.rawValue) | UInt64(kind.rawValue) << 16 | UInt64(flags) << 24
        self.reference = reference
        self.value = value
    }

    @inline(__always)
    init(timeNs: Int64, tag: UInt64, reference: UInt64, value: Int64) {
        self.timeNs = timeNs
        self.tag = tag
        self.reference = reference
        self.value = value
    }

    public var source: SourceID { SourceID(UInt16(truncatingIfNeeded: tag)) }
    public var kind: EntryKind { EntryKind(rawValue: UInt8(truncatingIfNeeded: tag >> 16)) }
    public var flags: UInt8 { UInt8(truncatingIfNeeded: tag >> 24) }

    public var description: String { "\(timeNs) ns \(source) \(kind) ref=\(reference) value=\(value)" }
}

/// A power-of-two ring of timeline entries for one source: one producer, any number of readers.
///
/// Each slot is four 64-bit words — time, tag, reference, value — and `head` counts the positions ever written. The
/// producer, for position q: issues a release fence, writes the four words (relaxed), then stores `head = q + 1`
/// (release). A reader loads `head` (acquire), copies the positions it wants (relaxed loads), issues an acquire fence
/// and loads `head` again as h: the copy of position p counts only if `h − p < slots`. The producer rewrites p's slot
/// only while writing position `p + slots`, which it starts when `head == p + slots`; and any write the reader saw
/// implies `head` had already reached that write's position (the release fence orders the earlier `head` store before
/// the data writes). So a ring of `slots` slots reliably holds `slots − 1` entries: that is its ``capacity``.
/// This is a seqlock whose sequence is the ring's head: a torn read is detected and dropped, never returned. Every
/// word is an Atomic, so nothing races in the language's sense. Appending takes no lock and allocates nothing.
public final class SourceTimeline: @unchecked Sendable {
    // @unchecked: `slots` is written only by the single producer (documented on `append`) and read through the
    // protocol above; every word is an Atomic, so concurrent access is well-defined.
    public let source: SourceID
    /// Entries reliably retained: one less than the slots, since the slot being rewritten is not readable.
    public let capacity: Int
    /// Slots in the ring (a power of two).
    let slotCount: Int
    let mask: UInt64
    let slots: UnsafeMutablePointer<Atomic<UInt64>>
    /// The next position to write (wrapping); positions `< head` are published.
    let head: Atomic<UInt64>
    let lastTime = Atomic<Int64>(Int64.min)
    let outOfOrder = Atomic<UInt64>(0)
    /// Words per slot: time, tag, reference, value.
    static let words = 4

    /// Position of the first entry ever appended. Positions count with wrapping arithmetic, so a timeline may start
    /// anywhere (a specification starts one just short of 2^64 to prove the wrap is harmless).
    let firstPosition: UInt64

    /// A ring retaining at least `minimumCapacity` entries (slots rounded up to a power of two above it).
    public convenience init(source: SourceID, minimumCapacity: Int) {
        self.init(source: source, minimumCapacity: minimumCapacity, firstPosition: 0)
    }

    init(source: SourceID, minimumCapacity: Int, firstPosition: UInt64) {
        precondition(minimumCapacity > 0)
        var c = 2
        while c < minimumCapacity + 1 { c <<= 1 }
        self.source = source
        self.slotCount = c
        self.capacity = c - 1
        self.mask = UInt64(c - 1)
        self.firstPosition = firstPosition
        self.head = Atomic(firstPosition)
        slots = .allocate(capacity: c * 4)
        for i in 0..<(c * 4) { (slots + i).initialize(to: Atomic(0)) }
    }

    deinit {
        slots.deinitialize(count: slotCount * 4)
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
        let q = head.load(ordering: .relaxed)
        let slot = slots + Int(q & mask) * 4
        atomicMemoryFence(ordering: .releasing)
        slot[0].store(UInt64(bitPattern: timeNs), ordering: .relaxed)
        slot[1].store(UInt64(source.rawValue) | UInt64(kind.rawValue) << 16 | UInt64(flags) << 24, ordering: .relaxed)
        slot[2].store(reference, ordering: .relaxed)
        slot[3].store(UInt64(bitPattern: value), ordering: .relaxed)
        head.store(q &+ 1, ordering: .releasing)
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

    @inline(__always)
    func load(_ p: UInt64) -> TimelineEntry {
        let slot = slots + Int(p & mask) * 4
        return TimelineEntry(
            timeNs: Int64(bitPattern: slot[0].load(ordering: .relaxed)), tag: slot[1].load(ordering: .relaxed),
            reference: slot[2].load(ordering: .relaxed), value: Int64(bitPattern: slot[3].load(ordering: .relaxed)))
    }

    /// Whether a copy of position `p` made before now is still whole: the producer has not begun rewriting its slot.
    @inline(__always)
    func stillValid(_ p: UInt64) -> Bool {
        atomicMemoryFence(ordering: .acquiring)
        let h = head.load(ordering: .relaxed)
        return (h &- p) <= UInt64(capacity)  // h − p < slots
    }

    /// The entry at `position`, if it has been written and not yet overwritten; nil otherwise — never a torn entry and
    /// never the entry that replaced it.
    @inline(__always)
    public func read(position p: UInt64) -> TimelineEntry? {
        let h = head.load(ordering: .acquiring)
        let behind = h &- p  // 1 for the newest; > capacity when (being) overwritten; huge when p is in the future
        guard behind >= 1, behind <= UInt64(capacity) else { return nil }
        let e = load(p)
        return stillValid(p) ? e : nil
    }

    /// The positions currently readable, the last `capacity` appended: `count` positions from `first` (wrapping).
    public var retained: (first: UInt64, count: UInt64) {
        let h = head.load(ordering: .acquiring)
        let n = min(h &- firstPosition, UInt64(capacity))
        return (h &- n, n)
    }

    /// The offset (from `first`) of the first entry whose time is not below `bound` (`strict`: above `bound`).
    /// Entries overwritten during the search count as older than everything still retained.
    @inline(__always)
    func lowerOffset(first: UInt64, count n: UInt64, bound: Int64, strict: Bool) -> UInt64 {
        var lo: UInt64 = 0
        var hi = n
        while lo < hi {
            let mid = lo + (hi - lo) / 2
            guard let e = read(position: first &+ mid) else {
                lo = mid + 1  // overwritten: everything older is gone too
                continue
            }
            if e.timeNs < bound || (strict && e.timeNs == bound) { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    /// How many entries [startNs, endNs] holds now, for sizing a buffer before collecting.
    public func estimate(startNs: Int64, endNs: Int64) -> Int {
        let (first, n) = retained
        let lo = lowerOffset(first: first, count: n, bound: startNs, strict: false)
        let hi = lowerOffset(first: first, count: n, bound: endNs, strict: true)
        return hi > lo ? Int(hi - lo) : 0
    }

    /// Appends to `out` every entry with `startNs <= timeNs <= endNs`, in time order, as a consistent copy.
    /// Entries overwritten while being read are dropped (they had left the ring's window by then).
    public func collect(startNs: Int64, endNs: Int64, into out: inout [TimelineEntry]) {
        let room = estimate(startNs: startNs, endNs: endNs) + 64
        let filled = [TimelineEntry](unsafeUninitializedCapacity: room) { buffer, written in
            written = collect(startNs: startNs, endNs: endNs, into: buffer.baseAddress!, capacity: room)
        }
        out += filled
    }

    /// Writes up to `capacity` entries of [startNs, endNs] to `buffer`, in time order; returns how many.
    /// The hot path of ``TimelineIndex/snapshot(startNs:endNs:)``: a straight copy, then one validation of the whole
    /// run against `head`. No allocation, no lock.
    @inline(__always)
    func collect(startNs: Int64, endNs: Int64, into buffer: UnsafeMutablePointer<TimelineEntry>, capacity room: Int)
        -> Int
    {
        let (first, n) = retained
        let lo = lowerOffset(first: first, count: n, bound: startNs, strict: false)
        var off = lo
        var written = 0
        while off < n, written < room {
            let e = load(first &+ off)
            if e.timeNs > endNs { break }
            (buffer + written).initialize(to: e)
            written += 1
            off += 1
        }
        // Drop the prefix whose slots the producer may have begun rewriting while we copied.
        atomicMemoryFence(ordering: .acquiring)
        let h = head.load(ordering: .relaxed)
        let oldestSafe = h &- UInt64(capacity)  // whole iff h − p ≤ capacity, i.e. h − p < slots
        var drop = 0
        while drop < written, Int64(bitPattern: (first &+ lo &+ UInt64(drop)) &- oldestSafe) < 0 { drop += 1 }
        if drop > 0 {
            buffer.update(from: buffer + drop, count: written - drop)
            (buffer + written - drop).deinitialize(count: drop)
        }
        return written - drop
    }
}
