import Foundation
import FragmentRing
import Glibc
import Session
import Syscall
import TestSupport
import Testing

/// Issue 13 as a user meets it: a second run, a killed run, a full disk and a host that is down never lose a clip
/// silently.
@Suite("Integrity: one run per output, nothing left half-made, a full disk never stops capture", .serialized)
struct IntegrityToolTests {
    /// A session paced like a camera (5 s, two shots, unless asked otherwise), written to a temporary manifest.
    static func pacedManifest(
        _ dir: String, session: String = "paced", seconds: Int = 5, impacts: String = "[1.6, 3.3]",
        pacedAudio: Bool = false
    ) throws -> String {
        let path = "\(dir)/\(session).json"
        try """
        {
          "session": "\(session)",
          "sources": [
            { "plugin": "synthetic.video", "params": { "width": 320, "height": 180, "fps": 120, "seconds": \(seconds), "pace": "realtime", "texture": "flat", "impacts": \(impacts) } },
            { "plugin": "synthetic.audio", "params": { "seconds": \(seconds), "impacts": \(impacts), "pace": "\(pacedAudio ? "realtime" : "asap")" } }
          ],
          "encoder": { "plugin": "x264", "params": { "threads": 1 } },
          "detector": { "plugin": "impact" },
          "sinks": [ { "plugin": "file" } ],
          "config": { "capture.videoBitrateBps": 2000000, "capture.clipPostNs": 1500000000 }
        }
        """.write(toFile: path, atomically: false, encoding: .utf8)
        return path
    }

    /// Starts `ppc-tool run` in the background.
    static func start(_ args: [String]) throws -> (Process, Pipe, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ToolRunner.executable())
        p.arguments = args
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        return (p, out, err)
    }

    /// Ctrl-C to a run `start` began: its output read to the end and its exit awaited; its status and what it printed.
    static func ctrlC(_ run: Process, _ output: Pipe) -> (status: Int32, printed: String) {
        kill(run.processIdentifier, SIGINT)
        let printed = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        run.waitUntilExit()
        return (run.terminationStatus, printed)
    }

    /// Polls (every 10 ms, at most 60 s) until `condition` holds (TestSupport's `awaitCondition`).
    static func awaitCondition(_ condition: () -> Bool) -> Bool { TestSupport.awaitCondition(condition) }

    static func fragments(_ out: String) -> Int {
        ((try? FileManager.default.contentsOfDirectory(atPath: "\(out)/ring/fragments")) ?? []).count
    }

    static func report(_ out: String) throws -> SessionReport.Document { try sessionReport(out) }

    /// Reads `handle` until what it has sent (kept in `seen`) contains `text`: true, or false when it ended first. The
    /// tool's own output says when a state is reached; no delay is guessed.
    static func read(_ handle: FileHandle, until text: String, seen: inout String) -> Bool {
        while !seen.contains(text) {
            let d = handle.availableData
            if d.isEmpty { return false }
            seen += String(decoding: d, as: UTF8.self)
        }
        return true
    }

    @Test func aSecondRunOnTheSameOutputIsRefusedNamingTheFirst() throws {
        let tmp = TemporaryDirectory("ppc-integrity")
        // A minute of camera: the first run still holds the directory whatever the machine's load, until it is stopped.
        let manifest = try Self.pacedManifest(tmp.path, seconds: 60, pacedAudio: true)
        let out = tmp.sub("out")
        let (first, firstOut, _) = try Self.start(["run", manifest, "--out", out, "--device-id", "bay-1"])
        #expect(Self.awaitCondition { Self.fragments(out) >= 1 })
        let second = try ToolRunner.run(["run", manifest, "--out", out, "--device-id", "bay-1"])
        #expect(second.status == 1)
        #expect(second.stderr.contains("is in use by pid \(first.processIdentifier) (ppc-tool run"), "\(second.stderr)")
        // A drain of the same directory waits its turn too.
        let drain = try ToolRunner.run(["transfer", "drain", out, "--insecure-loopback-only", "--host", "127.0.0.1:9"])
        #expect(
            drain.status == 1 && drain.stderr.contains("in use by pid \(first.processIdentifier)"), "\(drain.stderr)")
        // Both swings minted, then Ctrl-C: the run ends as at the end of its source.
        var progress = ""
        #expect(Self.read(firstOut.fileHandleForReading, until: "clips 2", seen: &progress), "\(progress)")
        #expect(Self.ctrlC(first, firstOut).status == 0)
        let clips = try FileManager.default.contentsOfDirectory(atPath: "\(out)/clips")
        #expect(clips.count == 2 && clips.allSatisfy(isSessionClipID), "\(clips)")
        let report = try Self.report(out)
        #expect(report.stopRequests.count == 1)
        #expect(report.captureSeconds.value ?? 60 < 60)
    }

    /// A mistyped output directory is refused, neither made nor reported as "nothing owed" (which an operator would take
    /// for every clip delivered); so is a directory that holds no run.
    @Test func aDirectoryThatIsNoRunsOutputIsRefusedNotReportedAsNothingOwed() throws {
        let tmp = TemporaryDirectory("ppc-integrity")
        let typo = tmp.sub("ouy")
        for args in [
            ["transfer", "drain", typo, "--insecure-loopback-only", "--host", "127.0.0.1:9"],
            ["transfer", "status", typo],
        ] {
            let r = try ToolRunner.run(args)
            #expect(
                r.status == 65 && r.stderr.contains("\(typo): no such directory"), "\(args): \(r.stderr)\(r.stdout)")
            #expect(!FileManager.default.fileExists(atPath: typo))
        }
        let elsewhere = tmp.sub("photos")
        try FileManager.default.createDirectory(atPath: elsewhere, withIntermediateDirectories: true)
        let r = try ToolRunner.run([
            "transfer", "drain", elsewhere, "--insecure-loopback-only", "--host", "127.0.0.1:9",
        ])
        #expect(r.status == 65 && r.stderr.contains("not a run's output directory"), "\(r.stderr)")
        // no lock, no outbox left in it
        #expect(try FileManager.default.contentsOfDirectory(atPath: elsewhere).isEmpty)
    }

    /// A number no option can mean is refused by name before anything is tried: these trapped (a Double that is NaN or
    /// past Int64 converted to nanoseconds), tried to allocate 192 PB, or ran until killed.
    @Test(arguments: [
        ["detect", "in.wav", "--mic-to-ball", "nan"], ["detect", "in.wav", "--mic-to-ball", "1e300"],
        ["detect", "corpus", "c", "--seconds", "1e12"], ["detect", "corpus", "c", "--sessions", "9223372036854775807"],
        ["run", "m.json", "--duration", "1e300"], ["selftest", "--seconds", "inf"],
        ["ring", "fill", "r", "--bytes", "9223372036854775807"],
        ["ring", "fill", "r", "--count", "9223372036854775807"], ["link", "probe", "localhost:99999"],
    ])
    func aNumberNoOptionCanMeanIsRefusedByName(_ args: [String]) throws {
        let tmp = TemporaryDirectory("ppc-integrity")
        let r = try ToolRunner.run(args.map { ["in.wav", "c", "m.json", "r"].contains($0) ? tmp.sub($0) : $0 })
        #expect(r.status == 64 && r.stderr.contains("'\(args.last!)'"), "\(args): \(r.status) \(r.stderr)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: tmp.path).isEmpty, "nothing made")
    }

    /// A minute of paced session (`impacts`), stopped by Ctrl-C once its progress line shows `when` — twice when
    /// `twice`, the second once the first has been taken (two signals sent at once may arrive as one). Its exit status,
    /// what it printed after the stop, and its report.
    static func stoppedByCtrlC(
        impacts: String, pacedAudio: Bool = true, when: String, twice: Bool = false
    ) throws -> (status: Int32, printed: String, report: SessionReport.Document) {
        let tmp = TemporaryDirectory("ppc-integrity")
        let manifest = try pacedManifest(tmp.path, seconds: 60, impacts: impacts, pacedAudio: pacedAudio)
        let out = tmp.sub("out")
        let (run, runOut, runErr) = try start(["run", manifest, "--out", out, "--device-id", "bay-1"])
        var progress = ""
        var said = ""
        #expect(read(runOut.fileHandleForReading, until: when, seen: &progress), "\(progress)")
        kill(run.processIdentifier, SIGINT)
        if twice {
            #expect(read(runErr.fileHandleForReading, until: "again to stop at once", seen: &said), "\(said)")
            kill(run.processIdentifier, SIGINT)
        }
        let printed = String(decoding: runOut.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        run.waitUntilExit()
        return (run.terminationStatus, printed, try report(out))
    }

    /// A camera never ends by itself: Ctrl-C just after a swing is heard still gets its whole clip, and the report.
    @Test func ctrlCJustAfterASwingWaitsForItsPostRollAndEndsWithTheReport() throws {
        // Heard, and not yet minted: its post-roll is still to come (the progress line is the tool's own word).
        let (status, printed, report) = try Self.stoppedByCtrlC(impacts: "[1.6]", when: "shots 1  clips 0")
        #expect(status == 0, "\(printed)")
        #expect(printed.contains("stopped: SIGINT"), "\(printed)")
        let clips = report.clips
        try #require(clips.count == 1, "\(clips)")
        let (t0, end) = (clips[0].t0Ns, clips[0].endNs)
        #expect(end - t0 >= 1_500_000_000 - 8_333_334, "the whole 1.5 s post-roll, to within a frame: \(end - t0) ns")
        #expect(report.captureSeconds.value ?? 60 < 60)
        let policy = report.policy
        #expect(!policy.contains { $0.contains("cut") }, "\(policy)")
    }

    /// Audio read ahead of the picture (a file, an unpaced source) can hear a shot the video never reaches: stopped
    /// first, it gets no clip of the swing without its impact, and the report says so rather than dropping it unsaid.
    @Test func aShotHeardBeyondTheLastFrameIsReportedNotMintedWithoutItsImpact() throws {
        // Stopped once the second shot is heard, whether or not the first is minted yet: how far the audio runs ahead
        // of the picture is the machine's (under ThreadSanitizer on a busy machine the first clip was minted before the
        // second shot was heard, and a wait for "shots 2  clips 0" ran to the session's end).
        let (status, printed, report) = try Self.stoppedByCtrlC(
            impacts: "[1.6, 30.0]", pacedAudio: false, when: "shots 2")
        #expect(status == 0, "\(printed)")
        let clips = report.clips
        #expect(clips.count == 1 && (clips.first?.t0Ns ?? 0) < 2_000_000_000, "\(clips)")
        #expect(report.shots.value == 2)
        let policy = report.policy
        #expect(policy.contains { $0.contains("at t0 30.000 s: no clip, capture ended") }, "\(policy)")
        #expect(printed.contains("no clip, capture ended"), "the summary says it too: \(printed)")
    }

    /// A second Ctrl-C does not wait: the clip owed is minted with what was captured, and the report says so.
    @Test func aSecondCtrlCStopsAtOnceAndTheClipOwedSaysItWasCut() throws {
        let (status, printed, report) = try Self.stoppedByCtrlC(impacts: "[1.6]", when: "shots 1  clips 0", twice: true)
        #expect(status == 0, "\(printed)")
        #expect(report.stopRequests.count == 2, "\(report.stopRequests)")
        let clips = report.clips
        try #require(clips.count == 1, "\(clips)")
        let (t0, end) = (clips[0].t0Ns, clips[0].endNs)
        if end - t0 < 1_500_000_000 - 8_333_334 {
            #expect(report.policy.contains { $0.contains("post-roll cut") }, "\(report.policy)")
        }
    }

    @Test func aRerunOnTheSameOutputKeepsEveryClipAndClearsAKilledRunsStaging() throws {
        let tmp = TemporaryDirectory("ppc-integrity")
        let out = tmp.sub("out")
        let manifest = ToolRunner.fixture("manifests/short-session.json")
        #expect(try ToolRunner.run(["run", manifest, "--out", out, "--device-id", "bay-1"]).status == 0)
        // What a run killed mid-mint leaves: a half-made bundle in OUT/.staging.
        try FileManager.default.createDirectory(
            atPath: "\(out)/.staging/short-killed-001", withIntermediateDirectories: true)
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: "\(out)/.staging/short-killed-001/clip.mp4"))
        let again = try ToolRunner.run(["run", manifest, "--out", out, "--device-id", "bay-1"])
        #expect(again.status == 0, "\(again.stdout)\n\(again.stderr)")
        #expect(!again.stderr.contains("File exists"))
        let clips = try FileManager.default.contentsOfDirectory(atPath: "\(out)/clips").sorted()
        #expect(clips.count == 4, "both sessions' clips are kept: \(clips)")
        #expect(Set(clips.map { $0.dropLast(4) }).count == 2, "two session ids: \(clips)")
        #expect(!FileManager.default.fileExists(atPath: "\(out)/.staging"))
        #expect(try Self.report(out).stagingLeftoversRemoved == ["short-killed-001"])
    }

    @Test func aSecondSessionWithTheHostDownKeepsTheFirstsOwedClipsAndBothArrive() throws {
        let tmp = TemporaryDirectory("ppc-integrity")
        let port = freeLoopbackPort(SOCK_STREAM)  // nothing listens yet
        let out = tmp.sub("out")
        for _ in 0..<2 {
            let r = try ToolRunner.run([
                "run", ToolRunner.fixture("manifests/to-host.json"), "--out", out, "--host", "127.0.0.1:\(port)",
                "--device-id", "dev-q",
            ])
            #expect(r.status == 1)  // not confirmed by the host: it waits in the outbox
        }
        let owed = try FileManager.default.contentsOfDirectory(atPath: "\(out)/outbox").sorted()
        #expect(owed.count == 2 && owed.allSatisfy(isSessionClipID), "\(owed)")
        try HostToolTests.drainToAHostThatCameUp(out: out, library: tmp.sub("library"), port: port) { _ in }
        // The drain used the device id the clips were minted under, and every byte of both arrived.
        let library = try FileManager.default.contentsOfDirectory(atPath: tmp.sub("library/dev-q")).filter {
            !$0.hasPrefix(".")
        }.sorted()
        #expect(library == owed)
        for clip in owed {
            #expect(
                FileManager.default.contents(atPath: "\(out)/clips/\(clip)/clip.mp4")
                    == FileManager.default.contents(atPath: tmp.sub("library/dev-q/\(clip)/clip.mp4")))
        }
    }

    @Test func aPinAKilledMintLeftIsReleasedAndNoOwedClipsPinIs() throws {
        let tmp = TemporaryDirectory("ppc-integrity")
        let out = tmp.sub("out")
        let manifest = ToolRunner.fixture("manifests/short-session.json")
        #expect(try ToolRunner.run(["run", manifest, "--out", out, "--device-id", "bay-1"]).status == 0)
        // What a run killed mid-mint leaves: a pin in the ring's log that no owed clip names; and one that an owed clip
        // (in OUT/outbox) does name (OUT/pins/<clipId>.json), which must stay.
        let (stray, owed): (UInt64, UInt64) = try {
            let ring = try FragmentRing(
                directory: "\(out)/ring", configuration: .init(capacity: 20, fileExtension: "ts"))
            let f = ring.fragments
            let stray = try ring.pin(from: f[0].sequence, through: f[1].sequence).id
            let owed = try ring.pin(from: f[2].sequence, through: f[3].sequence)
            try FileManager.default.createDirectory(atPath: "\(out)/pins", withIntermediateDirectories: true)
            try FileManager.default.createDirectory(
                atPath: "\(out)/outbox/short-owed-001", withIntermediateDirectories: true)
            try Data(
                #"{"pinId": \#(owed.id), "first": \#(owed.first.rawValue), "last": \#(owed.last.rawValue), "clipId": "short-owed-001"}"#
                    .utf8
            )
            .write(to: URL(fileURLWithPath: "\(out)/pins/short-owed-001.json"))
            return (stray, owed.id)
        }()
        #expect(try ToolRunner.run(["run", manifest, "--out", out, "--device-id", "bay-1"]).status == 0)
        #expect(try Self.report(out).unownedPinsReleased == [stray])
        let ring = try FragmentRing(directory: "\(out)/ring", configuration: .init(capacity: 20, fileExtension: "ts"))
        #expect(ring.pins.map(\.id) == [owed])
        #expect(try ToolRunner.run(["ring", "verify", "\(out)/ring"]).status == 0)
    }

    @Test(arguments: ["bay/c", "../up", ".dot"])
    func aDeviceIDThatIsNotAPlainNameIsAUsageError(device: String) throws {
        let tmp = TemporaryDirectory("ppc-integrity")
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/short-session.json"), "--out", tmp.sub("out"), "--device-id", device,
        ])
        #expect(r.status == 64)
        #expect(r.stderr.contains("--device-id"), "\(r.stderr)")
    }

    static let canMount: Bool = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/bin/mount")

    @Test(.enabled(if: canMount, "needs root to mount a small tmpfs"))
    func aDiskFilledByAnotherWriterNeverStopsCaptureAndNoShotIsLost() throws {
        let tmp = TemporaryDirectory("ppc-integrity")
        let manifest = try Self.pacedManifest(tmp.path)
        let out = tmp.sub("out")
        try FileManager.default.createDirectory(atPath: out, withIntermediateDirectories: true)
        let mount = try ToolRunner.runProgram("/bin/mount", ["-t", "tmpfs", "-o", "size=\(64 << 20)", "tmpfs", out])
        #expect(mount.status == 0, "\(mount.stderr)")
        defer { _ = try? ToolRunner.runProgram("/bin/umount", ["-l", out]) }
        let (run, stdout, _) = try Self.start(["run", manifest, "--out", out, "--device-id", "bay-1"])
        #expect(Self.awaitCondition { Self.fragments(out) >= 2 })
        // Another writer takes every byte left.
        let filler = FileHandle(
            forWritingAtPath: {
                _ = FileManager.default.createFile(atPath: "\(out)/filler", contents: nil)
                return "\(out)/filler"
            }())!
        let block = Data(repeating: 0x5A, count: 1 << 20)
        while (try? filler.write(contentsOf: block)) != nil {}
        try? filler.synchronize()
        let printed = String(decoding: stdout.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        run.waitUntilExit()
        #expect(run.terminationStatus == 0, "\(printed)")
        let report = try Self.report(out)
        #expect(report.framesCaptured.value == 600, "capture went on to the end of the source")
        let full = try #require(report.diskFull.value)
        #expect(full.events > 0, "the full disk was met and counted: \(full)")
        #expect(printed.contains("the disk was full"), "\(printed)")
        // Both shots were minted, whole: the one that found the disk full was minted again when capture ended.
        let clips = report.clips
        #expect(clips.count == 2, "\(printed)")
        for c in clips {
            let path = c.path
            let probe = try ToolRunner.runProgram(
                "ffprobe",
                [
                    "-v", "error", "-select_streams", "v:0", "-count_frames", "-show_entries", "stream=nb_read_frames",
                    "-of", "csv=p=0", "\(path)/clip.mp4",
                ])
            #expect(
                probe.status == 0 && !String(decoding: probe.stdout, as: UTF8.self).isEmpty, "\(path): \(probe.stderr)")
        }
    }
}
