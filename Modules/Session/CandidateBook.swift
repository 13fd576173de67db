import Pipeline

/// A session's candidates and shots, as pure bookkeeping (the runner calls it under its lock; it takes none itself).
///
/// - Retention is bounded in candidates, not shots (seed 000 REQ-PRIV-6): past `capacity` the oldest candidate is
///   evicted, counted, and its audio window let go — unless a shot still waits to be minted with it.
/// - A candidate scoring at least `shotThreshold` is also a shot, and waits in `pending` until it is minted, oldest first.
struct CandidateBook: Sendable {
    let capacity: Int
    let shotThreshold: Double
    private(set) var retained: [DetectedImpact] = []
    private(set) var evicted = 0
    private(set) var shots: [DetectedImpact] = []
    private(set) var pending: [DetectedImpact] = []

    init(capacity: Int, shotThreshold: Double) {
        self.capacity = max(1, capacity)
        self.shotThreshold = shotThreshold
    }

    /// Every candidate seen, retained or evicted.
    var seen: Int { retained.count + evicted }

    /// Records a candidate. Returns whether it is a shot, and the id of a candidate evicted to make room whose audio
    /// nobody needs any more (nil when none was, or a pending shot still needs it).
    mutating func record(_ candidate: DetectedImpact) -> (isShot: Bool, audioNoLongerNeeded: UInt64?) {
        retained.append(candidate)
        var dropped: UInt64?
        if retained.count > capacity {
            let gone = retained.removeFirst()
            evicted += 1
            if !pending.contains(where: { $0.id == gone.id }) { dropped = gone.id }
        }
        let isShot = candidate.score >= shotThreshold
        if isShot {
            shots.append(candidate)
            pending.append(candidate)
        }
        return (isShot, dropped)
    }

    /// Whether the audio window of candidate `id` is still wanted (it is retained, or a shot waits for it).
    func needsAudio(_ id: UInt64) -> Bool {
        retained.contains { $0.id == id } || pending.contains { $0.id == id }
    }

    /// The oldest shot not yet minted.
    var nextShot: DetectedImpact? { pending.first }

    /// Takes the oldest shot not yet minted off the queue.
    mutating func takeNextShot() -> DetectedImpact? { pending.isEmpty ? nil : pending.removeFirst() }

    /// Adds a shot that was not this session's candidate (relayed from a bay-mate): a shot to mint, in t0 order among
    /// those waiting, never a candidate (retention is the detector's).
    mutating func addShot(_ shot: DetectedImpact) {
        shots.append(shot)
        pending.insert(shot, at: pending.firstIndex { $0.t0Ns > shot.t0Ns } ?? pending.endIndex)
    }

    /// Withdraws a shot not yet minted (a relayed shot the session heard itself after all); the shot, when it was
    /// waiting.
    @discardableResult
    mutating func withdraw(_ id: UInt64) -> DetectedImpact? {
        guard let i = pending.firstIndex(where: { $0.id == id }) else { return nil }
        shots.removeAll { $0.id == id }
        return pending.remove(at: i)
    }
}
