import Foundation
import PayloadSource
import Synthetic
import Syscall
import TestSupport
import Testing

/// Either side SIGKILLed mid-transfer, as a power switch or the OOM killer would: real processes (ppc-host, `ppc-tool
/// transfer drain`), real loopback sockets, a 24 MiB clip paced at the default 40 MB/s so the kill lands mid-file.
/// Every clip arrives exactly once and byte-equal; a cut costs at most one chunk sent again, and the host keeps every
/// chunk it acknowledged.
@Suite("Transfer survives SIGKILL of the host or the device", .serialized)
struct KillTests {
    static let size = 24 << 20

    /// An outbox holding one clip: `clip.mp4` of incompressible bytes and a small meta.json.
    static func outbox(_ out: String) throws -> [UInt8] {
        let dir = "\(out)/outbox/big-001"
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var rng = SplitMix64(seed: 7)
        var bytes = [UInt8](repeating: 0, count: size)
        bytes.withUnsafeMutableBytes { b in
            for i in stride(from: 0, to: size, by: 8) { b.storeBytes(of: rng.next(), toByteOffset: i, as: UInt64.self) }
        }
        try Data(bytes).write(to: URL(fileURLWithPath: "\(dir)/clip.mp4"))
        // A meta.json as a mint writes it, recording clip.mp4's size and XXH3: a sender checks a bundle against it.
        let meta = ClipMeta.standIn(clipId: "big-001", device: "dev-k", files: ["clip.mp4": bytes])
        try meta.encoded().write(to: URL(fileURLWithPath: "\(dir)/meta.json"))
        return bytes
    }

    /// meta.json's size as the host stored it: what a restarted transfer sends beside the rest of clip.mp4, at most.
    static func metaBytes(_ library: String) -> Int {
        ((try? FileManager.default.attributesOfItem(atPath: "\(library)/dev-k/big-001/meta.json"))?[.size] as? NSNumber)?
            .intValue ?? 0
    }

    static func startDrain(_ out: String, port: Int) throws -> (Process, Pipe) {
        let p = Process()
        p.executableURL = URL(fileURLWithPath: ToolRunner.executable())
        p.arguments = [
            "transfer", "drain", out, "--insecure-loopback-only", "--host", "127.0.0.1:\(port)", "--device-id", "dev-k",
            "--json",
        ]
        let pipe = Pipe()
        p.standardOutput = pipe
        p.standardError = FileHandle.nullDevice
        try p.run()
        return (p, pipe)
    }

    static func result(_ pipe: Pipe) throws -> [String: Any] {
        let data = pipe.fileHandleForReading.readDataToEndOfFile()
        let all = try JSONSerialization.jsonObject(with: data) as? [[String: Any]] ?? []
        return all.first ?? [:]
    }

    /// Chunks the host has logged for the partial clip.mp4 (its chunk log, 24 bytes a record).
    static func loggedChunks(_ library: String) -> Int {
        let path = "\(library)/dev-k/.partial/big-001/clip.mp4.chunks"
        return Int(((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.intValue ?? 0) / 24
    }

    /// Waits until the host has logged `n` chunks (progress observed on disk, not a guessed delay); false after 60 s.
    static func awaitLogged(_ library: String, atLeast n: Int) -> Bool {
        let deadline = monotonicNowNs() + 60_000_000_000
        while loggedChunks(library) < n {
            if monotonicNowNs() > deadline { return false }
            sleepNs(2_000_000)  // poll interval
        }
        return true
    }

    static func kill9(_ p: Process) {
        kill(p.processIdentifier, SIGKILL)
        p.waitUntilExit()
    }

    @Test func theHostKilledMidTransferAndRestartedLosesNothingItAcknowledged() throws {
        let tmp = TemporaryDirectory("ppc-kill")
        let out = tmp.sub("out")
        let library = tmp.sub("library")
        let source = try Self.outbox(out)
        let (hostA, port) = try HostToolTests.startHost(library: library)
        let (drain1, pipe1) = try Self.startDrain(out, port: port)
        #expect(Self.awaitLogged(library, atLeast: 8))
        Self.kill9(hostA)
        let atDeath = Self.loggedChunks(library)
        drain1.waitUntilExit()
        let first = try Self.result(pipe1)
        #expect(drain1.terminationStatus == 1 && first["delivered"] as? Bool == false, "\(first)")

        let (hostB, _) = try HostToolTests.startHost(library: library, port: port)
        defer { Self.kill9(hostB) }
        let (drain2, pipe2) = try Self.startDrain(out, port: port)
        drain2.waitUntilExit()
        let second = try Self.result(pipe2)
        #expect(drain2.terminationStatus == 0, "\(second)")
        let resumed = (second["resumedAt"] as? [String: Any])?["clip.mp4"] as? Int ?? -1
        // The restarted host re-verified its chunk log: every chunk the killed host logged was still there.
        // The chunk size the device used (1 MiB with a core kept free for control, 64 KiB without), as it reports it.
        let chunk = first["chunkBytes"] as? Int ?? 0
        #expect(chunk > 0, "\(first)")
        #expect(resumed == atDeath * chunk, "resumed at \(resumed), host had logged \(atDeath) chunks")
        // Sent again: what the first device sent beyond what the host kept — at most one chunk.
        let sentFirst = first["bytesSent"] as? Int ?? 0
        #expect(sentFirst - resumed <= chunk, "\(sentFirst) sent, \(resumed) kept")
        // The restarted transfer sent exactly the rest of clip.mp4, plus the small meta.json.
        #expect((second["bytesSent"] as? Int ?? 0) - (Self.size - resumed) <= Self.metaBytes(library), "\(second)")
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(library)/dev-k/big-001/clip.mp4"))) == source)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: "\(library)/dev-k").filter { !$0.hasPrefix(".") } == [
                "big-001"
            ])
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(out)/outbox").isEmpty)
    }

    @Test func theDeviceKilledMidTransferAndRestartedResumesWhereTheHostStopped() throws {
        let tmp = TemporaryDirectory("ppc-kill")
        let out = tmp.sub("out")
        let library = tmp.sub("library")
        let source = try Self.outbox(out)
        let (host, port) = try HostToolTests.startHost(library: library)
        defer { Self.kill9(host) }
        let (drain1, _) = try Self.startDrain(out, port: port)
        #expect(Self.awaitLogged(library, atLeast: 8))
        Self.kill9(drain1)
        let atKill = Self.loggedChunks(library)
        // The clip is still owed: it stays in the outbox until the host confirms it.
        #expect(FileManager.default.fileExists(atPath: "\(out)/outbox/big-001/clip.mp4"))

        let (drain2, pipe2) = try Self.startDrain(out, port: port)
        drain2.waitUntilExit()
        let second = try Self.result(pipe2)
        #expect(drain2.terminationStatus == 0, "\(second)")
        let resumed = (second["resumedAt"] as? [String: Any])?["clip.mp4"] as? Int ?? -1
        let chunk = second["chunkBytes"] as? Int ?? 0
        #expect(chunk > 0, "\(second)")
        #expect(
            resumed >= atKill * chunk,
            "resumed at \(resumed); the host had logged \(atKill) chunks when the device died")
        #expect(resumed > 0)
        // Nothing the host held was sent again: the second device sent exactly the rest (clip.mp4 is not compressed).
        #expect(
            (second["bytesSent"] as? Int ?? 0) - (Self.size - resumed) <= Self.metaBytes(library),
            "\(second) (beside the rest of clip.mp4: meta.json)")
        #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(library)/dev-k/big-001/clip.mp4"))) == source)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: "\(library)/dev-k").filter { !$0.hasPrefix(".") } == [
                "big-001"
            ])
        #expect(try FileManager.default.contentsOfDirectory(atPath: "\(out)/outbox").isEmpty)
    }
}
