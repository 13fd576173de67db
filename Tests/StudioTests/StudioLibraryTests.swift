import Catalogue
import Foundation
import Library
import TestSupport
import Testing

@testable import Studio

/// The coach's library (issue 35): students and who is hitting at each bay, lessons across cameras, search, a swing's
/// place in its lesson, discarded swings hidden, and delete that asks before it takes a kept or starred swing.
extension StudioTests {
    struct Library {
        let tmp: TemporaryDirectory
        let catalogue: Catalogue
        let roster: Roster
        let studio: Studio
        /// Swing ids in the order received: Ana's two (two angles each), Ben's one, one from a device in no bay.
        var swings: [String] = []
    }

    /// Ana hits at bay-1 from 09:00, Ben from 10:00; two cameras there, and one device in no bay.
    func library() throws -> Library {
        let tmp = TemporaryDirectory("ppc-studio-library")
        let catalogue = try Catalogue(path: tmp.sub("catalogue.sqlite"))
        let roster = try Roster(library: tmp.path)
        let ana = try roster.add(name: "Ana Ruiz", handedness: .left, notes: "")
        let ben = try roster.add(name: "Ben", handedness: .right, notes: "")
        try roster.setHitting(bay: "bay-1", student: ana.id, since: "2026-12-04T09:00:00Z")
        try roster.setHitting(bay: "bay-1", student: ben.id, since: "2026-12-04T10:00:00Z")
        var seq: Int64 = 0
        func clip(_ device: String, bay: String?, t0: Int64, at: String) throws -> String {
            seq += 1
            let id = "\(device)-\(seq)"
            let dir = tmp.sub("\(device)/\(id)")
            try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
            // A real clip's meta.json (a swing's page reads where its impact is from it).
            let real = try #require(
                try FileManager.default.contentsOfDirectory(atPath: Self.library.path + "/clips").sorted().first)
            try FileManager.default.copyItem(
                atPath: "\(Self.library.path)/clips/\(real)/meta.json", toPath: dir + "/meta.json")
            let placed = try catalogue.place(
                CatalogueClip(
                    clipID: id, device: device, session: "s", sessionID: "20261204T090000Z-\(device)", t0DeviceNs: t0,
                    t0HostNs: t0, t0UncertaintyNs: 1_000_000, frames: 1, captureProfile: "320x180@120 h264",
                    belowPolicy: nil, receivedAt: at, path: dir, bytes: 100, hostBoot: "boot",
                    receivedMonoNs: seq * 1_000_000_000, bay: bay),
                files: [], rule: SwingRule())
            return placed.swingID ?? id
        }
        var lib = Library(
            tmp: tmp, catalogue: catalogue, roster: roster,
            studio: try Studio(
                host: "127.0.0.1", port: 0, library: tmp.path, catalogue: catalogue, roster: roster, live: { [] }))
        for (t0, at) in [(10_000_000_000, "2026-12-04T09:10:00Z"), (20_000_000_000, "2026-12-04T09:20:00Z")] {
            let s = try clip("face-on", bay: "bay-1", t0: Int64(t0), at: at)
            #expect(try clip("down-the-line", bay: "bay-1", t0: Int64(t0) + 1_000_000, at: at) == s)
            lib.swings.append(s)
        }
        lib.swings.append(try clip("face-on", bay: "bay-1", t0: 30_000_000_000, at: "2026-12-04T10:05:00Z"))
        lib.swings.append(try clip("solo", bay: nil, t0: 40_000_000_000, at: "2026-12-04T09:30:00Z"))
        return lib
    }

    func decode<T: Decodable>(_ type: T.Type, _ studio: Studio, _ path: String) throws -> T {
        let r = try get(studio, path)
        #expect(r.status == 200, "\(path): \(r.status) \(String(decoding: r.body, as: UTF8.self))")
        return try JSONDecoder().decode(type, from: r.body)
    }

    func send(_ studio: Studio, _ method: String, _ path: String, _ body: String) throws -> (status: Int, text: String)
    {
        let r = try request(
            studio, method, path, body: Data(body.utf8), headers: ["Content-Type": "application/json"])
        return (r.status, String(decoding: r.body, as: UTF8.self))
    }

    @Test func aSwingIsTheStudentsWhoWasHittingAtItsBayAndLessonsSpanEveryCamera() throws {
        let lib = try library()
        defer { lib.studio.stop() }
        let s = lib.studio
        let anas = try decode(StudioAPI.SwingList.self, s, "/api/swings?student=ana-ruiz")
        #expect(anas.swings.map(\.id).sorted() == lib.swings[0...1].sorted() && anas.total == 2)
        #expect(anas.swings.allSatisfy { $0.studentName == "Ana Ruiz" && $0.angles.count == 2 })
        #expect(try decode(StudioAPI.SwingList.self, s, "/api/swings?student=ben").swings.map(\.id) == [lib.swings[2]])
        #expect(try decode(StudioAPI.SwingList.self, s, "/api/swings?student=none").swings.map(\.id) == [lib.swings[3]])
        // The unfiltered list says whose each swing is too.
        let all = try decode(StudioAPI.SwingList.self, s, "/api/swings")
        #expect(all.swings.map(\.studentName) == [nil, "Ben", "Ana Ruiz", "Ana Ruiz"], "newest first")

        // One lesson a sitting, across both cameras; the device in no bay has its own.
        let lessons = try decode(StudioAPI.Lessons.self, s, "/api/lessons").lessons
        #expect(lessons.count == 3, "\(lessons)")
        let ana = try #require(lessons.first { $0.student == "ana-ruiz" })
        #expect(ana.swings == 2 && Set(ana.devices) == ["face-on", "down-the-line"] && ana.bay == "bay-1")
        #expect(ana.from == "2026-12-04T09:10:00Z" && ana.to == "2026-12-04T09:20:00Z")
        let inLesson = try decode(
            StudioAPI.SwingList.self, s,
            "/api/swings?lesson=\(ana.id.addingPercentEncoding(withAllowedCharacters: .alphanumerics)!)")
        #expect(inLesson.swings.count == 2)

        // A swing's place in its lesson, oldest first, and its neighbours there.
        let first = try decode(StudioAPI.SwingDetail.self, s, "/api/swings/\(lib.swings[0])")
        #expect(first.lessonIndex == 1 && first.lessonSwings == 2 && first.previous == nil)
        #expect(first.next == lib.swings[1] && first.studentName == "Ana Ruiz" && first.syncUncertaintyNs == 1_000_000)
        let second = try decode(StudioAPI.SwingDetail.self, s, "/api/swings/\(lib.swings[1])")
        #expect(second.lessonIndex == 2 && second.previous == lib.swings[0] && second.next == nil)
        // A swing discarded is left out of its lesson's count and neighbours, as Swings leaves it out — but opened
        // itself, it still says where it falls; kept again, it counts again.
        #expect(
            try send(s, "POST", "/api/swings/\(lib.swings[0])/annotate", #"{"flags": ["discarded"]}"#).status == 200)
        let alone = try decode(StudioAPI.SwingDetail.self, s, "/api/swings/\(lib.swings[1])")
        #expect(alone.previous != lib.swings[0], "\(alone)")
        let discarded = try decode(StudioAPI.SwingDetail.self, s, "/api/swings/\(lib.swings[0])")
        #expect(discarded.lessonIndex == 1 && discarded.lessonSwings == 2 && discarded.next == lib.swings[1])
        #expect(try send(s, "POST", "/api/swings/\(lib.swings[0])/annotate", #"{"flags": []}"#).status == 200)
        #expect(try decode(StudioAPI.SwingDetail.self, s, "/api/swings/\(lib.swings[1])").previous == lib.swings[0])

        // Search: a student's name, words of the notes.
        #expect(
            try send(s, "POST", "/api/swings/\(lib.swings[2])/annotate", #"{"notes": "Early release"}"#).status == 200)
        #expect(try decode(StudioAPI.SwingList.self, s, "/api/swings?q=ana").swings.count == 2)
        #expect(try decode(StudioAPI.SwingList.self, s, "/api/swings?q=release").swings.map(\.id) == [lib.swings[2]])

        // Who hits now, set from the studio; the roster says so and counts each student's swings.
        #expect(try send(s, "PUT", "/api/hitting", #"{"bay": "bay-1", "student": "nobody-here"}"#).status == 400)
        let set = try send(s, "PUT", "/api/hitting", #"{"bay": "bay-1", "student": "ana-ruiz"}"#)
        #expect(set.status == 200, "\(set.text)")
        let roster = try decode(StudioAPI.Roster.self, s, "/api/students")
        #expect(roster.hitting.first { $0.bay == "bay-1" }?.studentName == "Ana Ruiz")
        #expect(roster.students.first { $0.id == "ana-ruiz" }?.swings == 2)
        // Students are added and changed by name; a bad one is named.
        let added = try send(s, "POST", "/api/students", #"{"name": "Ana Ruiz", "handedness": "right"}"#)
        #expect(added.status == 200 && added.text.contains(#""id":"ana-ruiz-2""#), "\(added.text)")
        #expect(try send(s, "POST", "/api/students", #"{"name": "  "}"#).text.contains("name is empty"))
        #expect(try send(s, "PUT", "/api/students/ben", #"{"handedness": "sideways"}"#).status == 400)
        #expect(try send(s, "PUT", "/api/students/ben", #"{"notes": "strong grip"}"#).status == 200)
        // Kept in the library: a host started again reads the same roster.
        #expect(try Roster(library: lib.tmp.path).students.first { $0.id == "ben" }?.notes == "strong grip")
    }

    @Test func discardedSwingsAreHiddenWhenAskedAndDeleteAsksBeforeItTakesAStarredOne() throws {
        let lib = try library()
        defer { lib.studio.stop() }
        let s = lib.studio
        #expect(
            try send(s, "POST", "/api/swings/\(lib.swings[2])/annotate", #"{"flags": ["discarded"]}"#).status == 200)
        #expect(try send(s, "POST", "/api/swings/\(lib.swings[1])/annotate", #"{"flags": ["starred"]}"#).status == 200)
        let hidden = try decode(StudioAPI.SwingList.self, s, "/api/swings?discarded=hide")
        #expect(hidden.total == 3 && !hidden.swings.map(\.id).contains(lib.swings[2]))
        #expect(try decode(StudioAPI.SwingList.self, s, "/api/swings").total == 4)
        #expect(try decode(StudioAPI.SwingList.self, s, "/api/swings?discarded=hide&flag=discarded").total == 1)
        #expect(try get(s, "/api/swings?discarded=maybe").status == 400)

        // A starred swing is not deleted without saying so; asked again, it is: folders and entries gone.
        let refused = try send(s, "DELETE", "/api/swings/\(lib.swings[1])", "{}")
        #expect(refused.status == 409 && refused.text.contains("starred"), "\(refused.text)")
        let angles = try lib.catalogue.angles(ofSwing: lib.swings[1])
        #expect(angles.count == 2 && angles.allSatisfy { FileManager.default.fileExists(atPath: $0.path) })
        let done = try send(s, "DELETE", "/api/swings/\(lib.swings[1])?force=yes", "{}")
        #expect(done.status == 200, "\(done.text)")
        let removed = try JSONDecoder().decode(StudioAPI.Removed.self, from: Data(done.text.utf8))
        #expect(removed.clips.count == 2 && removed.bytes == 200)
        #expect(try lib.catalogue.angles(ofSwing: lib.swings[1]).isEmpty)
        #expect(angles.allSatisfy { !FileManager.default.fileExists(atPath: $0.path) })
        // A discarded one goes at once.
        #expect(try send(s, "DELETE", "/api/swings/\(lib.swings[2])", "{}").status == 200)
        #expect(try get(s, "/api/swings/\(lib.swings[2])").status == 404)
        #expect(try decode(StudioAPI.SwingList.self, s, "/api/swings").total == 2)
    }

    /// Key positions marked on a swing: kept beside every angle, the tempo computed; out of order or reach, named.
    @Test func keyPositionsGiveTheTempoAndAreKeptBesideEveryAngle() throws {
        let lib = try library()
        defer { lib.studio.stop() }
        let s = lib.studio
        let id = lib.swings[0]
        let bad = try send(s, "PUT", "/api/swings/\(id)/positions", #"{"address": -0.5, "top": -0.9}"#)
        #expect(bad.status == 400 && bad.text.contains("address -0.5 is not before top -0.9"), "\(bad.text)")
        #expect(try send(s, "PUT", "/api/swings/\(id)/positions", #"{"finish": -1}"#).text.contains("finish -1"))
        #expect(try send(s, "PUT", "/api/swings/\(id)/positions", #"{"top": "high"}"#).status == 400)
        let ok = try send(s, "PUT", "/api/swings/\(id)/positions", #"{"address": -1.2, "top": -0.3, "finish": 0.8}"#)
        #expect(ok.status == 200, "\(ok.text)")
        let d = try decode(StudioAPI.SwingDetail.self, s, "/api/swings/\(id)")
        #expect(d.positions == KeyPositions(address: -1.2, top: -0.3, finish: 0.8))
        let tempo = try #require(d.tempo)
        #expect(abs(tempo.ratio - 3) < 1e-9 && abs(tempo.backswingSeconds - 0.9) < 1e-9)
        for c in try lib.catalogue.angles(ofSwing: id) {
            #expect(try KeyPositions.read(c.path) == d.positions, "beside \(c.clipID)")
        }
        // Cleared by null; a swing never marked has none and no tempo.
        #expect(try send(s, "PUT", "/api/swings/\(id)/positions", #"{"address": null}"#).status == 200)
        #expect(try decode(StudioAPI.SwingDetail.self, s, "/api/swings/\(id)").tempo == nil)
        #expect(try decode(StudioAPI.SwingDetail.self, s, "/api/swings/\(lib.swings[1])").positions == KeyPositions())
    }

    /// A coach changes the student in the same second as a swing arrives (the receipt's wall time says only the
    /// second): the host's monotonic clock, stamped on both, places it.
    @Test func aChangeOfStudentInTheSameSecondAsASwingIsPlacedByTheMonotonicClock() throws {
        let tmp = TemporaryDirectory("ppc-roster-same-second")
        let roster = try Roster(library: tmp.path)
        let a = try roster.add(name: "A", handedness: .right, notes: "")
        let b = try roster.add(name: "B", handedness: .right, notes: "")
        try roster.setHitting(
            bay: "bay-1", student: a.id, since: "2026-12-04T09:00:00.000Z", hostBoot: "boot", sinceMonoNs: 1_000)
        try roster.setHitting(
            bay: "bay-1", student: b.id, since: "2026-12-04T09:03:10.600Z", hostBoot: "boot", sinceMonoNs: 5_000)
        let p = roster.placement
        let at = "2026-12-04T09:03:10Z"
        #expect(p.turn(bay: "bay-1", receivedAt: at, hostBoot: "boot", receivedMonoNs: 4_000)?.turn.student == a.id)
        #expect(p.turn(bay: "bay-1", receivedAt: at, hostBoot: "boot", receivedMonoNs: 6_000)?.turn.student == b.id)
        // Received on another boot: by the wall clock, the turn's milliseconds against the receipt's second.
        #expect(p.turn(bay: "bay-1", receivedAt: at, hostBoot: "other", receivedMonoNs: 6_000)?.turn.student == a.id)
        #expect(p.turn(bay: "bay-1", receivedAt: "2026-12-04T09:03:11Z")?.turn.student == b.id)
        #expect(p.turn(bay: "bay-1", receivedAt: "2026-12-04T08:59:59Z") == nil)
    }

    @Test func aRosterFileThatDoesNotReadIsNamed() throws {
        let tmp = TemporaryDirectory("ppc-roster-bad")
        try Data(
            #"{"format": "ppc-students", "version": 1, "students": [{"id": "../x", "name": "X", "handedness": "right", "notes": ""}], "turns": []}"#
                .utf8
        )
        .write(to: URL(fileURLWithPath: tmp.sub("students.json")))
        #expect {
            _ = try Roster(library: tmp.path)
        } throws: { "\($0)".contains("students.json") && "\($0)".contains("students[0].id") }
    }
}

/// Tags (issue 35, point 1): the coach's words on swings, filtered and searched, kept by swing id.
extension StudioTests {
    @Test func tagsAreKeptBySwingFilteredAndSearchedAndGoWithADeletedSwing() throws {
        let lib = try library()
        let s = lib.studio
        let put = try send(
            s, "PUT", "/api/swings/\(lib.swings[0])/tags", #"{"tags": ["Driver", "  over   the top ", "driver"]}"#)
        #expect(put.status == 200, "\(put.text)")
        #expect(
            try JSONDecoder().decode(StudioAPI.Tags.self, from: Data(put.text.utf8)).tags == ["Driver", "over the top"])
        #expect(try send(s, "PUT", "/api/swings/\(lib.swings[2])/tags", #"{"tags": ["driver"]}"#).status == 200)
        let byTag = try decode(StudioAPI.SwingList.self, s, "/api/swings?tag=DRIVER")
        #expect(Set(byTag.swings.map(\.id)) == [lib.swings[0], lib.swings[2]])
        #expect(byTag.swings.first { $0.id == lib.swings[0] }?.tags == ["Driver", "over the top"])
        #expect(try decode(StudioAPI.SwingList.self, s, "/api/swings?q=over%20the").swings.map(\.id) == [lib.swings[0]])
        #expect(
            try decode(StudioAPI.SwingDetail.self, s, "/api/swings/\(lib.swings[0])").tags == [
                "Driver", "over the top",
            ])
        let all = try decode(StudioAPI.TagList.self, s, "/api/tags").tags
        #expect(all == [.init(tag: "Driver", swings: 2), .init(tag: "over the top", swings: 1)])
        // Refused, naming why.
        let long = try send(
            s, "PUT", "/api/swings/\(lib.swings[0])/tags", #"{"tags": ["\#(String(repeating: "x", count: 41))"]}"#)
        #expect(long.status == 400 && long.text.contains("tags[0]"), "\(long.text)")
        #expect(try send(s, "PUT", "/api/swings/nope/tags", #"{"tags": []}"#).status == 404)
        #expect(try send(s, "PUT", "/api/swings/\(lib.swings[0])/tags", #"{"tags": "driver"}"#).status == 400)
        // Kept in the library: a studio started again reads them.
        s.stop()
        let again = try Studio(
            host: "127.0.0.1", port: 0, library: lib.tmp.path, catalogue: lib.catalogue, roster: lib.roster,
            live: { [] })
        defer { again.stop() }
        #expect(try decode(StudioAPI.SwingDetail.self, again, "/api/swings/\(lib.swings[2])").tags == ["driver"])
        // A deleted swing takes its tags with it.
        #expect(try send(again, "DELETE", "/api/swings/\(lib.swings[2])", "{}").status == 200)
        #expect(try decode(StudioAPI.TagList.self, again, "/api/tags").tags.first { $0.tag == "Driver" }?.swings == 1)
    }
}
