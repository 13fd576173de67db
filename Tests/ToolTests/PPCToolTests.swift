import Foundation
import TestSupport
import Testing

@Suite("ppc-tool end to end: exit codes 0 / 64 / 65 / 1 and what it prints")
struct PPCToolTests {
    /// `bench studio` runs and says what it measured (no figure is judged here: speed lives in benchmarks). It had
    /// stopped running when the studio began to answer only to its own Host with its port, and nothing noticed.
    @Test func benchStudioRuns() throws {
        let r = try ToolRunner.run(["bench", "studio", "--json", "--requests", "1"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(o["provenance"] as? String == "measured" && (o["sizes"] as? [[String: Any]])?.count == 3, "\(o)")
    }

    /// Every other quick bench runs too, at a toy size, and says what it measured (no figure is judged: speed lives in
    /// benchmarks). `make bench` is not part of `make test`, and two benches had stopped running before anyone noticed.
    /// (`bench link` takes half a minute even small; `bench detect` writes corpora.)
    @Test(arguments: [
        ["index", "--appends", "20000"],
        ["ring", "--fragments", "2", "--bytes", "65536", "--rounds", "1", "--durability", "none"],
        ["encode", "--frames", "12", "--size", "160x120", "--mjpeg-size", "160x120"],
        ["faults", "--kills", "1", "--seed", "1"],
    ])
    func benchRuns(_ args: [String]) throws {
        let tmp = TemporaryDirectory("ppc-bench-smoke")
        let dirs =
            args[0] == "encode"
            ? ["--dir", tmp.path, "--frames-dir", tmp.path] : args[0] == "ring" ? ["--dir", tmp.path] : []
        let r = try ToolRunner.run(["bench"] + args + dirs + ["--json"])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(
            try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any], "\(r.stdout)")
        #expect(o["provenance"] as? String == "measured" && o["machine"] != nil && o["date"] != nil, "\(o)")
    }

    @Test func configShowJSONCarriesProvenance() throws {
        let r = try ToolRunner.run(["config", "show", "--json"])
        #expect(r.status == 0)
        let array = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        #expect(array.count > 30)
        for p in array {
            for key in ["key", "value", "unit", "provenance", "note"] {
                #expect(p[key] != nil, "\(p["key"] ?? "?") lacks \(key)")
            }
            let mark = p["provenance"] as? String
            #expect(["measured", "vendor", "derived", "assumed"].contains(mark))
            #expect((p["derivation"] != nil) == (mark == "derived"))
            #expect((p["measurement"] != nil) == (mark == "measured"))
        }
        let ring = try #require(array.first { $0["key"] as? String == "capture.ringSeconds" })
        #expect((ring["value"] as? NSNumber)?.doubleValue == 10)
    }

    @Test func configShowWithAMeasuredOverride() throws {
        let r = try ToolRunner.run([
            "config", "show", "--json", "--set", "capture.videoBitrateBps=40000000",
            "--measured", "capture.videoBitrateBps=2026-11-30 E-M2 sweep rig",
        ])
        #expect(r.status == 0)
        let array = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        let p = try #require(array.first { $0["key"] as? String == "capture.videoBitrateBps" })
        #expect(p["provenance"] as? String == "measured")
        #expect((p["measurement"] as? [String: Any])?["date"] as? String == "2026-11-30")
    }

    @Test func measuredWithoutAValueIsRefused() throws {
        let r = try ToolRunner.run(["config", "show", "--measured", "capture.videoBitrateBps=2026-11-30 rig"])
        #expect(r.status == 65)
        #expect(r.stderr.contains("no --set capture.videoBitrateBps=VALUE"))
    }

    @Test func configExplainShowsTheArithmetic() throws {
        let r = try ToolRunner.run(["config", "explain", "device.storageFloorBytes"])
        #expect(r.status == 0)
        #expect(r.stdout.contains("[derived]"))
        #expect(r.stdout.contains("session.volumeBytes + capture.ringFootprintBytes"))
        #expect(r.stdout.contains("proposal"))
        let bad = try ToolRunner.run(["config", "explain", "capture.ringSecs"])
        #expect(bad.status == 65)
        #expect(bad.stderr.contains("did you mean capture.ringSeconds?"))
    }

    @Test(arguments: [
        ([String](), Int32(0), ""),
        (["--set", "capture.clipPostNs=9000000000"], 65, "capture.clipPostNs (9000000000 ns)"),
        (["--set", "capture.expectedFrameRate=25"], 65, "12.5 frames"),
        (["--set", "capture.ringSeconds=3"], 65, "capture.ringSeconds is derived"),
        (["--set", "capture.fragmentCapacity=many"], 65, "expects integer"),
        (["--set", "link.concurrentPayloadTransfers=2"], 65, "hard limit is 1"),
        (["--manifest", ToolRunner.fixture("manifests/bad-config.json")], 65, "config.capture.ringSecs"),
        (["--manifest", ToolRunner.repoFile("Manifests/default.json")], 0, ""),
    ])
    func configCheck(args: [String], status: Int32, message: String) throws {
        let r = try ToolRunner.run(["config", "check"] + args)
        #expect(r.status == status, "\(r.stderr)")
        #expect(message.isEmpty || r.stderr.contains(message), "\(r.stderr)")
    }

    @Test func configCheckJSON() throws {
        let r = try ToolRunner.run(["config", "check", "--json", "--set", "capture.clipPostNs=9000000000"])
        #expect(r.status == 65)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        #expect(o["valid"] as? Bool == false)
        #expect((o["problems"] as? [[String: Any]])?.first?["key"] as? String == "capture.clipPostNs")
    }

    @Test(arguments: [
        (
            "unknown-plugin.json",
            "sources[0].plugin: unknown source plugin 'synthetic.vidoe' (did you mean 'synthetic.video'?); known: file, network, synthetic.mjpeg, synthetic.video, v4l2, alsa, synthetic.audio, file.imu, synthetic.imu"
        ),
        ("unknown-key.json", "3:66: sources[0].params.fsp: unknown key 'fsp' (did you mean 'fps'?)"),
        ("wrong-type.json", "sources[0].params.fps: expected integer, found string \"120\""),
        ("missing-required.json", "session: missing required key 'session'"),
        ("malformed.json", "malformed.json:3:47: malformed JSON"),
        ("bad-config.json", "config.capture.ringSeconds: capture.ringSeconds is derived"),
    ])
    func manifestCheckRefusesBadInput(file: String, message: String) throws {
        let r = try ToolRunner.run(["manifest", "check", ToolRunner.fixture("manifests/\(file)")])
        #expect(r.status == 65)
        #expect(r.stderr.contains(message), "\(r.stderr)")
    }

    @Test func manifestCheckJSONListsProblems() throws {
        let r = try ToolRunner.run([
            "manifest", "check", "--json", ToolRunner.fixture("manifests/missing-required.json"),
        ])
        #expect(r.status == 65)
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let paths = (o["problems"] as? [[String: Any]])?.compactMap { $0["path"] as? String }
        #expect(paths == ["session", "sources[0].plugin"])
    }

    @Test func everyShippedManifestIsValid() throws {
        let dir = ToolRunner.repoFile("Manifests")
        let files = try FileManager.default.contentsOfDirectory(atPath: dir).filter { $0.hasSuffix(".json") }
        #expect(!files.isEmpty)
        for f in files {
            let r = try ToolRunner.run(["manifest", "check", "\(dir)/\(f)"])
            #expect(r.status == 0, "\(f): \(r.stderr)")
        }
    }

    @Test func missingManifestFileIsBadData() throws {
        let r = try ToolRunner.run(["manifest", "check", "/nonexistent/m.json"])
        #expect(r.status == 65)
        #expect(r.stderr.contains("/nonexistent/m.json"))
    }

    @Test func pluginsJSONDescribesEachPlugin() throws {
        let r = try ToolRunner.run(["plugins", "--json"])
        #expect(r.status == 0)
        let array = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]])
        let names = array.compactMap { $0["name"] as? String }
        #expect(
            names.contains("synthetic.video") && names.contains("synthetic.audio") && names.contains("synthetic.imu"))
        for p in array {
            #expect(p["kind"] is String && p["summary"] is String)
            for param in p["parameters"] as? [[String: Any]] ?? [] {
                #expect(param["name"] is String && param["type"] is String && param["default"] != nil)
            }
        }
    }

    @Test(arguments: [
        ["--help"], ["config", "--help"], ["config", "show", "--help"], ["config", "explain", "--help"],
        ["config", "check", "--help"], ["manifest", "--help"], ["manifest", "check", "--help"], ["plugins", "--help"],
        ["run", "--help"], ["--version"],
    ])
    func helpAtEveryLevelExitsZero(args: [String]) throws {
        let r = try ToolRunner.run(args)
        #expect(r.status == 0)
        #expect(!r.stdout.isEmpty)
    }

    @Test(arguments: [["bogus"], ["config", "show", "--bogus"], ["config", "explain"], ["manifest", "check"]])
    func usageErrorsExit64(args: [String]) throws {
        let r = try ToolRunner.run(args)
        #expect(r.status == 64)
        #expect(r.stderr.contains("USAGE:"))
    }

}
