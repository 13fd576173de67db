import Foundation
import Glibc
import Syscall
import TestSupport
import Testing

/// Bays (issue 32): a shot one device of a bay hears is relayed by the host to the others, each of which mints its own
/// window around it — a camera with no microphone records every swing — and a swing heard by two devices is one swing,
/// one clip each.
@Suite("Bays: one trigger for every angle", .serialized)
struct BayTests {
    /// A synthetic device's manifest: 320×180 at 60 fps, paced as a camera, on CLOCK_MONOTONIC from `startNs` (-1: now),
    /// with a microphone hearing `impacts` or none at all.
    static func manifest(
        _ dir: String, _ name: String, seconds: Double, impacts: [Double], hears: Bool, startNs: Int64 = -1
    ) throws -> String {
        let path = "\(dir)/\(name).json"
        let audio =
            hears
            ? #", { "plugin": "synthetic.audio", "params": { "seconds": \#(seconds), "impacts": \#(impacts), "startNs": \#(startNs) } }"#
            : ""
        try """
        {
          "session": "\(name)",
          "sources": [
            { "plugin": "synthetic.video", "params": { "width": 320, "height": 180, "fps": 60, "seconds": \(seconds), "texture": "flat",
              "impacts": \(impacts), "startNs": \(startNs), "pace": "realtime" } }\(audio)
          ],
          "encoder": { "plugin": "x264", "params": { "threads": 1 } },
          \(hears ? #""detector": { "plugin": "impact" },"# : "")
          "sinks": [ { "plugin": "file" }, { "plugin": "network", "params": { "insecureLoopbackOnly": true } } ],
          "config": { "capture.videoBitrateBps": 1000000, "capture.clipPreNs": 1000000000, "capture.clipPostNs": 1000000000, "capture.expectedFrameRate": 60 }
        }
        """.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    static func device(_ manifest: String, out: String, port: Int, id: String, extra: [String] = []) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ToolRunner.executable("ppc-tool"))
        p.arguments =
            [
                "run", manifest, "--out", out, "--host", "127.0.0.1:\(port)", "--device-id", id,
                "--insecure-loopback-only",
            ] + extra
        p.standardOutput = FileHandle(forWritingAtPath: "/dev/null")
        p.standardError = FileHandle(forWritingAtPath: "/dev/null")
        try p.run()
        return p
    }

    static func metas(_ out: String) throws -> [[String: Any]] {
        try FileManager.default.contentsOfDirectory(atPath: "\(out)/clips").sorted().map {
            try #require(
                try JSONSerialization.jsonObject(
                    with: Data(contentsOf: URL(fileURLWithPath: "\(out)/clips/\($0)/meta.json"))) as? [String: Any])
        }
    }

    static func swings(_ library: String) throws -> [[String]] {
        let listed = try ToolRunner.run(["clips", "--json", "--library", library], tool: "ppc-host")
        let all = (try? JSONSerialization.jsonObject(with: Data(listed.stdout.utf8)) as? [[String: Any]]) ?? []
        return all.map { (($0["angles"] as? [[String: Any]]) ?? []).compactMap { $0["device"] as? String }.sorted() }
    }

    /// The down-the-line camera has no microphone: it mints a clip of each swing the face-on camera heard, its t0 moved
    /// onto its own clock through both clock relations, and says it was relayed; the host makes one swing of each pair.
    @Test func aCameraWithNoMicrophoneRecordsEverySwingItsBayHears() throws {
        let tmp = TemporaryDirectory("ppc-bay")
        let library = tmp.sub("library")
        try FileSystem.makeDirectories(library)
        let set = try ToolRunner.run(["bay", "bay-t", "dtl", "--library", library], tool: "ppc-host")
        #expect(set.status == 0, "\(set.stderr)")
        let http = freeLoopbackPort(SOCK_STREAM)
        let (host, port) = try HostToolTests.startHost(library: library, extra: ["--http", "127.0.0.1:\(http)"])
        defer {
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        let quiet = try Self.device(
            Self.manifest(tmp.path, "dtl", seconds: 10, impacts: [], hears: false), out: tmp.sub("dtl"), port: port,
            id: "dtl")
        defer { if quiet.isRunning { kill(quiet.processIdentifier, SIGKILL) } }
        // The silent camera is linked, and its clock known to the host, before the swings begin (its bay the host's).
        #expect(
            awaitCondition {
                let devices = httpGetJSON(port: http, "/api/devices")?["devices"] as? [[String: Any]] ?? []
                return devices.contains {
                    $0["id"] as? String == "dtl" && $0["relation"] is [String: Any] && $0["bay"] as? String == "bay-t"
                }
            })
        // The face-on camera says its bay itself.
        let heard = try ToolRunner.run([
            "run", Self.manifest(tmp.path, "face", seconds: 6, impacts: [2.5, 4.0], hears: true), "--out",
            tmp.sub("face"),
            "--host", "127.0.0.1:\(port)", "--device-id", "face", "--bay", "bay-t", "--insecure-loopback-only",
        ])
        #expect(heard.status == 0, "\(heard.stderr)")
        quiet.waitUntilExit()
        #expect(quiet.terminationStatus == 0)
        let relayed = try Self.metas(tmp.sub("dtl"))
        #expect(relayed.count == 2, "dtl minted \(relayed.count) clips")
        for m in relayed {
            #expect((m["trigger"] as? String)?.hasPrefix("relayed from face ± ") == true, "\(m["trigger"] ?? "none")")
            #expect(m["audio"] is NSNull && m["soundTrack"] == nil)
        }
        #expect(try Self.metas(tmp.sub("face")).allSatisfy { $0["trigger"] as? String == "heard" })
        #expect(try Self.swings(library) == [["dtl", "face"], ["dtl", "face"]])
    }

    /// Two microphones at one bay both hear each swing: each device merges the host's relay of the other's shot with
    /// its own, so each mints one clip a swing, and the host makes one swing of each pair — never two.
    @Test func aSwingTwoDevicesHearIsOneSwingOneClipEach() throws {
        let tmp = TemporaryDirectory("ppc-bay-both")
        let library = tmp.sub("library")
        let (host, port) = try HostToolTests.startHost(library: library)
        defer {
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        // One moment for both: their streams start at the same instant of CLOCK_MONOTONIC, two seconds from now.
        let start = monotonicNowNs() + 2_000_000_000
        let a = try Self.device(
            Self.manifest(tmp.path, "left", seconds: 7, impacts: [3.0, 5.0], hears: true, startNs: start),
            out: tmp.sub("left"), port: port, id: "left", extra: ["--bay", "bay-2"])
        let b = try Self.device(
            Self.manifest(tmp.path, "right", seconds: 7, impacts: [3.0, 5.0], hears: true, startNs: start),
            out: tmp.sub("right"), port: port, id: "right", extra: ["--bay", "bay-2"])
        a.waitUntilExit()
        b.waitUntilExit()
        #expect(a.terminationStatus == 0 && b.terminationStatus == 0)
        #expect(try Self.metas(tmp.sub("left")).map { $0["trigger"] as? String } == ["heard", "heard"])
        #expect(try Self.metas(tmp.sub("right")).map { $0["trigger"] as? String } == ["heard", "heard"])
        #expect(try Self.swings(library) == [["left", "right"], ["left", "right"]])
        // Each relay that arrived — before or after the device's own detection of the swing — was merged with it, never
        // minted. How many arrive is not the test's to choose: a relay reaches a device only once both devices' clock
        // relations are known, which on a loaded machine can be after both swings (the merge in each order is proven
        // in ShotRelayTests).
        for side in ["left", "right"] {
            let relayed = try #require(try sessionReport(tmp.sub(side)).relayedShots.value)
            #expect(relayed.minted == 0 && (0...2).contains(relayed.alsoHeardHere), "\(side): \(relayed)")
        }
    }
}
