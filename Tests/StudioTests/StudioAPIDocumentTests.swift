import Catalogue
import Foundation
import Library
import Testing

@testable import Studio

/// docs/studio.md is the studio API's reference: every field each answer and WebSocket message carries is named in the
/// section that documents it, so a field added to a type and not to the document fails here. Each type is also read
/// back as written (what a script using the API gets is what the types say).
@Suite("Studio: the API's types and docs/studio.md")
struct StudioAPIDocumentTests {
    static let document: String = {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return (try? String(contentsOf: root.appendingPathComponent("docs/studio.md"), encoding: .utf8)) ?? ""
    }()

    /// The text of the `###` section whose heading contains `heading`.
    static func section(_ heading: String) -> String {
        let parts = document.components(separatedBy: "\n### ")
        return parts.first { $0.prefix(while: { $0 != "\n" }).contains(heading) } ?? ""
    }

    static func keys<T: Encodable>(_ value: T) throws -> Set<String> {
        let data = try JSONEncoder().encode(value)
        return Set((try JSONSerialization.jsonObject(with: data) as? [String: Any] ?? [:]).keys)
    }

    static let clip = StudioAPI.Clip(
        CatalogueClip(
            clipID: "c1", device: "face-on", session: "s", sessionID: "0001", t0DeviceNs: 5, t0HostNs: 7,
            t0UncertaintyNs: 1, frames: 360, captureProfile: "1920x1080@120 h264", belowPolicy: "thermal",
            receivedAt: "2026-12-04T10:00:00Z", path: "/x", bytes: 9, flags: [.starred], notes: "n", swingID: "c1",
            receivedSeq: 3, bay: "bay-1", trigger: "heard"))
    static let playback = StudioAPI.Playback(
        download: "/d", framesPerSecond: 120, impactSeconds: 2, zeroHostNs: 1, durationSeconds: 3, audio: "/a",
        waveform: "/w", audioStartSeconds: 0, audioSecondsPerSample: 1 / 48_000)
    static let angle = StudioAPI.Angle(clip: clip, video: "/v", thumb: "/t", playback: playback)
    static let export = StudioAPI.Export(
        id: "x", state: "done", progress: 1, created: "c", title: "t",
        request: .init(
            swings: [.init(swing: "s", angle: "a")], layout: "overlay", opacity: 0.5, align: "top", before: 1, after: 1,
            slow: .init(factor: 0.25, from: -0.1, to: 0.1), drawings: true),
        video: "v", error: nil, width: 1, height: 1, durationSeconds: 1, bytes: 1, sound: true)
    static let share = StudioAPI.Share(
        id: "s", key: "k", kind: "swing", target: "t", withNotes: true, title: "t", created: "c", expires: "e",
        revoked: nil, url: "u",
        state: "active")
    static let sharedSwing = StudioAPI.Shared.Swing(
        id: "s", receivedAt: "r", studentName: "S", notes: "n", positions: KeyPositions(), tempo: nil,
        angles: [
            .init(
                video: "v", thumb: "t", device: "d", framesPerSecond: 1, impactSeconds: 1, durationSeconds: 1,
                drawings: [])
        ])
    static let device = StudioAPI.Device(
        id: "face-on", link: "connected", captureProfile: "p",
        relation: .init(offsetNs: 1, skewPpm: 0.1, uncertaintyNs: 2, samples: 3),
        status: .init(
            armed: true, framesPerSecond: 120, framesDropped: 0, thermal: "nominal", thermalCelsius: 40,
            storageFreeBytes: 1, ageNs: 1), bay: "bay-1", hears: true, lastShotDeviceNs: 1, lastShotHostNs: 2,
        lastShotAgoNs: 3, lastSeenAgoNs: 4)
    static let sessionDetail = StudioAPI.SessionDetail(
        device: "face-on", session: "s", sessionId: "0001", captureProfile: "p",
        report: .init(
            shots: 1, spanNs: 0, frames: 360, bytes: 9, kept: 0, discarded: 0, starred: 1, belowPolicy: [],
            window: .init(clipPreNs: 2, clipPostNs: 3), note: "n"), shots: [clip])

    /// Each type's fields and the section naming them (`field` in backquotes, or "field" in a message's sketch).
    static func cases() throws -> [(what: String, section: String, keys: Set<String>)] {
        let angleOwn = try keys(angle).subtracting(keys(clip)).subtracting(keys(playback))
        return [
            ("Device", "GET /api/devices", try keys(device)),
            ("Device.relation", "GET /api/devices", try keys(device.relation)),
            ("Device.status", "GET /api/devices", try keys(device.status)),
            ("BayList", "GET /api/bays", try keys(StudioAPI.BayList(bays: [.init(name: "b", devices: [])]))),
            ("Bay", "GET /api/bays", try keys(Bays.Bay(name: "b", devices: []))),
            ("SwingList", "GET /api/swings?", try keys(StudioAPI.SwingList(swings: [], total: 0, next: 1))),
            (
                "Swing", "GET /api/swings?",
                try keys(
                    StudioAPI.Swing(
                        id: "c1", seq: 1, bay: "b", t0HostNs: 1, receivedAt: "r", flags: [], student: "s",
                        studentName: "S", lesson: "l", angles: [angle]))
            ),
            ("Angle", "GET /api/swings?", angleOwn),
            ("Playback", "GET /api/swings/<id>", try keys(playback)),
            (
                "SwingDetail", "GET /api/swings/<id>",
                try keys(
                    StudioAPI.SwingDetail(
                        id: "c1", seq: 1, bay: "b", t0HostNs: 1, t0WallMs: 1, receivedAt: "r", flags: [], syncedOn: "s",
                        syncUncertaintyNs: 1, student: "s", studentName: "S", lesson: "l", lessonIndex: 1,
                        lessonSwings: 1, previous: "p", next: "n", positions: .init(address: -1, top: -0.3, finish: 1),
                        tempo: KeyPositions(address: -1, top: -0.3).tempo, angles: []))
            ),
            ("KeyPositions", "positions", try keys(KeyPositions(address: -1, top: -0.3, finish: 1))),
            ("Tempo", "positions", try keys(try #require(KeyPositions(address: -1, top: -0.3).tempo))),
            ("Clip", "GET /api/clips", try keys(clip)),
            ("ClipList", "GET /api/clips", try keys(StudioAPI.ClipList(clips: [], refused: []))),
            ("Refused", "GET /api/clips", try keys(StudioAPI.Refused(clipId: "c", problem: "p"))),
            (
                "Waveform", "GET /api/clips",
                try keys(StudioAPI.Waveform(sampleRate: 1, samples: 1, buckets: 1, min: [], max: [], impactSample: 1))
            ),
            (
                "Drawings", "drawings",
                try keys(StudioAPI.Drawings(clipId: "c", drawings: [], canUndo: false, canRedo: false))
            ),
            (
                "Drawing", "drawings",
                try keys(
                    ClipDrawings.Drawing(kind: .text, t: 0, points: [], color: "#ffffff", span: .clip, text: "hi"))
            ),
            (
                "SessionRow", "GET /api/sessions",
                try keys(
                    StudioAPI.SessionRow(
                        device: "d", session: "s", sessionId: "i", shots: 1, kept: 0, discarded: 0, starred: 0,
                        belowPolicy: 0, bytes: 1, firstReceivedAt: "a", lastReceivedAt: "b", lastSeq: 1))
            ),
            ("SessionDetail", "GET /api/sessions", try keys(sessionDetail)),
            ("SessionDetail.report", "GET /api/sessions", try keys(sessionDetail.report)),
            ("SessionDetail.report.window", "GET /api/sessions", try keys(sessionDetail.report.window)),
            (
                "Student", "GET /api/students",
                try keys(
                    StudioAPI.Student(
                        id: "s", name: "S", handedness: "right", notes: "", swings: 1, lastSwingAt: "a"))
            ),
            (
                "Hitting", "GET /api/students",
                try keys(StudioAPI.Hitting(bay: "b", student: "s", studentName: "S", since: "t"))
            ),
            ("Roster", "GET /api/students", try keys(StudioAPI.Roster(students: [], hitting: []))),
            (
                "Lesson", "GET /api/lessons",
                try keys(
                    StudioAPI.Lesson(
                        id: "l", student: "s", studentName: "S", bay: "b", day: "d", from: "f", to: "t", swings: 1,
                        devices: [], starred: 0, kept: 0, discarded: 0))
            ),
            ("Lessons", "GET /api/lessons", try keys(StudioAPI.Lessons(lessons: []))),
            ("Removed", "DELETE /api/swings", try keys(StudioAPI.Removed(swing: "s", clips: [], bytes: 0))),
            ("DevicesMessage", "WebSocket", try keys(StudioAPI.DevicesMessage(devices: []))),
            (
                "ShotMessage", "WebSocket",
                try keys(StudioAPI.ShotMessage(device: "d", bay: "b", t0HostNs: 1, t0WallMs: 1))
            ),
            (
                "LookMessage", "WebSocket",
                try keys(
                    StudioAPI.LookMessage(
                        device: "d", bay: "b", clipId: "c", url: "u", t0HostNs: 1, zeroHostNs: 1, impactSeconds: 1,
                        t0WallMs: 1))
            ),
            (
                "ClipMessage", "WebSocket",
                try keys(
                    StudioAPI.ClipMessage(
                        clipId: "c", device: "d", bay: "b", swingId: "c", seq: 1, t0HostNs: 1, t0WallMs: 1))
            ),
            ("CatalogueMessage", "WebSocket", try keys(StudioAPI.CatalogueMessage())),
            ("ExportMessage", "WebSocket", try keys(StudioAPI.ExportMessage(export: Self.export))),
            ("Tags", "PUT /api/swings/<id>/tags", try keys(StudioAPI.Tags(tags: []))),
            (
                "TagList", "PUT /api/swings/<id>/tags",
                try keys(StudioAPI.TagList(tags: [.init(tag: "t", swings: 1)]))
            ),
            ("TagList.Tag", "PUT /api/swings/<id>/tags", try keys(StudioAPI.TagList.Tag(tag: "t", swings: 1))),
            ("Export", "POST /api/exports", try keys(Self.export)),
            ("ExportRequest", "POST /api/exports", try keys(Self.export.request)),
            ("ExportList", "POST /api/exports", try keys(StudioAPI.ExportList(exports: []))),
            ("Share", "POST /api/shares", try keys(Self.share)),
            ("ShareList", "POST /api/shares", try keys(StudioAPI.ShareList(shares: []))),
            (
                "ShareRequest", "POST /api/shares",
                try keys(StudioAPI.ShareRequest(kind: "swing", target: "t", hours: 1, withNotes: true))
            ),
            (
                "Shared", "POST /api/shares",
                try keys(
                    StudioAPI.Shared(kind: "swing", title: "t", expires: "e", swings: [Self.sharedSwing], export: nil))
            ),
            ("Shared.Swing", "POST /api/shares", try keys(Self.sharedSwing)),
            ("Shared.Angle", "POST /api/shares", try keys(Self.sharedSwing.angles[0])),
            (
                "Shared.Video", "POST /api/shares",
                try keys(StudioAPI.Shared.Video(video: "v", title: "t", width: 1, height: 1, durationSeconds: 1))
            ),
        ]
    }

    @Test func everyFieldTheAPIWritesIsDocumentedInItsSection() throws {
        #expect(!Self.document.isEmpty, "docs/studio.md not found")
        for c in try Self.cases() {
            let text = Self.section(c.section)
            #expect(!text.isEmpty, "docs/studio.md has no section '\(c.section)' (for \(c.what))")
            let missing = c.keys.filter { !text.contains("`\($0)`") && !text.contains("\"\($0)\"") }.sorted()
            #expect(missing.isEmpty, "\(c.what): \(missing) not named in docs/studio.md's '\(c.section)' section")
        }
    }

    @Test func aNullFieldIsWrittenAsNullAndReadBack() throws {
        let bare = StudioAPI.Device(
            id: "d", link: "disconnected", captureProfile: "p", relation: nil, status: nil, bay: nil, hears: nil,
            lastShotDeviceNs: nil, lastShotHostNs: nil, lastShotAgoNs: nil, lastSeenAgoNs: 0)
        let text = String(decoding: try JSONEncoder().encode(bare), as: UTF8.self)
        #expect(text.contains("\"relation\":null") && text.contains("\"bay\":null"))
        #expect(try JSONDecoder().decode(StudioAPI.Device.self, from: Data(text.utf8)) == bare)
        // An angle is one object: the clip's fields, the angle's and the playback's side by side.
        let angle = try JSONDecoder().decode(StudioAPI.Angle.self, from: try JSONEncoder().encode(Self.angle))
        #expect(angle == Self.angle)
        let listed = StudioAPI.Angle(clip: Self.clip, video: "/v", thumb: "/t")
        #expect(try JSONDecoder().decode(StudioAPI.Angle.self, from: try JSONEncoder().encode(listed)) == listed)
        #expect(try !Self.keys(listed).contains("zeroHostNs"), "a list's angle has no playback figures")
    }
}
