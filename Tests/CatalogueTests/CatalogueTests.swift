import Foundation
import TestSupport
import Testing

@testable import Catalogue

@Suite struct CatalogueTests {
    static func clip(_ id: String, _ device: String, t0: Int64, offset: Int64? = 0, uncertainty: Int64? = 50_000)
        -> CatalogueClip
    {
        CatalogueClip(
            clipID: id, device: device, session: "s", sessionID: "x", t0DeviceNs: t0, t0HostNs: offset.map { t0 + $0 },
            t0UncertaintyNs: uncertainty, frames: 300, captureProfile: "320x180@60 h264", belowPolicy: nil,
            receivedAt: "now",
            path: "/lib/\(device)/\(id)", bytes: 1000)
    }

    /// A catalogue of schema 1 (before swings were placed) opens at schema 2 with each clip placed where the old rule put
    /// it and named as the old rule named it (its smallest clip id): a swing page saved then still opens, its marks kept.
    @Test func aCatalogueOfTheOldSchemaKeepsItsSwingsAndTheirIds() throws {
        let tmp = TemporaryDirectory("ppc-catalogue-v1")
        let path = tmp.sub("catalogue.sqlite")
        let sql = """
            PRAGMA journal_mode=WAL; CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
            BEGIN; \(Catalogue.migrations[0]) INSERT INTO meta VALUES('schema_version', '1');
            INSERT INTO clips VALUES('b-1','bay-b','s','x',1000000,1000000,50000,300,'p',NULL,'2026-12-01T10:00:02Z','/lib/b/b-1',1,'starred','wrist');
            INSERT INTO clips VALUES('a-1','bay-a','s','x',1002000,1002000,50000,300,'p',NULL,'2026-12-01T10:00:01Z','/lib/a/a-1',1,'','');
            INSERT INTO clips VALUES('a-2','bay-a','s','x',9000000000,9000000000,50000,300,'p',NULL,'2026-12-01T10:00:03Z','/lib/a/a-2',1,'','');
            COMMIT;
            """
        let made = try ToolRunner.runProgram(
            "/usr/bin/python3",
            [
                "-c", "import sqlite3,sys; c=sqlite3.connect(sys.argv[1]); c.executescript(sys.argv[2]); c.close()",
                path, sql,
            ])
        #expect(made.status == 0, "\(made.stderr)")
        let c = try Catalogue(path: path)
        let clips = try c.clips()
        #expect(clips.map { $0.swingID } == ["a-1", "a-1", "a-2"], "\(clips.map(\.clipID))")
        #expect(clips.map(\.receivedSeq) == [2, 1, 3], "in the order they were received: a-1, b-1, a-2")
        #expect(Catalogue.placedSwings(clips).map { $0.map(\.clipID) } == [["a-2"], ["a-1", "b-1"]])
        #expect(clips.first { $0.clipID == "b-1" }?.flags == [.starred])
        #expect(try c.scalar("SELECT value FROM meta WHERE key = 'schema_version'") == "2")
    }

    @Test func clipsAreRecordedReplacedAndReadBackAfterReopening() throws {
        let tmp = TemporaryDirectory("ppc-catalogue")
        let path = tmp.sub("catalogue.sqlite")
        do {
            let c = try Catalogue(path: path)
            try c.record(
                Self.clip("a-1", "bay-a", t0: 1_000), files: [("clip.mp4", 900, "00ff"), ("meta.json", 100, "ff00")])
            // again: replaced, not doubled
            try c.record(Self.clip("a-1", "bay-a", t0: 1_000), files: [("clip.mp4", 900, "00ff")])
            try c.record(Self.clip("b-1", "bay-b", t0: 2_000), files: [])
        }
        let again = try Catalogue(path: path)  // reopened: the schema is already at its version
        #expect(try again.clips().map(\.clipID) == ["a-1", "b-1"])
        #expect(try again.scalar("SELECT COUNT(*) FROM files WHERE clip_id = 'a-1'") == "1")
        #expect(try again.scalar("SELECT value FROM meta WHERE key = 'schema_version'") == "\(Catalogue.schemaVersion)")
        // A clip whose folder is gone is forgotten, files and all; forgetting one not there is nothing.
        try again.forget(clipID: "a-1")
        try again.forget(clipID: "nope")
        #expect(
            try again.clips().map(\.clipID) == ["b-1"]
                && again.scalar("SELECT COUNT(*) FROM files WHERE clip_id = 'a-1'") == "0")
    }

    @Test func flagsAndNotesPersistAcrossReopeningAndRerecording() throws {
        let tmp = TemporaryDirectory("ppc-catalogue-flags")
        let path = tmp.sub("catalogue.sqlite")
        do {
            let c = try Catalogue(path: path)
            try c.record(Self.clip("a-1", "bay-a", t0: 1_000), files: [])
            try c.annotate(clipID: "a-1", flags: [.kept, .starred], notes: "good strike")
            #expect { try c.annotate(clipID: "a-1", flags: [.kept, .discarded], notes: nil) } throws: {
                "\($0)".contains("not both")
            }
            #expect { try c.annotate(clipID: "nope", flags: [.kept], notes: nil) } throws: {
                "\($0)".contains("nope: no such clip")
            }
            // A rebuild records the clip again from its files: what a person said of it stays.
            try c.record(Self.clip("a-1", "bay-a", t0: 1_000), files: [])
        }
        let again = try Catalogue(path: path)
        let a = try #require(try again.clips().first)
        #expect(a.flags == [.kept, .starred] && a.notes == "good strike")
        try again.annotate(clipID: "a-1", flags: [.discarded], notes: nil)
        #expect(try again.clips().first?.flags == [.discarded] && (try again.clips().first?.notes) == "good strike")
        #expect(ClipFlag.parse("kept,unknown-from-a-newer-host") == [.kept])
        #expect(try again.clip("a-1")?.notes == "good strike")
        #expect(try again.clip("nope") == nil)
    }

    @Test func aCatalogueFromANewerPpcHostIsRefusedNotDowngraded() throws {
        let tmp = TemporaryDirectory("ppc-catalogue-new")
        let path = tmp.sub("catalogue.sqlite")
        try Catalogue(path: path).exec("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
        #expect { try Catalogue(path: path) } throws: { "\($0)".contains("schema version 99 is newer") }
        try Data("not a database".utf8).write(to: URL(fileURLWithPath: tmp.sub("bad.sqlite")))
        #expect(throws: CatalogueError.self) { try Catalogue(path: tmp.sub("bad.sqlite")).clips() }
    }

    /// A file that is no database, or a damaged one, is said to be damaged (what `catalogue rebuild` keeps aside and
    /// makes again from the library); a newer schema is not.
    @Test func aDamagedCatalogueIsToldFromANewerOne() throws {
        let tmp = TemporaryDirectory("ppc-catalogue-damaged")
        for (name, bytes) in [
            ("text", Array("not a database".utf8)),
            ("zeros", Array("SQLite format 3\u{0}".utf8) + [UInt8](repeating: 0, count: 4000)),
        ] {
            try Data(bytes).write(to: URL(fileURLWithPath: tmp.sub(name)))
            do {
                _ = try Catalogue(path: tmp.sub(name))
                Issue.record("\(name) opened")
            } catch { #expect(error.damaged, "\(name): \(error)") }
        }
        try Catalogue(path: tmp.sub("new.sqlite")).exec("UPDATE meta SET value = '99' WHERE key = 'schema_version'")
        do { _ = try Catalogue(path: tmp.sub("new.sqlite")) } catch { #expect(!error.damaged) }
    }

    @Test func clipsFromSeveralDevicesAtOneImpactAreOneSwing() {
        let clips = [
            // 4 ms apart: one swing
            Self.clip("a-1", "bay-a", t0: 10_000_000_000), Self.clip("b-1", "bay-b", t0: 10_004_000_000),
            // one device twice: two swings
            Self.clip("a-2", "bay-a", t0: 12_000_000_000), Self.clip("a-3", "bay-a", t0: 12_010_000_000),
            Self.clip("c-1", "bay-c", t0: 15_000_000_000, offset: nil),  // no clock relation: alone
        ]
        let swings = Catalogue.swings(clips)
        #expect(
            swings.map { $0.map(\.clipID) } == [["a-1", "b-1"], ["a-2"], ["a-3"], ["c-1"]],
            "\(swings.map { $0.map(\.clipID) })")
        // Beyond the combined uncertainty plus the tolerance: two swings.
        #expect(Catalogue.swings([Self.clip("a", "bay-a", t0: 0), Self.clip("b", "bay-b", t0: 30_000_000)]).count == 2)
    }

    /// A catalogue is a file anyone with the library can edit, or a database other hosts share: figures no host could
    /// have catalogued are named by field, cost that clip only, and the arithmetic over them does not trap.
    @Test func anEntryOutOfRangeIsNamedAndTheArithmeticOverItHolds() {
        var wild = Self.clip("w-1", "bay-b", t0: 0)
        #expect(wild.problem == nil)
        let cases: [(WritableKeyPath<CatalogueClip, Int64>, Int64, String)] = [
            (\.t0DeviceNs, .max, "t0_device_ns"), (\.t0DeviceNs, 1 << 60 + 1, "t0_device_ns"), (\.bytes, -1, "bytes"),
            (\.bytes, .max, "bytes"),
        ]
        for (field, value, name) in cases {
            var c = wild
            c[keyPath: field] = value
            #expect(
                c.problem?.contains("clip w-1: catalogue entry's \(name) \(value) is out of range") == true,
                "\(c.problem ?? "nil")")
        }
        var c = wild
        c.t0HostNs = .min
        #expect(c.problem?.contains("t0_host_ns") == true)
        c = wild
        c.t0UncertaintyNs = -1
        #expect(c.problem?.contains("t0_uncertainty_ns") == true)
        c = wild
        c.frames = -5
        #expect(c.problem?.contains("frames -5") == true)

        // Swings over extreme entries: no trap, and nothing far apart is one swing.
        wild.t0HostNs = .max
        wild.t0UncertaintyNs = .max
        var far = Self.clip("f-1", "bay-a", t0: 0)
        far.t0HostNs = .min
        far.t0UncertaintyNs = .max
        let swings = Catalogue.swings([far, Self.clip("a-1", "bay-c", t0: 0), wild])
        #expect(swings.flatMap { $0 }.count == 3)  // every clip placed, none trapped on
        let split = Catalogue.readable([far, Self.clip("a-1", "bay-c", t0: 0), wild])
        #expect(split.clips.map(\.clipID) == ["a-1"] && split.refused.map(\.clipID) == ["f-1", "w-1"])
        #expect(Catalogue.total([.max, 1, 5]) == .max && Catalogue.total([3, 4]) == 7)
    }
}
