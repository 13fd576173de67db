import Foundation
import Glibc
import Syscall
import TestSupport
import Testing

/// ppc-host against connections that never say anything (issue 33): bounded in count and time, on loopback, the host
/// started with the 1 024-descriptor limit a service gets by default.
@Suite("ppc-host under silent connections: it serves on, and devices get in", .serialized)
struct HostUnderAttackTests {
    /// ppc-host under `prlimit --nofile=LIMIT:LIMIT`, its output in OUT/host.log; returns once it listens.
    static func startLimitedHost(_ tmp: TemporaryDirectory, fileLimit: Int, extra: [String] = []) throws -> (
        Process, port: Int, log: String
    ) {
        let port = freeLoopbackPort(SOCK_STREAM)
        let log = tmp.sub("host.log")
        _ = FileManager.default.createFile(atPath: log, contents: nil)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
        p.arguments =
            [
                "--nofile=\(fileLimit):\(fileLimit)", "--", ToolRunner.executable("ppc-host"), "--listen",
                "127.0.0.1:\(port)",
                "--library", tmp.sub("library"), "--ingest-policy", "any", "--insecure-loopback-only", "--state",
                tmp.sub("host-state"),
            ] + extra
        p.standardOutput = FileHandle(forWritingAtPath: log)
        p.standardError = p.standardOutput
        try p.run()
        let listening = awaitCondition {
            (try? String(contentsOfFile: log, encoding: .utf8))?.contains("listening on 127.0.0.1:\(port)") == true
                || !p.isRunning
        }
        #expect(
            listening && p.isRunning,
            "ppc-host did not start: \((try? String(contentsOfFile: log, encoding: .utf8)) ?? "")")
        return (p, port, log)
    }

    /// This test's own descriptors: it opens more than a thousand.
    static func roomForConnections(_ n: Int) -> Bool { FileLimit.raiseToHard().soft >= n + 256 }

    /// Before: 1 100 silent connections under a 1 024 limit turned every accept into EMFILE, which ended the accept loop:
    /// "stopped; every clip stored is catalogued", exit 0, the port closed, and 0 of 3 clips arrived. Now connections
    /// that have not finished a handshake are bounded per peer and overall (the one silent longest making room), a
    /// passing accept error is backed off, and a device delivers every clip while they are all still open.
    @Test func silentConnectionsPastTheFileLimitNeitherStopTheHostNorKeepADeviceOut() throws {
        guard Self.roomForConnections(1_100) else {
            Issue.record(
                "this machine's hard descriptor limit (\(FileLimit.raiseToHard().hard)) leaves no room for 1 100 connections"
            )
            return
        }
        let tmp = TemporaryDirectory("ppc-attack-idle")
        let (host, port, log) = try Self.startLimitedHost(tmp, fileLimit: 1_024)
        defer {
            kill(host.processIdentifier, SIGKILL)
            host.waitUntilExit()
        }
        // 550 from one peer, and one each from 550 others: the per-peer bound and the overall bound both hold.
        var silent = silentConnections(to: port, from: ["127.0.0.2"], each: 550)
        silent += silentConnections(to: port, from: loopbackPeers(550), each: 1)
        defer { closeAll(silent) }
        #expect(silent.count >= 1_000, "\(silent.count) silent connections made")
        #expect(host.isRunning, "ppc-host stopped under \(silent.count) silent connections")
        let r = try ToolRunner.run([
            "run", ToolRunner.fixture("manifests/to-host-three.json"), "--out", tmp.sub("out"), "--host",
            "127.0.0.1:\(port)",
            "--device-id", "dev-a", "--insecure-loopback-only",
        ])
        #expect(r.status == 0, "\(r.stderr)")
        let arrived =
            (try? FileManager.default.contentsOfDirectory(atPath: tmp.sub("library/dev-a")))?.filter(isSessionClipID)
            ?? []
        #expect(arrived.count == 3, "\(arrived)")
        #expect(host.isRunning)
        let said = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(said.contains("closed a connection from 127.0.0.2 that had said nothing for"), "\(said.suffix(2000))")
        #expect(
            said.contains("at most 8 from one address") && said.contains("at most 128 from all"), "\(said.suffix(2000))"
        )
        let lines = said.split(separator: "\n").filter { $0.contains("to make room for a newer one") }.count
        #expect(lines < 50, "\(lines) lines for the refused connections")
    }
}
