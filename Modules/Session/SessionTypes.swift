import Capture
import Config
import Foundation
import Pipeline

/// What a session is made of and told, what it shows while it runs and what it made: the types its callers and its
/// stages pass around (the session itself is SessionRunner.swift).
extension SessionRunner {
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

    /// How a stop asked for while capture runs ends it.
    public enum StopMode: Sendable {
        /// Capture goes on until every shot heard so far — and any heard in `stopHearingMarginNs` more — has its
        /// post-roll in the ring, then ends: at most that margin + detect.clipPostNs after the request.
        case afterPostRoll
        /// Capture ends at the next frame and audio block; a clip still owed is cut at the end of capture, and says so.
        case now
    }

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
}
