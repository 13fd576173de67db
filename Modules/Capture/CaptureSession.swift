import FragmentRing
import Pipeline
import Synchronization
import Syscall
import TimelineIndex

/// Drives one video source through one encoder into the FragmentRing, indexing each fragment on the timeline.
///
/// ```
/// VideoSource ─frame (into the encoder's own buffer)─▶ VideoEncoder ─bytes─▶ RingFragmentOutput ─▶ FragmentRing
///                                                                                     └─ fragment entry ─▶ TimelineIndex
/// ```
///
/// The loop runs on the calling thread, which it raises in priority first (what the OS granted is in the statistics).
/// Per frame it allocates nothing and takes no lock (but on the one frame a cut asked for falls on, `FragmentCuts`'
/// own, once a shot): the source fills the encoder's frame, the encoder's muxer writes
/// through to the ring reservation, and statistics go into preallocated storage.
public final class CaptureSession {
    public struct Options: Sendable {
        /// Drop a frame that arrives more than one frame interval late instead of encoding it (the self-test wants
        /// drops visible; a capture session keeps every frame, seed 000 §9.2).
        public var dropLateFrames: Bool
        /// Stop after this long on the capture clock (nil: at the end of the source).
        public var durationNs: Int64?
        /// Keep per-frame encode times for percentiles (at most this many).
        public var encodeTimeSamples: Int

        public init(dropLateFrames: Bool = false, durationNs: Int64? = nil, encodeTimeSamples: Int = 1 << 16) {
            self.dropLateFrames = dropLateFrames
            self.durationNs = durationNs
            self.encodeTimeSamples = encodeTimeSamples
        }
    }

    /// What a run did. Every count is a count, never an estimate.
    public struct Statistics: Sendable {
        public var framesCaptured = 0
        public var framesEncoded = 0
        /// Dropped because they arrived late (only with `dropLateFrames`).
        public var framesDroppedLate = 0
        /// Missing from the source's own sequence (gaps in `FrameInfo.index`).
        public var framesMissingAtSource = 0
        public var fragmentsPublished = 0
        public var fragmentsRefused = 0
        /// Fragments opened off the grid at a cut asked for (``FragmentCuts``), and cuts asked for too late to make.
        public var fragmentCutsMade = 0
        public var fragmentCutsMissed = 0
        public var firstFrameNs: Int64?
        public var lastFrameNs: Int64?
        /// Wall-clock duration of the run, ns (CLOCK_MONOTONIC).
        public var wallNs: Int64 = 0
        /// Encode time per frame, ns: mean, median, 95th percentile, max.
        public var encodeMeanNs: Double = 0
        public var encodeP50Ns: Int64 = 0
        public var encodeP95Ns: Int64 = 0
        public var encodeMaxNs: Int64 = 0
        /// The capture thread's scheduling priority as granted.
        public var capturePriority = ""
        /// Largest |frame time − (first frame time + index × nominal interval)|, ns: how far the stream's own
        /// timestamps stray from its declared rate on the capture clock.
        public var maxTimestampDeviationNs: Int64 = 0
        /// Every frame's time was later than the one before it.
        public var timestampsMonotonic = true

        /// Frames encoded per second of wall time.
        public var achievedFramesPerSecond: Double { wallNs > 0 ? Double(framesEncoded) * 1e9 / Double(wallNs) : 0 }
    }

    let source: VideoSource
    let encoder: VideoEncoder
    let output: RingFragmentOutput
    let fragmentNs: Int64

    /// Called on the capture thread after each fragment is published (to wake whoever waits on the ring).
    public var onPublish: ((FragmentInfo) -> Void)? {
        get { output.onPublish }
        set { output.onPublish = newValue }
    }

    /// Called on the capture thread when the source reports an interruption starting or ending (after the timeline has it).
    public var onInterruption: ((SourceInterruption) -> Void)?

    /// Called on the capture thread with each frame read, before it is encoded (a live preview); nil costs nothing.
    public var frameObserver: ((VideoFrameBuffer, FrameInfo) -> Void)?

    /// The statistics of the last run, also when it ended by the source failing (read them after `run` throws).
    public private(set) var lastStatistics: Statistics?
    /// Frames dropped so far (late, or missing from the source's sequence), readable from any thread while it runs.
    public let framesDroppedSoFar = Atomic<Int>(0)
    /// Frames encoded so far, readable from any thread while it runs (a live frame rate).
    public let framesEncodedSoFar = Atomic<Int>(0)

    /// Fragment boundaries asked for off the grid (each shot's post-roll end), from any thread: the encoder opens a
    /// fragment at the first frame at or after each.
    public let fragmentCuts: FragmentCuts

    /// Fragments published and refused so far (read by a progress display; updated once per fragment).
    public var fragmentCounts: (published: Int, refused: Int) { (output.published, output.refused) }

    /// `fragmentCuts`: where the encoder is asked to open fragments off the grid (a session makes it before capture
    /// starts, so a shot heard or relayed before the first frame still has its cut).
    public init(
        source: VideoSource, encoder: VideoEncoder, ring: FragmentRing, timeline: SourceTimeline?, fragmentNs: Int64,
        fragmentCuts: FragmentCuts = FragmentCuts()
    ) {
        self.source = source
        self.encoder = encoder
        self.fragmentCuts = fragmentCuts
        self.output = RingFragmentOutput(ring: ring, timeline: timeline, cuts: fragmentCuts)
        self.fragmentNs = fragmentNs
    }

    /// Capture-clock time of the newest frame read, ns (`Int64.min` before the first): where "now" is for a stop
    /// asked for from another thread.
    public let newestFrameNs = Atomic<Int64>(.min)
    /// Capture-clock time of the first frame, ns (`Int64.min` before it): where the video, and so every clip, begins.
    public let firstFrameNs = Atomic<Int64>(.min)

    /// Runs until the source ends, `options.durationNs` passes, or `stopsBefore` says a frame just read (its capture-clock
    /// time given) is past the end; that frame is not counted.
    public func run(_ options: Options = .init(), stopsBefore: (_ frameNs: Int64) -> Bool = { _ in false }) throws
        -> Statistics
    {
        var stats = Statistics()
        stats.capturePriority = ThreadPriority.raiseCurrent()
        try encoder.start(format: source.format, fragmentNs: fragmentNs, output: output)
        let interval = source.format.frameIntervalNs
        let compressed = source.format.pixelFormat.isCompressed
        var samples = [Int64](repeating: 0, count: max(1, options.encodeTimeSamples))
        var sampleCount = 0
        var encodeTotal: Int64 = 0
        var lastIndex: Int64?
        var firstFrameIndex: Int64?
        var previousTimeNs: Int64 = .min
        if let reporting = source as? InterruptionReporting {
            // Each interruption goes on the timeline twice: when noticed (duration 0, open) and when the stream is
            // verified again (its duration, flag bit 0 = resumed and verified).
            let timeline = output.timeline
            reporting.onInterruption = { [weak self] i in
                _ = timeline?.append(
                    timeNs: i.startNs, kind: .interruption, flags: i.verified ? 1 : 0, reference: i.id,
                    value: i.endNs.map { $0 - i.startNs } ?? 0)
                self?.onInterruption?(i)
            }
        }
        defer { (source as? InterruptionReporting)?.onInterruption = nil }
        let wallStart = monotonicNowNs()
        var sourceFailure: (any Error)?
        while true {
            let buffer = try encoder.nextFrameBuffer()
            let read: FrameInfo?
            do { read = try source.readFrame(into: buffer) } catch {
                // The source is gone for good (a camera that did not come back): keep what was captured — the open
                // fragment is flushed into the ring and the statistics kept — then say why the run ended.
                sourceFailure = error
                break
            }
            guard let info = read else { break }
            let first = stats.firstFrameNs ?? info.timeNs
            // A frame past the session's duration is not part of it: stop before counting it, so every frame counted
            // is either encoded or dropped.
            if let d = options.durationNs, info.timeNs - first >= d { break }
            if stopsBefore(info.timeNs) { break }
            newestFrameNs.store(info.timeNs, ordering: .relaxed)
            if stats.firstFrameNs == nil { firstFrameNs.store(first, ordering: .relaxed) }
            stats.firstFrameNs = first
            if stats.framesCaptured > 0, info.timeNs <= previousTimeNs { stats.timestampsMonotonic = false }
            previousTimeNs = info.timeNs
            stats.framesCaptured += 1
            if let last = lastIndex, info.index > last + 1 {
                stats.framesMissingAtSource += Int(info.index - last - 1)
                framesDroppedSoFar.add(Int(info.index - last - 1), ordering: .relaxed)
                _ = output.timeline?.append(
                    timeNs: info.timeNs, kind: .drop, reference: UInt64(last + 1), value: info.index - last - 1)
            }
            lastIndex = info.index
            let firstIndex = firstFrameIndex ?? info.index
            firstFrameIndex = firstIndex
            let nominal = first + (info.index - firstIndex) * 1_000_000_000 / Int64(source.format.framesPerSecond)
            stats.maxTimestampDeviationNs = max(stats.maxTimestampDeviationNs, abs(info.timeNs - nominal))
            if options.dropLateFrames {
                // Late: the pipeline is more than one frame behind the frame's place in time.
                let behind = (monotonicNowNs() - wallStart) - (info.timeNs - first)
                if behind > interval {
                    stats.framesDroppedLate += 1
                    framesDroppedSoFar.add(1, ordering: .relaxed)
                    continue
                }
            }
            if !compressed { frameObserver?(buffer, info) }  // a preview takes planes; a JPEG is not decoded for it
            let t0 = monotonicNowNs()
            try encoder.encodeFrame(info)
            let spent = monotonicNowNs() - t0
            encodeTotal += spent
            if sampleCount < samples.count { samples[sampleCount] = spent }
            sampleCount += 1
            stats.framesEncoded += 1
            framesEncodedSoFar.add(1, ordering: .relaxed)
            stats.lastFrameNs = info.timeNs
        }
        try encoder.finish()
        fragmentCuts.abandon()  // past the last frame: never made
        stats.wallNs = monotonicNowNs() - wallStart
        stats.fragmentsPublished = output.published
        stats.fragmentsRefused = output.refused
        stats.fragmentCutsMade = fragmentCuts.made
        stats.fragmentCutsMissed = fragmentCuts.missed
        if stats.framesEncoded > 0 {
            stats.encodeMeanNs = Double(encodeTotal) / Double(stats.framesEncoded)
            let kept = samples[0..<min(sampleCount, samples.count)].sorted()
            stats.encodeP50Ns = kept[kept.count / 2]
            stats.encodeP95Ns = kept[min(kept.count - 1, kept.count * 95 / 100)]
            stats.encodeMaxNs = kept.last!
        }
        lastStatistics = stats
        if let sourceFailure { throw sourceFailure }
        return stats
    }
}

/// The encoder's fragments into the ring: reserve on begin, append bytes, publish on end, and an entry on the
/// timeline for each published fragment. A refused publish (ring full of pinned clips) is counted, never hidden.
final class RingFragmentOutput: FragmentOutput {
    let ring: FragmentRing
    let timeline: SourceTimeline?
    var reservation: FragmentReservation?
    var published = 0
    var refused = 0
    var onPublish: ((FragmentInfo) -> Void)?
    let fragmentCuts: FragmentCuts?

    init(ring: FragmentRing, timeline: SourceTimeline?, cuts: FragmentCuts) {
        self.ring = ring
        self.timeline = timeline
        fragmentCuts = cuts
    }

    func beginFragment() throws {
        if reservation != nil { throw RingError(.io, "a fragment was begun before the previous one ended") }
        reservation = try ring.reserve()
    }

    func write(_ bytes: UnsafeRawBufferPointer) throws {
        guard reservation != nil else { throw RingError(.io, "bytes written outside a fragment") }
        try reservation!.write(bytes)
    }

    func endFragment(_ timing: FragmentTiming) throws {
        guard let r = reservation.take() else { throw RingError(.io, "a fragment was ended that was never begun") }
        let outcome = try ring.publish(r, timing)
        switch outcome {
        case .published(let f, _):
            published += 1
            timeline?.append(
                timeNs: f.startNs, kind: .videoFragment, reference: f.sequence.rawValue, value: f.endNs - f.startNs)
            onPublish?(f)
        case .refused, .noop:
            refused += 1
        }
    }
}
