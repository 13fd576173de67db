/// The session's audio envelope for its timeline picture, in bounded memory: the loudest peak of every `blocksPerEntry`
/// blocks, at the first block's time. When `capacity` entries are held, neighbours merge pairwise (the louder peak, the
/// earlier time) and each entry covers twice as many blocks. 2^16 entries (1 MiB, allocated once) hold 11 minutes of
/// 10 ms blocks as they are and a 12-hour day at 0.64 s an entry: the per-block path never allocates, however long the
/// session (an array that grew instead took 5.8 MB an hour and reallocated as it went).
///
/// The picture draws one peak per pixel column, a few thousand columns at most, so merging never shows.
struct PeakEnvelope {
    private(set) var entries: [(timeNs: Int64, peak: Float)] = []
    let capacity: Int
    /// Blocks folded into one entry (doubles at each merge).
    private(set) var blocksPerEntry = 1
    private var open: (timeNs: Int64, peak: Float) = (0, 0)
    private var openBlocks = 0

    init(capacity: Int = 1 << 16) {
        precondition(capacity >= 2 && capacity % 2 == 0, "an even capacity of at least 2")
        self.capacity = capacity
        entries.reserveCapacity(capacity)
    }

    mutating func add(timeNs: Int64, peak: Float) {
        if openBlocks == 0 { open = (timeNs, peak) } else { open.peak = max(open.peak, peak) }
        openBlocks += 1
        guard openBlocks == blocksPerEntry else { return }
        if entries.count == capacity { mergePairs() }
        entries.append(open)
        openBlocks = 0
    }

    /// Halves the entries in place (capacity kept): each pair becomes one.
    private mutating func mergePairs() {
        let half = capacity / 2
        for i in 0..<half {
            entries[i] = (entries[2 * i].timeNs, max(entries[2 * i].peak, entries[2 * i + 1].peak))
        }
        entries.removeLast(half)
        blocksPerEntry *= 2
    }

    /// Every entry, the one still filling last.
    var all: [(Int64, Float)] {
        var out = entries.map { ($0.timeNs, $0.peak) }
        if openBlocks > 0 { out.append((open.timeNs, open.peak)) }
        return out
    }
}
