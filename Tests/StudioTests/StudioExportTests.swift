import Catalogue
import Foundation
import Library
import TestSupport
import Testing

@testable import Studio

/// Something to send (issue 35, point 5): an export of a swing's angles side by side, slowed, drawings burned in, with
/// sound, made off the request path; judged by ffprobe and ffmpeg's pixels.
extension StudioTests {
    /// One swing of two angles (face-on, down-the-line): copies of a real clip of the short session, whole.
    func twoAngleSwing() throws -> (tmp: TemporaryDirectory, studio: Studio, swing: String, angles: [String]) {
        let tmp = TemporaryDirectory("ppc-studio-export")
        let catalogue = try Catalogue(path: tmp.sub("catalogue.sqlite"))
        let real = try #require(
            try FileManager.default.contentsOfDirectory(atPath: Self.library.path + "/clips").sorted().first)
        let meta = try ClipMetaFacts("\(Self.library.path)/clips/\(real)/meta.json")
        var swing: String?
        var angles: [String] = []
        for (n, device) in ["face-on", "down-the-line"].enumerated() {
            let id = "\(device)-1"
            let dir = tmp.sub("\(device)/\(id)")
            try FileManager.default.createDirectory(atPath: tmp.sub(device), withIntermediateDirectories: true)
            try FileManager.default.copyItem(atPath: "\(Self.library.path)/clips/\(real)", toPath: dir)
            try? FileManager.default.removeItem(atPath: dir + "/drawings.json")
            let placed = try catalogue.place(
                CatalogueClip(
                    clipID: id, device: device, session: "s", sessionID: "20261204T090000Z-\(device)",
                    t0DeviceNs: meta.t0Ns, t0HostNs: 5_000_000_000 + Int64(n), t0UncertaintyNs: 1_000,
                    frames: meta.frames, captureProfile: "320x180@120 h264", belowPolicy: nil,
                    receivedAt: "2026-12-04T09:10:0\(n)Z", path: dir, bytes: 100, hostBoot: "boot",
                    receivedMonoNs: Int64(n + 1) * 1_000_000_000, bay: "bay-1"),
                files: [], rule: SwingRule())
            swing = swing ?? placed.swingID ?? id
            angles.append(id)
        }
        let studio = try Studio(host: "127.0.0.1", port: 0, library: tmp.path, catalogue: catalogue, live: { [] })
        return (tmp, studio, try #require(swing), angles)
    }

    /// t0 and frames of a clip's meta.json.
    struct ClipMetaFacts {
        let t0Ns: Int64
        let frames: Int
        init(_ path: String) throws {
            let m =
                try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: path))) as! [String: Any]
            t0Ns = ((m["t0Ns"] as! [String: Any])["value"] as! NSNumber).int64Value
            frames = m["frames"] as! Int
        }
    }

    /// Waits for the exports queued so far to be made (the studio makes them one at a time, in order, on its queue).
    func exportsMade(_ studio: Studio) { studio.exports.queue.sync {} }

    @Test func anExportPutsTheAnglesSideBySideSlowedWithTheLineBurnedInAndTheSound() throws {
        let w = try twoAngleSwing()
        defer { w.studio.stop() }
        // A red line across the face-on angle for the whole clip (fractions of the frame), put as the page puts it.
        let put = try send(
            w.studio, "PUT", "/api/clips/\(w.angles[0])/drawings",
            ##"{"drawings": [{"kind": "line", "t": 0.5, "points": [[0.05, 0.5], [0.95, 0.5]], "color": "#ff0000", "span": "clip"}]}"##
        )
        #expect(put.status == 200, "\(put.text)")
        let made = try send(
            w.studio, "POST", "/api/exports",
            #"{"swings": [{"swing": "\#(w.swing)"}], "before": 0.5, "after": 0.5, "slow": {"factor": 0.25, "from": -0.1, "to": 0.1}}"#
        )
        #expect(made.status == 202, "\(made.text)")
        let queued = try JSONDecoder().decode(StudioAPI.Export.self, from: Data(made.text.utf8))
        #expect(queued.state == "queued" || queued.state == "making")
        exportsMade(w.studio)
        let e = try decode(StudioAPI.Export.self, w.studio, "/api/exports/\(queued.id)")
        #expect(e.state == "done", "\(e.error ?? "")")
        #expect(e.width == 640 && e.height == 180)  // two 320×180 angles side by side
        #expect(e.sound == true)
        let file = try get(w.studio, try #require(e.video))
        #expect(file.status == 200)
        let path = w.tmp.sub("export.mp4")
        try file.body.write(to: URL(fileURLWithPath: path))
        let probe = try ToolRunner.runProgram(
            "ffprobe",
            ["-v", "error", "-show_entries", "stream=codec_type,width,height:format=duration", "-of", "json", path])
        let json = try #require(try JSONSerialization.jsonObject(with: probe.stdout) as? [String: Any])
        let streams = try #require(json["streams"] as? [[String: Any]])
        #expect(streams.contains { $0["codec_type"] as? String == "video" && $0["width"] as? Int == 640 })
        #expect(streams.contains { $0["codec_type"] as? String == "audio" })
        // 1 s kept, 0.2 s of it at ¼×: 1 + 0.2 × 3 = 1.6 s.
        let duration = Double(((json["format"] as? [String: Any])?["duration"] as? String) ?? "") ?? 0
        #expect(abs(duration - 1.6) < 0.15, "duration \(duration)")
        // The line's pixels: red across the left angle's middle row, not in the right angle's.
        let frame = try ToolRunner.runProgram(
            "ffmpeg",
            ["-v", "error", "-ss", "0.2", "-i", path, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"])
        try #require(frame.stdout.count == 640 * 180 * 3)
        let px = [UInt8](frame.stdout)
        let red = { (x: Int, y: Int) -> Bool in
            let o = (y * 640 + x) * 3
            return Int(px[o]) > 110 && Int(px[o]) > Int(px[o + 1]) + 80 && Int(px[o]) > Int(px[o + 2]) + 80
        }
        let column = (85..<95).map { y -> String in
            let o = (y * 640 + 160) * 3
            return "\(px[o]),\(px[o + 1]),\(px[o + 2])"
        }
        // (H.264's 4:2:0 spreads a 2-pixel line's colour over the rows beside it: any of rows 87…92.)
        let lined = { (x: Int) in (87..<93).contains { red(x, $0) } }
        #expect((80..<240).filter(lined).count > 140, "the line across the face-on angle: \(column)")
        #expect((400..<560).filter(lined).count < 10, "no line on the down-the-line angle")
        // Listed, and removed.
        let list = try decode(StudioAPI.ExportList.self, w.studio, "/api/exports")
        #expect(list.exports.map(\.id) == [e.id])
        #expect(try send(w.studio, "DELETE", "/api/exports/\(e.id)", "{}").status == 200)
        #expect(try get(w.studio, "/exports/\(e.id).mp4").status == 404)
    }

    @Test func anExportThatCannotBeMadeIsRefusedAtOnceNamingWhy() throws {
        let w = try twoAngleSwing()
        defer { w.studio.stop() }
        let cases: [(String, Int, String)] = [
            (#"{"swings": [{"swing": "nope"}]}"#, 404, "nope: no such swing"),
            (#"{"swings": [{"swing": "\#(w.swing)"}], "align": "top"}"#, 400, "has no top marked"),
            (#"{"swings": [{"swing": "\#(w.swing)"}], "layout": "sideways"}"#, 400, "layout sideways"),
            (#"{"swings": [{"swing": "\#(w.swing)", "angle": "other"}]}"#, 404, "not an angle of swing"),
            (
                #"{"swings": [{"swing": "\#(w.swing)"}], "slow": {"factor": 0.01, "from": 0, "to": 1}}"#, 400,
                "slow factor"
            ),
            (#"{"swings": []}"#, 400, "swings: 0"),
            (#"{"swings": 3}"#, 400, "the body must be"),
        ]
        for (body, status, words) in cases {
            let r = try send(w.studio, "POST", "/api/exports", body)
            #expect(r.status == status, "\(body): \(r.status) \(r.text)")
            #expect(r.text.contains(words), "\(body): \(r.text)")
        }
        #expect(try decode(StudioAPI.ExportList.self, w.studio, "/api/exports").exports.isEmpty)
    }

    @Test func anExportLeftUnmadeWhenTheHostStoppedIsMadeWhenItStarts() throws {
        let w = try twoAngleSwing()
        let made = try send(w.studio, "POST", "/api/exports", #"{"swings": [{"swing": "\#(w.swing)"}], "after": 0.2}"#)
        let id = try JSONDecoder().decode(StudioAPI.Export.self, from: Data(made.text.utf8)).id
        exportsMade(w.studio)
        w.studio.stop()
        // As though the host stopped while making it: its record says "making", its file is not there.
        let record = w.tmp.sub("exports/\(id)/export.json")
        var e = try JSONDecoder().decode(StudioAPI.Export.self, from: Data(contentsOf: URL(fileURLWithPath: record)))
        e.state = "making"
        e.progress = 0.4
        try JSONEncoder().encode(e).write(to: URL(fileURLWithPath: record))
        try FileManager.default.removeItem(atPath: w.tmp.sub("exports/\(id)/export.mp4"))
        let again = try Studio(
            host: "127.0.0.1", port: 0, library: w.tmp.path,
            catalogue: try Catalogue(path: w.tmp.sub("catalogue.sqlite")),
            live: { [] })
        defer { again.stop() }
        exportsMade(again)
        #expect(try decode(StudioAPI.Export.self, again, "/api/exports/\(id)").state == "done")
        #expect(try get(again, "/exports/\(id).mp4").status == 200)
    }
}

/// Share links (issue 35, point 5): read-only, one swing, lesson or export; refused for anything else, after expiry and
/// after revocation; not behind the studio's own key.
extension StudioTests {
    func share(_ studio: Studio, _ body: String) throws -> StudioAPI.Share {
        let r = try send(studio, "POST", "/api/shares", body)
        #expect(r.status == 201, "\(body): \(r.status) \(r.text)")
        return try JSONDecoder().decode(StudioAPI.Share.self, from: Data(r.text.utf8))
    }

    @Test func aShareLinkOpensOnlyWhatItSharesUntilItIsRevoked() throws {
        let lib = try library()
        defer { lib.studio.stop() }
        let s = lib.studio
        let link = try share(s, #"{"kind": "swing", "target": "\#(lib.swings[0])"}"#)
        #expect(link.key.count == 64 && link.url == "/share/\(link.key)" && link.state == "active")
        #expect(!link.key.contains(link.id.dropFirst()), "its id gives away nothing of its key")
        #expect(link.swings == [lib.swings[0]])
        // Nothing it serves is kept by a cache.
        let answer = try get(s, "/share/\(link.key)/api")
        #expect(answer.headers["cache-control"]?.contains("no-store") == true, "\(answer.headers)")
        let shared = try decode(StudioAPI.Shared.self, s, "/share/\(link.key)/api")
        #expect(shared.swings.map(\.id) == [lib.swings[0]])
        #expect(shared.swings[0].studentName == "Ana Ruiz")
        #expect(shared.swings[0].angles.count == 2)
        #expect(shared.swings[0].angles.allSatisfy { $0.video.hasPrefix("/share/\(link.key)/media/") })
        // Its own angles' media pass the link's check (these test clips have no video: 404 from media, not 403) …
        let own = try get(s, "/share/\(link.key)/media/face-on-1/clip.mp4")
        #expect(own.status == 404)
        // … any other clip, any other file and the studio's own API are refused.
        let other = try get(s, "/share/\(link.key)/media/face-on-5/clip.mp4")
        #expect(other.status == 403, "\(String(decoding: other.body, as: UTF8.self))")
        #expect(try get(s, "/share/\(link.key)/media/face-on-1/meta.json").status == 404)
        #expect(try get(s, "/share/\(link.key)/export.mp4").status == 403)
        #expect(try get(s, "/share/not-a-key/api").status == 404)
        #expect(try send(s, "POST", "/share/\(link.key)/api", "{}").status == 405)
        // The page opens for any link (it holds nothing; its /api says why a link does not open).
        let page = try get(s, "/share/\(link.key)")
        #expect(page.status == 200 && String(decoding: page.body, as: UTF8.self).contains("A swing from your coach"))
        // Revoked: refused, and listed as revoked.
        #expect(try send(s, "DELETE", "/api/shares/\(link.id)", "{}").status == 200)
        let gone = try get(s, "/share/\(link.key)/api")
        #expect(gone.status == 410 && String(decoding: gone.body, as: UTF8.self).contains("withdrawn"))
        #expect(try decode(StudioAPI.ShareList.self, s, "/api/shares").shares.map(\.state) == ["revoked"])
        #expect(try send(s, "DELETE", "/api/shares/nope", "{}").status == 404)
    }

    /// A swing's notes go with its link only when the coach asked (they may not be meant for the student), as they read
    /// when the link is opened.
    @Test func aLinksNotesGoOnlyWhenTheCoachAskedAndAsTheyReadNow() throws {
        let lib = try library()
        defer { lib.studio.stop() }
        let s = lib.studio
        let id = lib.swings[0]
        #expect(try send(s, "POST", "/api/swings/\(id)/annotate", #"{"notes": "Hands lead at impact"}"#).status == 200)
        let plain = try share(s, #"{"kind": "swing", "target": "\#(id)"}"#)
        let noted = try share(s, #"{"kind": "swing", "target": "\#(id)", "withNotes": true}"#)
        #expect(plain.withNotes == nil && noted.withNotes == true)
        #expect(try decode(StudioAPI.Shared.self, s, "/share/\(plain.key)/api").swings.map(\.notes) == [nil])
        #expect(
            try decode(StudioAPI.Shared.self, s, "/share/\(noted.key)/api").swings.map(\.notes) == [
                "Hands lead at impact"
            ])
        #expect(
            try send(s, "POST", "/api/swings/\(id)/annotate", #"{"notes": "Hands lead; hold the finish"}"#).status
                == 200)
        #expect(
            try decode(StudioAPI.Shared.self, s, "/share/\(noted.key)/api").swings.map(\.notes) == [
                "Hands lead; hold the finish"
            ])
        // The choice is kept with the link (newest first).
        #expect(try decode(StudioAPI.ShareList.self, s, "/api/shares").shares.map(\.withNotes) == [true, nil])
    }

    @Test func aLessonsLinkSharesEverySwingOfItAndAnExpiredLinkNothing() throws {
        let lib = try library()
        let s = lib.studio
        let lesson = try #require(
            try decode(StudioAPI.Lessons.self, s, "/api/lessons").lessons.first { $0.student == "ana-ruiz" })
        let link = try share(s, #"{"kind": "lesson", "target": "\#(lesson.id)", "hours": 1}"#)
        #expect(
            try decode(StudioAPI.Shared.self, s, "/share/\(link.key)/api").swings.map(\.id) == Array(lib.swings[0..<2]))
        // A lesson's link is its swings when it was made: one discarded before sharing is left out, and one discarded
        // after does not change what was sent.
        #expect(
            try send(s, "POST", "/api/swings/\(lib.swings[1])/annotate", #"{"flags": ["discarded"]}"#).status == 200)
        let later = try share(s, #"{"kind": "lesson", "target": "\#(lesson.id)"}"#)
        #expect(later.swings == [lib.swings[0]])
        #expect(try decode(StudioAPI.Shared.self, s, "/share/\(link.key)/api").swings.count == 2)
        #expect(try get(s, "/share/\(link.key)/media/face-on-5/clip.mp4").status == 403)  // Ben's swing
        for (body, words) in [
            (#"{"kind": "lesson", "target": "nope"}"#, "no such lesson"),
            (#"{"kind": "swing", "target": "nope"}"#, "no such swing"),
            (#"{"kind": "export", "target": "nope"}"#, "no such export"),
            (#"{"kind": "album", "target": "x"}"#, "kind album"),
            (#"{"kind": "swing", "target": "\#(lib.swings[0])", "hours": 100000}"#, "hours"),
        ] {
            let r = try send(s, "POST", "/api/shares", body)
            #expect(r.status == 400 || r.status == 404, "\(body): \(r.status)")
            #expect(r.text.contains(words), "\(body): \(r.text)")
        }
        s.stop()
        // An hour later, as its file says: expired.
        let file = lib.tmp.sub("shares.json")
        let text = try String(contentsOfFile: file, encoding: .utf8).replacingOccurrences(
            of: link.expires, with: "2020-01-01T00:00:00Z")
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        let again = try Studio(
            host: "127.0.0.1", port: 0, library: lib.tmp.path, catalogue: lib.catalogue, roster: lib.roster,
            live: { [] })
        defer { again.stop() }
        let expired = try get(again, "/share/\(link.key)/api")
        #expect(expired.status == 410 && String(decoding: expired.body, as: UTF8.self).contains("expired"))
    }

    @Test func anExportsLinkServesItsVideoPastTheStudiosKey() throws {
        let w = try twoAngleSwing()
        w.studio.stop()
        let keyed = try Studio(
            host: "127.0.0.1", port: 0, library: w.tmp.path,
            catalogue: try Catalogue(path: w.tmp.sub("catalogue.sqlite")),
            access: StudioAccess(key: StudioAccessTests.key), live: { [] })
        defer { keyed.stop() }
        let key = "?key=\(StudioAccessTests.key)"
        let made = try send(
            keyed, "POST", "/api/exports\(key)", #"{"swings": [{"swing": "\#(w.swing)"}], "after": 0.3}"#)
        let id = try JSONDecoder().decode(StudioAPI.Export.self, from: Data(made.text.utf8)).id
        exportsMade(keyed)
        let r = try send(keyed, "POST", "/api/shares\(key)", #"{"kind": "export", "target": "\#(id)"}"#)
        #expect(r.status == 201, "\(r.text)")
        let link = try JSONDecoder().decode(StudioAPI.Share.self, from: Data(r.text.utf8))
        // Without the studio's key: its API is refused, the link's export is served.
        #expect(try get(keyed, "/api/swings").status == 403)
        let shared = try decode(StudioAPI.Shared.self, keyed, "/share/\(link.key)/api")
        #expect(
            shared.kind == "export" && shared.swings.isEmpty && shared.export?.video == "/share/\(link.key)/export.mp4")
        let video = try get(keyed, "/share/\(link.key)/export.mp4")
        #expect(video.status == 200 && video.body.count > 1_000)
        // … and no clip's media through it.
        #expect(try get(keyed, "/share/\(link.key)/media/\(w.angles[0])/clip.mp4").status == 403)
        // Once the export is deleted, the link says so.
        #expect(try send(keyed, "DELETE", "/api/exports/\(id)\(key)", "{}").status == 200)
        #expect(try get(keyed, "/share/\(link.key)/export.mp4").status == 410)
    }
}

extension StudioTests {
    @Test func aComparisonOfTwoSwingsPutsEachSidesAngleSideBySideAlignedOnTheirImpact() throws {
        let w = try twoAngleSwing()
        defer { w.studio.stop() }
        // A second swing a minute later: the same clip under other ids, placed apart from the first.
        let catalogue = try Catalogue(path: w.tmp.sub("catalogue.sqlite"))
        let real = try #require(
            try FileManager.default.contentsOfDirectory(atPath: Self.library.path + "/clips").sorted().first)
        let meta = try ClipMetaFacts("\(Self.library.path)/clips/\(real)/meta.json")
        let dir = w.tmp.sub("face-on/face-on-2")
        try FileManager.default.copyItem(atPath: "\(Self.library.path)/clips/\(real)", toPath: dir)
        let second = try catalogue.place(
            CatalogueClip(
                clipID: "face-on-2", device: "face-on", session: "s", sessionID: "20261204T090000Z-face-on",
                t0DeviceNs: meta.t0Ns, t0HostNs: 65_000_000_000, t0UncertaintyNs: 1_000, frames: meta.frames,
                captureProfile: "320x180@120 h264", belowPolicy: nil, receivedAt: "2026-12-04T09:11:05Z", path: dir,
                bytes: 100, hostBoot: "boot", receivedMonoNs: 65_000_000_000, bay: "bay-1"),
            files: [], rule: SwingRule())
        let other = second.swingID ?? "face-on-2"
        #expect(other != w.swing)
        let made = try send(
            w.studio, "POST", "/api/exports",
            #"{"swings": [{"swing": "\#(w.swing)", "angle": "\#(w.angles[1])"}, {"swing": "\#(other)"}], "after": 0.5}"#
        )
        #expect(made.status == 202, "\(made.text)")
        let id = try JSONDecoder().decode(StudioAPI.Export.self, from: Data(made.text.utf8)).id
        exportsMade(w.studio)
        let e = try decode(StudioAPI.Export.self, w.studio, "/api/exports/\(id)")
        #expect(e.state == "done" && e.width == 640 && e.height == 180 && e.sound == true, "\(e)")
        #expect(e.title.hasPrefix("Comparison"), "\(e.title)")
    }

    @Test func anOverlayExportIsOneAngleOverTheOtherAtTheFirstsSize() throws {
        let w = try twoAngleSwing()
        defer { w.studio.stop() }
        let made = try send(
            w.studio, "POST", "/api/exports",
            #"{"swings": [{"swing": "\#(w.swing)"}], "layout": "overlay", "opacity": 0.3, "after": 0.4, "drawings": false}"#
        )
        #expect(made.status == 202, "\(made.text)")
        let id = try JSONDecoder().decode(StudioAPI.Export.self, from: Data(made.text.utf8)).id
        exportsMade(w.studio)
        let e = try decode(StudioAPI.Export.self, w.studio, "/api/exports/\(id)")
        #expect(e.state == "done" && e.width == 320 && e.height == 180, "\(e)")
        // Overlay asks for exactly two angles.
        let one = try send(
            w.studio, "POST", "/api/exports",
            #"{"swings": [{"swing": "\#(w.swing)", "angle": "\#(w.angles[0])"}], "layout": "overlay"}"#)
        #expect(one.status == 400 && one.text.contains("two angles"), "\(one.text)")
    }
}
