import Synchronization

/// Where an encoder's fragment boundaries fall: on a grid of `fragmentNs` anchored at the first frame (and at each cut
/// since), decided by frame time, not frame count, so a dropped frame never shifts a boundary. Shared by every
/// `VideoEncoder`.
///
/// A cut asked for through ``FragmentCuts`` (a shot's post-roll end) opens a fragment at the first frame at or after
/// it, and the grid is counted from there on: the fragment before the cut is the one shorter than `fragmentNs`.
public struct FragmentGrid: Sendable {
    public let fragmentNs: Int64
    public let frameIntervalNs: Int64
    let cuts: FragmentCuts?
    /// The first frame's time: the encoder's presentation time base.
    var originNs: Int64?
    /// Where the grid's lines are counted from: the first frame, or the last cut.
    var anchorNs: Int64?
    var index: Int64 = -1
    public private(set) var lastFrameNs: Int64 = 0

    public init(fragmentNs: Int64, frameIntervalNs: Int64, cuts: FragmentCuts? = nil) {
        self.fragmentNs = fragmentNs
        self.frameIntervalNs = frameIntervalNs
        self.cuts = cuts
    }

    /// What a frame at `timeNs` does: whether it opens a fragment (a forced keyframe), and if so whether a previous
    /// fragment ends at it. Half a frame of tolerance absorbs timestamp jitter on the grid; a cut has none (its frame is
    /// the first at or after it, so the fragment before it reaches it).
    public mutating func place(_ timeNs: Int64) -> (opens: Bool, closesPrevious: Bool) {
        if originNs == nil { originNs = timeNs }
        let anchor = anchorNs ?? timeNs
        anchorNs = anchor
        let open = index >= 0
        let opens: Bool
        if let cuts, cuts.take(frameNs: timeNs, previousNs: open ? lastFrameNs : nil) {
            anchorNs = timeNs
            index = 0
            opens = true
        } else {
            let cell = (timeNs - anchor + frameIntervalNs / 2) / fragmentNs
            opens = cell > index
            if opens { index = cell }
        }
        lastFrameNs = timeNs
        return (opens, opens && open)
    }

    /// Nanoseconds since the first frame (an encoder's presentation time base).
    public func elapsed(_ timeNs: Int64) -> Int64 { timeNs - (originNs ?? timeNs) }

    /// Whether a fragment is open (frames have been placed since the last `reset`).
    public var hasOpenFragment: Bool { index >= 0 }

    /// After the last fragment is closed.
    public mutating func reset() { index = -1 }
}

/// Fragment boundaries a session asks for off the grid. A shot's clip can be minted only once the fragment holding its
/// post-roll's end is sealed, which on the grid alone is up to a fragment (0.5 s) after the post-roll was captured; a
/// cut there seals it with the post-roll's last frame.
///
/// Asked for from any thread, as early as a shot is known (a detector reading a file runs seconds ahead of the
/// picture). The encoder's thread looks per frame with one relaxed atomic load of the earliest cut — no lock, no
/// allocation; it takes the lock only on a frame a cut falls on, once a shot. At most `capacity` wait at once; past that
/// a cut is not kept, which costs only latency (its fragment then ends on the grid), never a frame.
public final class FragmentCuts: Sendable {
    public static let capacity = 256
    /// The cuts waiting, earliest first.
    private let waiting = Mutex<[Int64]>([])
    /// The earliest waiting cut, `.max` when none: what the encoder's thread reads per frame.
    private let next = Atomic<Int64>(.max)
    private let madeCount = Atomic<Int>(0)
    private let missedCount = Atomic<Int>(0)

    public init() {
        waiting.withLock { $0.reserveCapacity(Self.capacity) }  // never grown under the lock
    }

    /// Cuts made: fragments opened off the grid.
    public var made: Int { madeCount.load(ordering: .relaxed) }
    /// Cuts not made: asked for at or before a frame already encoded (too late), not kept, or still waiting when
    /// capture ended (``abandon()``).
    public var missed: Int { missedCount.load(ordering: .relaxed) }

    /// Asks for a fragment to open at the first frame at or after `atNs` (capture clock). False when it is not kept.
    @discardableResult
    public func request(atNs: Int64) -> Bool {
        let kept = waiting.withLock { cuts -> Bool in
            guard atNs != .max, atNs != .min, cuts.count < Self.capacity else { return false }
            cuts.insert(atNs, at: cuts.firstIndex { $0 > atNs } ?? cuts.endIndex)
            next.store(cuts[0], ordering: .relaxed)
            return true
        }
        if !kept { missedCount.add(1, ordering: .relaxed) }
        return kept
    }

    /// Withdraws a cut asked for at `atNs` and not yet made (a relayed shot this device then heard itself: its own
    /// shot asked for the cut that matters). Whether one was waiting.
    @discardableResult
    public func cancel(atNs: Int64) -> Bool {
        waiting.withLock { cuts -> Bool in
            guard let i = cuts.firstIndex(of: atNs) else { return false }
            cuts.remove(at: i)
            next.store(cuts.first ?? .max, ordering: .relaxed)
            return true
        }
    }

    /// Capture ended: the cuts still waiting will not be made; counted as missed. How many there were.
    @discardableResult
    public func abandon() -> Int {
        let left = waiting.withLock { cuts -> Int in
            let n = cuts.count
            cuts.removeAll(keepingCapacity: true)
            next.store(.max, ordering: .relaxed)
            return n
        }
        if left > 0 { missedCount.add(left, ordering: .relaxed) }
        return left
    }

    /// Whether the frame at `frameNs` opens a fragment: a cut waits in (`previousNs`, `frameNs`]. Cuts at or before
    /// `previousNs` (the frame before; nil for a first frame, which opens one anyway) are let go, counted as missed.
    func take(frameNs: Int64, previousNs: Int64?) -> Bool {
        guard next.load(ordering: .relaxed) <= frameNs else { return false }
        let (made, missed) = waiting.withLock { cuts -> (Bool, Int) in
            let due = cuts.firstIndex { $0 > frameNs } ?? cuts.endIndex
            var late = 0
            for i in 0..<due where previousNs.map({ cuts[i] <= $0 }) ?? true { late += 1 }
            cuts.removeFirst(due)
            next.store(cuts.first ?? .max, ordering: .relaxed)
            return (due > late, late)
        }
        if missed > 0 { missedCount.add(missed, ordering: .relaxed) }
        if made { madeCount.add(1, ordering: .relaxed) }
        return made
    }
}
