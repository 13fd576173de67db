import Foundation
import FragmentRing

/// The stages a manifest composes, and what each takes and gives.
///
/// ```
/// video source ─frames─▶ encoder ─fragments─▶ FragmentRing ─┐
/// audio source ─samples─▶ Detect ─candidates─▶ TimelineIndex ─┴▶ PayloadSource (SwingWindow) ─▶ sinks
/// imu source ─samples─▶ TimelineIndex
/// ```
///
/// Every time is in nanoseconds on the **capture clock**: CLOCK_MONOTONIC of the capturing machine (or, for synthetic
/// and file sources, a session clock that starts at the source's `startNs`). Sources fill buffers their caller owns
/// and reuses, so the per-frame and per-sample paths allocate nothing.

/// Pixel layouts a source can hand over. NV12 travels to the encoder without conversion.
public enum PixelFormat: String, Sendable, CaseIterable {
    /// 8-bit Y plane, then interleaved Cb/Cr at half resolution both ways (4:2:0).
    case nv12
    /// 8-bit packed 4:2:2 Y0 Cb Y1 Cr.
    case yuyv
    /// Motion JPEG: each frame a whole JPEG image as the camera (or file) gave it, passed through, never decoded.
    case mjpeg

    /// Whether frames arrive already compressed (a byte run of varying length, not planes).
    public var isCompressed: Bool { self == .mjpeg }

    /// Bytes of one frame of `width`×`height`; for a compressed format, the most one frame may take (a JPEG larger than
    /// the 4:2:2 picture it codes, plus 64 KiB of headers, is refused as damaged).
    public func frameBytes(width: Int, height: Int) -> Int {
        switch self {
        case .nv12: width * height + 2 * ((width + 1) / 2) * ((height + 1) / 2)
        case .yuyv: width * height * 2
        case .mjpeg: width * height * 2 + 65_536
        }
    }
}

/// A video stream's fixed format: one format for the life of a session.
public struct VideoFormat: Sendable, Equatable, CustomStringConvertible {
    public let width: Int
    public let height: Int
    public let framesPerSecond: Int
    public let pixelFormat: PixelFormat

    public init(width: Int, height: Int, framesPerSecond: Int, pixelFormat: PixelFormat = .nv12) {
        self.width = width
        self.height = height
        self.framesPerSecond = framesPerSecond
        self.pixelFormat = pixelFormat
    }

    public var frameBytes: Int { pixelFormat.frameBytes(width: width, height: height) }
    /// Nominal frame interval in nanoseconds (rounded).
    public var frameIntervalNs: Int64 { (1_000_000_000 + Int64(framesPerSecond) / 2) / Int64(framesPerSecond) }
    public var description: String { "\(width)x\(height)@\(framesPerSecond) \(pixelFormat.rawValue)" }
}

/// What a video source says of one frame it wrote.
public struct FrameInfo: Sendable, Equatable {
    /// The source's frame sequence number (gaps mean the source dropped frames).
    public var index: Int64
    /// Capture-clock time of the frame, nanoseconds.
    public var timeNs: Int64
    /// For a compressed format, the bytes of the frame written at the buffer's start; 0 for planes.
    public var byteCount: Int

    public init(index: Int64, timeNs: Int64, byteCount: Int = 0) {
        self.index = index
        self.timeNs = timeNs
        self.byteCount = byteCount
    }
}

/// Where a source writes one NV12 frame: a luma plane and an interleaved chroma plane, each with its row stride.
/// The memory belongs to the caller (an encoder's frame pool, say) and is reused; a source never allocates it.
public struct VideoFrameBuffer {
    public var luma: UnsafeMutablePointer<UInt8>
    public var lumaStride: Int
    public var chroma: UnsafeMutablePointer<UInt8>
    public var chromaStride: Int

    public init(
        luma: UnsafeMutablePointer<UInt8>, lumaStride: Int, chroma: UnsafeMutablePointer<UInt8>, chromaStride: Int
    ) {
        self.luma = luma
        self.lumaStride = lumaStride
        self.chroma = chroma
        self.chromaStride = chromaStride
    }

    /// Memory for one compressed frame (``PixelFormat/isCompressed``): `capacity` bytes at `base`; the source writes
    /// the frame's bytes there and says how many in ``FrameInfo/byteCount``.
    public static func compressed(_ base: UnsafeMutableRawPointer, capacity: Int) -> VideoFrameBuffer {
        let p = base.assumingMemoryBound(to: UInt8.self)
        return VideoFrameBuffer(luma: p, lumaStride: capacity, chroma: p, chromaStride: 0)
    }

    /// For a compressed frame's buffer: where its bytes go, and how many fit.
    public var bytes: UnsafeMutableRawBufferPointer { UnsafeMutableRawBufferPointer(start: luma, count: lumaStride) }

    /// One contiguous NV12 buffer (Y rows of `width` bytes, then UV rows), e.g. a V4L2 buffer or a test's array.
    public init(contiguous base: UnsafeMutableRawPointer, width: Int, height: Int) {
        let y = base.assumingMemoryBound(to: UInt8.self)
        self.init(luma: y, lumaStride: width, chroma: y + width * height, chromaStride: width)
    }
}

/// Gives frames. Takes nothing. The caller owns the frame memory and reuses it. A source whose format is compressed
/// writes each frame's bytes into ``VideoFrameBuffer/bytes`` and their count into ``FrameInfo/byteCount``.
public protocol VideoSource: AnyObject {
    var format: VideoFormat { get }
    /// Writes the next frame into `frame`; nil at the end of the stream.
    func readFrame(into frame: VideoFrameBuffer) throws -> FrameInfo?
}

/// A stretch in which a source gave no frames because its device was lost or stalled, and whether it came back
/// verified (frames arriving, format unchanged) before the session called itself armed again (seed 001).
public struct SourceInterruption: Sendable, Equatable {
    public var id: UInt64
    /// Capture-clock time the loss was noticed, ns.
    public var startNs: Int64
    /// Capture-clock time the stream was verified again, ns; nil while the interruption is open.
    public var endNs: Int64?
    /// What happened, in a sentence a person can read (e.g. "device lost (ENODEV)").
    public var reason: String
    /// Frames arrived again, with the session's format, after the resume.
    public var verified: Bool

    public init(id: UInt64, startNs: Int64, endNs: Int64? = nil, reason: String, verified: Bool = false) {
        self.id = id
        self.startNs = startNs
        self.endNs = endNs
        self.reason = reason
        self.verified = verified
    }
}

/// A source that can say what it is in words a report carries (a camera: its device, mode, why that mode, which
/// instant its timestamps mark, what warm locked).
public protocol SourceDetailing: AnyObject {
    var details: [String: String] { get }
}

/// A source that can lose its device and recover: it says so as it happens, on the thread that reads from it.
public protocol InterruptionReporting: AnyObject {
    var onInterruption: ((SourceInterruption) -> Void)? { get set }
}

/// A source that waits for a device that went away to come back: told when the session no longer needs it (capture
/// ended), it stops waiting and its stream ends. Safe from any thread.
public protocol DeviceWaiting: AnyObject {
    func stopWaitingForDevice()
}

/// Takes encoded fragments, byte by byte, as an encoder produces them (the capture session puts them in the ring).
public protocol FragmentOutput: AnyObject {
    func beginFragment() throws
    func write(_ bytes: UnsafeRawBufferPointer) throws
    /// The fragment is whole: its span on the capture clock (first frame's time; the next fragment's first frame time,
    /// or for the last, the last frame's time plus one interval), its frames and its codec — the very record the ring
    /// commits (one idea, one type).
    func endFragment(_ timing: FragmentTiming) throws
    /// Boundaries asked for off the grid (a capture session's: each shot's post-roll end), for the encoder's
    /// ``FragmentGrid``; nil: the grid alone.
    var fragmentCuts: FragmentCuts? { get }
}

extension FragmentOutput {
    public var fragmentCuts: FragmentCuts? { nil }
}

/// Takes frames, gives keyframe-aligned fragments to a ``FragmentOutput``.
public protocol VideoEncoder: AnyObject {
    /// Opens the encode session for `format`; fragments of `fragmentNs` (each starting on a keyframe) go to `output`.
    /// One encode session per armed pipeline (seed 000).
    func start(format: VideoFormat, fragmentNs: Int64, output: FragmentOutput) throws
    /// The frame memory to fill next: the encoder's own, so the frame reaches the codec without a copy.
    func nextFrameBuffer() throws -> VideoFrameBuffer
    /// Encodes the frame last returned by `nextFrameBuffer()`, captured as `info` says.
    func encodeFrame(_ info: FrameInfo) throws
    /// Flushes the encoder and closes the last fragment.
    func finish() throws
    /// Container file extension of the fragments (`ts`, `zst`).
    var fragmentExtension: String { get }
}

/// An encoder that refuses frames it cannot store as they are (a torn JPEG from a camera): it counts them, and the
/// session's report says how many.
public protocol FrameRefusing: AnyObject {
    var framesRefused: Int { get }
    /// Frames stored as they came that look cut short (a JPEG without its end marker): counted, so the report can say
    /// a camera or its cable is tearing frames; a player shows what arrived.
    var framesUnended: Int { get }
}

/// What an audio source says of one block of samples it wrote.
public struct AudioBlock: Sendable, Equatable {
    /// Index of the block's first sample, counted from the stream's first sample.
    public var firstSample: Int64
    public var count: Int
    /// Capture-clock time of the first sample, nanoseconds.
    public var timeNs: Int64

    public init(firstSample: Int64, count: Int, timeNs: Int64) {
        self.firstSample = firstSample
        self.count = count
        self.timeNs = timeNs
    }
}

/// Gives mono Float32 samples in [-1, 1]. Takes nothing.
public protocol AudioSource: AnyObject {
    var sampleRate: Int { get }
    /// Writes up to `buffer.count` samples; nil at the end of the stream.
    func read(into buffer: UnsafeMutableBufferPointer<Float>) throws -> AudioBlock?
}

/// One inertial sample: acceleration in m/s² and rotation rate in rad/s, device axes.
public struct IMUSample: Sendable, Equatable {
    public var timeNs: Int64
    public var acceleration: SIMD3<Float>
    public var rotationRate: SIMD3<Float>

    public init(timeNs: Int64, acceleration: SIMD3<Float>, rotationRate: SIMD3<Float>) {
        self.timeNs = timeNs
        self.acceleration = acceleration
        self.rotationRate = rotationRate
    }
}

/// Gives IMU samples. Takes nothing.
public protocol IMUSource: AnyObject {
    var rateHz: Int { get }
    /// The next sample; nil at the end of the stream.
    func next() throws -> IMUSample?
}

/// One impact a detector found.
public struct DetectedImpact: Sendable, Equatable {
    public var id: UInt64
    /// Onset at the microphone, samples from the stream's first sample.
    public var onsetSample: Int64
    /// Onset − time of flight, samples (fractional).
    public var impactSample: Double
    /// Impact time, ns on the capture clock.
    public var t0Ns: Int64
    public var score: Double
    public var features: [String: Double]
    /// Time-of-flight correction applied (samples), or nil when no distance was declared.
    public var tofCorrectionSamples: Double?
    public var tofProvenance: String
    /// Sample at which it was decided.
    public var decidedAtSample: Int64

    public init(
        id: UInt64, onsetSample: Int64, impactSample: Double, t0Ns: Int64, score: Double, features: [String: Double],
        tofCorrectionSamples: Double?, tofProvenance: String, decidedAtSample: Int64
    ) {
        self.id = id
        self.onsetSample = onsetSample
        self.impactSample = impactSample
        self.t0Ns = t0Ns
        self.score = score
        self.features = features
        self.tofCorrectionSamples = tofCorrectionSamples
        self.tofProvenance = tofProvenance
        self.decidedAtSample = decidedAtSample
    }
}

/// Takes audio, gives impact candidates.
public protocol ImpactDetecting: AnyObject {
    /// Prepares for a stream at `sampleRate` whose sample 0 is at `streamStartNs` on the capture clock.
    func start(sampleRate: Int, streamStartNs: Int64) throws
    func process(_ samples: UnsafeBufferPointer<Float>, emit: (DetectedImpact) -> Void)
    /// `count` samples the source lost (an audio xrun): the detector's sample numbering moves past them, so onsets
    /// after the gap stay on the source's sample clock.
    func skip(samples count: Int64)
}

/// An audio source whose sample clock is measured against the capture clock (a sound card: its rate is not exactly
/// nominal). The session uses it to turn sample positions — a candidate's onset, an audio window's first sample —
/// into capture-clock times, instead of assuming the nominal rate.
public protocol SampleClockMapping: AnyObject {
    /// Capture-clock time of sample `position` (fractional; counted from the stream's first sample), ns.
    func captureTimeNs(ofSample position: Double) -> Int64
}

/// Samples an audio source lost: its sample numbering (`AudioBlock.firstSample`) jumped past them.
public struct AudioGap: Sendable, Equatable {
    /// First sample lost (the stream's numbering).
    public var firstSample: Int64
    public var samples: Int64
    /// Capture-clock time the loss was noticed, ns.
    public var noticedNs: Int64
    /// What happened, in words a report carries.
    public var reason: String

    public init(firstSample: Int64, samples: Int64, noticedNs: Int64, reason: String) {
        self.firstSample = firstSample
        self.samples = samples
        self.noticedNs = noticedNs
        self.reason = reason
    }
}

/// Where a session's output lives and who it is.
public struct SessionContext: Sendable {
    public var outputDirectory: String
    public var deviceID: String
    public var session: String
    /// `WxH@FPS codec`, for a host's ingest policy.
    public var captureProfile: String
    /// The bay the device stands at (`run --bay`; nil: none said — a host may set one).
    public var bay: String?
    /// Whether the session hears shots itself (it has an audio source): a host relays bay-mates' shots to it either way.
    public var hears = true

    /// This run of the session, minted when it is armed: UTC time to the second and 32 random bits
    /// (`20261201T091500Z-9f3c01ab`). Two runs of one session name on one device never share it.
    public var sessionID: String

    public init(
        outputDirectory: String, deviceID: String, session: String, captureProfile: String = "",
        sessionID: String = SessionContext.mintSessionID()
    ) {
        self.outputDirectory = outputDirectory
        self.deviceID = deviceID
        self.session = session
        self.captureProfile = captureProfile
        self.sessionID = sessionID
    }

    /// A clip's id, unique for ever: the session's name, this run's id and the shot's number
    /// (`range-20261201T091500Z-9f3c01ab-007`). On a host it lives under the device's own folder.
    public func clipID(shot: UInt64) -> String {
        if shot & Self.relayedShotBit != 0 {
            // a bay-mate's shot: r001, r002, …
            return "\(session)-\(sessionID)-r\(String(format: "%03llu", shot & ~Self.relayedShotBit))"
        }
        return "\(session)-\(sessionID)-\(String(format: "%03llu", shot))"
    }

    /// Shots a host relayed from a bay-mate carry this bit in their id (they are numbered apart from the detector's
    /// candidates): their clips are `…-r001`, `…-r002`.
    public static let relayedShotBit: UInt64 = 1 << 63

    /// A new session id: UTC now to the second, then 32 bits from the system's random source.
    public static func mintSessionID() -> String {
        var t = time(nil)
        var parts = tm()
        gmtime_r(&t, &parts)
        let stamp = String(
            format: "%04d%02d%02dT%02d%02d%02dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday, parts.tm_hour,
            parts.tm_min, parts.tm_sec)
        return stamp + "-" + String(format: "%08x", UInt32.random(in: .min ... .max))
    }
}

/// A sink that also wants the session's events as they happen (a network sink sends them on its control channel,
/// where they never wait behind a clip).
public protocol EventSink: AnyObject {
    func candidate(_ c: DetectedImpact)
    func shot(_ c: DetectedImpact)
    func announce(clipID: String, bytes: UInt64, files: Int)
}

/// A shot a bay-mate heard, relayed by the host on this device's capture clock.
public struct RelayedShot: Sendable, Equatable {
    /// The host's number for the relay.
    public var id: UInt64
    /// t0 on this device's capture clock, ns.
    public var t0Ns: Int64
    /// How uncertain that is: both devices' clock relations together, ns.
    public var uncertaintyNs: Int64
    /// The device that heard it.
    public var from: String
    public init(id: UInt64, t0Ns: Int64, uncertaintyNs: Int64, from: String) {
        self.id = id
        self.t0Ns = t0Ns
        self.uncertaintyNs = uncertaintyNs
        self.from = from
    }
}

/// A sink that hears of shots from elsewhere (a host relaying what a bay-mate heard): the session sets `onRelayedShot`
/// before it opens the sink, and mints its own window around each — so a camera with no microphone records every
/// swing its bay hears.
public protocol ShotRelaying: AnyObject {
    var onRelayedShot: (@Sendable (RelayedShot) -> Void)? { get set }
}

/// A first look at a shot: its pre-roll and impact, minted as soon as the ring sealed them, for a screen at the bay to
/// play while the clip's post-roll is still being captured. Video only; the clip, whole and with its sound, follows.
public struct FirstLook: Sendable, Equatable {
    public var clipID: String
    public var path: String
    /// t0 and the look's first frame (its time 0), on the capture clock, ns.
    public var t0Ns: Int64
    public var zeroNs: Int64
    public init(clipID: String, path: String, t0Ns: Int64, zeroNs: Int64) {
        self.clipID = clipID
        self.path = path
        self.t0Ns = t0Ns
        self.zeroNs = zeroNs
    }
}

/// A sink that shows first looks (a network sink sends them to its host ahead of the clip). Called on the delivery
/// thread, between clips; nil when the look went, else why not (no link now, the host refused): a look is never queued
/// for later.
public protocol LookSending: AnyObject {
    func sendLook(_ look: FirstLook) -> String?
}

/// A sink whose work yields to policy (seed 000: transfer degrades before capture loses a frame): the session sets
/// `mustYield`, and the sink pauses between chunks while it says so.
public protocol TransferYielding: AnyObject {
    var mustYield: (@Sendable () -> Bool)? { get set }
}

/// A sink that wants to see frames as they are captured (a live preview). Called on the capture thread with the frame
/// just read, before it is encoded; it must return at once and keep no pointer.
public protocol FrameObserving: AnyObject {
    func observe(_ frame: VideoFrameBuffer, format: VideoFormat, info: FrameInfo)
}

/// A device's state as a host's live view shows it, about once a second while the session runs.
public struct DeviceStatusReport: Sendable, Equatable {
    /// Capturing into the ring with detection live (not warming up, interrupted or draining).
    public var armed: Bool
    /// The session's state in words ("armed", "interrupted: …", "draining").
    public var state: String
    /// Frames encoded per second over the last interval (measured).
    public var framesPerSecond: Double
    /// Frames dropped since the session began (late, or missing from the source's sequence).
    public var framesDropped: Int
    /// The thermal level ("nominal" … "critical"), and the hottest zone's °C (nil when no zone is readable).
    public var thermal: String
    public var thermalCelsius: Double?
    /// Free bytes where the session stores (nil when it cannot be read).
    public var storageFreeBytes: Int64?

    public init(
        armed: Bool, state: String, framesPerSecond: Double, framesDropped: Int, thermal: String,
        thermalCelsius: Double?, storageFreeBytes: Int64?
    ) {
        self.armed = armed
        self.state = state
        self.framesPerSecond = framesPerSecond
        self.framesDropped = framesDropped
        self.thermal = thermal
        self.thermalCelsius = thermalCelsius
        self.storageFreeBytes = storageFreeBytes
    }
}

/// A sink that keeps the clips it could not deliver (a network sink: in `SessionContext.outboxDirectory`) and sends
/// them when it can again. The session calls it on its delivery thread: when deliveries begin (a network sink reaches
/// its host then, once capture runs, so capture never waits for a host), after each clip, and
/// every `link.owedRetryIntervalNs` while anything is owed or the sink has lost its host — so clips owed while a host was
/// down arrive once it is back, and the link (events, preview) comes back without waiting for the next clip, the next
/// session or a `transfer drain`.
public protocol OwedClipsSending: AnyObject {
    /// True while the sink has lost its host (never reached, or the link dropped): `sendOwed` is then tried on every
    /// retry interval even when nothing is owed.
    var needsRetry: Bool { get }
    /// Reaches the host again if the link is down, then sends what is still owed, oldest first; stops at the first that
    /// fails, or before the next clip once `keepGoing` says no (an operator who asked to stop now). Returns the clip ids
    /// the host confirmed.
    func sendOwed(while keepGoing: () -> Bool) -> [String]
}

extension SessionContext {
    /// Where clips owed to a host wait (`OUT/outbox/<clipId>/`): the network sink queues them there, and a ring pin
    /// recorded for a clip (`OUT/pins/<clipId>.json`) holds only while its clip is there.
    public static func outboxDirectory(out: String) -> String { "\(out)/outbox" }
    public var outboxDirectory: String { Self.outboxDirectory(out: outputDirectory) }
}

/// A sink that passes the device's state on (a network sink: to the host's live view). Called about once a second
/// from a thread of its own; it must return at once.
public protocol DeviceStatusObserving: AnyObject {
    func deviceStatus(_ s: DeviceStatusReport)
}

/// A sink whose state a report should carry: what happened to it, one line per change (a network sink: its link).
public protocol SinkStatusReporting: AnyObject {
    var statusHistory: [String] { get }
}

/// Takes minted clip bundles. A bundle is delivered as a finished directory (clip.mp4, audio.wav, index.bin,
/// meta.json); `deliver` returns once the sink holds it durably — that confirmation releases the clip's fragments.
public protocol ClipSink: AnyObject {
    func open(_ context: SessionContext) throws
    /// Takes the bundle at `staged` (which it may move); returns where it now is.
    func deliver(staged: String, clipID: String) throws -> String
    func finish() throws
}
