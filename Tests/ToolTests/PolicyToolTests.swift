import Foundation
import Glibc
import Syscall
import TestSupport
import Testing

/// Policy in a whole run: a thermal zone the test writes (`--thermal-root`), a storage floor set through its inputs.
@Suite(
    "ppc-tool run under policy: heat pauses transfer and minting (never capture); below the storage floor it refuses to arm"
)
struct PolicyToolTests {
    /// A /sys/class/thermal with one zone at `celsius`, trip points passive 80 °C and critical 100 °C.
    static func thermal(_ dir: String, celsius: Double) throws -> String {
        let z = "\(dir)/thermal_zone0"
        try FileManager.default.createDirectory(atPath: z, withIntermediateDirectories: true)
        try "\(Int(celsius * 1000))".write(toFile: "\(z)/temp", atomically: false, encoding: .utf8)
        try "passive".write(toFile: "\(z)/trip_point_0_type", atomically: false, encoding: .utf8)
        try "80000".write(toFile: "\(z)/trip_point_0_temp", atomically: false, encoding: .utf8)
        try "critical".write(toFile: "\(z)/trip_point_1_type", atomically: false, encoding: .utf8)
        try "100000".write(toFile: "\(z)/trip_point_1_temp", atomically: false, encoding: .utf8)
        return dir
    }

    /// `policy check` answers before any session what its first reading would: the level and its basis, what yields,
    /// free space against the floor; exit 1 when a session would refuse to arm.
    @Test func policyCheckSaysWhatASessionWouldBeforeOneRuns() throws {
        let tmp = TemporaryDirectory("ppc-policy-check")
        let root = try Self.thermal(tmp.sub("thermal"), celsius: 85)
        let hot = try ToolRunner.run(["policy", "check", "--json", "--thermal-root", root, "--out", tmp.sub("out")])
        #expect(hot.status == 0, "\(hot.stderr)")
        let h = try #require(try JSONSerialization.jsonObject(with: Data(hot.stdout.utf8)) as? [String: Any])
        let thermal = try #require(h["thermal"] as? [String: Any], "\(hot.stdout)")
        #expect(
            thermal["level"] as? String == "serious" && thermal["zone"] as? String == "thermal_zone0"
                && thermal["hottestCelsius"] as? Double == 85
                && thermal["basis"] as? String == "trip point passive 80.0 °C",
            "\(thermal)")
        #expect((h["stance"] as? String)?.hasPrefix("transfers pause") == true && h["arms"] as? Bool == true, "\(h)")
        // The words a person reads say the same.
        let words = try ToolRunner.run(["policy", "check", "--thermal-root", root, "--out", tmp.sub("out")])
        #expect(words.stdout.contains("thermal:  serious — thermal_zone0 at 85.0 °C"), "\(words.stdout)")

        let none = try ToolRunner.run([
            "policy", "check", "--json", "--thermal-root", tmp.sub("no-zones"), "--out", tmp.sub("out"),
        ])
        let o = try #require(try JSONSerialization.jsonObject(with: Data(none.stdout.utf8)) as? [String: Any])
        #expect(
            none.status == 0 && o["thermal"] is NSNull && o["stance"] as? String == "everything runs"
                && o["arms"] as? Bool == true)
        #expect((o["storageFloorBytes"] as? [String: Any])?["provenance"] as? String == "derived")
        #expect(((o["freeBytes"] as? NSNumber)?.int64Value ?? 0) > 0)

        // A floor no disk here meets (set through its inputs, as the floor is derived): a session would refuse.
        let full = try ToolRunner.run([
            "policy", "check", "--json", "--thermal-root", root, "--out", tmp.sub("out"), "--set",
            "session.shots=10000000", "--set", "capture.videoBitrateBps=400000000",
        ])
        let f = try #require(try JSONSerialization.jsonObject(with: Data(full.stdout.utf8)) as? [String: Any])
        #expect(
            full.status == 1 && f["arms"] as? Bool == false && (f["refusal"] as? String)?.isEmpty == false,
            "\(full.stdout)\n\(full.stderr)")
    }

    @Test func aCriticalMachineStillCapturesEveryFrameAndMintsEveryClip() throws {
        let tmp = TemporaryDirectory("ppc-policy")
        let root = try Self.thermal(tmp.sub("thermal"), celsius: 101)
        let out = tmp.sub("out")
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/short-file.json"), "--out", out, "--thermal-root", root,
        ])
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        let report = try sessionReport(out)
        #expect(report.framesCaptured.value == 240, "\(r.stdout)")
        #expect(report.thermalWarnings.value == 1 && report.thermalWarnings.provenance == .measured)
        let policy = report.policy
        #expect(policy.contains { $0.hasPrefix("thermal critical") }, "\(policy)")
        #expect(policy.contains { $0.hasPrefix("transfers pause and minting waits") }, "\(policy)")
        // Minting waited for the end of capture (or the ring's limit), then the clip was minted anyway: nothing lost.
        #expect(FileManager.default.fileExists(atPath: clipPath("\(out)/clips") + "/clip.mp4"), "\(r.stdout)")
    }

    @Test func aSeriousMachinePausesTransfersAndTheClipWaitsInTheOutbox() throws {
        let tmp = TemporaryDirectory("ppc-policy")
        let root = try Self.thermal(tmp.sub("thermal"), celsius: 85)
        let host = try HostLog(library: tmp.sub("library"))
        defer { host.stop() }
        let port = host.port
        let out = tmp.sub("out")
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/to-host.json"), "--out", out, "--thermal-root", root, "--host",
            "127.0.0.1:\(port)",
            "--device-id", "dev-p", "--delivery-timeout", "2",
        ])
        #expect(r.status == 1, "\(r.stdout)")
        let report = try sessionReport(out)
        #expect(
            report.sinkStatus.contains { $0.contains("while policy asked transfers to yield") }, "\(report.sinkStatus)")
        #expect(report.framesCaptured.value == 240)
        #expect(FileManager.default.fileExists(atPath: clipPath("\(out)/clips") + "/clip.mp4"))
        #expect(
            FileManager.default.fileExists(atPath: clipPath("\(out)/outbox") + "/clip.mp4"),
            "the clip waits to be drained once cool")
    }

    @Test func belowTheStorageFloorTheRunRefusesToArmAndSaysWhy() throws {
        let tmp = TemporaryDirectory("ppc-policy")
        // The floor is derived (one session plus the ring); a session of 10^7 shots (45 TB) puts it past any disk.
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/to-host.json"), "--out", tmp.sub("out"), "--set",
            "session.shots=10000000",
        ])
        #expect(r.status == 1)
        #expect(r.stderr.contains("refusing to arm") && r.stderr.contains("device.storageFloorBytes"), "\(r.stderr)")
        #expect(!FileManager.default.fileExists(atPath: tmp.sub("out/clips")))
    }
}

extension PolicyToolTests {
    @Test func aShotWhosePostRollOutlastsCaptureIsMintedShorterAndSaysSo() throws {
        let tmp = TemporaryDirectory("ppc-policy")
        let out = tmp.sub("out")
        // The impact is at 1.6 s and the post-roll 1.5 s; capture stops at 2.5 s.
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/short-file.json"), "--out", out, "--duration", "2.5",
        ])
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        #expect(try sessionReport(out).policy.contains { $0.contains("post-roll cut to 0.9") }, "\(r.stdout)")
        let probe = try ToolRunner.runProgram(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries", "stream=nb_read_frames",
                "-of", "csv=p=0", clipPath("\(out)/clips") + "/clip.mp4",
            ])
        #expect(probe.status == 0, "\(probe.stderr)")
        #expect(
            (Int(String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)) ?? 0)
                > 0)
    }
}
