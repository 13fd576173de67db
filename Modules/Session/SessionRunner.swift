import Audio
import Capture
import Checksum
import Config
import Foundation
import FragmentRing
import PayloadSource
import Pipeline
import Policy
import Synchronization
import Syscall
import TimelineIndex

/// One capture session: every stage of a manifest, composed and run.
///
/// ```
/// video thread (raised priority):  VideoSource ─▶ VideoEncoder ─▶ FragmentRing ─┐   ─▶ TimelineIndex (fragments)
/// audio thread:  AudioSource ─▶ AudioHistory + ImpactDetecting ─candidates─▶ shots ─┤   ─▶ TimelineIndex (audio, candidates, shots)
/// imu thread:    IMUSource ─▶ TimelineIndex (IMU)                                  │
/// mint thread (lowered):  shot waits until the ring holds t0 + clipPost ─▶ SwingWindow (pinned) ─▶ clip.mp4,
///                         audio.wav, index.bin, meta.json ─▶ queued for delivery
/// delivery thread (lowered):  in mint order ─▶ sinks ─▶ confirmed by all ─▶ unpinned (else owed: pin kept, recorded)
/// ```
/// Per-source threads, so a slow stage never stalls another's source (seed 001); the mint thread waits on a condition
/// the video thread signals after each fragment, and never on a sink: a host that hangs holds up deliveries, not the
/// pinning of the next shot's window. Nothing here sleeps to synchronise.
public final class SessionRunner: @unchecked Sendable {
    // @unchecked: mutable state is either owned by one thread (documented per field) or behind `lock`.

    public struct Components {
        public var video: VideoSource
        public var audio: AudioSource?
        public var imu: IMUSource?
        public var encoder: VideoEncoder
        public var detector: ImpactDetecting?
        public var sinks: [ClipSink]
        public var config: Configuration

        public init(
            video: VideoSource, audio: AudioSource?, imu: IMUSource?, encoder: VideoEncoder, detector: ImpactDetecting?,
            sinks: [ClipSink], config: Configuration
        ) {
            self.video = video
            self.audio = audio
            self.imu = imu
            self.encoder = encoder
            self.detector = detector
            self.sinks = sinks
            self.config = config
        }
    }

    public struct Options: Sendable {
        public var context: SessionContext
        /// Which candidates become shots: those scoring at least this (the default rule; a host or the video may
        /// confirm later).
        public var shotThreshold: Double
        /// Stop capturing after this long on the capture clock (nil: at the end of the source).
        public var durationNs: Int64?
        /// Where Policy reads thermal zones (tests point it at a directory they write).
        public var thermalRoot: String
        /// Told every event as the session records it (on the recording stage's thread; must return at once).
        public var observe: (@Sendable (SessionEvent) -> Void)?

        public init(
            context: SessionContext, shotThreshold: Double = 0.5, durationNs: Int64? = nil,
            thermalRoot: String = "/sys/class/thermal", observe: (@Sendable (SessionEvent) -> Void)? = nil
        ) {
            self.context = context
            self.shotThreshold = shotThreshold
            self.durationNs = durationNs
            self.thermalRoot = thermalRoot
            self.observe = observe
        }
    }

    /// A live view for a progress line.
    public struct Progress: Sendable {
        public var state: SessionState
        public var framesEncoded: Int
        public var ringFragments: Int
        public var ringCapacity: Int
        public var candidates: Int
        public var shots: Int
        public var clips: Int
        /// Clips minted that a sink has not confirmed yet (waiting in the outbox for a host).
        public var owed: Int
        public var wallNs: Int64
        /// Interruptions of either source so far, and how many of them ended with capture resumed and verified.
        public var interruptions = 0
        public var resumed = 0
    }

    public struct MintedClip: Sendable {
        public var clipID: String
        public var path: String
        public var t0Ns: Int64
        /// What was minted, on the capture clock: from the first frame (the keyframe at or before t0 − clipPre) to the
        /// end of the last frame (t0 + clipPost, or sooner when capture ended first) — not t0 ± the configured roll.
        public var startNs: Int64
        public var endNs: Int64
        public var frames: Int
        public var bytes: Int64
        public var confirmedBy: [String]
        /// Capture-clock ns from t0 to the mint's start (its post-roll in the ring), to the bundle staged whole, and to
        /// every sink's confirmation: where the wait for a clip goes.
        public var timing: (mintStartNs: Int64, mintedNs: Int64, confirmedNs: Int64)?
    }

    /// A clip minted whole that not every sink confirmed: the sinks that hold it, and why the others did not.
    public struct OwedClip: Sendable {
        /// The clip as reported once every sink has it (`confirmedBy`: the sinks that hold it so far).
        public var minted: MintedClip
        public var refusedBy: [String]
        var shotID: UInt64
        /// The sinks (by index) still to confirm it.
        var waitingFor: Set<Int>

        public var clipID: String { minted.clipID }
        public var t0Ns: Int64 { minted.t0Ns }
        public var heldBy: [String] { minted.confirmedBy }
    }

    let components: Components
    let options: Options
    let ring: FragmentRing
    let index: TimelineIndex
    let videoTimeline: SourceTimeline
    let audioTimeline: SourceTimeline
    let imuTimeline: SourceTimeline
    /// Written by the audio thread only (candidates, shots, audio gaps): a timeline has one producer.
    let eventTimeline: SourceTimeline
    /// Written by the policy thread only (thermal level changes).
    let policyTimeline: SourceTimeline
    /// Thermal, storage and memory: what yields while the session runs.
    let policy: PolicyMonitor
    let lock = NSCondition()
    // Under `lock`:
    var book: CandidateBook
    /// Shots bay-mates heard, relayed by a host, merged with this session's own.
    var relay = ShotRelay()
    /// First looks minted and waiting for the delivery thread; how many went, how many did not and why (under `lock`).
    var looks: [FirstLook] = []
    var looksSent = 0, looksShed = 0
    var looksShedReasons: [String] = []
    var clips: [MintedClip] = []
    var mintFailures: [String] = []
    /// Shots whose mint found the disk full while capture ran, with that error: minted again when capture ends.
    var deferredForSpace: [(DetectedImpact, String)] = []
    /// Clips minted that a sink did not confirm (a host that is down: the clip waits in the outbox), in order (under
    /// `lock`).
    var owed: [OwedClip] = []
    /// Clips minted and waiting for their sinks, in mint order; the delivery thread takes them (under `lock`).
    var deliveries: [Delivery] = []
    /// The mint thread has minted all it will: the delivery thread ends once `deliveries` is empty (under `lock`).
    var mintingDone = false
    var newestFragmentEndNs: Int64 = .min
    /// Where this session's first keyframe fragment starts: no pre-roll reaches further back (under `lock`).
    var firstFragmentStartNs: Int64?
    var videoDone = false
    /// The running capture session, for its live drop count (under `lock`).
    var capture: CaptureSession?
    var audioDone = false
    var framesEncoded = 0
    var state = SessionState.warming
    var errors: [String] = []
    /// Every interruption the video source reported, latest state of each (by id).
    var interruptions: [SourceInterruption] = []
    /// Every interruption the audio source reported (a microphone that went away), latest state of each (by id).
    var audioInterruptions: [SourceInterruption] = []
    /// The audio thread's stage (nil without an audio source); what it alone measured is read after it ended.
    var audioStage: AudioStage?
    /// Shots minted although policy asked minting to wait, and why (under `lock`).
    var mintForced: Set<UInt64> = []
    var policyNotes: [String] = []
    // Owned by the audio thread:
    /// Stretches the audio source lost (its sample numbering jumped), in order; read under `lock` by the report.
    var audioGaps: [AudioGap] = []
    /// The audio source's queue: 2 s of 10 ms blocks (`AudioReadAhead`).
    static let audioReadAheadBlocks = 200
    let wallStart = monotonicNowNs()
    var captureStats: CaptureSession.Statistics?

    /// How a stop asked for while capture runs ends it.
    public enum StopMode: Sendable {
        /// Capture goes on until every shot heard so far — and any heard in `stopHearingMarginNs` more — has its
        /// post-roll in the ring, then ends: at most that margin + detect.clipPostNs after the request.
        case afterPostRoll
        /// Capture ends at the next frame and audio block; a clip still owed is cut at the end of capture, and says so.
        case now
    }

    /// How much longer than the request a graceful stop keeps listening, so an impact heard just before it is decided
    /// (the detector decides ~12 ms after an onset: a 2-block rise and a 10 ms decay; the rest covers the audio queue's
    /// usual lag). Assumed, not measured.
    public static let stopHearingMarginNs: Int64 = 250_000_000
    /// Where capture stops, on the capture clock (`Int64.max` until a stop is asked for): read per frame, per audio
    /// block and per IMU sample, without the lock.
    let stopAtNs = Atomic<Int64>(.max)
    /// IMU samples put on the timeline; those timed before the video's first frame (no clip can hold them); the first
    /// sample's time (`Int64.min` until one is read). Counted by the IMU thread, read by the report.
    let imuSamples = Atomic<Int>(0), imuSamplesBeforeVideo = Atomic<Int>(0), imuFirstSampleNs = Atomic<Int64>(.min)
    /// The time of the IMU sample being taken (every one before it is on the timeline: samples come in time order), and
    /// whether the IMU stream has ended: a mint waits until the first is past its window or the second is true.
    let imuPendingNs = Atomic<Int64>(.min), imuEnded = Atomic<Bool>(false)
    /// The latest a graceful stop may be moved to by shots heard after it was asked for (under `lock`; nil: no stop).
    var stopLimitNs: Int64?
    /// Each stop asked for, in words, for the report (under `lock`).
    var stopRequests: [String] = []

    /// The ring's headroom: four fragments at the operating bitrate, at least 16 MiB and at most 256 MiB — enough to
    /// carry capture across a disk another writer filled until recycling frees the oldest fragments' space.
    static func headroomBytes(_ c: Configuration) -> Int64 {
        let fragment = c[.ringFootprintBytes] / max(1, c[.fragmentCapacity])
        return min(256 << 20, max(16 << 20, 4 * fragment))
    }

    /// How a session's ring is kept, for the session and for whoever opens its ring after it (`transfer drain`): a clip
    /// owed to a host keeps its fragments pinned beside the ring's window, so the window never shrinks for it — a host
    /// that is down never costs a later shot its pre-roll.
    public static func ringConfiguration(capacity: Int, fileExtension: String, headroomBytes: Int64 = 0)
        -> FragmentRing.Configuration
    {
        .init(
            capacity: capacity, durability: .fsync, whenOnlyPinnedRemain: .keepPinnedBeside,
            fileExtension: fileExtension,
            headroomBytes: headroomBytes)
    }

    /// Pins a killed run left that no owed clip names, released when this session was prepared.
    public let releasedPins: [UInt64]

    /// Leftover staged bundles a killed run left, removed when this session was prepared.
    public let removedStaging: [String]

    /// Removes every entry of `staging`; returns their names.
    static func clearStaging(_ staging: String) -> [String] {
        let names = ((try? FileSystem.list(staging)) ?? []).sorted()
        for n in names { try? FileManager.default.removeItem(atPath: "\(staging)/\(n)") }
        return names
    }

    public static let videoSource = SourceID(1)
    public static let audioSource = SourceID(2)
    public static let imuSource = SourceID(3)
    public static let eventSource = SourceID(4)
    public static let policySource = SourceID(5)

    public init(_ components: Components, options: Options) throws {
        self.components = components
        self.options = options
        let c = components.config
        book = CandidateBook(capacity: Int(c[.maxRetainedCandidates]), shotThreshold: options.shotThreshold)
        let out = options.context.outputDirectory
        try FileSystem.makeDirectory(out)
        // A bundle left half-made in OUT/.staging by a run that was killed never counted (it was never delivered and
        // its fragments are still in the ring, or recycled): it goes now. The caller holds OUT's lock, so no other run
        // is minting into it.
        removedStaging = Self.clearStaging(ClipBundleWriter.stagingDirectory(out: out))
        ring = try FragmentRing(
            directory: "\(out)/ring",
            configuration: Self.ringConfiguration(
                capacity: Int(c[.fragmentCapacity]), fileExtension: components.encoder.fragmentExtension,
                headroomBytes: Self.headroomBytes(c)))
        // A new session is a new stream (its clock may even start again at zero): the ring starts a new generation, so
        // no window of this session can take a fragment of another. Fragments still pinned for clips owed to a host
        // stay; a pin no owed clip names (left by a run killed mid-mint) is let go first, so it never holds the ring.
        releasedPins = OwedPins.releaseUnowned(ring, out: out)
        try ring.reset()
        index = TimelineIndex()
        let window = c[.ringSeconds] + 2
        videoTimeline = index.register(Self.videoSource, name: "video", rateHz: 4, windowSeconds: window)
        audioTimeline = index.register(Self.audioSource, name: "audio", rateHz: 100, windowSeconds: window)
        // Sized for the configured rate, or the source's own when it is faster (a recorded IMU says what it holds).
        imuTimeline = index.register(
            Self.imuSource, name: "imu", rateHz: Double(max(c[.imuRateHz], Int64(components.imu?.rateHz ?? 0))) * 2,
            windowSeconds: window)
        eventTimeline = index.register(Self.eventSource, name: "detect", rateHz: 50, windowSeconds: window)
        policyTimeline = index.register(Self.policySource, name: "policy", rateHz: 4, windowSeconds: window)
        policy = PolicyMonitor(Self.policySettings(c, out: out, thermalRoot: options.thermalRoot))
    }

    /// What a session's Policy watches, from its configuration: the thermal zones under `thermalRoot` against the
    /// configured thresholds and ladder, `out`'s free space against the storage floor, and the memory budget
    /// (`ppc-tool policy check` asks the same before any session).
    public static func policySettings(_ c: Configuration, out: String, thermalRoot: String) -> PolicyMonitor.Settings {
        .init(
            sampleIntervalNs: Int64(1e9 / c[.sampleHz]),
            sensor: ThermalSensor(
                root: thermalRoot, fairCelsius: c[.fairCelsius], seriousCelsius: c[.seriousCelsius],
                criticalCelsius: c[.criticalCelsius]),
            historyWindow: Int(c[.thermalHistoryWindow]), persistentSerious: Int(c[.persistentSeriousReadings]),
            outputDirectory: out, storageFloorBytes: c[.storageFloorBytes], memoryBudgetBytes: c[.memoryBudgetBytes])
    }

    public var progress: Progress {
        lock.lock()
        defer { lock.unlock() }
        return Progress(
            state: state, framesEncoded: framesEncoded, ringFragments: ring.fragments.count,
            ringCapacity: ring.configuration.capacity,
            candidates: book.seen, shots: book.shots.count, clips: clips.count, owed: owed.count,
            wallNs: monotonicNowNs() - wallStart,
            interruptions: interruptions.count + audioInterruptions.count,
            resumed: (interruptions + audioInterruptions).filter { $0.endNs != nil && $0.verified }.count)
    }

    /// Asks capture to end before its source does (an operator's Ctrl-C, a caller's own deadline): the session then
    /// mints what it owes and reports as at the end of a source. Safe from any thread; `.now` after `.afterPostRoll`
    /// shortens the wait.
    public func requestStop(_ mode: StopMode, reason: String) {
        // A microphone that went away is not waited for: the stop would otherwise wait on it.
        defer { (components.audio as? DeviceWaiting)?.stopWaitingForDevice() }
        lock.lock()
        defer { lock.unlock() }
        let post = components.config[.clipPostNs]
        // Where capture is now: the newest frame read (none yet: stop before the first).
        let now = capture?.newestFrameNs.load(ordering: .relaxed) ?? .min
        switch mode {
        case .now:
            stopLimitNs = .min
            stopAtNs.store(.min, ordering: .relaxed)
            stopRequests.append("\(reason): capture stopped at once")
        case .afterPostRoll:
            guard stopLimitNs == nil else { return }  // already stopping
            guard now != .min else {
                stopLimitNs = .min
                stopAtNs.store(.min, ordering: .relaxed)
                stopRequests.append("\(reason): before the first frame, so capture stopped at once")
                return
            }
            let heard = now.addingReportingOverflow(Self.stopHearingMarginNs).partialValue
            let limit = heard.addingReportingOverflow(post).partialValue
            stopLimitNs = limit
            let owed = book.shots.map { $0.t0Ns + post }.max() ?? .min
            stopAtNs.store(max(heard, min(limit, owed)), ordering: .relaxed)
            stopRequests.append(
                String(
                    format: "%@: capture went on until the shots heard had their post-roll (at most %.2f s more)",
                    reason,
                    Double(limit - now) / 1e9))
        }
        lock.broadcast()
    }

    /// A shot a bay-mate heard (a host relayed it): minted like this session's own, unless this session heard the same
    /// swing (then one clip of it, not two). Called on the sink's thread.
    func relayed(_ r: RelayedShot) {
        lock.lock()
        defer { lock.unlock() }
        guard !videoDone else { return }  // capture is over: no frames to mint it from
        guard let shot = relay.arrive(r, own: book.shots) else { return }
        book.addShot(shot)
        extendStop(for: shot)
        lock.broadcast()
    }

    /// A shot heard while a graceful stop waits moves the stop to its post-roll's end, within the stop's limit. Under `lock`.
    func extendStop(for shot: DetectedImpact) {
        guard let limit = stopLimitNs, limit != .min else { return }
        let end = min(limit, shot.t0Ns + components.config[.clipPostNs])
        if end > stopAtNs.load(ordering: .relaxed) { stopAtNs.store(end, ordering: .relaxed) }
    }

    /// Runs every stage to the end; returns the session report.
    public func run() throws -> SessionReport {
        // Seed 000 REQ-OFF-2: below the storage floor the session does not arm (nothing unconfirmed is evicted to make room).
        if let why = policy.armRefusal() { throw SessionError(why) }
        // Thermal changes go on the policy's own timeline: the audio thread is the detect timeline's only producer.
        let events = policyTimeline
        policy.onThermal = { r in
            _ = events.append(
                timeNs: monotonicNowNs(), kind: .thermal, reference: UInt64(r.level.rawValue),
                value: Int64(r.hottestCelsius * 1000))
        }
        let policy = policy
        for case let y as TransferYielding in components.sinks { y.mustYield = { policy.stance >= .transferPaused } }
        for case let r as ShotRelaying in components.sinks { r.onRelayedShot = { [self] shot in relayed(shot) } }
        policy.start()
        defer { policy.stop() }
        var context = options.context
        context.hears = components.audio != nil
        for s in components.sinks { try s.open(context) }
        let group = DispatchGroup()
        func thread(_ name: String, _ body: @escaping @Sendable () -> Void) {
            group.enter()
            let t = Thread {
                body()
                group.leave()
            }
            t.name = name
            t.start()
        }
        thread("ppc.video") { VideoStage(runner: self).run() }
        if let source = components.audio {
            let stage = AudioStage(session: self, source: source)
            audioStage = stage
            thread("ppc.audio") { stage.run() }
        } else {
            audioDone = true
        }
        if components.imu != nil { thread("ppc.imu") { IMUStage(runner: self).run() } }
        thread("ppc.mint") { Minter(session: self).run() }
        if components.sinks.contains(where: { $0 is LookSending }) {
            thread("ppc.look") { FirstLookStage(runner: self).run() }
        }
        thread("ppc.deliver") { Deliverer(runner: self).run() }
        if components.sinks.contains(where: { $0 is DeviceStatusObserving }) {
            thread("ppc.status") {
                StatusReporter(runner: self).run(self.components.sinks.compactMap { $0 as? DeviceStatusObserving })
            }
        }
        group.wait()
        for s in components.sinks { try s.finish() }
        try? FileManager.default.removeItem(
            atPath: ClipBundleWriter.stagingDirectory(out: options.context.outputDirectory))
        try? FileManager.default.removeItem(atPath: FirstLookStage.looksDirectory(out: options.context.outputDirectory))
        return SessionReporter(runner: self).report()
    }

    func fail(_ stage: String, _ error: any Error) { record(.failed(stage: stage, error: "\(error)")) }

    /// Applies `event` to what the stages share, under `lock`; wakes every thread waiting on it; then tells the
    /// observer the event and any change of state it made. The one way a stage changes the session's shared state.
    func record(_ event: SessionEvent) {
        lock.lock()
        let before = state
        switch event {
        case .state(let s): state = s
        case .fragment(let startNs, let endNs, let frames, let startsWithKeyframe):
            newestFragmentEndNs = max(newestFragmentEndNs, endNs)
            if firstFragmentStartNs == nil && startsWithKeyframe { firstFragmentStartNs = startNs }
            framesEncoded += frames
            if case .interrupted = state {} else { state = .armed }
        case .interruption(let source, let i):
            switch source {
            case .video:
                if let k = interruptions.firstIndex(where: { $0.id == i.id }) {
                    interruptions[k] = i
                } else {
                    interruptions.append(i)
                }
                // Armed again only once the resumed stream is verified (seed 001), and the microphone is there too.
                state = i.endNs == nil ? .interrupted(reason: i.reason) : armedOrStillInterrupted
            case .audio:
                if let k = audioInterruptions.firstIndex(where: { $0.id == i.id }) {
                    audioInterruptions[k] = i
                } else {
                    audioInterruptions.append(i)
                }
                if !videoDone { state = i.endNs == nil ? .interrupted(reason: i.reason) : armedOrStillInterrupted }
            }
        case .audioGap(let gap): audioGaps.append(gap)
        case .candidate(let cand, _):
            // Retention is bounded in candidates, not shots (REQ-PRIV-6): the book evicts the oldest past its cap.
            let (isShot, drop) = book.record(cand)
            if let drop { audioWindows[drop] = nil }  // its audio goes with it, unless a shot still needs it
            // A bay-mate's relay of the same swing, still waiting, gives way to what this microphone heard.
            if isShot, let same = relay.heard(cand, waiting: book.pending) { book.withdraw(same) }
            if isShot {
                eventTimeline.append(timeNs: cand.t0Ns, kind: .shot, reference: cand.id, value: Int64(book.shots.count))
                extendStop(for: cand)
            }
        case .audioWindow, .minted: break  // applied by `keep(_:for:)` and the minter
        case .sourceEnded(.audio): audioDone = true
        case .sourceEnded(.video): videoDone = true
        case .failed(let stage, let error): errors.append("\(stage): \(error)")
        case .note(let note): policyNotes.append(note)
        }
        let after = state
        lock.broadcast()
        lock.unlock()
        guard let observe = options.observe else { return }
        observe(event)
        // A change of state the event made, said too (unless the event was the state itself).
        if case .state = event { return }
        if after != before { observe(.state(after)) }
    }

    /// Keeps a candidate's audio window for its mint — only while the candidate is retained (or a shot waits for it):
    /// retention stays bounded.
    func keep(_ window: AudioWindow, for id: UInt64) {
        lock.lock()
        if book.needsAudio(id) { audioWindows[id] = window }
        lock.broadcast()
        lock.unlock()
        options.observe?(.audioWindow(shot: id, samples: window.samples.count, missing: window.missing))
    }

    /// What the audio stage measured, for the report (after its thread ended; nothing without an audio source).
    var envelope: PeakEnvelope { audioStage?.envelope ?? PeakEnvelope() }
    var audioDriftMaxNs: Int64 { audioStage?.driftMaxNs ?? 0 }
    var audioBacklogDeepestBlocks: Int { audioStage?.backlogDeepestBlocks ?? 0 }

    // MARK: Video

    /// Armed, unless a source's interruption is still open: then interrupted by that one. Under `lock`.
    var armedOrStillInterrupted: SessionState {
        if let open = (interruptions + audioInterruptions).last(where: { $0.endNs == nil }) {
            return .interrupted(reason: open.reason)
        }
        return .armed
    }

    // MARK: Audio and detection

    /// A shot's audio window: detect.audioWindowNs starting detect.audioPreNs before the onset.
    struct AudioWindow {
        var samples: [Float]
        var rate: Int
        var firstSample: Int64
        /// Samples the history no longer (or not yet) held, zero-filled.
        var missing: Int
        /// Capture-clock time of the first sample: the source's fitted clock if it has one, else the nominal rate.
        var firstSampleNs: Int64
        /// The sample period on the capture clock, from the same fit (nominal without one), ns.
        var nsPerSample: Double
    }

    /// Audio windows of shots awaiting their mint, by candidate id (under `lock`).
    var audioWindows: [UInt64: AudioWindow] = [:]

}

public struct SessionError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ d: String) { description = d }
}
