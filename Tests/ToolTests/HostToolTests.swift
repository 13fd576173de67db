import Foundation
import FragmentRing
import Glibc
import Syscall
import TestSupport
import Testing

/// ppc-host and a device (`ppc-tool run` with a network sink), as two processes on loopback.
@Suite("ppc-host: clips from a device arrive byte-identical and confirmed", .serialized)
struct HostToolTests {
    /// Starts ppc-host on a free port. The device reaches it by connecting with backoff, so nothing waits on its output.
    static func startHost(library: String, policy: String = "any", port: Int? = nil, extra: [String] = []) throws -> (
        Process, Int
    ) {
        let port = port ?? freeLoopbackPort(SOCK_STREAM)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ToolRunner.executable("ppc-host"))
        p.arguments =
            [
                "--listen", "127.0.0.1:\(port)", "--library", library, "--ingest-policy", policy,
                "--insecure-loopback-only", "--state", library + "-host-state",
            ] + extra
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return (p, port)
    }

    /// A host comes up on `port`, where the device found none, and `transfer drain OUT` (with `drainArguments`) sends
    /// what is owed; `body` looks at the drain's result while the host still runs.
    static func drainToAHostThatCameUp(
        out: String, library: String, port: Int, drainArguments: [String] = [],
        _ body: (ToolRunner.Result) throws -> Void
    ) throws {
        let (host, _) = try startHost(library: library, port: port)
        defer {
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        let drain = try ToolRunner.run(
            ["transfer", "drain", out, "--insecure-loopback-only", "--host", "127.0.0.1:\(port)"] + drainArguments)
        #expect(drain.status == 0, "\(drain.stderr)")
        try body(drain)
    }

    @Test func aDeviceShipsItsClipToTheHost() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let (host, port) = try Self.startHost(library: tmp.sub("library"))
        defer {
            // SIGTERM may be blocked: the child inherits a worker thread's signal mask
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/to-host.json"), "--out", tmp.sub("out"), "--host", "127.0.0.1:\(port)",
            "--device-id", "dev-a",
        ])
        #expect(r.status == 0, "\(r.stderr)\n\(r.stdout)")
        let local = clipPath(tmp.sub("out/clips"))
        let remote = clipPath(tmp.sub("library/dev-a"))
        for name in ["clip.mp4", "audio.wav", "index.bin", "meta.json"] {
            #expect(
                FileManager.default.contents(atPath: "\(local)/\(name)")
                    == FileManager.default.contents(atPath: "\(remote)/\(name)"), "\(name)")
        }
        let hostMeta = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(remote)/host-meta.json")))
                as? [String: Any])
        #expect(hostMeta["device"] as? String == "dev-a")
        // checked on arrival
        #expect((hostMeta["bundle"] as? String)?.hasPrefix("matches its meta.json") == true, "\(hostMeta)")
        // the device's relation reached the host
        #expect((hostMeta["clockRelation"] as? [String: Any])?["samples"] != nil)
        let confirmed = try sessionReport(tmp.sub("out")).clips.first?.confirmedBy ?? []
        #expect(confirmed.contains { $0.hasSuffix(remote) })
    }

    @Test func thePolicyRefusesADeviceBelowItAndTheRunSaysWhy() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let (host, port) = try Self.startHost(library: tmp.sub("library"), policy: "pinpoint-studio")
        defer {
            // SIGTERM may be blocked: the child inherits a worker thread's signal mask
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/to-host.json"), "--out", tmp.sub("out"), "--host", "127.0.0.1:\(port)",
        ])
        #expect(r.status != 0)
        #expect((r.stderr + r.stdout).contains("pinpoint-studio"))
    }

    @Test(arguments: [["--listen", "nonsense"], ["--ingest-policy", "lenient"]])
    func badArgumentsAreUsageErrors(args: [String]) throws {
        #expect(try ToolRunner.run(args, tool: "ppc-host").status == 64)
    }

    /// A library that cannot be made, or a library to rebuild that is not there, is said as such, naming the path and
    /// errno — not as SQLite's "unable to open database file".
    @Test func aLibraryThatCannotBeMadeOrIsNotThereIsNamed() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let file = tmp.sub("a-file")
        try Data().write(to: URL(fileURLWithPath: file))
        let serve = try ToolRunner.run(
            [
                "--library", "\(file)/library", "--listen", "127.0.0.1:0", "--insecure-loopback-only", "--state",
                tmp.sub("state"),
            ], tool: "ppc-host")
        #expect(serve.status == 1 && serve.stderr.contains("mkdir \(file): Not a directory"), "\(serve.stderr)")
        let rebuild = try ToolRunner.run(["catalogue", "rebuild", "--library", tmp.sub("nowhere")], tool: "ppc-host")
        #expect(
            rebuild.status == 65 && rebuild.stderr.contains("\(tmp.sub("nowhere")): no such library directory"),
            "\(rebuild.stderr)")
        #expect(!FileManager.default.fileExists(atPath: tmp.sub("nowhere")))
    }
}

extension HostToolTests {
    @Test func linkProbeFindsAnInjectedOffsetWithinItsStatedBound() throws {
        let tmp = TemporaryDirectory("ppc-host")
        // probes are never refused
        let (host, port) = try Self.startHost(library: tmp.sub("library"), policy: "pinpoint-studio")
        defer {
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        let r = try ToolRunner.run([
            "link", "probe", "--json", "--insecure-loopback-only", "--clock-offset-ns", "5000000", "127.0.0.1:\(port)",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let o = try #require(try JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [String: Any])
        let offset = try #require((o["offsetNs"] as? NSNumber)?.int64Value)
        let bound = try #require((o["uncertaintyNs"] as? NSNumber)?.int64Value)
        #expect(abs(offset + 5_000_000) <= bound, "offset \(offset) ± \(bound), truth −5000000")
        #expect(o["skewPpm"] is NSNull)  // back-to-back probes span too little time to say anything about skew
    }
}

extension HostToolTests {
    @Test func threeDevicesAtOnceEachGetTheirClipsThrough() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let (host, port) = try Self.startHost(library: tmp.sub("library"))
        defer {
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        let results = ResultBox()
        let group = DispatchGroup()
        for n in 1...3 {
            group.enter()
            Thread {
                let r = try? ToolRunner.run([
                    "run", ToolRunner.fixture("manifests/to-host.json"), "--out", tmp.sub("out-\(n)"), "--host",
                    "127.0.0.1:\(port)",
                    "--device-id", "dev-\(n)",
                ])
                results.set(n, r?.status ?? -1)
                results.say(n, "\(r?.stdout ?? "")\n\(r?.stderr ?? "")")
                group.leave()
            }.start()
        }
        group.wait()
        for n in 1...3 {
            #expect(results.get(n) == 0, "device \(n): \(results.said(n))")
            for name in ["clip.mp4", "audio.wav", "meta.json"] {
                let local = FileManager.default.contents(atPath: clipPath(tmp.sub("out-\(n)/clips")) + "/\(name)")
                #expect(
                    local != nil
                        && local
                            == FileManager.default.contents(atPath: clipPath(tmp.sub("library/dev-\(n)")) + "/\(name)"),
                    "dev-\(n) \(name)")
            }
        }
    }
}

final class ResultBox: @unchecked Sendable {
    // @unchecked: every access holds `lock`.
    private let lock = NSLock()
    private var values: [Int: Int32] = [:]
    func set(_ k: Int, _ v: Int32) {
        lock.lock()
        values[k] = v
        lock.unlock()
    }
    func get(_ k: Int) -> Int32? {
        lock.lock()
        defer { lock.unlock() }
        return values[k]
    }
    private var texts: [Int: String] = [:]
    func say(_ k: Int, _ v: String) {
        lock.lock()
        texts[k] = v
        lock.unlock()
    }
    func said(_ k: Int) -> String {
        lock.lock()
        defer { lock.unlock() }
        return texts[k] ?? ""
    }
}

extension HostToolTests {
    /// Two minutes of camera-paced synthetic video with the audio ahead of it, to a file sink and a network sink: a run
    /// that lasts until the test stops it.
    static func cameraPacedManifest(_ dir: String, session: String, impacts: String) throws -> String {
        let manifest = "\(dir)/\(session).json"
        try """
        {
          "session": "\(session)",
          "sources": [
            { "plugin": "synthetic.video", "params": { "width": 320, "height": 180, "fps": 60, "seconds": 120, "pace": "realtime", "texture": "flat", "impacts": \(impacts) } },
            { "plugin": "synthetic.audio", "params": { "seconds": 120, "impacts": \(impacts) } }
          ],
          "encoder": { "plugin": "x264", "params": { "threads": 1 } },
          "detector": { "plugin": "impact" },
          "sinks": [ { "plugin": "file" }, { "plugin": "network", "params": { "insecureLoopbackOnly": true } } ],
          "config": { "capture.videoBitrateBps": 1000000, "capture.expectedFrameRate": 60 }
        }
        """.write(toFile: manifest, atomically: false, encoding: .utf8)
        return manifest
    }
}

extension HostToolTests {
    @Test func aLinkCutMidTransferIsReconnectedAndTheTransferResumes() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let (host, port) = try Self.startHost(library: tmp.sub("library"), extra: ["--cut-bulk-after-chunks", "2"])
        defer {
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        let out = tmp.sub("out")
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/to-host.json"), "--out", out, "--host", "127.0.0.1:\(port)",
            "--device-id", "dev-r",
        ])
        #expect(r.status == 0, "\(r.stderr)\n\(r.stdout)")
        for name in ["clip.mp4", "audio.wav", "index.bin", "meta.json"] {
            #expect(
                FileManager.default.contents(atPath: clipPath("\(out)/clips") + "/\(name)")
                    == FileManager.default.contents(atPath: clipPath(tmp.sub("library/dev-r")) + "/\(name)"), "\(name)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(out)/outbox").isEmpty)
    }
}

/// Lines a process writes to a pipe, collected as they arrive, so a test can wait for one (an observed event, not a
/// guessed delay).
final class LineReader: @unchecked Sendable {
    // @unchecked: `lines` under `lock`.
    let lock = NSCondition()
    var lines: [String] = []

    init(_ handle: FileHandle) {
        Thread { [self] in
            var pending = Data()
            while true {
                let d = handle.availableData
                if d.isEmpty { break }
                pending += d
                while let nl = pending.firstIndex(of: 10) {
                    let line = String(decoding: pending[pending.startIndex..<nl], as: UTF8.self)
                    pending = pending[(nl + 1)...]
                    lock.lock()
                    lines.append(line)
                    lock.broadcast()
                    lock.unlock()
                }
            }
        }.start()
    }

    /// Waits (up to 30 s) for a line containing `text`; returns whether it came.
    func await(_ text: String) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        lock.lock()
        defer { lock.unlock() }
        while !lines.contains(where: { $0.contains(text) }) {
            if !lock.wait(until: deadline) { return false }
        }
        return true
    }

    var text: String {
        lock.lock()
        defer { lock.unlock() }
        return lines.joined(separator: "\n")
    }
}

/// A running ppc-host with its log collected.
final class HostLog {
    let process = Process()
    let log: LineReader
    let port: Int

    /// Starts ppc-host on `port` (by default a free loopback port) with `library`, ingest policy `any`, and waits until
    /// it says it is listening.
    /// `state`: the host's identity and pairings (default beside the library); `plaintext`: loopback plaintext taken too;
    /// `extra`: more arguments.
    init(
        library: String, port: Int = freeLoopbackPort(SOCK_STREAM), state: String? = nil, plaintext: Bool = true,
        policy: String = "any",
        extra: [String] = []
    ) throws {
        self.port = port
        process.executableURL = URL(fileURLWithPath: ToolRunner.executable("ppc-host"))
        process.arguments =
            [
                "--listen", "127.0.0.1:\(port)", "--library", library, "--ingest-policy", policy, "--state",
                state ?? (library + "-host-state"),
            ]
            + (plaintext ? ["--insecure-loopback-only"] : []) + extra
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        log = LineReader(pipe.fileHandleForReading)
        // Every test's first step: the host is up before anything is sent to it.
        #expect(log.await("listening on"), "ppc-host never said it was listening:\n\(log.text)")
    }

    func await(_ text: String) -> Bool { log.await(text) }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

extension HostToolTests {
    @Test func aLivePreviewShowsTheNewestFrameOnTheHostAndNeverQueues() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let host = try HostLog(library: tmp.sub("library"))
        let port = host.port
        defer { host.stop() }
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/to-host-slow.json"), "--out", tmp.sub("out"), "--host",
            "127.0.0.1:\(port)",
            "--device-id", "dev-v", "--preview-fps", "10",
        ])
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        #expect(host.await("preview from dev-v: 160x90 luma"))
        let pgm = try #require(FileManager.default.contents(atPath: tmp.sub("library/dev-v/preview.pgm")))
        let header = Array("P5\n160 90\n255\n".utf8)
        #expect(Array(pgm.prefix(header.count)) == header)
        #expect(pgm.count == header.count + 160 * 90)
        // The run says how many went and how many were shed; sent + shed never exceeds what 10 a second allows.
        let line = try #require(
            r.stdout.split(separator: "\n").first { $0.contains("preview: ") && $0.contains("frames sent") })
        let numbers = line.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }.suffix(2)
        #expect(numbers.count == 2 && numbers.first! > 0 && numbers.reduce(0, +) <= 10 * 6, "\(line)")
    }
}

extension HostToolTests {
    /// A camera's Motion JPEG, passed through on the device (no encoder named: passthrough is the default for it),
    /// arrives as sent; the host adds an H.264 viewing copy off its receive path and keeps the original.
    @Test func aMotionJPEGClipArrivesAsSentAndTheHostAddsAnH264ViewingCopy() throws {
        let tmp = TemporaryDirectory("ppc-host-mjpeg")
        let host = try HostLog(library: tmp.sub("library"))
        defer { host.stop() }
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/mjpeg-to-host.json"), "--out", tmp.sub("out"), "--host",
            "127.0.0.1:\(host.port)",
            "--device-id", "mj-cam",
        ])
        #expect(r.status == 0, "\(r.stderr)\n\(r.stdout)")
        #expect(r.stdout.contains("→ passthrough →"), "\(r.stdout)")
        let local = clipPath(tmp.sub("out/clips"))
        let remote = clipPath(tmp.sub("library/mj-cam"))
        #expect(
            FileManager.default.contents(atPath: "\(local)/clip.mp4")
                == FileManager.default.contents(atPath: "\(remote)/clip.mp4"))
        let meta = try #require(
            try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(local)/meta.json")))
                as? [String: Any])
        let profile = meta["captureProfile"] as? [String: Any] ?? [:]
        #expect(profile["codec"] as? String == "mjpeg" && profile["pixelFormat"] as? String == "mjpeg", "\(profile)")
        #expect(host.await("view copy of"), "\(host.log.text)")
        let probe = try ToolRunner.runProgram(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
                "stream=codec_name,nb_read_frames", "-of", "csv=p=0", "\(remote)/view.mp4",
            ])
        let original = try ToolRunner.runProgram(
            "ffprobe",
            [
                "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries",
                "stream=codec_name,nb_read_frames", "-of", "csv=p=0", "\(remote)/clip.mp4",
            ])
        let frames =
            String(decoding: original.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).split(
                separator: ","
            ).last.map(String.init) ?? "?"
        #expect(String(decoding: original.stdout, as: UTF8.self).hasPrefix("mjpeg,"))
        #expect(
            String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                == "h264,\(frames)", "\(probe.stderr)")
        // The library checked against what each clip's meta.json recorded at mint: whole, the host's own files beside
        // it (host-meta.json, view.mp4) allowed; then one bit of the audio flipped on the host's disk, and named.
        let whole = try ToolRunner.runProgram(
            ToolRunner.executable("ppc-host"), ["catalogue", "verify", "--library", tmp.sub("library")])
        #expect(
            whole.status == 0 && String(decoding: whole.stdout, as: UTF8.self).contains("1 of 1 clip(s)"),
            "\(whole.stderr)")
        var audio = try Data(contentsOf: URL(fileURLWithPath: "\(remote)/audio.wav"))
        audio[audio.count - 1] ^= 1
        try audio.write(to: URL(fileURLWithPath: "\(remote)/audio.wav"))
        let rotted = try ToolRunner.runProgram(
            ToolRunner.executable("ppc-host"), ["catalogue", "verify", "--library", tmp.sub("library")])
        #expect(
            rotted.status == 65 && rotted.stderr.contains("\(remote)/audio.wav: its bytes are not those minted"),
            "\(rotted.stderr)")
    }
}

extension HostToolTests {
    /// Every confirmed clip is catalogued as it arrives; two devices' clips of one impact are one swing with two angles;
    /// the catalogue can be rebuilt from the library, which stays the truth.
    @Test func confirmedClipsAreCataloguedAndTwoAnglesOfOneImpactAreOneSwing() throws {
        let tmp = TemporaryDirectory("ppc-catalogue-host")
        let library = tmp.sub("library")
        let host = try HostLog(library: library)
        defer { if host.process.isRunning { host.stop() } }
        for device in ["cam-a", "cam-b"] {
            let r = try ToolRunner.run([
                "run", ToolRunner.fixture("manifests/to-host.json"), "--out", tmp.sub(device), "--host",
                "127.0.0.1:\(host.port)", "--device-id", device,
            ])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(host.await("catalogued") && host.await("(\(device), swing"), "\(host.log.text)")
        }
        func swings() throws -> [[String: Any]] {
            let r = try ToolRunner.run(["clips", "--json", "--library", library], tool: "ppc-host")
            #expect(r.status == 0, "\(r.stderr)")
            return (try? JSONSerialization.jsonObject(with: Data(r.stdout.utf8)) as? [[String: Any]]) ?? []
        }
        let first = try swings()
        #expect(first.count == 1, "\(first)")
        let angles = (first.first?["angles"] as? [[String: Any]] ?? []).compactMap { $0["device"] as? String }.sorted()
        #expect(angles == ["cam-a", "cam-b"], "\(first)")
        // Rebuilt from the files alone (the host stopped, its catalogue gone): the same.
        host.stop()
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: library + "/catalogue.sqlite" + suffix)
        }
        let rebuilt = try ToolRunner.run(["catalogue", "rebuild", "--library", library], tool: "ppc-host")
        #expect(
            rebuilt.status == 0 && rebuilt.stdout.contains("2 clip(s) catalogued"),
            "\(rebuilt.stdout) \(rebuilt.stderr)")
        #expect(try swings().count == 1)
    }
}
