import Checksum
import Synchronization
import Syscall

/// Every source's timeline, merged onto one time axis on demand.
///
/// Each source has its own ``SourceTimeline`` with one producer; `snapshot(startNs:endNs:)` copies each source's
/// entries in the window and merges them by time (ties: lower SourceID first, then append order). Readers never
/// block producers.
public final class TimelineIndex: Sendable {
    private let sources = Guarded<[SourceTimeline]>([])
    private let names = Guarded<[SourceID: String]>([:])

    public init() {}

    /// Registers a source sized to hold `rateHz × windowSeconds` entries (rounded up to a power of two).
    /// Registration happens when the pipeline is built, not on the hot path.
    public func register(_ source: SourceID, name: String, rateHz: Double, windowSeconds: Double) -> SourceTimeline {
        register(source, name: name, minimumCapacity: max(16, Int((rateHz * windowSeconds).rounded(.up))))
    }

    public func register(_ source: SourceID, name: String, minimumCapacity: Int) -> SourceTimeline {
        let t = SourceTimeline(source: source, minimumCapacity: minimumCapacity)
        sources.withLock { list in
            precondition(!list.contains { $0.source == source }, "\(source) registered twice")
            list.append(t)
            list.sort { $0.source < $1.source }  // merge ties go to the lower SourceID
        }
        names.withLock { $0[source] = name }
        return t
    }

    public var timelines: [SourceTimeline] { sources.withLock { $0 } }

    /// A frozen copy of every entry in [startNs, endNs], merged across sources in time order.
    ///
    /// Each source's run is copied out (no lock on any producer), then adjacent runs are merged pairwise, ⌈log₂ k⌉
    /// passes ping-ponging between one scratch buffer and the result, arranged so the last pass lands in the result.
    public func snapshot(startNs: Int64, endNs: Int64) -> TimelineSnapshot {
        let list = sources.withLock { $0 }
        var room = [Int](repeating: 0, count: list.count)
        var total = 0
        for (i, t) in list.enumerated() {
            room[i] = t.estimate(startNs: startNs, endNs: endNs) + 64  // + what may be appended meanwhile
            total += room[i]
        }
        var passes = 0
        while (1 << passes) < list.count { passes += 1 }
        let entries = [TimelineEntry](unsafeUninitializedCapacity: total) { result, written in
            withUnsafeTemporaryAllocation(of: TimelineEntry.self, capacity: total) { scratch in
                let out = result.baseAddress!
                let tmp = scratch.baseAddress!
                // Collect where an even number of passes brings the data back to `out`.
                var from = passes % 2 == 0 ? out : tmp
                var to = passes % 2 == 0 ? tmp : out
                var bounds = [0]
                bounds.reserveCapacity(list.count + 1)
                for (i, t) in list.enumerated() {
                    bounds.append(
                        bounds.last!
                            + t.collect(startNs: startNs, endNs: endNs, into: from + bounds.last!, capacity: room[i]))
                }
                while bounds.count > 2 {
                    var next = [0]
                    var r = 0
                    while r + 2 < bounds.count {
                        Self.merge2(from, bounds[r], bounds[r + 1], bounds[r + 2], into: to)
                        next.append(bounds[r + 2])
                        r += 2
                    }
                    if r + 1 < bounds.count {  // an odd run out: carried across unchanged
                        (to + bounds[r]).update(from: from + bounds[r], count: bounds[r + 1] - bounds[r])
                        next.append(bounds[r + 1])
                    }
                    swap(&from, &to)
                    bounds = next
                }
                written = bounds.last!
            }
        }
        return TimelineSnapshot(startNs: startNs, endNs: endNs, entries: entries, sourceNames: names.withLock { $0 })
    }

    /// Merges src[lo..<mid] and src[mid..<hi] into dst[lo..<hi] by time; ties take the first run.
    @inline(__always)
    static func merge2(
        _ src: UnsafeMutablePointer<TimelineEntry>, _ lo: Int, _ mid: Int, _ hi: Int,
        into dst: UnsafeMutablePointer<TimelineEntry>
    ) {
        var i = lo
        var j = mid
        var o = lo
        while i < mid && j < hi {
            if src[j].timeNs < src[i].timeNs {
                (dst + o).initialize(to: src[j])
                j += 1
            } else {
                (dst + o).initialize(to: src[i])
                i += 1
            }
            o += 1
        }
        if i < mid { (dst + o).initialize(from: src + i, count: mid - i) }
        if j < hi { (dst + o).initialize(from: src + j, count: hi - j) }
    }
}

/// A frozen, ordered copy of the timeline over a window.
public struct TimelineSnapshot: Sendable, Equatable {
    public let startNs: Int64
    public let endNs: Int64
    public let entries: [TimelineEntry]
    public let sourceNames: [SourceID: String]

    public init(startNs: Int64, endNs: Int64, entries: [TimelineEntry], sourceNames: [SourceID: String]) {
        self.startNs = startNs
        self.endNs = endNs
        self.entries = entries
        self.sourceNames = sourceNames
    }

    public func entries(of kind: EntryKind) -> [TimelineEntry] { entries.filter { $0.kind == kind } }
}

// MARK: - Saved snapshots

/// A snapshot saved to disk (`index.bin` in a bundle), read back by `ppc-tool index inspect`.
///
/// ```
/// "PPCI" u32 version=1  i64 startNs  i64 endNs  u32 sourceCount  u32 entryCount
/// sourceCount × (u16 id, u16 nameLength, name UTF-8)
/// entryCount × (i64 timeNs, u64 tag, u64 reference, i64 value)      tag = source | kind<<16 | flags<<24
/// u64 XXH3-64 of everything before it
/// ```
extension TimelineSnapshot {
    static let magic: [UInt8] = Array("PPCI".utf8)

    public func encoded() -> [UInt8] {
        var out = Self.magic
        func put<T: FixedWidthInteger>(_ v: T) { withUnsafeBytes(of: v.littleEndian) { out += $0 } }
        put(UInt32(1))
        put(startNs)
        put(endNs)
        let named = sourceNames.sorted { $0.key < $1.key }
        put(UInt32(named.count))
        put(UInt32(entries.count))
        for (id, name) in named {
            let bytes = Array(name.utf8.prefix(Int(UInt16.max)))
            put(id.rawValue)
            put(UInt16(bytes.count))
            out += bytes
        }
        for e in entries {
            put(e.timeNs)
            put(e.tag)
            put(e.reference)
            put(e.value)
        }
        put(XXH3.hash(out))
        return out
    }

    /// Decodes a saved snapshot, naming what is wrong with a damaged one.
    public init(decoding bytes: [UInt8]) throws(SnapshotError) {
        var at = 0
        func need(_ n: Int, _ what: String) throws(SnapshotError) {
            if at + n > bytes.count { throw SnapshotError("truncated at byte \(at): expected \(what)") }
        }
        func get<T: FixedWidthInteger>(_: T.Type, _ what: String) throws(SnapshotError) -> T {
            try need(MemoryLayout<T>.size, what)
            let v = bytes.withUnsafeBytes { T(littleEndian: $0.loadUnaligned(fromByteOffset: at, as: T.self)) }
            at += MemoryLayout<T>.size
            return v
        }
        try need(4, "magic")
        guard Array(bytes[0..<4]) == Self.magic else {
            throw SnapshotError("not a timeline snapshot (magic is not PPCI)")
        }
        guard bytes.count >= 12 else { throw SnapshotError("truncated: \(bytes.count) bytes") }
        let body = bytes[0..<(bytes.count - 8)]
        let stored = bytes.withUnsafeBytes {
            UInt64(littleEndian: $0.loadUnaligned(fromByteOffset: bytes.count - 8, as: UInt64.self))
        }
        guard XXH3.hash(Array(body)) == stored else { throw SnapshotError("checksum mismatch: the file is damaged") }
        at = 4
        let version = try get(UInt32.self, "version")
        guard version == 1 else { throw SnapshotError("version \(version) is not 1") }
        let start = try get(Int64.self, "startNs")
        let end = try get(Int64.self, "endNs")
        let sourceCount = try get(UInt32.self, "source count")
        let entryCount = try get(UInt32.self, "entry count")
        var names: [SourceID: String] = [:]
        for _ in 0..<sourceCount {
            let id = try get(UInt16.self, "source id")
            let n = Int(try get(UInt16.self, "source name length"))
            try need(n, "source name")
            names[SourceID(id)] = String(decoding: bytes[at..<(at + n)], as: UTF8.self)
            at += n
        }
        try need(Int(entryCount) * 32 + 8, "\(entryCount) entries")
        var entries: [TimelineEntry] = []
        entries.reserveCapacity(Int(entryCount))
        for _ in 0..<entryCount {
            let t = try get(Int64.self, "time")
            let tag = try get(UInt64.self, "tag")
            let r = try get(UInt64.self, "reference")
            let v = try get(Int64.self, "value")
            entries.append(TimelineEntry(timeNs: t, tag: tag, reference: r, value: v))
        }
        self.init(startNs: start, endNs: end, entries: entries, sourceNames: names)
    }
}

public struct SnapshotError: Error, Sendable, CustomStringConvertible {
    public let message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
