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
    static func startHost(library: String, policy: String = "any", port: Int? = nil, extra: [String] = []) throws -> (Process, Int) {
        let port = port ?? freeLoopbackPort(SOCK_STREAM)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ToolRunner.executable("ppc-host"))
        p.arguments = ["--listen", "127.0.0.1:\(port)", "--library", library, "--ingest-policy", policy, "--insecure-loopback-only", "--state", library + "-host-state"] + extra
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return (p, port)
    }

    @Test func aDeviceShipsItsClipToTheHost() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let (host, port) = try Self.startHost(library: tmp.sub("library"))
        defer {
            kill(host.processIdentifier, SIGKILL)  // SIGTERM may be blocked: the child inherits a worker thread's signal mask
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
            #expect(FileManager.default.contents(atPath: "\(local)/\(name)") == FileManager.default.contents(atPath: "\(remote)/\(name)"), "\(name)")
        }
        let hostMeta = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(remote)/host-meta.json"))) as? [String: Any])
        #expect(hostMeta["device"] as? String == "dev-a")
        #expect((hostMeta["clockRelation"] as? [String: Any])?["samples"] != nil)  // the device's relation reached the host
        let report = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: tmp.sub("out/report.json")))) as? [String: Any])
        let confirmed = ((report["clips"] as? [[String: Any]])?.first?["confirmedBy"] as? [String]) ?? []
        #expect(confirmed.contains { $0.hasSuffix(remote) })
    }

    @Test func thePolicyRefusesADeviceBelowItAndTheRunSaysWhy() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let (host, port) = try Self.startHost(library: tmp.sub("library"), policy: "pinpoint-studio")
        defer {
            kill(host.processIdentifier, SIGKILL)  // SIGTERM may be blocked: the child inherits a worker thread's signal mask
            host.waitUntilExit()
        }
        let r = try ToolRunner.run(["run", ToolRunner.fixture("manifests/to-host.json"), "--out", tmp.sub("out"), "--host", "127.0.0.1:\(port)"])
        #expect(r.status != 0)
        #expect((r.stderr + r.stdout).contains("pinpoint-studio"))
    }

    @Test(arguments: [["--listen", "nonsense"], ["--ingest-policy", "lenient"]])
    func badArgumentsAreUsageErrors(args: [String]) throws {
        #expect(try ToolRunner.run(args, tool: "ppc-host").status == 64)
    }
}

extension HostToolTests {
    @Test func linkProbeFindsAnInjectedOffsetWithinItsStatedBound() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let (host, port) = try Self.startHost(library: tmp.sub("library"), policy: "pinpoint-studio")  // probes are never refused
        defer {
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        let r = try ToolRunner.run(["link", "probe", "--json", "--insecure-loopback-only", "--clock-offset-ns", "5000000", "127.0.0.1:\(port)"])
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
                    "run", ToolRunner.fixture("manifests/to-host.json"), "--out", tmp.sub("out-\(n)"), "--host", "127.0.0.1:\(port)",
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
                #expect(local != nil && local == FileManager.default.contents(atPath: clipPath(tmp.sub("library/dev-\(n)")) + "/\(name)"), "dev-\(n) \(name)")
            }
        }
    }
}

final class ResultBox: @unchecked Sendable {
    // @unchecked: every access holds `lock`.
    private let lock = NSLock()
    private var values: [Int: Int32] = [:]
    func set(_ k: Int, _ v: Int32) { lock.lock(); values[k] = v; lock.unlock() }
    func get(_ k: Int) -> Int32? { lock.lock(); defer { lock.unlock() }; return values[k] }
    private var texts: [Int: String] = [:]
    func say(_ k: Int, _ v: String) { lock.lock(); texts[k] = v; lock.unlock() }
    func said(_ k: Int) -> String { lock.lock(); defer { lock.unlock() }; return texts[k] ?? "" }
}

extension HostToolTests {
    @Test func aHostThatIsDownNeverStopsCaptureAndTheClipIsDeliveredLaterExactlyOnce() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let port = freeLoopbackPort(SOCK_STREAM)  // nothing listens here yet
        let out = tmp.sub("out")
        let r = try ToolRunner.run(["run", ToolRunner.fixture("manifests/to-host.json"), "--out", out, "--host", "127.0.0.1:\(port)", "--device-id", "dev-z"])
        #expect(r.status == 1)  // the clip was not confirmed by the host
        #expect(r.stdout.contains("240 frames encoded"))  // capture went on
        #expect(r.stdout.contains("waits in") || r.stdout.contains("not confirmed"))
        #expect(FileManager.default.fileExists(atPath: clipPath("\(out)/outbox") + "/clip.mp4"))
        let inspect = try ToolRunner.run(["ring", "inspect", "--json", "\(out)/ring"])
        let pinsBefore = ((try JSONSerialization.jsonObject(with: Data(inspect.stdout.utf8)) as? [String: Any])?["pins"] as? [Any])?.count
        #expect(pinsBefore == 1)  // its fragments stay pinned until the host confirms

        let (host, _) = try Self.startHost(library: tmp.sub("library"), port: port)
        defer {
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        let drain = try ToolRunner.run(["transfer", "drain", out, "--insecure-loopback-only", "--host", "127.0.0.1:\(port)", "--device-id", "dev-z"])
        #expect(drain.status == 0, "\(drain.stderr)")
        for name in ["clip.mp4", "audio.wav", "index.bin", "meta.json"] {
            #expect(FileManager.default.contents(atPath: clipPath("\(out)/clips") + "/\(name)") == FileManager.default.contents(atPath: clipPath(tmp.sub("library/dev-z")) + "/\(name)"), "\(name)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(out)/outbox").isEmpty)
        let after = try ToolRunner.run(["ring", "inspect", "--json", "\(out)/ring"])
        #expect(((try JSONSerialization.jsonObject(with: Data(after.stdout.utf8)) as? [String: Any])?["pins"] as? [Any])?.isEmpty == true)
        let again = try ToolRunner.run(["transfer", "drain", out, "--insecure-loopback-only", "--host", "127.0.0.1:\(port)"])
        #expect(again.status == 0 && again.stdout.contains("nothing owed"))
    }
}

extension HostToolTests {
    /// Found 2026-12-02: owed clips' pins counted against the ring, and deliveries ran on the mint thread, so a host that
    /// was down while shots kept coming cost the later shots their pre-roll ("cannot pin …").
    @Test func aHostThatIsDownWhileShotsKeepComingCostsNoShot() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let port = freeLoopbackPort(SOCK_STREAM)  // nothing listens here yet
        let out = tmp.sub("out")
        // Four shots 3.5 s apart, longer than this ring's 3 s (6 × 0.5 s): each is minted after the ring has moved past
        // the last. The video is paced like a camera and the audio runs ahead, so each shot is heard before its
        // pre-roll could be recycled, however loaded the machine.
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/spaced-to-host.json"), "--out", out, "--host", "127.0.0.1:\(port)", "--device-id", "dev-s",
        ])
        #expect(r.status == 1)  // not confirmed by the host: owed
        #expect(!r.stdout.contains("cannot pin"), "\(r.stdout)")
        let report = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(out)/report.json"))) as? [String: Any]
        let owed = try #require(report?["clipsOwed"] as? [[String: Any]])
        #expect(owed.count == 4)
        #expect(r.stdout.contains("4 more minted and owed"))
        let clips = try FileManager.default.contentsOfDirectory(atPath: "\(out)/clips").sorted()
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(out)/outbox").sorted() == clips)
        #expect(clips.count == 4)
        // Owed clips pin at most one ring's worth of fragments; beyond that the oldest is let go, and the report says so
        // (its bundle is still in the outbox).
        let ring = try FragmentRing(directory: "\(out)/ring", configuration: .init(capacity: 6, whenOnlyPinnedRemain: .keepPinnedBeside, fileExtension: "ts"))
        #expect(ring.pinCounts.count <= 6)
        #expect(!ring.pins.isEmpty)
        #expect((report?["policy"] as? [String])?.contains { $0.contains("let go while it is owed") } == true)

        let (host, _) = try Self.startHost(library: tmp.sub("library"), port: port)
        defer {
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        let drain = try ToolRunner.run(["transfer", "drain", out, "--insecure-loopback-only", "--host", "127.0.0.1:\(port)"])
        #expect(drain.status == 0, "\(drain.stderr)")
        for clip in clips {
            #expect(FileManager.default.contents(atPath: "\(out)/clips/\(clip)/clip.mp4") == FileManager.default.contents(atPath: tmp.sub("library/dev-s/\(clip)/clip.mp4")))
        }
        let after = try FragmentRing(directory: "\(out)/ring", configuration: .init(capacity: 6, whenOnlyPinnedRemain: .keepPinnedBeside, fileExtension: "ts"))
        #expect(after.pins.isEmpty)
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
    /// A host that comes back while the session runs gets what it was owed without a `transfer drain`: the next clip's
    /// delivery (or the half-minute retry) sends the outbox too, and the clip counts as delivered.
    @Test(arguments: [
        // The next clip's delivery finds the host back and brings the owed one with it.
        ("[1.5, 5]", [String]()),
        // One swing only: the retry while nothing else is delivered brings it (every second here, not every 30).
        ("[1.5]", ["--set", "link.owedRetryIntervalNs=1000000000"]),
    ])
    func clipsOwedWhileTheHostWasDownArriveWhenItComesBackMidSession(impacts: String, settings: [String]) throws {
        let tmp = TemporaryDirectory("ppc-host")
        let port = freeLoopbackPort(SOCK_STREAM)  // nothing listens here yet
        let out = tmp.sub("out")
        let manifest = try Self.cameraPacedManifest(tmp.path, session: "back", impacts: impacts)
        let (run, runOut, _) = try IntegrityToolTests.start(
            ["run", manifest, "--out", out, "--host", "127.0.0.1:\(port)", "--device-id", "dev-b"] + settings)
        let shots = impacts.split(separator: ",").count
        defer { if run.isRunning { kill(run.processIdentifier, SIGKILL) } }
        // The first clip is owed (nobody listens: its delivery gave up and recorded its pin); then the host comes up.
        #expect(IntegrityToolTests.awaitCondition { ((try? FileManager.default.contentsOfDirectory(atPath: "\(out)/pins")) ?? []).count == 1 })
        let (host, _) = try Self.startHost(library: tmp.sub("library"), port: port)
        defer {
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        // Every clip reaches the host while the session still runs, and leaves the outbox.
        func arrived() -> Int {
            ((try? FileManager.default.contentsOfDirectory(atPath: tmp.sub("library/dev-b"))) ?? []).filter { !$0.hasPrefix(".") }.count
        }
        #expect(IntegrityToolTests.awaitCondition { arrived() == shots && ((try? FileManager.default.contentsOfDirectory(atPath: "\(out)/outbox")) ?? []).isEmpty })
        kill(run.processIdentifier, SIGINT)
        _ = runOut.fileHandleForReading.readDataToEndOfFile()
        run.waitUntilExit()
        #expect(run.terminationStatus == 0)  // nothing owed at the end
        let report = try IntegrityToolTests.report(out)
        #expect((report["clipsOwed"] as? [Any])?.isEmpty == true)
        // The first shot's candidate, shot and announce found no host: held, and sent when the link was made.
        let history = report["sinkStatus"] as? [String] ?? []
        #expect(history.contains { $0.contains("events held while the host was out of reach sent now") }, "\(history)")
        let clips = try #require(report["clips"] as? [[String: Any]])
        #expect(clips.count == shots)
        #expect(clips.contains { ($0["confirmedBy"] as? [String])?.contains { $0.contains("sent from the outbox after it was owed") } == true })
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(out)/pins").isEmpty)  // the owed clip's record went with it
        let ring = try FragmentRing(directory: "\(out)/ring", configuration: .init(capacity: 20, whenOnlyPinnedRemain: .keepPinnedBeside, fileExtension: "ts"))
        #expect(ring.pins.isEmpty)
    }
}

extension HostToolTests {
    /// A host that was down when the session started and comes up while no clip is owed: the device reaches it within
    /// the retry interval (a second here), so its events and live view flow without waiting for a swing.
    @Test func aHostThatComesUpMidSessionIsReachedWithoutWaitingForAClip() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let port = freeLoopbackPort(SOCK_STREAM)  // nothing listens here yet
        let out = tmp.sub("out")
        let manifest = try Self.cameraPacedManifest(tmp.path, session: "idle", impacts: "[]")
        let (run, runOut, runErr) = try IntegrityToolTests.start([
            "run", manifest, "--out", out, "--host", "127.0.0.1:\(port)", "--device-id", "dev-i", "--set", "link.owedRetryIntervalNs=1000000000",
        ])
        defer { if run.isRunning { kill(run.processIdentifier, SIGKILL) } }
        var said = ""
        #expect(IntegrityToolTests.read(runErr.fileHandleForReading, until: "host unreachable", seen: &said), "\(said)")
        let host = Process()
        host.executableURL = URL(fileURLWithPath: ToolRunner.executable("ppc-host"))
        host.arguments = [
            "--listen", "127.0.0.1:\(port)", "--library", tmp.sub("library"), "--ingest-policy", "any", "--insecure-loopback-only", "--state",
            tmp.sub("host-state"),
        ]
        let hostOut = Pipe()
        host.standardOutput = hostOut
        host.standardError = FileHandle.nullDevice
        try host.run()
        defer {
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        var logged = ""
        #expect(IntegrityToolTests.read(hostOut.fileHandleForReading, until: "accepted dev-i (control)", seen: &logged), "\(logged)")
        kill(run.processIdentifier, SIGINT)
        _ = runOut.fileHandleForReading.readDataToEndOfFile()
        run.waitUntilExit()
        #expect(run.terminationStatus == 0)
        let history = try IntegrityToolTests.report(out)["sinkStatus"] as? [String] ?? []
        #expect(history.contains { $0.contains("host reached again") }, "\(history)")
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
        let r = try ToolRunner.run(["run", ToolRunner.fixture("manifests/to-host.json"), "--out", out, "--host", "127.0.0.1:\(port)", "--device-id", "dev-r"])
        #expect(r.status == 0, "\(r.stderr)\n\(r.stdout)")
        for name in ["clip.mp4", "audio.wav", "index.bin", "meta.json"] {
            #expect(FileManager.default.contents(atPath: clipPath("\(out)/clips") + "/\(name)") == FileManager.default.contents(atPath: clipPath(tmp.sub("library/dev-r")) + "/\(name)"), "\(name)")
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

    /// Starts ppc-host on `port` (by default a free loopback port) with `library`, ingest policy `any`.
    /// `state`: the host's identity and pairings (default beside the library); `plaintext`: loopback plaintext taken too;
    /// `extra`: more arguments.
    init(
        library: String, port: Int = freeLoopbackPort(SOCK_STREAM), state: String? = nil, plaintext: Bool = true, policy: String = "any",
        extra: [String] = []
    ) throws {
        self.port = port
        process.executableURL = URL(fileURLWithPath: ToolRunner.executable("ppc-host"))
        process.arguments = ["--listen", "127.0.0.1:\(port)", "--library", library, "--ingest-policy", policy, "--state", state ?? (library + "-host-state")]
            + (plaintext ? ["--insecure-loopback-only"] : []) + extra
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = FileHandle.nullDevice
        try process.run()
        log = LineReader(pipe.fileHandleForReading)
    }

    func await(_ text: String) -> Bool { log.await(text) }

    func stop() {
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
    }
}

extension HostToolTests {
    @Test func aDeviceStoppedLongerThanThreeHeartbeatsDropsItsLinkSaysSoAndStillDelivers() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let host = try HostLog(library: tmp.sub("library"))
        let port = host.port
        defer { host.stop() }
        #expect(host.await("listening on"))
        let device = Process()
        device.executableURL = URL(fileURLWithPath: ToolRunner.executable())
        device.arguments = ["run", ToolRunner.fixture("manifests/to-host-slow.json"), "--out", tmp.sub("out"), "--host", "127.0.0.1:\(port)", "--device-id", "dev-s"]
        let out = Pipe()
        let err = Pipe()
        device.standardOutput = out
        device.standardError = err
        try device.run()
        let deviceLog = LineReader(err.fileHandleForReading)
        #expect(deviceLog.await("linked: events cross at once"))
        kill(device.processIdentifier, SIGSTOP)
        // The host notices the silence (three of its own heartbeat intervals) and drops the device…
        let dropped = host.await("sent nothing for")
        kill(device.processIdentifier, SIGCONT)
        #expect(dropped)
        let stdout = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        device.waitUntilExit()
        let stderr = deviceLog.text
        // …and the device, on waking, says it was stopped rather than claiming the link is up; a new link delivers the clip.
        #expect(stderr.contains("this device was stopped or suspended for"), "\(stderr)")
        #expect(stdout.contains("link: ") && stdout.contains("stopped or suspended"), "\(stdout)")
        #expect(device.terminationStatus == 0, "\(stdout)\n\(stderr)")
        #expect(FileManager.default.contents(atPath: clipPath(tmp.sub("out/clips")) + "/clip.mp4")
            == FileManager.default.contents(atPath: clipPath(tmp.sub("library/dev-s")) + "/clip.mp4"))
    }
}

extension HostToolTests {
    @Test func aHostThatHangsMidTransferCostsAtMostTheDeliveryTimeoutAndTheClipWaitsInTheOutbox() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let host = try HostLog(library: tmp.sub("library"))
        let port = host.port
        defer {
            kill(host.process.processIdentifier, SIGCONT)
            host.stop()
        }
        #expect(host.await("listening on"))
        let out = tmp.sub("out")
        let device = Process()
        device.executableURL = URL(fileURLWithPath: ToolRunner.executable())
        // Paced to 16 KiB per 100 ms so the transfer is still going when the host is frozen.
        device.arguments = ["run", ToolRunner.fixture("manifests/to-host.json"), "--out", out, "--host", "127.0.0.1:\(port)", "--device-id", "dev-h",
                            "--delivery-timeout", "2", "--set", "link.payloadPumpBudgetBytes=16384"]
        let pipe = Pipe()
        device.standardOutput = pipe
        device.standardError = FileHandle.nullDevice
        try device.run()
        // Frozen once the first chunk of the clip has landed (observed in the host's library, not guessed).
        let deadline = monotonicNowNs() + 60_000_000_000
        while !(((try? FileManager.default.contentsOfDirectory(atPath: clipPath(tmp.sub("library/dev-h/.partial")))) ?? []).contains { $0.hasSuffix(".chunks") })
            && monotonicNowNs() < deadline
        {
            sleepNs(2_000_000)  // poll interval
        }
        kill(host.process.processIdentifier, SIGSTOP)
        let stdout = String(decoding: pipe.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        device.waitUntilExit()
        #expect(device.terminationStatus == 1, "\(stdout)")
        #expect(stdout.contains("not delivered within 2 s"), "\(stdout)")
        #expect(FileManager.default.fileExists(atPath: clipPath("\(out)/outbox") + "/clip.mp4"))
    }
}

extension HostToolTests {
    @Test func aLivePreviewShowsTheNewestFrameOnTheHostAndNeverQueues() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let host = try HostLog(library: tmp.sub("library"))
        let port = host.port
        defer { host.stop() }
        #expect(host.await("listening on"))
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/to-host-slow.json"), "--out", tmp.sub("out"), "--host", "127.0.0.1:\(port)",
            "--device-id", "dev-v", "--preview-fps", "10",
        ])
        #expect(r.status == 0, "\(r.stdout)\n\(r.stderr)")
        #expect(host.await("preview from dev-v: 160x90 luma"))
        let pgm = try #require(FileManager.default.contents(atPath: tmp.sub("library/dev-v/preview.pgm")))
        let header = Array("P5\n160 90\n255\n".utf8)
        #expect(Array(pgm.prefix(header.count)) == header)
        #expect(pgm.count == header.count + 160 * 90)
        // The run says how many went and how many were shed; sent + shed never exceeds what 10 a second allows.
        let line = try #require(r.stdout.split(separator: "\n").first { $0.contains("preview: ") && $0.contains("frames sent") })
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
            "run", ToolRunner.fixture("manifests/mjpeg-to-host.json"), "--out", tmp.sub("out"), "--host", "127.0.0.1:\(host.port)",
            "--device-id", "mj-cam",
        ])
        #expect(r.status == 0, "\(r.stderr)\n\(r.stdout)")
        #expect(r.stdout.contains("→ passthrough →"), "\(r.stdout)")
        let local = clipPath(tmp.sub("out/clips"))
        let remote = clipPath(tmp.sub("library/mj-cam"))
        #expect(FileManager.default.contents(atPath: "\(local)/clip.mp4") == FileManager.default.contents(atPath: "\(remote)/clip.mp4"))
        let meta = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: "\(local)/meta.json"))) as? [String: Any])
        let profile = meta["captureProfile"] as? [String: Any] ?? [:]
        #expect(profile["codec"] as? String == "mjpeg" && profile["pixelFormat"] as? String == "mjpeg", "\(profile)")
        #expect(host.await("view copy of"), "\(host.log.text)")
        let probe = try ToolRunner.runProgram(
            "ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=codec_name,nb_read_frames", "-of", "csv=p=0", "\(remote)/view.mp4"])
        let original = try ToolRunner.runProgram(
            "ffprobe", ["-v", "error", "-count_frames", "-show_entries", "stream=codec_name,nb_read_frames", "-of", "csv=p=0", "\(remote)/clip.mp4"])
        let frames = String(decoding: original.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).split(separator: ",").last.map(String.init) ?? "?"
        #expect(String(decoding: original.stdout, as: UTF8.self).hasPrefix("mjpeg,"))
        #expect(String(decoding: probe.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines) == "h264,\(frames)", "\(probe.stderr)")
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
        #expect(host.await("listening on"))
        for device in ["cam-a", "cam-b"] {
            let r = try ToolRunner.run([
                "run", ToolRunner.fixture("manifests/to-host.json"), "--out", tmp.sub(device), "--host", "127.0.0.1:\(host.port)", "--device-id", device,
            ])
            #expect(r.status == 0, "\(r.stderr)")
            #expect(host.await("catalogued") && host.await("(\(device))"), "\(host.log.text)")
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
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: library + "/catalogue.sqlite" + suffix) }
        let rebuilt = try ToolRunner.run(["catalogue", "rebuild", "--library", library], tool: "ppc-host")
        #expect(rebuilt.status == 0 && rebuilt.stdout.contains("2 clip(s) catalogued"), "\(rebuilt.stdout) \(rebuilt.stderr)")
        #expect(try swings().count == 1)
    }
}

extension HostToolTests {
    /// Found 2026-12-02: a connection had no deadline, so a host that never answers (asleep, or behind a firewall that
    /// drops) held the delivery thread for the kernel's SYN retries, about two minutes per try — and at the end of a
    /// session, once more for every clip queued: a 13.5 s run had not ended after 300 s. Now a try costs
    /// `link.connectTimeoutNs`, and the clips already waiting when the host failed are not tried again (they wait in the
    /// outbox with the reason), so the end of the run costs one timeout, not one per clip.
    @Test func aHostThatNeverAnswersCostsOneConnectTimeoutNotOnePerClip() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let silent = try SilentListener()
        let out = tmp.sub("out")
        let manifest = tmp.sub("silent.json")
        // Unpaced: the three clips are minted within a few seconds, while the first try (made as deliveries begin)
        // waits out its 15 s.
        try """
            {
              "session": "silent",
              "sources": [
                { "plugin": "synthetic.video", "params": { "width": 320, "height": 180, "fps": 60, "seconds": 6, "texture": "flat", "impacts": [1.5, 3, 4.5] } },
                { "plugin": "synthetic.audio", "params": { "seconds": 6, "impacts": [1.5, 3, 4.5] } }
              ],
              "encoder": { "plugin": "x264", "params": { "threads": 1 } },
              "detector": { "plugin": "impact" },
              "sinks": [ { "plugin": "file" }, { "plugin": "network", "params": { "insecureLoopbackOnly": true } } ],
              "config": { "capture.videoBitrateBps": 1000000, "capture.expectedFrameRate": 60, "capture.clipPreNs": 500000000, "capture.clipPostNs": 500000000 }
            }
            """.write(toFile: manifest, atomically: false, encoding: .utf8)
        let r = try ToolRunner.run([
            "run", manifest, "--out", out, "--host", "127.0.0.1:\(silent.port)", "--device-id", "dev-q", "--set", "link.connectTimeoutNs=15000000000",
        ])
        #expect(r.status == 1)  // owed: not confirmed by the host
        let report = try IntegrityToolTests.report(out)
        let owed = try #require(report["clipsOwed"] as? [[String: Any]])
        #expect(owed.count == 3)
        for clip in owed {
            let why = (clip["refusedBy"] as? [String])?.joined() ?? ""
            #expect(why.contains("not tried: the host failed after") && why.contains("no answer within 15.0 s (link.connectTimeoutNs)"), "\(why)")
        }
        let history = report["sinkStatus"] as? [String] ?? []
        #expect(history.filter { $0.contains("host unreachable") }.count == 1, "\(history)")
        let clips = try FileManager.default.contentsOfDirectory(atPath: "\(out)/clips").sorted()
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(out)/outbox").sorted() == clips)
        #expect(clips.count == 3)
    }
}

extension HostToolTests {
    /// Found 2026-12-02: the host's thread reading a device's control channel wrote each push (device state, shot, preview
    /// frame) to every Live page in turn, so a page that stopped reading (a tablet asleep) held it until the host missed
    /// three heartbeats: the device dropped its link and its clips were owed. A page now has its own outbox and writer.
    @Test func aLivePageThatStopsReadingNeverCostsADeviceItsLink() throws {
        let tmp = TemporaryDirectory("ppc-host")
        let http = freeLoopbackPort(SOCK_STREAM)
        let (host, port) = try Self.startHost(library: tmp.sub("library"), extra: ["--http", "127.0.0.1:\(http)"])
        defer {
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        var stalled: WebSocketPeer?
        #expect(awaitCondition { stalled = try? WebSocketPeer(port: http, smallReceiveBuffer: true); return stalled != nil })
        _ = try stalled?.nextText()  // its greeting; then it reads nothing more
        let page = try WebSocketPeer(port: http)
        _ = try page.nextText()
        // 20 s at camera pace with the live preview at 60 frames a second: about 15 KB a frame, so the stalled page's
        // buffers and the host's fill within seconds.
        let manifest = tmp.sub("preview.json")
        try """
            {
              "session": "preview",
              "sources": [
                { "plugin": "synthetic.video", "params": { "width": 320, "height": 180, "fps": 60, "seconds": 20, "pace": "realtime", "texture": "flat", "impacts": [3, 14] } },
                { "plugin": "synthetic.audio", "params": { "seconds": 20, "impacts": [3, 14] } }
              ],
              "encoder": { "plugin": "x264", "params": { "threads": 1 } },
              "detector": { "plugin": "impact" },
              "sinks": [ { "plugin": "file" }, { "plugin": "network", "params": { "insecureLoopbackOnly": true, "previewFps": 60 } } ],
              "config": { "capture.videoBitrateBps": 1000000, "capture.expectedFrameRate": 60 }
            }
            """.write(toFile: manifest, atomically: false, encoding: .utf8)
        let r = try ToolRunner.run(["run", manifest, "--out", tmp.sub("out"), "--host", "127.0.0.1:\(port)", "--device-id", "dev-v"])
        #expect(r.status == 0, "\(r.stdout)")  // both clips confirmed by the host
        // Its link held for the whole run: it was closed only as the session ended.
        #expect(!r.stderr.contains("no answer to three heartbeats") && !r.stderr.contains("reconnecting"), "\(r.stderr)")
        #expect(r.stderr.contains("link dropped: session ended"))
        // The page that reads saw both clips catalogued.
        var clips = 0
        while clips < 2, let text = try page.nextText() {
            if text.contains(#""type":"clip""#) { clips += 1 }
        }
        #expect(clips == 2)
        stalled?.close()
    }
}
