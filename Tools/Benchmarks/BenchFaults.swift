import CLI
import Checksum
import Foundation
import Glibc
import JSONInput
import Link
import PayloadSource
import Synthetic
import Syscall

/// `ppc-tool bench faults`: the crash campaign. Real processes killed with SIGKILL at random instants — a capture
/// (`ppc-tool run`) mid-session, and a host (`ppc-host`) or a device (`ppc-tool transfer drain`) mid-transfer — and
/// after each, what a person would check: every clip that was ever whole is still there and still whole, none is there
/// twice, and the ring is never damaged (a crash's leftovers are repaired by the next run). Figures are measured.
enum BenchFaults {
    static let command = Command(
        "faults",
        abstract:
            "Crash campaign: kill -9 a capture at random instants and a host or device at random transfer offsets; count clips lost, duplicated, torn.",
        discussion:
            "Targets: 0 lost, 0 duplicated, 0 torn over 100 kills of each kind. Takes a few minutes (each capture kill is a fresh run).",
        options: [
            Option.json, .value("kills", "n", help: "Kills of each kind (default 100)."),
            .value(
                "seed", "n",
                help: "Seed of the random kill instants (default: from the clock; printed, so a run can be repeated)."),
            .value("dir", "dir", help: "Where to work (default: a new directory under /tmp, removed after)."),
            .value("only", "capture|transfer", help: "Run one campaign only."),
        ], run: run)

    struct Tally {
        var kills = 0
        var clips = 0
        var lost: [String] = []
        var duplicated: [String] = []
        var torn: [String] = []
        var notes: [String: Int] = [:]

        var json: [String: Any] {
            [
                "kills": kills, "clips": clips, "lost": lost.count, "duplicated": duplicated.count, "torn": torn.count,
                "lostClips": lost, "duplicatedClips": duplicated, "tornClips": torn, "notes": notes,
            ]
        }
        var sentence: String {
            "\(kills) kills, \(clips) clips: \(lost.count) lost, \(duplicated.count) duplicated, \(torn.count) torn"
        }
    }

    static func run(_ inv: Invocation) throws -> ExitCode {
        let kills = try inv.parsed("kills", in: 1...100_000) ?? 100
        let seed = try inv.parsed("seed", as: UInt64.self) ?? UInt64(monotonicNowNs())
        let only = inv.value("only")
        guard only == nil || only == "capture" || only == "transfer" else {
            throw CommandFailure.usage("--only: expected capture or transfer")
        }
        let base = inv.value("dir") ?? NSTemporaryDirectory() + "ppc-bench-faults-\(getpid())"
        try FileSystem.makeDirectory(base)
        defer { if inv.value("dir") == nil { try? FileManager.default.removeItem(atPath: base) } }
        var rng = SplitMix64(seed: seed)
        var result = BenchCommand.provenance()
        result["seed"] = seed
        var lines = ["bench faults (seed \(seed)):"]
        var clean = true
        if only != "transfer" {
            let t = try captureCampaign(kills: kills, dir: "\(base)/capture", rng: &rng) { Terminal.err($0) }
            result["capture"] = t.json
            lines.append(
                "  capture kills: \(t.sentence); \(t.notes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))"
            )
            clean = clean && t.lost.isEmpty && t.duplicated.isEmpty && t.torn.isEmpty
        }
        if only != "capture" {
            let t = try transferCampaign(kills: kills, dir: "\(base)/transfer", rng: &rng) { Terminal.err($0) }
            result["transfer"] = t.json
            lines.append(
                "  transfer kills: \(t.sentence); \(t.notes.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))"
            )
            clean = clean && t.lost.isEmpty && t.duplicated.isEmpty && t.torn.isEmpty
        }
        result["targets"] = "0 lost, 0 duplicated, 0 torn over \(kills) kills of each kind"
        result["met"] = clean
        try BenchCommand.emit(result, json: inv.flag("json"), lines: lines)
        return clean ? .success : .failure
    }

    // MARK: Processes

    /// This executable, and ppc-host beside it.
    static var tool: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }
    static var host: String {
        URL(fileURLWithPath: tool).deletingLastPathComponent().appendingPathComponent("ppc-host").path
    }

    static func start(_ executable: String, _ arguments: [String]) throws -> Process {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        p.standardOutput = FileHandle.nullDevice
        p.standardError = FileHandle.nullDevice
        try p.run()
        return p
    }

    static func kill9(_ p: Process) {
        if p.isRunning { ProcessSignal.send(SIGKILL, to: p.processIdentifier) }
        p.waitUntilExit()
    }

    /// Runs `executable` to the end; its exit status and what it said on stderr.
    @discardableResult
    static func runToEnd(_ executable: String, _ arguments: [String]) throws -> (status: Int32, stderr: String) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: executable)
        p.arguments = arguments
        p.standardOutput = FileHandle.nullDevice
        let err = Pipe()
        p.standardError = err
        try p.run()
        let said = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        return (p.terminationStatus, said)
    }

    /// A random instant in [lo, hi] seconds, slept: the kill's timing is the experiment's random variable.
    static func sleepRandom(_ rng: inout SplitMix64, _ lo: Double, _ hi: Double) {
        sleepNs(Int64((lo + (hi - lo) * rng.unit()) * 1e9))
    }

    // MARK: Bundles

    /// A clip's shot: its session id and t0, from its meta.json.
    static func shotKey(_ dir: String) -> String? {
        guard let data = FileManager.default.contents(atPath: "\(dir)/meta.json"),
            let meta = try? JSONInput.object(data), let session = meta["sessionId"] as? String,
            let t0 = ((meta["t0Ns"] as? [String: Any])?["value"] as? NSNumber)?.int64Value
        else { return nil }
        return "\(session)@\(t0)"
    }

    static func hashOf(_ path: String) -> UInt64? {
        FileManager.default.contents(atPath: path).map { XXH3.hash([UInt8]($0)) }
    }

    // MARK: Capture

    /// A 3 s session paced like a camera with three swings: each run mints a clip about every 0.7 s, so a kill at a
    /// random instant lands before, during or after a mint.
    static let captureManifest = """
        {
          "session": "faults",
          "sources": [
            { "plugin": "synthetic.video", "params": { "width": 320, "height": 180, "fps": 120, "seconds": 3, "pace": "realtime", "texture": "flat", "impacts": [0.6, 1.3, 2.0] } },
            { "plugin": "synthetic.audio", "params": { "seconds": 3, "impacts": [0.6, 1.3, 2.0] } }
          ],
          "encoder": { "plugin": "x264", "params": { "threads": 1 } },
          "detector": { "plugin": "impact" },
          "sinks": [ { "plugin": "file" } ],
          "config": { "capture.videoBitrateBps": 2000000, "capture.clipPreNs": 300000000, "capture.clipPostNs": 500000000 }
        }
        """

    static func captureCampaign(kills: Int, dir: String, rng: inout SplitMix64, progress: (String) -> Void) throws
        -> Tally
    {
        try FileSystem.makeDirectory(dir)
        let manifest = "\(dir)/faults.json"
        try FileSystem.writeAtomically(Array(captureManifest.utf8), to: manifest)
        let out = "\(dir)/out"
        var tally = Tally()
        // Every clip seen whole after a kill, by name, with its clip.mp4's hash: each must stay so to the end.
        var seen: [String: UInt64] = [:]
        func look() {
            for name in (try? FileSystem.list("\(out)/clips")) ?? [] where !name.hasPrefix(".") {
                let path = "\(out)/clips/\(name)"
                if let why = ClipMeta.bundleProblem(path) {  // not whole by its own meta.json
                    if !tally.torn.contains(name) { tally.torn.append("\(name): \(why)") }
                } else if seen[name] == nil, let h = hashOf("\(path)/clip.mp4") {
                    seen[name] = h
                }
            }
        }
        for k in 1...kills {
            let run = try start(tool, ["run", manifest, "--out", out, "--device-id", "faults"])
            sleepRandom(&rng, 0.05, 3.4)
            let stillRunning = run.isRunning
            kill9(run)
            tally.kills += 1
            tally.notes[stillRunning ? "killedMidRun" : "endedBeforeTheKill", default: 0] += 1
            // The ring on disk right after the kill: a crash's leftovers are recoverable (75), never damage (65).
            let verify = try runToEnd(tool, ["ring", "verify", "\(out)/ring"])
            tally.notes[
                verify.status == 0 ? "ringClean" : verify.status == 75 ? "ringRecoverable" : "ringDamaged", default: 0] +=
                1
            if verify.status == 65 { tally.torn.append("ring damaged after kill \(k): \(verify.stderr.prefix(600))") }
            look()
            if k % 10 == 0 { progress("bench faults: capture kill \(k)/\(kills), \(seen.count) clips so far") }
        }
        // A last run, not killed: it recovers whatever the last kill left and must succeed.
        let last = try runToEnd(tool, ["run", manifest, "--out", out, "--device-id", "faults"])
        if last.status != 0 {
            tally.lost.append("the run after the last kill exited \(last.status): \(last.stderr.prefix(600))")
        }
        let finalVerify = try runToEnd(tool, ["ring", "verify", "\(out)/ring"])
        if finalVerify.status != 0 {
            tally.torn.append("ring not clean after the last run: \(finalVerify.stderr.prefix(600))")
        }
        if FileManager.default.fileExists(atPath: "\(out)/.staging") {
            tally.notes["stagingLeftAfterLastRun", default: 0] += 1
        }
        look()
        // Every clip ever whole is still there and unchanged; no shot of one session was minted twice (the synthetic
        // swing repeats byte for byte from run to run, so sameness is judged by session and t0, not by the bytes).
        var shots: [String: String] = [:]
        for (name, h) in seen.sorted(by: { $0.key < $1.key }) {
            let now = hashOf("\(out)/clips/\(name)/clip.mp4")
            if now == nil {
                tally.lost.append(name)
            } else if now != h {
                tally.torn.append("\(name): clip.mp4 changed")
            }
            if let key = shotKey("\(out)/clips/\(name)") {
                if let other = shots[key] { tally.duplicated.append("\(name) = \(other)") } else { shots[key] = name }
            }
        }
        tally.clips = seen.count
        return tally
    }

    // MARK: Transfer

    /// Clips of 6 MiB of incompressible bytes: four take the device about 0.6 s at its default pace (40 MB/s), so a kill
    /// at a random instant lands mid-file, between files or between clips.
    static let clipBytes = 6 << 20

    static func enqueue(_ out: String, id: String, rng: inout SplitMix64) throws -> UInt64 {
        let dir = "\(out)/outbox/\(id)"
        try FileSystem.makeDirectory(out)
        try FileSystem.makeDirectory("\(out)/outbox")
        try FileSystem.makeDirectory(dir)
        var bytes = [UInt8](repeating: 0, count: clipBytes)
        bytes.withUnsafeMutableBytes { b in
            for i in stride(from: 0, to: clipBytes, by: 8) {
                b.storeBytes(of: rng.next(), toByteOffset: i, as: UInt64.self)
            }
        }
        try FileSystem.writeAtomically(bytes, to: "\(dir)/clip.mp4")
        // A meta.json as a mint writes it (clip.mp4's size and XXH3): a sender checks a bundle against it.
        try FileSystem.writeAtomically(
            [UInt8](try ClipMeta.standIn(clipId: id, device: "dev-f", files: ["clip.mp4": bytes]).encoded()),
            to: "\(dir)/meta.json")
        return XXH3.hash(bytes)
    }

    /// Bytes of chunk log the host holds for partial files (it grows by a record for every chunk it acknowledges).
    static func loggedChunkBytes(_ library: String) -> Int {
        var total = 0
        for clip in (try? FileSystem.list("\(library)/dev-f/.partial")) ?? [] {
            for file in (try? FileSystem.list("\(library)/dev-f/.partial/\(clip)")) ?? []
            where file.hasSuffix(".chunks") {
                total +=
                    ((try? FileManager.default.attributesOfItem(atPath: "\(library)/dev-f/.partial/\(clip)/\(file)"))?[
                        .size] as? NSNumber)?.intValue ?? 0
            }
        }
        return total
    }

    /// Waits (polling every 2 ms, at most 30 s) until the host has logged a chunk more than `before`, or `drain` has
    /// ended.
    static func awaitTransferUnderWay(_ library: String, _ drain: Process, before: Int) {
        let deadline = monotonicNowNs() + 30_000_000_000
        while drain.isRunning && monotonicNowNs() < deadline && loggedChunkBytes(library) <= before {
            sleepNs(2_000_000)  // poll interval
        }
    }

    static func transferCampaign(kills: Int, dir: String, rng: inout SplitMix64, progress: (String) -> Void) throws
        -> Tally
    {
        try FileSystem.makeDirectory(dir)
        let out = "\(dir)/out"
        let library = "\(dir)/library"
        var port = try Listener(host: "127.0.0.1", port: 0).port  // a free port (the listener closes at once)
        /// A host listening on `port`: started, and returned once it says it listens (its log read, not a delay
        /// guessed); a host that cannot listen there (the port taken meanwhile) is started again on a fresh one.
        func startHost() throws -> Process {
            for _ in 0..<5 {
                let p = Process()
                p.executableURL = URL(fileURLWithPath: host)
                p.arguments = [
                    "--listen", "127.0.0.1:\(port)", "--library", library, "--ingest-policy", "any",
                    "--insecure-loopback-only", "--state", library + "-host-state",
                ]
                p.standardError = FileHandle.nullDevice
                let log = Pipe()
                p.standardOutput = log
                try p.run()
                let reader = log.fileHandleForReading
                var said = ""
                while !said.contains("listening on") {
                    let chunk = reader.availableData  // what the host has written so far; empty at its end
                    if chunk.isEmpty { break }
                    said += String(decoding: chunk, as: UTF8.self)
                }
                if said.contains("listening on") {
                    // The rest of its log is read and dropped, so the host never blocks on a full pipe.
                    Thread { while !reader.availableData.isEmpty {} }.start()
                    return p
                }
                p.waitUntilExit()
                port = try Listener(host: "127.0.0.1", port: 0).port
            }
            throw CommandFailure.failure("bench faults: ppc-host would not listen on five fresh ports")
        }
        var tally = Tally()
        var sources: [String: UInt64] = [:]
        var next = 1
        func refill(_ rng: inout SplitMix64) throws {
            while ((try? FileSystem.list("\(out)/outbox")) ?? []).filter({ !$0.hasPrefix(".") }).count < 4 {
                let id = String(format: "faults-%04d", next)
                next += 1
                sources[id] = try enqueue(out, id: id, rng: &rng)
            }
        }
        var hostProcess = try startHost()
        for k in 1...kills {
            try refill(&rng)
            if !hostProcess.isRunning { hostProcess = try startHost() }
            let logged = loggedChunkBytes(library)
            let drain = try start(
                tool,
                [
                    "transfer", "drain", out, "--insecure-loopback-only", "--host", "127.0.0.1:\(port)", "--device-id",
                    "dev-f",
                ])
            // The kill lands at a random point of a transfer under way: once the host has logged a chunk (observed on
            // disk, so a slow start on a loaded machine does not put every kill before the first byte), up to the time
            // a clip takes at the device's pace.
            awaitTransferUnderWay(library, drain, before: logged)
            sleepRandom(&rng, 0, 0.25)
            let killHost = rng.next() & 1 == 0
            let partials = ((try? FileSystem.list("\(library)/dev-f/.partial")) ?? []).count
            tally.notes[partials > 0 ? "killedWithAPartialClipOnTheHost" : "killedBetweenClips", default: 0] += 1
            if killHost {
                kill9(hostProcess)
                tally.notes["hostKills", default: 0] += 1
                drain.waitUntilExit()  // the device's transfer fails (or finished first); its clips stay owed
            } else {
                kill9(drain)
                tally.notes["deviceKills", default: 0] += 1
            }
            tally.kills += 1
            if k % 10 == 0 { progress("bench faults: transfer kill \(k)/\(kills), \(sources.count) clips so far") }
        }
        kill9(hostProcess)
        // A host and a device left alone: every clip still owed arrives.
        var drained = false
        var said: [String] = []
        for _ in 0..<3 where !drained {
            let finalHost = try startHost()
            defer { kill9(finalHost) }
            let drain = try runToEnd(
                tool,
                [
                    "transfer", "drain", out, "--insecure-loopback-only", "--host", "127.0.0.1:\(port)", "--device-id",
                    "dev-f",
                ])
            drained = drain.status == 0
            if !drained { said.append(String(drain.stderr.prefix(600))) }
        }
        let owed = ((try? FileSystem.list("\(out)/outbox")) ?? []).filter { !$0.hasPrefix(".") }
        let received = ((try? FileSystem.list("\(library)/dev-f")) ?? []).filter { !$0.hasPrefix(".") }
        for (id, h) in sources.sorted(by: { $0.key < $1.key }) {
            guard received.contains(id) else {
                tally.lost.append(
                    owed.contains(id) ? "\(id) (still owed after the final drain: \(said.last ?? ""))" : id)
                continue
            }
            if hashOf("\(library)/dev-f/\(id)/clip.mp4") != h { tally.torn.append(id) }
        }
        for id in received where sources[id] == nil { tally.duplicated.append("\(id): not a clip that was sent") }
        var byHash: [UInt64: String] = [:]
        for id in received.sorted() {
            guard let h = hashOf("\(library)/dev-f/\(id)/clip.mp4") else { continue }
            if let other = byHash[h] { tally.duplicated.append("\(id) = \(other)") } else { byHash[h] = id }
        }
        tally.clips = sources.count
        return tally
    }
}
