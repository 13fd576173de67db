import JSONInput
import Pipeline

extension SessionReport {
    /// Where a figure of the report comes from. `unavailable`: not known on this machine (no thermal zone, no audio
    /// source), its value null — nothing claimed.
    public enum Source: String, Codable, Sendable {
        case measured, vendor, derived, assumed, unavailable
    }

    /// A figure and where it came from: `{"value": …, "provenance": …, "note": …}`, the value null when unavailable.
    public struct Figure<Value: Codable & Sendable>: Codable, Sendable {
        @Nullable public var value: Value?
        public var provenance: Source
        public var note: String?

        init(_ value: Value?, _ provenance: Source, _ note: String? = nil) {
            self.value = value
            self.provenance = provenance
            self.note = note
        }

        static func unavailable(_ note: String? = nil) -> Figure { Figure(nil, .unavailable, note) }
    }

    public struct Gap: Codable, Sendable {
        public var firstSample: Int64
        public var samples: Int64
        public var noticedNs: Int64
        public var reason: String
        init(_ g: AudioGap) {
            firstSample = g.firstSample
            samples = g.samples
            noticedNs = g.noticedNs
            reason = g.reason
        }
    }

    public struct DiskFull: Codable, Sendable {
        public var events: UInt64
        public var headroomReleasedBytes: Int64
        public var fragmentsGivenUp: UInt64
        public var headroomHeldBytes: Int64
    }

    public struct EncodeTime: Codable, Sendable {
        public var mean: Double
        public var p95: Double
    }

    public struct FirstLooks: Codable, Sendable {
        public var sent: Int
        public var notSent: Int
        /// The first few reasons a look was not sent.
        public var why: [String]
    }

    public struct RelayedShots: Codable, Sendable {
        public var minted: Int
        public var alsoHeardHere: Int
    }

    public struct Clip: Codable, Sendable {
        /// On the capture clock, from t0, ms (meaningful when it is CLOCK_MONOTONIC: a camera, or a synthetic source
        /// started now).
        public struct AfterT0: Codable, Sendable {
            public var mintStart: Double
            public var minted: Double
            public var confirmed: Double
        }

        public var clipId: String
        public var path: String
        public var t0Ns: Int64
        public var startNs: Int64
        public var endNs: Int64
        public var frames: Int
        public var bytes: Int64
        public var confirmedBy: [String]
        public var afterT0Ms: AfterT0?

        init(_ c: SessionRunner.MintedClip) {
            clipId = c.clipID
            path = c.path
            t0Ns = c.t0Ns
            startNs = c.startNs
            endNs = c.endNs
            frames = c.frames
            bytes = c.bytes
            confirmedBy = c.confirmedBy
            afterT0Ms = c.timing.map {
                AfterT0(
                    mintStart: Double($0.mintStartNs) / 1e6, minted: Double($0.mintedNs) / 1e6,
                    confirmed: Double($0.confirmedNs) / 1e6)
            }
        }
    }

    public struct OwedClip: Codable, Sendable {
        public var clipId: String
        public var t0Ns: Int64
        public var heldBy: [String]
        public var refusedBy: [String]
    }

    public struct Interruption: Codable, Sendable {
        /// `video` or `audio`.
        public var source: String
        public var id: UInt64
        public var startNs: Int64
        /// Null while not resumed.
        @Nullable public var endNs: Int64?
        public var reason: String
        public var verified: Bool
        init(source: String, _ i: SourceInterruption) {
            self.source = source
            id = i.id
            startNs = i.startNs
            endNs = i.endNs
            reason = i.reason
            verified = i.verified
        }
    }

    public struct Thermal: Codable, Sendable {
        public var levelAtEnd: String
        public var celsiusAtEnd: Double
        public var peakCelsius: Double
        public var zone: String
        public var basis: String
    }

    public struct Candidate: Codable, Sendable {
        public var id: UInt64
        public var t0Ns: Int64
        public var onsetSample: Int64
        public var score: Double
    }

    /// report.json: what a session did, every figure with its provenance (seed 001's metrics report, on ppc's terms).
    public struct Document: Codable, Sendable {
        public var session: String
        public var sessionId: String
        public var device: String
        public var output: String
        /// Staging folders a crashed run left, removed at start.
        public var stagingLeftoversRemoved: [String]
        /// Pins no clip owed any more, released at start.
        public var unownedPinsReleased: [UInt64]
        public var durationSeconds: Figure<Double>
        public var captureSeconds: Figure<Double>
        public var format: String
        public var videoSource: [String: String]
        public var audioSource: [String: String]
        public var audioGaps: Figure<[Gap]>
        public var audioBacklogMaxMs: Figure<Int>
        public var imuSamples: Figure<Int>
        public var imuSamplesBeforeVideo: Figure<Int>
        public var framesCaptured: Figure<Int>
        public var framesEncoded: Figure<Int>
        public var framesDropped: Figure<Int>
        public var framesRefused: Figure<Int>
        public var framesUnended: Figure<Int>
        public var dropRate: Figure<Double>
        public var requestedFps: Figure<Int>
        public var achievedFps: Figure<Double>
        public var fragments: Figure<Int>
        public var fragmentsRefused: Figure<Int>
        public var fragmentsCutAtPostRoll: Figure<Int>
        public var diskFull: Figure<DiskFull>
        public var encodeMsPerFrame: Figure<EncodeTime>
        public var capturePriority: String
        public var candidates: Figure<Int>
        public var candidatesEvicted: Figure<Int>
        public var shots: Figure<Int>
        public var firstLooks: Figure<FirstLooks>
        public var relayedShots: Figure<RelayedShots>
        public var clips: [Clip]
        public var clipsOwed: [OwedClip]
        public var maxAudioVideoDriftMs: Figure<Double>
        public var thermalWarnings: Figure<Int>
        public var memoryWarnings: Figure<Int>
        public var storageWarnings: Figure<Int>
        public var policy: [String]
        public var stopRequests: [String]
        public var interruptions: Figure<Int>
        public var interruptionList: [Interruption]
        public var thermal: Figure<Thermal>
        public var peakMemoryBytes: Figure<Int64>
        public var errors: [String]
        public var sinkStatus: [String]
        public var candidateList: [Candidate]
    }
}
