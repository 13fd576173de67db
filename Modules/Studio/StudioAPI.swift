import Catalogue
import Foundation
import JSONInput
import Library

/// The studio's JSON API as types: what each request answers and each WebSocket message says (docs/studio.md, which
/// `StudioAPIDocumentTests` holds them to). A field documented as "or null" is `@Nullable`: written as `null`, never
/// left out; a field a view does not have (a list's angle has no playback figures) is left out.
public enum StudioAPI {
    /// A device as the host's link sees it (`GET /api/devices`, the WebSocket's `devices`).
    public struct Device: Codable, Sendable, Equatable {
        public struct Relation: Codable, Sendable, Equatable {
            public var offsetNs: Int64
            public var skewPpm: Double
            public var uncertaintyNs: Int64
            public var samples: UInt32
            public init(offsetNs: Int64, skewPpm: Double, uncertaintyNs: Int64, samples: UInt32) {
                self.offsetNs = offsetNs
                self.skewPpm = skewPpm
                self.uncertaintyNs = uncertaintyNs
                self.samples = samples
            }
        }

        public struct Status: Codable, Sendable, Equatable {
            public var armed: Bool
            /// Measured over the device's last second.
            public var framesPerSecond: Double
            public var framesDropped: UInt64
            public var thermal: String
            @Nullable public var thermalCelsius: Double?
            public var storageFreeBytes: UInt64
            /// How old the report is, on the host's monotonic clock.
            public var ageNs: Int64
            public init(
                armed: Bool, framesPerSecond: Double, framesDropped: UInt64, thermal: String, thermalCelsius: Double?,
                storageFreeBytes: UInt64, ageNs: Int64
            ) {
                self.armed = armed
                self.framesPerSecond = framesPerSecond
                self.framesDropped = framesDropped
                self.thermal = thermal
                self.thermalCelsius = thermalCelsius
                self.storageFreeBytes = storageFreeBytes
                self.ageNs = ageNs
            }
        }

        public var id: String
        /// `connected` while a control channel is open, else `disconnected`.
        public var link: String
        public var captureProfile: String
        @Nullable public var relation: Relation?
        @Nullable public var status: Status?
        @Nullable public var bay: String?
        @Nullable public var hears: Bool?
        @Nullable public var lastShotDeviceNs: Int64?
        @Nullable public var lastShotHostNs: Int64?
        @Nullable public var lastShotAgoNs: Int64?
        public var lastSeenAgoNs: Int64

        public init(
            id: String, link: String, captureProfile: String, relation: Relation?, status: Status?, bay: String?,
            hears: Bool?, lastShotDeviceNs: Int64?, lastShotHostNs: Int64?, lastShotAgoNs: Int64?, lastSeenAgoNs: Int64
        ) {
            self.id = id
            self.link = link
            self.captureProfile = captureProfile
            self.relation = relation
            self.status = status
            self.bay = bay
            self.hears = hears
            self.lastShotDeviceNs = lastShotDeviceNs
            self.lastShotHostNs = lastShotHostNs
            self.lastShotAgoNs = lastShotAgoNs
            self.lastSeenAgoNs = lastSeenAgoNs
        }
    }

    public struct Devices: Codable, Sendable, Equatable {
        public var devices: [Device]
    }

    /// A catalogued clip.
    public struct Clip: Codable, Sendable, Equatable {
        public var clipId: String
        public var device: String
        public var session: String
        public var sessionId: String
        public var t0DeviceNs: Int64
        @Nullable public var t0HostNs: Int64?
        @Nullable public var t0UncertaintyNs: Int64?
        public var frames: Int
        public var captureProfile: String
        @Nullable public var belowPolicy: String?
        public var receivedAt: String
        public var bytes: Int64
        public var flags: [String]
        public var notes: String
        public var swingId: String
        @Nullable public var seq: Int64?
        @Nullable public var bay: String?
        @Nullable public var trigger: String?

        init(_ c: CatalogueClip) {
            clipId = c.clipID
            device = c.device
            session = c.session
            sessionId = c.sessionID
            t0DeviceNs = c.t0DeviceNs
            t0HostNs = c.t0HostNs
            t0UncertaintyNs = c.t0UncertaintyNs
            frames = c.frames
            captureProfile = c.captureProfile
            belowPolicy = c.belowPolicy
            receivedAt = c.receivedAt
            bytes = c.bytes
            flags = c.flags.sorted().map(\.rawValue)
            notes = c.notes
            swingId = c.swingID ?? c.clipID
            seq = c.receivedSeq
            bay = c.bay
            trigger = c.trigger
        }
    }

    /// Where an angle's video, impact and sound are, for a player to show it in sync (`GET /api/swings/<id>`).
    public struct Playback: Codable, Sendable, Equatable {
        /// The original clip.mp4.
        public var download: String
        public var framesPerSecond: Int
        /// Where t0 is in the video, s.
        public var impactSeconds: Double
        /// The video's time 0 on the host clock; null without a clock relation.
        @Nullable public var zeroHostNs: Int64?
        public var durationSeconds: Double
        /// With audio: the WAV, its waveform, and the first sample's place on the video's timeline.
        public var audio: String?
        public var waveform: String?
        public var audioStartSeconds: Double?
        public var audioSecondsPerSample: Double?
    }

    /// One angle of a swing: the clip, what a browser plays, its still, and in a swing's own view its playback.
    public struct Angle: Codable, Sendable, Equatable {
        public var clip: Clip
        /// The host's H.264 viewing copy when there is one, else clip.mp4.
        public var video: String
        public var thumb: String
        public var playback: Playback?

        enum Keys: String, CodingKey { case video, thumb, download }

        init(clip: Clip, video: String, thumb: String, playback: Playback? = nil) {
            self.clip = clip
            self.video = video
            self.thumb = thumb
            self.playback = playback
        }

        // One JSON object: the clip's fields, then the angle's beside them.
        public func encode(to encoder: any Encoder) throws {
            try clip.encode(to: encoder)
            var c = encoder.container(keyedBy: Keys.self)
            try c.encode(video, forKey: .video)
            try c.encode(thumb, forKey: .thumb)
            try playback?.encode(to: encoder)
        }

        public init(from decoder: any Decoder) throws {
            clip = try Clip(from: decoder)
            let c = try decoder.container(keyedBy: Keys.self)
            video = try c.decode(String.self, forKey: .video)
            thumb = try c.decode(String.self, forKey: .thumb)
            playback = c.contains(.download) ? try Playback(from: decoder) : nil
        }
    }

    /// A swing in a list (`GET /api/swings`).
    public struct Swing: Codable, Sendable, Equatable {
        public var id: String
        @Nullable public var seq: Int64?
        @Nullable public var bay: String?
        @Nullable public var t0HostNs: Int64?
        public var receivedAt: String
        /// Those every angle carries.
        public var flags: [String]
        /// Whose swing it is (the student hitting at its bay when it was received) and the lesson it belongs to.
        @Nullable public var student: String?
        @Nullable public var studentName: String?
        public var lesson: String
        public var angles: [Angle]
        /// The coach's words on it (`PUT /api/swings/<id>/tags`).
        public var tags: [String] = []
    }

    public struct SwingList: Codable, Sendable, Equatable {
        public var swings: [Swing]
        public var total: Int
        /// The `before` of the next page; null on the last.
        @Nullable public var next: Int64?
    }

    /// A swing as its player needs it (`GET /api/swings/<id>`).
    public struct SwingDetail: Codable, Sendable, Equatable {
        public var id: String
        @Nullable public var seq: Int64?
        @Nullable public var bay: String?
        @Nullable public var t0HostNs: Int64?
        /// t0 as wall-clock ms since 1970, for a swing received on this host boot.
        @Nullable public var t0WallMs: Double?
        /// When its first angle was received (ISO 8601).
        public var receivedAt: String
        public var flags: [String]
        /// `host clock (…)`, or `impact (…)` when an angle has no clock relation.
        public var syncedOn: String
        /// On the host clock: the largest uncertainty of an angle's t0; null when synced on the impact.
        @Nullable public var syncUncertaintyNs: Int64?
        @Nullable public var student: String?
        @Nullable public var studentName: String?
        public var lesson: String
        /// Its place (from 1) among its lesson's swings, oldest first, and how many there are (every swing, when the
        /// lesson has only this one); the swings before and after it there.
        @Nullable public var lessonIndex: Int?
        public var lessonSwings: Int
        @Nullable public var previous: String?
        @Nullable public var next: String?
        /// What the coach marked (s from the impact; the impact is 0) and the tempo it gives, once address and top are.
        public var positions: KeyPositions
        @Nullable public var tempo: KeyPositions.Tempo?
        public var angles: [Angle]
        public var tags: [String] = []
    }

    public struct Refused: Codable, Sendable, Equatable {
        public var clipId: String
        public var problem: String
    }

    public struct ClipList: Codable, Sendable, Equatable {
        public var clips: [Clip]
        public var refused: [Refused]
    }

    public struct Waveform: Codable, Sendable, Equatable {
        public var sampleRate: Int
        public var samples: Int
        public var buckets: Int
        public var min: [Double]
        public var max: [Double]
        /// t0 in audio.wav's samples; null when meta.json places no audio.
        @Nullable public var impactSample: Int?
    }

    public struct Drawings: Codable, Sendable, Equatable {
        public var clipId: String
        public var drawings: [ClipDrawings.Drawing]
        /// Whether `…/drawings/undo` and `…/drawings/redo` have a state to go to.
        public var canUndo: Bool
        public var canRedo: Bool
    }

    /// A device's capture session in the list (`GET /api/sessions`).
    public struct SessionRow: Codable, Sendable, Equatable {
        public var device: String
        public var session: String
        public var sessionId: String
        public var shots: Int
        public var kept: Int
        public var discarded: Int
        public var starred: Int
        /// How many clips were minted below the policy's profile.
        public var belowPolicy: Int
        public var bytes: Int64
        public var firstReceivedAt: String
        public var lastReceivedAt: String
        public var lastSeq: Int64
    }

    public struct Sessions: Codable, Sendable, Equatable {
        public var sessions: [SessionRow]
    }

    /// One session (`GET /api/sessions/<device>/<sessionId>`).
    public struct SessionDetail: Codable, Sendable, Equatable {
        public struct Window: Codable, Sendable, Equatable {
            public var clipPreNs: Int64?
            public var clipPostNs: Int64?
        }

        public struct Report: Codable, Sendable, Equatable {
            public var shots: Int
            public var spanNs: Int64
            public var frames: Int64
            public var bytes: Int64
            public var kept: Int
            public var discarded: Int
            public var starred: Int
            /// Each clip's reason for being below the policy's profile.
            public var belowPolicy: [String]
            public var window: Window
            public var note: String
        }

        public var device: String
        public var session: String
        public var sessionId: String
        public var captureProfile: String
        public var report: Report
        public var shots: [Clip]
    }

    public struct BayList: Codable, Sendable, Equatable {
        public var bays: [Bays.Bay]
    }

    // MARK: WebSocket messages

    public struct DevicesMessage: Codable, Sendable, Equatable {
        public var type = "devices"
        public var devices: [Device]
    }

    /// A shot heard by a device, before its clip arrives.
    public struct ShotMessage: Codable, Sendable, Equatable {
        public var type = "shot"
        public var device: String
        @Nullable public var bay: String?
        @Nullable public var t0HostNs: Int64?
        @Nullable public var t0WallMs: Double?
    }

    /// A first look stored (`/looks/<device>/<clipId>.mp4`).
    public struct LookMessage: Codable, Sendable, Equatable {
        public var type = "look"
        public var device: String
        @Nullable public var bay: String?
        public var clipId: String
        public var url: String
        @Nullable public var t0HostNs: Int64?
        @Nullable public var zeroHostNs: Int64?
        public var impactSeconds: Double
        @Nullable public var t0WallMs: Double?
    }

    /// A clip catalogued, placed in its swing.
    public struct ClipMessage: Codable, Sendable, Equatable {
        public var type = "clip"
        public var clipId: String
        public var device: String
        @Nullable public var bay: String?
        public var swingId: String
        @Nullable public var seq: Int64?
        @Nullable public var t0HostNs: Int64?
        @Nullable public var t0WallMs: Double?
    }

    /// A shared catalogue reachable again.
    public struct CatalogueMessage: Codable, Sendable, Equatable {
        public var type = "catalogue"
        public var state = "available"
    }
}
