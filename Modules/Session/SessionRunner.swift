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

    let components: Components
    /// What the components do beyond their kind, asked once (`StageRoles`).
    let roles: StageRoles
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

    /// How much longer than the request a graceful stop keeps listening, so an impact heard just before it is decided
    /// (the detector decides ~12 ms after an onset: a 2-block rise and a 10 ms decay; the rest covers the audio queue's
    /// usual lag). Assumed, not measured.
    public static let stopHearingMarginNs: Int64 = 250_000_000
    /// Where capture stops, and each stop asked for.
    let stop: StopControl
    /// IMU samples put on the timeline; those timed before the video's first frame (no clip can hold them); the first
    /// sample's time (`Int64.min` until one is read). Counted by the IMU thread, read by the report.
    let imuSamples = Atomic<Int>(0), imuSamplesBeforeVideo = Atomic<Int>(0), imuFirstSampleNs = Atomic<Int64>(.min)
    /// The time of the IMU sample being taken (every one before it is on the timeline: samples come in time order), and
    /// whether the IMU stream has ended: a mint waits until the first is past its window or the second is true.
    let imuPendingNs = Atomic<Int64>(.min), imuEnded = Atomic<Bool>(false)
    /// Where the encoder is asked to open a fragment off the grid: each shot's post-roll end. Made before capture starts,
    /// so a shot heard or relayed before the first frame has its cut too.
    let fragmentCuts = FragmentCuts()
    /// Each stop asked for, in words, for the report (under `lock`).
    var stopRequests: [String] { stop.requests }

    /// Pins a killed run left that no owed clip names, released when this session was prepared.
    public let releasedPins: [UInt64]

    /// Leftover staged bundles a killed run left, removed when this session was prepared.
    public let removedStaging: [String]

    public init(_ components: Components, options: Options) throws {
        self.components = components
        roles = StageRoles(components)
        self.options = options
        let c = components.config
        stop = StopControl(postNs: c[.clipPostNs])
        book = CandidateBook(capacity: Int(c[.maxRetainedCandidates]), shotThreshold: options.shotThreshold)
        let out = options.context.outputDirectory
        try FileSystem.makeDirectory(out)
        // A bundle left half-made in OUT/.staging by a run that was killed never counted (it was never delivered and
        // its fragments are still in the ring, or recycled): it goes now. The caller holds OUT's lock, so no other run
        // is minting into it.
        removedStaging = SessionLayout.clearStaging(ClipBundleWriter.stagingDirectory(out: out))
        ring = try FragmentRing(
            directory: "\(out)/ring",
            configuration: SessionLayout.ringConfiguration(
                capacity: Int(c[.fragmentCapacity]), fileExtension: components.encoder.fragmentExtension,
                headroomBytes: SessionLayout.headroomBytes(c)))
        // A new session is a new stream (its clock may even start again at zero): the ring starts a new generation, so
        // no window of this session can take a fragment of another. Fragments still pinned for clips owed to a host
        // stay; a pin no owed clip names (left by a run killed mid-mint) is let go first, so it never holds the ring.
        releasedPins = OwedPins.releaseUnowned(ring, out: out)
        try ring.reset()
        index = TimelineIndex()
        let window = c[.ringSeconds] + 2
        videoTimeline = index.register(SessionLayout.videoSource, name: "video", rateHz: 4, windowSeconds: window)
        audioTimeline = index.register(SessionLayout.audioSource, name: "audio", rateHz: 100, windowSeconds: window)
        // Sized for the configured rate, or the source's own when it is faster (a recorded IMU says what it holds).
        imuTimeline = index.register(
            SessionLayout.imuSource, name: "imu",
            rateHz: Double(max(c[.imuRateHz], Int64(components.imu?.rateHz ?? 0))) * 2,
            windowSeconds: window)
        eventTimeline = index.register(SessionLayout.eventSource, name: "detect", rateHz: 50, windowSeconds: window)
        policyTimeline = index.register(SessionLayout.policySource, name: "policy", rateHz: 4, windowSeconds: window)
        policy = PolicyMonitor(SessionLayout.policySettings(c, out: out, thermalRoot: options.thermalRoot))
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
        defer { roles.audioDeviceWaiting?.stopWaitingForDevice() }
        lock.lock()
        defer { lock.unlock() }
        // Where capture is now: the newest frame read (none yet: stop before the first).
        stop.request(
            mode, reason: reason, newestFrameNs: capture?.newestFrameNs.load(ordering: .relaxed) ?? .min,
            shotT0s: book.shots.map(\.t0Ns))
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
        shotAdded(shot)
        lock.broadcast()
    }

    /// A new shot, heard or relayed: a graceful stop that waits moves to its post-roll's end, within the stop's limit, and
    /// (with `capture.sealPostRollEarly`) the encoder is asked to open a fragment there, so the clip is minted once
    /// its post-roll is captured rather than when the grid next closes a fragment. Under `lock`.
    func shotAdded(_ shot: DetectedImpact) {
        stop.extend(for: shot.t0Ns)
        if components.config[.sealPostRollEarly], !videoDone { fragmentCuts.request(atNs: postRollEnd(of: shot)) }
    }

    /// Where `shot`'s post-roll ends on the capture clock.
    func postRollEnd(of shot: DetectedImpact) -> Int64 { shot.t0Ns &+ components.config[.clipPostNs] }

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
        for y in roles.transferYielding { y.mustYield = { policy.stance >= .transferPaused } }
        for r in roles.shotRelaying { r.onRelayedShot = { [self] shot in relayed(shot) } }
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
        if !roles.lookSenders.isEmpty {
            thread("ppc.look") { FirstLookStage(runner: self).run() }
        }
        thread("ppc.deliver") { Deliverer(runner: self).run() }
        if !roles.statusObservers.isEmpty {
            thread("ppc.status") {
                StatusReporter(runner: self).run(self.roles.statusObservers)
            }
        }
        group.wait()
        for s in components.sinks { try s.finish() }
        try? FileManager.default.removeItem(
            atPath: ClipBundleWriter.stagingDirectory(out: options.context.outputDirectory))
        try? FileManager.default.removeItem(atPath: FirstLookStage.looksDirectory(out: options.context.outputDirectory))
        return SessionReporter(runner: self).report()
    }

    // MARK: Video

    // MARK: Audio and detection

    /// Audio windows of shots awaiting their mint, by candidate id (under `lock`).
    var audioWindows: [UInt64: AudioWindow] = [:]

}

public struct SessionError: Error, Sendable, CustomStringConvertible {
    public let description: String
    init(_ d: String) { description = d }
}
