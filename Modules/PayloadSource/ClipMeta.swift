import Foundation
import JSONInput
import Syscall

/// A clip bundle's `meta.json`, as one Codable type: the session writes it, `ppc-tool transfer drain` and the host read
/// it — nobody parses it by hand. Every figure carries its provenance (measured / vendor / derived / assumed).
public struct ClipMeta: Codable, Sendable, Equatable {
    /// A value with where it came from.
    public struct Figure<Value: Codable & Sendable & Equatable>: Codable, Sendable, Equatable {
        public var value: Value
        public var provenance: String
        public var note: String?
        public init(_ value: Value, _ provenance: String, _ note: String? = nil) {
            self.value = value
            self.provenance = provenance
            self.note = note
        }
    }

    public struct Gap: Codable, Sendable, Equatable {
        public var after: UInt64
        public var before: UInt64
        public var missingNs: Int64
        public init(after: UInt64, before: UInt64, missingNs: Int64) {
            self.after = after
            self.before = before
            self.missingNs = missingNs
        }
    }

    /// The window on the capture clock: asked ([startNs, endNs]) and as minted (from `firstFrameNs`, the clip's time 0).
    public struct Window: Codable, Sendable, Equatable {
        public var startNs: Int64
        public var endNs: Int64
        public var firstFrameNs: Int64
        public var clipTimeZeroNs: Int64
        public var clipPreNs: Figure<Int64>
        public var clipPostNs: Figure<Int64>
        public var gaps: [Gap]
        public init(
            startNs: Int64, endNs: Int64, firstFrameNs: Int64, clipPreNs: Figure<Int64>, clipPostNs: Figure<Int64>,
            gaps: [Gap]
        ) {
            self.startNs = startNs
            self.endNs = endNs
            self.firstFrameNs = firstFrameNs
            self.clipTimeZeroNs = firstFrameNs
            self.clipPreNs = clipPreNs
            self.clipPostNs = clipPostNs
            self.gaps = gaps
        }
    }

    public struct CaptureProfile: Codable, Sendable, Equatable {
        public var width: Int
        public var height: Int
        public var framesPerSecond: Int
        public var pixelFormat: String
        public var codec: String
        public var videoBitrateBps: Figure<Int64>
        public var fragmentSeconds: Figure<Double>
        public var frameStartToExposureOffsetNs: Figure<Int64>
        /// What the video source says of itself (a camera: its mode, why it was chosen, what warm locked).
        public var source: [String: String]
        public init(
            width: Int, height: Int, framesPerSecond: Int, pixelFormat: String, codec: String,
            videoBitrateBps: Figure<Int64>,
            fragmentSeconds: Figure<Double>, frameStartToExposureOffsetNs: Figure<Int64>, source: [String: String]
        ) {
            self.width = width
            self.height = height
            self.framesPerSecond = framesPerSecond
            self.pixelFormat = pixelFormat
            self.codec = codec
            self.videoBitrateBps = videoBitrateBps
            self.fragmentSeconds = fragmentSeconds
            self.frameStartToExposureOffsetNs = frameStartToExposureOffsetNs
            self.source = source
        }
    }

    public struct Candidate: Codable, Sendable, Equatable {
        public var id: UInt64
        public var onsetSample: Int64
        public var impactSample: Double
        public var score: Double
        public var features: [String: Double]
        public var decidedAtSample: Int64
        public var shotRule: String
        public init(
            id: UInt64, onsetSample: Int64, impactSample: Double, score: Double, features: [String: Double],
            decidedAtSample: Int64,
            shotRule: String
        ) {
            self.id = id
            self.onsetSample = onsetSample
            self.impactSample = impactSample
            self.score = score
            self.features = features
            self.decidedAtSample = decidedAtSample
            self.shotRule = shotRule
        }
    }

    /// The time-of-flight correction applied to t0: samples (null when no distance was declared) and why.
    public struct TofCorrection: Codable, Sendable, Equatable {
        public var samples: Double?
        public var provenance: String
        public init(samples: Double?, provenance: String) {
            self.samples = samples
            self.provenance = provenance
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(samples, forKey: .samples)  // null, not absent: "no correction" is said
            try c.encode(provenance, forKey: .provenance)
        }
    }

    public struct Audio: Codable, Sendable, Equatable {
        public var file: String
        public var sampleRate: Int
        public var firstSample: Int64
        public var samples: Int
        public var missingSamples: Int
        public var windowNs: Figure<Int64>
        public var preNs: Figure<Int64>
        /// Capture-clock time of the file's first sample, ns (the source's fitted clock, or its nominal rate).
        public var firstSampleNs: Figure<Int64>?
        /// The sample period on the capture clock, ns, from the same fit: sample k of the file is at
        /// firstSampleNs + k × this.
        public var nsPerSample: Figure<Double>?
        public init(
            file: String, sampleRate: Int, firstSample: Int64, samples: Int, missingSamples: Int,
            windowNs: Figure<Int64>,
            preNs: Figure<Int64>, firstSampleNs: Figure<Int64>? = nil, nsPerSample: Figure<Double>? = nil
        ) {
            self.firstSampleNs = firstSampleNs
            self.nsPerSample = nsPerSample
            self.file = file
            self.sampleRate = sampleRate
            self.firstSample = firstSample
            self.samples = samples
            self.missingSamples = missingSamples
            self.windowNs = windowNs
            self.preNs = preNs
        }
    }

    /// clip.mp4's sound track: the shot's audio window encoded for a player, placed on the clip's timeline, and where
    /// it really puts the strike — measured by decoding the clip as a player does.
    public struct SoundTrack: Codable, Sendable, Equatable {
        public var codec: String
        public var sampleRate: Int
        public var bitRate: Figure<Int>
        /// Samples in the track, from the clip's time 0 (silence before the window, when it starts later).
        public var samples: Int
        /// How far the track's strike lies from t0 on the clip's timeline, ns (positive: heard late); nil when the
        /// window held no clear strike to find.
        public var strikeOffsetNs: Figure<Int64>?
        public init(codec: String, sampleRate: Int, bitRate: Figure<Int>, samples: Int, strikeOffsetNs: Figure<Int64>?)
        {
            self.codec = codec
            self.sampleRate = sampleRate
            self.bitRate = bitRate
            self.samples = samples
            self.strikeOffsetNs = strikeOffsetNs
        }
        public func encode(to encoder: any Encoder) throws {
            var c = encoder.container(keyedBy: CodingKeys.self)
            try c.encode(codec, forKey: .codec)
            try c.encode(sampleRate, forKey: .sampleRate)
            try c.encode(bitRate, forKey: .bitRate)
            try c.encode(samples, forKey: .samples)
            try c.encode(strikeOffsetNs, forKey: .strikeOffsetNs)  // null, not absent: "not found" is said
        }
    }

    public struct Timeline: Codable, Sendable, Equatable {
        public var file: String
        public var entries: Int
        public init(file: String, entries: Int) {
            self.file = file
            self.entries = entries
        }
    }

    public struct File: Codable, Sendable, Equatable {
        public var bytes: Int
        public var xxh3: String
        public init(bytes: Int, xxh3: String) {
            self.bytes = bytes
            self.xxh3 = xxh3
        }
    }

    public static let formatName = "ppc-clip-bundle"

    public var format = ClipMeta.formatName
    public var version = 1
    public var clipId: String
    public var session: String
    public var sessionId: String
    public var device: String
    public var clock = "capture clock (CLOCK_MONOTONIC of the capturing device), ns"
    public var t0Ns: Figure<Int64>
    public var window: Window
    public var frames: Int
    public var captureProfile: CaptureProfile
    public var candidate: Candidate
    public var tofCorrection: TofCorrection
    /// nil when the session had no audio source.
    public var audio: Audio?
    /// clip.mp4's sound track; nil when the clip has none (no audio source), or was minted before 2026-12-03.
    public var soundTrack: SoundTrack?
    /// How its shot was known: "heard" (this device's microphone), or "relayed from DEVICE ± N µs" (a bay-mate heard it,
    /// and a host relayed it through both clock relations). nil in clips minted before 2026-12-03 (all heard).
    public var trigger: String?
    public var timeline: Timeline
    /// Every other file of the bundle, with its size and XXH3.
    public var files: [String: File]
    public var createdAt: String

    public init(
        clipId: String, session: String, sessionId: String, device: String, t0Ns: Figure<Int64>, window: Window,
        frames: Int,
        captureProfile: CaptureProfile, candidate: Candidate, tofCorrection: TofCorrection, audio: Audio?,
        soundTrack: SoundTrack? = nil,
        timeline: Timeline, files: [String: File], createdAt: String, trigger: String? = nil
    ) {
        self.soundTrack = soundTrack
        self.trigger = trigger
        self.clipId = clipId
        self.session = session
        self.sessionId = sessionId
        self.device = device
        self.t0Ns = t0Ns
        self.window = window
        self.frames = frames
        self.captureProfile = captureProfile
        self.candidate = candidate
        self.tofCorrection = tofCorrection
        self.audio = audio
        self.timeline = timeline
        self.files = files
        self.createdAt = createdAt
    }

    enum CodingKeys: String, CodingKey {
        case format, version, clipId, session, sessionId, device, clock, t0Ns, window, frames, captureProfile, candidate
        case tofCorrection = "tof_correction"
        case audio, soundTrack, trigger, timeline, files, createdAt
    }

    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(format, forKey: .format)
        try c.encode(version, forKey: .version)
        try c.encode(clipId, forKey: .clipId)
        try c.encode(session, forKey: .session)
        try c.encode(sessionId, forKey: .sessionId)
        try c.encode(device, forKey: .device)
        try c.encode(clock, forKey: .clock)
        try c.encode(t0Ns, forKey: .t0Ns)
        try c.encode(window, forKey: .window)
        try c.encode(frames, forKey: .frames)
        try c.encode(captureProfile, forKey: .captureProfile)
        try c.encode(candidate, forKey: .candidate)
        try c.encode(tofCorrection, forKey: .tofCorrection)
        try c.encode(audio, forKey: .audio)  // null, not absent: "no audio" is said
        try c.encodeIfPresent(soundTrack, forKey: .soundTrack)
        try c.encodeIfPresent(trigger, forKey: .trigger)
        try c.encode(timeline, forKey: .timeline)
        try c.encode(files, forKey: .files)
        try c.encode(createdAt, forKey: .createdAt)
    }

    /// The JSON as written: keys sorted, indented, slashes as they are.
    public func encoded() throws -> Data {
        let e = JSONEncoder()
        e.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        return try e.encode(self)
    }

    /// Reads `path`; the error names the file and what in it is wrong.
    public static func read(_ path: String) throws -> ClipMeta {
        let data: Data
        do { data = Data(try FileSystem.readSmallFile(path, limit: 4 << 20, regularFileOnly: true)) } catch {
            throw PayloadError(
                .badBundle, "\(path): cannot read (\(error.errno == ENOENT ? "missing" : error.description))")
        }
        do {
            let meta = try JSONInput.decode(ClipMeta.self, from: data)
            guard meta.format == formatName else {
                throw PayloadError(.badBundle, "\(path): format is '\(meta.format)', not \(formatName)")
            }
            if let why = meta.problem { throw PayloadError(.badBundle, "\(path): \(why)") }
            return meta
        } catch let e as PayloadError {
            throw e
        } catch {
            throw PayloadError(.badBundle, "\(path): not a clip's meta.json (\(error))")
        }
    }
}
