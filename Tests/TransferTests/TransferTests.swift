import Checksum
import Crypto
import Foundation
import Glibc
import Syscall
import TestSupport
import Testing

@testable import Link
@testable import Transfer

/// These tests speak plaintext to a loopback host (the encrypted link has its own tests in LinkTests and ToolTests).
let plaintextOnly = HostSecurity(identity: KeyPair.generate(), deviceFor: { _ in nil }, allowPlaintext: true)

@Suite("Transfer over loopback: verified, resumable, exactly once", .serialized)
struct TransferTests {
    static func bundle(_ dir: String) throws -> [String: [UInt8]] {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        var rng = SystemRandomNumberGenerator()
        let files: [String: [UInt8]] = [
            "clip.mp4": (0..<900_000).map { _ in UInt8.random(in: 0...255, using: &rng) },
            "audio.wav": [UInt8](repeating: 7, count: 384_000), "meta.json": Array("{\"clipId\": \"s-001\"}".utf8),
        ]
        for (n, b) in files { try Data(b).write(to: URL(fileURLWithPath: "\(dir)/\(n)")) }
        return files
    }

    static func start(_ server: HostServer) { Thread { _ = server.run() }.start() }

    static func connectBulk(_ port: Int, device: String = "bay-3") throws -> Connection {
        let c = try Connection.connect(host: "127.0.0.1", port: port, channel: .bulk)
        try c.send(.hello(protocolVersion: 1, deviceID: device, channel: .bulk, captureProfile: "640x360@120 h264"))
        guard case .helloAck(true, _, _) = try c.receive(timeoutNs: 5_000_000_000) else {
            throw LinkError(.refused, "refused")
        }
        return c
    }

    @Test func aBundleArrivesByteIdenticalAndConfirmed() throws {
        let tmp = TemporaryDirectory("ppc-link")
        let files = try Self.bundle(tmp.sub("staged"))
        let server = try HostServer(
            host: "127.0.0.1", port: 0, library: tmp.sub("library"), policy: .any, security: plaintextOnly)
        Self.start(server)
        defer { server.stop() }
        let report = try BundleSender.send(
            directory: tmp.sub("staged"), clipID: "s-001", over: try Self.connectBulk(server.port))
        #expect(report.remotePath == tmp.sub("library/bay-3/s-001"))
        // Bulk keeps a core free for control where there are two or more, and then sends the larger chunks.
        let cores = ThreadPriority.allowedCores(ofProcess: true)
        #expect(!cores.isEmpty)
        #expect(
            report.chunkBytes
                == (cores.count >= 2 ? BundleSender.chunkBytesOnSpareCores : BundleSender.chunkBytesSharingCores))
        for (n, b) in files {
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(report.remotePath)/\(n)"))) == b)
        }
        #expect(FileManager.default.fileExists(atPath: "\(report.remotePath)/host-meta.json"))
        #expect(report.bytesSent < 900_000 + 384_000)  // the WAV went compressed
    }

    /// A sender that is not a ppc device (which checks first) sends a bundle whose files are not those its meta.json
    /// records: the host keeps it — every byte verified as sent — and marks it in host-meta.json and its log. The check
    /// itself is the host's to give (ppc-host gives ClipMeta.verifyBundle); here it sees the received folder.
    @Test func aBundleThatDoesNotMatchItsMetaIsKeptAndMarked() throws {
        let tmp = TemporaryDirectory("ppc-link")
        _ = try Self.bundle(tmp.sub("staged"))
        let seen = Guarded<[String]>([])
        var options = HostServer.Options()
        options.checkBundle = { folder in
            seen.withLock { $0.append(folder) }
            return (try? FileManager.default.contentsOfDirectory(atPath: folder).sorted()) == [
                "audio.wav", "clip.mp4", "meta.json",
            ]
                ? "clip.mp4: its bytes are not those minted" : "unexpected files"
        }
        let server = try HostServer(
            host: "127.0.0.1", port: 0, library: tmp.sub("library"), policy: .any, security: plaintextOnly,
            options: options)
        Self.start(server)
        defer { server.stop() }
        let report = try BundleSender.send(
            directory: tmp.sub("staged"), clipID: "s-001", over: try Self.connectBulk(server.port))
        #expect(seen.withLock { $0 }.count == 1)  // once, on the verified files, before host-meta.json is written
        let hostMeta = try #require(
            try JSONSerialization.jsonObject(
                with: Data(contentsOf: URL(fileURLWithPath: "\(report.remotePath)/host-meta.json"))) as? [String: Any])
        #expect(
            hostMeta["bundle"] as? String == "does not match its meta.json: clip.mp4: its bytes are not those minted",
            "\(hostMeta)")
        #expect(
            server.log.contains {
                $0.contains("s-001: does not match its meta.json") && $0.contains("kept and marked")
            }, "\(server.log)")
    }

    /// A bundle sent in 128 KiB chunks to a host that cuts the bulk channel after `chunks` of them.
    static func cutTransfer(after chunks: Int) throws -> (
        tmp: TemporaryDirectory, files: [String: [UInt8]], library: String, received: Int
    ) {
        let tmp = TemporaryDirectory("ppc-link")
        let files = try Self.bundle(tmp.sub("staged"))
        let library = tmp.sub("library")
        var options = HostServer.Options()
        options.stopBulkAfterChunks = chunks
        let first = try HostServer(
            host: "127.0.0.1", port: 0, library: library, policy: .any, security: plaintextOnly, options: options)
        Self.start(first)
        #expect(throws: (any Error).self) {
            try BundleSender.send(
                directory: tmp.sub("staged"), clipID: "s-001", over: try Self.connectBulk(first.port),
                chunkBytes: 128 * 1024)
        }
        first.stop()
        return (tmp, files, library, first.store.chunksReceived)
    }

    @Test func bulkWorkNeverRunsOnTheCoreKeptForControl() throws {
        final class Seen: @unchecked Sendable {
            // @unchecked: written by the thread before it signals, read after.
            var before: [Int] = []
            var after: [Int] = []
            var confined = false
        }
        let seen = Seen()
        let done = DispatchSemaphore(value: 0)
        Thread {
            seen.before = ThreadPriority.allowedCores(ofProcess: true)
            seen.confined = ThreadPriority.confineToSpareCores().confined
            seen.after = ThreadPriority.allowedCores()
            // Twice is once: confinement is judged against the process's cores, not the thread's.
            seen.confined =
                seen.confined && ThreadPriority.confineToSpareCores().confined
                && ThreadPriority.allowedCores() == seen.after
            done.signal()
        }.start()
        done.wait()
        if seen.before.count >= 2 {
            #expect(seen.confined)
            #expect(seen.after == Array(seen.before.dropFirst()), "before \(seen.before), after \(seen.after)")
        } else {
            #expect(!seen.confined)
        }
    }

    /// Mounts a tmpfs of `bytes` at `path` (root only); nil when that is not possible here.
    static func smallFilesystem(at path: String, bytes: Int) -> String? {
        guard getuid() == 0 else { return "not root" }
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/bin/mount")
        p.arguments = ["-t", "tmpfs", "-o", "size=\(bytes)", "tmpfs", path]
        guard (try? p.run()) != nil else { return "no /bin/mount" }
        p.waitUntilExit()
        return p.terminationStatus == 0 ? nil : "mount -t tmpfs failed (exit \(p.terminationStatus))"
    }
    static let canMount: Bool = {
        let probe = TemporaryDirectory("ppc-mount")
        guard smallFilesystem(at: probe.path, bytes: 1 << 20) == nil else { return false }
        umount2(probe.path, Int32(MNT_DETACH))
        return true
    }()

    @Test(.enabled(if: canMount, "needs root to mount a small tmpfs"))
    func aHostWithoutRoomRefusesAFileAtItsOfferSaysWhyAndKeepsServing() throws {
        let tmp = TemporaryDirectory("ppc-link")
        _ = try Self.bundle(tmp.sub("staged"))  // audio.wav 384 000 B, clip.mp4 900 000 B, meta.json
        let library = tmp.sub("library")
        // Room for the WAV, not for the video beside it.
        #expect(Self.smallFilesystem(at: library, bytes: 1 << 20) == nil)
        defer { umount2(library, Int32(MNT_DETACH)) }
        let server = try HostServer(host: "127.0.0.1", port: 0, library: library, policy: .any, security: plaintextOnly)
        Self.start(server)
        defer { server.stop() }
        let bulk = try Self.connectBulk(server.port)
        #expect {
            try BundleSender.send(directory: tmp.sub("staged"), clipID: "s-001", over: bulk)
        } throws: { error in
            guard let e = error as? LinkError else { return false }
            return e.code == .refused && e.reason.contains("clip.mp4") && e.reason.contains("No space left on device")
        }
        #expect(server.log.contains { $0.contains("refused clip.mp4 of s-001 from bay-3") }, "\(server.log)")
        #expect(!FileManager.default.fileExists(atPath: "\(library)/bay-3/s-001"))  // nothing confirmed
        // The same channel goes on serving: a clip that fits arrives.
        try FileManager.default.createDirectory(atPath: tmp.sub("small"), withIntermediateDirectories: true)
        try Data("{\"clipId\": \"s-002\"}".utf8).write(to: URL(fileURLWithPath: tmp.sub("small/meta.json")))
        let report = try BundleSender.send(directory: tmp.sub("small"), clipID: "s-002", over: bulk)
        #expect(
            try Data(contentsOf: URL(fileURLWithPath: "\(report.remotePath)/meta.json"))
                == Data("{\"clipId\": \"s-002\"}".utf8))
    }

    @Test func eachChannelIsMarkedSoControlLeavesFirstAcrossANetwork() throws {
        let listener = try Listener(host: "127.0.0.1", port: 0)
        defer { listener.stop() }
        func marks(_ channel: LinkMessage.Channel) throws -> (tos: Int32, priority: Int32) {
            let c = try Connection.connect(host: "127.0.0.1", port: listener.port, channel: channel)
            var tos: Int32 = -1
            var priority: Int32 = -1
            var n = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(c.fd, Int32(IPPROTO_IP), IP_TOS, &tos, &n)
            n = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(c.fd, SOL_SOCKET, SO_PRIORITY, &priority, &n)
            return (tos, priority)
        }
        let control = try marks(.control)
        let bulk = try marks(.bulk)
        let preview = try marks(.preview)
        #expect(control.tos == 0xB8 && control.priority == 6)  // DSCP EF; pfifo_fast band 0
        #expect(bulk.tos == 0x20 && bulk.priority == 2)  // DSCP CS1; band 2
        #expect(preview.priority < control.priority && preview.priority != bulk.priority)
    }

    @Test func aHostCutMidTransferResumesWithAtMostOneChunkResent() throws {
        let (tmp, files, library, received) = try Self.cutTransfer(after: 3)
        // A new host process on the same library (restart): the device resumes at the committed offset.
        let second = try HostServer(host: "127.0.0.1", port: 0, library: library, policy: .any, security: plaintextOnly)
        Self.start(second)
        defer { second.stop() }
        let report = try BundleSender.send(
            directory: tmp.sub("staged"), clipID: "s-001", over: try Self.connectBulk(second.port),
            chunkBytes: 128 * 1024)
        let total = (900_000 + 127 * 1024) / (128 * 1024) + (384_000 + 128 * 1024 - 1) / (128 * 1024) + 1
        #expect(
            received + second.store.chunksReceived <= total + 1,
            "\(received) + \(second.store.chunksReceived) chunks for \(total)")
        for (n, b) in files {
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(report.remotePath)/\(n)"))) == b)
        }
        // Sent again (the device never heard the confirmation): confirmed again, nothing resent, still one clip.
        let again = try BundleSender.send(
            directory: tmp.sub("staged"), clipID: "s-001", over: try Self.connectBulk(second.port))
        #expect(again.chunksSent == 0 && again.remotePath == report.remotePath)
        #expect(
            try FileManager.default.contentsOfDirectory(atPath: "\(library)/bay-3").filter { !$0.hasPrefix(".") } == [
                "s-001"
            ])
    }

    @Test func aPartialFileWhoseUnsyncedBytesWereLostResumesFromWhatIsReallyThere() throws {
        // A power cut after a host acknowledged chunks without fsyncing them: some bytes never reached the disk. The
        // restarted host re-hashes every logged chunk and commits only up to the first that no longer matches.
        let (tmp, files, library, _) = try Self.cutTransfer(after: 4)
        // Chunks are sent in name order: audio.wav first (compressed), 3 chunks of 128 KiB; then clip.mp4. Lose the
        // second chunk of audio.wav's bytes, as a power cut would.
        let partial = "\(library)/bay-3/.partial/s-001/audio.wav"
        let fd = try FileDescriptor.open(partial, O_RDWR)
        let zeros = [UInt8](repeating: 0, count: 128 * 1024)
        try zeros.withUnsafeBytes { try fd.writeAll($0, at: 128 * 1024) }
        let second = try HostServer(host: "127.0.0.1", port: 0, library: library, policy: .any, security: plaintextOnly)
        Self.start(second)
        defer { second.stop() }
        let progress = BundleSender.Progress()
        let report = try BundleSender.send(
            directory: tmp.sub("staged"), clipID: "s-001", over: try Self.connectBulk(second.port),
            chunkBytes: 128 * 1024, progress: progress)
        #expect(
            progress.report.resumedAt["audio.wav"] == 128 * 1024,
            "only the first chunk still matched its log: \(progress.report.resumedAt)")
        for (n, b) in files {
            #expect([UInt8](try Data(contentsOf: URL(fileURLWithPath: "\(report.remotePath)/\(n)"))) == b)
        }
    }

    @Test func theIngestPolicyRefusesByNameAndReasonWithoutItsValuesOnTheWire() throws {
        let tmp = TemporaryDirectory("ppc-link")
        let server = try HostServer(
            host: "127.0.0.1", port: 0, library: tmp.sub("library"), policy: .pinpointStudio, security: plaintextOnly)
        Self.start(server)
        defer { server.stop() }
        do {
            _ = try DeviceLink(
                .init(
                    host: "127.0.0.1", port: server.port, deviceID: "d", captureProfile: "640x360@120 h264",
                    syncBurst: 4, heartbeatIntervalNs: 100_000_000))
            Issue.record("a 360-line device was accepted by pinpoint-studio")
        } catch {
            #expect(error.code == .refused)
            #expect(error.reason.contains("pinpoint-studio") && error.reason.contains("360 lines"), "\(error.reason)")
            // The floor is host policy: it never crosses the wire (seed 000 REQ-CAP-5); the host's own log has it.
            #expect(!error.reason.contains("1080") && !error.reason.contains("120 fps"), "\(error.reason)")
            #expect(server.log.contains { $0.contains("360 lines is below this host's 1080") }, "\(server.log)")
        }
    }

    @Test func aMalformedMessageClosesThatLinkOnlyAndIsLogged() throws {
        let tmp = TemporaryDirectory("ppc-link")
        let server = try HostServer(
            host: "127.0.0.1", port: 0, library: tmp.sub("library"), policy: .any, security: plaintextOnly)
        Self.start(server)
        defer { server.stop() }
        let bad = try Connection.connect(host: "127.0.0.1", port: server.port, channel: .control)
        bad.sendRaw([1, 99, 0, 0, 4, 0, 0, 0, 1, 2, 3, 4])  // unknown type
        #expect(throws: LinkError.self) { try bad.receive(timeoutNs: 5_000_000_000) }  // the host closed it
        let link = try DeviceLink(
            .init(
                host: "127.0.0.1", port: server.port, deviceID: "good", captureProfile: "640x360@120 h264",
                syncBurst: 8, heartbeatIntervalNs: 50_000_000))
        try link.start()
        #expect(link.status == .up)
        #expect(link.relation != nil)
        link.close(reason: "test over")
        #expect(server.log.contains { $0.contains("unknown message type 99") })
    }

    @Test func theHostClosesADeviceThatFallsSilentForThreeHeartbeats() throws {
        let tmp = TemporaryDirectory("ppc-link")
        var options = HostServer.Options()
        options.deadPeerTimeoutNs = 150_000_000
        let server = try HostServer(
            host: "127.0.0.1", port: 0, library: tmp.sub("library"), policy: .any, security: plaintextOnly,
            options: options)
        Self.start(server)
        defer { server.stop() }
        let c = try Connection.connect(host: "127.0.0.1", port: server.port, channel: .control)
        try c.send(
            .hello(protocolVersion: 1, deviceID: "silent", channel: .control, captureProfile: "640x360@120 h264"))
        guard case .helloAck(true, _, _) = try c.receive(timeoutNs: 5_000_000_000) else {
            Issue.record("not accepted")
            return
        }
        // Send nothing: the host must close the link (the receive returns when it does, not after a guessed time).
        do {
            _ = try c.receive()
            Issue.record("the host sent something instead of closing")
        } catch {
            #expect(error.code == .closed)
        }
        #expect(server.log.contains { $0.contains("dead peer: silent sent nothing for 150 ms") })
    }

    /// A host on a fresh library and a device linked to it, heartbeating every 20 ms.
    static func linkedDevice() throws -> (tmp: TemporaryDirectory, server: HostServer, link: DeviceLink) {
        let tmp = TemporaryDirectory("ppc-link")
        let server = try HostServer(
            host: "127.0.0.1", port: 0, library: tmp.sub("library"), policy: .any, security: plaintextOnly)
        Self.start(server)
        let link = try DeviceLink(
            .init(
                host: "127.0.0.1", port: server.port, deviceID: "d", captureProfile: "640x360@120 h264", syncBurst: 4,
                heartbeatIntervalNs: 20_000_000))
        try link.start()
        return (tmp, server, link)
    }

    @Test func aBrokenControlChannelDropsTheLinkWithAReason() throws {
        let (tmp, server, link) = try Self.linkedDevice()
        defer { withExtendedLifetime(tmp) {} }  // the host's library lives as long as the test
        server.stop()
        link.control.shutdownNow()  // the host's side of the control channel goes away
        link.group.wait()
        if case .dropped(let why) = link.status { #expect(!why.isEmpty) } else { Issue.record("status \(link.status)") }
    }

    /// A host that stops says bye on each control channel: the device drops the link saying the host's reason, not a
    /// broken pipe — whether the bye is read in answer to a heartbeat or found after a heartbeat failed on the closed socket.
    @Test func aHostThatStopsSaysByeAndTheDeviceSaysWhy() throws {
        let (tmp, server, link) = try Self.linkedDevice()
        defer { withExtendedLifetime(tmp) {} }
        #expect(awaitCondition { server.controls.withLock { $0.count } == 1 })
        server.stop(saying: "ppc-host stopping (SIGTERM)")
        link.group.wait()
        if case .dropped(let why) = link.status {
            #expect(why == "the host said bye: ppc-host stopping (SIGTERM)")
        } else {
            Issue.record("status \(link.status)")
        }
    }
}

@Suite("Host under hostile input: nothing trusted, nothing lost", .serialized)
struct HostHostileInputTests {
    /// A host on a fresh library, started; stopped when the test ends.
    final class Host {
        let tmp = TemporaryDirectory("ppc-hostile")
        let server: HostServer
        var library: String { tmp.sub("library") }
        init(deadPeerTimeoutNs: Int64 = 3_000_000_000) throws {
            var options = HostServer.Options()
            options.deadPeerTimeoutNs = deadPeerTimeoutNs
            server = try HostServer(
                host: "127.0.0.1", port: 0, library: tmp.sub("library"), policy: .any, security: plaintextOnly,
                options: options)
            TransferTests.start(server)
        }
        deinit { server.stop() }
        func bulk(device: String = "bay-3") throws -> Connection {
            try TransferTests.connectBulk(server.port, device: device)
        }
    }

    /// A bundle of three small files with known bytes.
    static func bundle(_ dir: String, clip: UInt8) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for (n, name) in ["clip.mp4", "audio.wav", "meta.json"].enumerated() {
            try Data([UInt8](repeating: clip &+ UInt8(n), count: 20_000)).write(
                to: URL(fileURLWithPath: "\(dir)/\(name)"))
        }
    }

    /// The host closes the connection: a receive ends in `closed` (or a reset), never in a message.
    static func expectClosed(_ c: Connection) {
        do {
            let m = try c.receive(timeoutNs: 30_000_000_000)
            Issue.record("the host answered \(m.name) instead of closing")
        } catch {
            #expect(error.code == .closed || error.code == .io, "\(error)")
        }
    }

    /// A device's clock figures are read, not trusted: the host adds a device's relation offset to its shot times
    /// (the studio's live view). An offset or a shot time no capture clock could give closes that link naming it, and
    /// the host serves on. Before, a relation offset of 1 and a shot at Int64.max trapped the host's live view.
    @Test(arguments: [
        (
            [
                LinkMessage.relationUpdate(offsetNs: 1, skewPpm: 0, uncertaintyNs: 1000, samples: 8),
                .shot(id: 1, t0Ns: .max),
            ], "shot from bay-x: t0 9223372036854775807 ns"
        ),
        (
            [.relationUpdate(offsetNs: .min, skewPpm: 0, uncertaintyNs: 1000, samples: 8)],
            "relation_update from bay-x: offset -9223372036854775808 ns"
        ),
        (
            [.relationUpdate(offsetNs: 0, skewPpm: 0, uncertaintyNs: .max, samples: 8)],
            "uncertainty 9223372036854775807 ns are not a clock relation"
        ),
    ])
    func aClockFigureNoCaptureClockGivesClosesThatLinkOnly(messages: [LinkMessage], said: String) throws {
        let host = try Host()
        let c = try Connection.connect(host: "127.0.0.1", port: host.server.port, channel: .control)
        try c.send(.hello(protocolVersion: 1, deviceID: "bay-x", channel: .control, captureProfile: "640x360@120 h264"))
        guard case .helloAck(true, _, _) = try c.receive(timeoutNs: 30_000_000_000) else {
            Issue.record("not accepted")
            return
        }
        for m in messages { try c.send(m) }
        Self.expectClosed(c)
        #expect(host.server.liveDevices.first { $0.id == "bay-x" }?.lastShotHostNs == nil)
        #expect(host.server.log.contains { $0.contains(said) }, "\(host.server.log)")
        let link = try DeviceLink(
            .init(
                host: "127.0.0.1", port: host.server.port, deviceID: "good", captureProfile: "640x360@120 h264",
                syncBurst: 8, heartbeatIntervalNs: 50_000_000))
        try link.start()
        #expect(link.status == .up)
        link.close(reason: "test over")
    }

    @Test func aSecondClipUnderAConfirmedIDIsRefusedLoudlyAndNothingIsOverwritten() throws {
        let host = try Host()
        try Self.bundle(host.tmp.sub("first"), clip: 1)
        try Self.bundle(host.tmp.sub("second"), clip: 9)
        let report = try BundleSender.send(directory: host.tmp.sub("first"), clipID: "s-001", over: try host.bulk())
        do {
            let again = try BundleSender.send(directory: host.tmp.sub("second"), clipID: "s-001", over: try host.bulk())
            Issue.record("other bytes under a confirmed clip id were confirmed (\(again.bytesSent) bytes sent)")
        } catch let e as LinkError {
            #expect(e.code == .refused && e.reason.contains("already on this host with other content"), "\(e)")
        }
        #expect(host.server.log.contains { $0.contains("REFUSED") && $0.contains("s-001") })
        for name in ["clip.mp4", "audio.wav", "meta.json"] {
            #expect(
                FileManager.default.contents(atPath: "\(report.remotePath)/\(name)")
                    == FileManager.default.contents(atPath: host.tmp.sub("first/\(name)")))
        }
        // The same bytes again are confirmed again, nothing resent.
        let same = try BundleSender.send(directory: host.tmp.sub("first"), clipID: "s-001", over: try host.bulk())
        #expect(same.chunksSent == 0 && same.remotePath == report.remotePath)
    }

    @Test(arguments: ["bay/c", "../x", ".hidden", "", String(repeating: "d", count: 65), "bay c"])
    func aDeviceIDThatIsNotAPlainNameIsRefusedAtHello(device: String) throws {
        let host = try Host()
        let c = try Connection.connect(host: "127.0.0.1", port: host.server.port, channel: .bulk)
        try c.send(.hello(protocolVersion: 1, deviceID: device, channel: .bulk, captureProfile: "640x360@120 h264"))
        guard case .helloAck(false, _, let reason) = try c.receive(timeoutNs: 5_000_000_000) else {
            Issue.record("device id '\(device)' was accepted")
            return
        }
        #expect(reason.contains("device id"), "\(reason)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: host.library).isEmpty)
    }

    @Test func bayCAndBaySlashCNeverShareAFolder() throws {
        let host = try Host()
        try Self.bundle(host.tmp.sub("b"), clip: 3)
        _ = try BundleSender.send(directory: host.tmp.sub("b"), clipID: "s-001", over: try host.bulk(device: "bay_c"))
        #expect(throws: LinkError.self) { try host.bulk(device: "bay/c") }
        #expect(try FileManager.default.contentsOfDirectory(atPath: host.library) == ["bay_c"])
    }

    @Test(arguments: [UInt64(1) << 63, .max, HostStore.maxFileBytes + 1])
    func anOfferOfAnImpossibleSizeIsRefusedAndTheHostServesOn(size: UInt64) throws {
        let host = try Host()
        let c = try host.bulk()
        try c.send(.offer(clipID: "s-001", file: "clip.mp4", size: size, xxh3: 0))
        Self.expectClosed(c)
        #expect(host.server.log.contains { $0.contains("over the host's limit") }, "\(host.server.log)")
        try Self.bundle(host.tmp.sub("b"), clip: 4)
        #expect(
            try BundleSender.send(directory: host.tmp.sub("b"), clipID: "s-002", over: try host.bulk()).remotePath
                .hasSuffix("/s-002"))
    }

    @Test func clipDoneAfterHalfAFileConfirmsNothing() throws {
        let host = try Host()
        let c = try host.bulk()
        let bytes: [UInt8] = Array(0..<10)
        try c.send(.offer(clipID: "s-001", file: "clip.mp4", size: 10, xxh3: XXH3.hash(bytes)))
        guard case .resumeAt(_, _, 0) = try c.receive(timeoutNs: 5_000_000_000) else {
            Issue.record("no resume_at 0")
            return
        }
        try c.send(
            .chunk(offset: 0, xxh3: XXH3.hash(Array(bytes[0..<5])), compressed: false, data: Array(bytes[0..<5])))
        guard case .chunkAck(5) = try c.receive(timeoutNs: 5_000_000_000) else {
            Issue.record("no ack")
            return
        }
        try c.send(.clipDone(clipID: "s-001"))
        Self.expectClosed(c)
        #expect(!FileManager.default.fileExists(atPath: "\(host.library)/bay-3/s-001"))
        #expect(
            host.server.log.contains { $0.contains("before every offered file was verified (not verified: clip.mp4)") },
            "\(host.server.log)")
    }

    @Test func aFileVerifiedThenOfferedAgainAndCutIsNotConfirmed() throws {
        // Found by fuzzing (FuzzHost): the first offer's bytes verified, a second offer of other bytes replaced them and
        // was cut after one chunk, and clip_done confirmed the torn file.
        let host = try Host()
        let c = try host.bulk()
        let first: [UInt8] = Array(0..<8)
        let second: [UInt8] = Array(100..<116)
        try c.send(.offer(clipID: "s-001", file: "clip.mp4", size: 8, xxh3: XXH3.hash(first)))
        _ = try c.receive(timeoutNs: 5_000_000_000)
        try c.send(.chunk(offset: 0, xxh3: XXH3.hash(first), compressed: false, data: first))
        _ = try c.receive(timeoutNs: 5_000_000_000)  // chunk_ack
        guard case .fileComplete(_, _, true, _) = try c.receive(timeoutNs: 5_000_000_000) else {
            Issue.record("first not verified")
            return
        }
        try c.send(.offer(clipID: "s-001", file: "clip.mp4", size: 16, xxh3: XXH3.hash(second)))
        _ = try c.receive(timeoutNs: 5_000_000_000)
        try c.send(
            .chunk(offset: 0, xxh3: XXH3.hash(Array(second[0..<4])), compressed: false, data: Array(second[0..<4])))
        _ = try c.receive(timeoutNs: 5_000_000_000)
        try c.send(.clipDone(clipID: "s-001"))
        Self.expectClosed(c)
        #expect(!FileManager.default.fileExists(atPath: "\(host.library)/bay-3/s-001"))
    }

    @Test func aRefusedFileFollowedByClipDoneConfirmsNothing() throws {
        let host = try Host()
        try Self.bundle(host.tmp.sub("first"), clip: 1)
        _ = try BundleSender.send(directory: host.tmp.sub("first"), clipID: "s-001", over: try host.bulk())
        // Another clip.mp4 under the same id is refused; a clip_done after it must not confirm a thing.
        let c = try host.bulk()
        try c.send(.offer(clipID: "s-001", file: "clip.mp4", size: 3, xxh3: XXH3.hash([1, 2, 3])))
        guard case .fileComplete(_, _, false, _) = try c.receive(timeoutNs: 5_000_000_000) else {
            Issue.record("not refused")
            return
        }
        try c.send(.clipDone(clipID: "s-001"))
        Self.expectClosed(c)
        // And an offer refused for want of space, then clip_done, on a clip never seen: nothing appears.
        let d = try host.bulk()
        try d.send(.clipDone(clipID: "s-404"))
        Self.expectClosed(d)
        #expect(!FileManager.default.fileExists(atPath: "\(host.library)/bay-3/s-404"))
    }

    @Test(arguments: ["clip.mp4.state", "clip.mp4.chunks", "../clip.mp4", "host-meta.json", "notes.txt"])
    func aFileNameOutsideTheBundleIsRefusedAtItsOffer(name: String) throws {
        let host = try Host()
        let c = try host.bulk()
        try c.send(.offer(clipID: "s-001", file: name, size: 3, xxh3: XXH3.hash([1, 2, 3])))
        Self.expectClosed(c)
        #expect(host.server.log.contains { $0.contains("a clip bundle holds only") }, "\(host.server.log)")
        #expect(!FileManager.default.fileExists(atPath: "\(host.library)/bay-3/.partial/s-001/\(name)"))
    }

    @Test func oneHeaderByteAndThenSilenceIsClosedByTheMessageDeadline() throws {
        let host = try Host()
        for channel in [LinkMessage.Channel.control, .bulk] {
            let c = try Connection.connect(host: "127.0.0.1", port: host.server.port, channel: channel)
            if channel == .bulk {
                try c.send(
                    .hello(protocolVersion: 1, deviceID: "slow", channel: .bulk, captureProfile: "640x360@120 h264"))
                _ = try c.receive(timeoutNs: 5_000_000_000)
            }
            c.sendRaw([LinkMessage.version])  // one byte of a header, then nothing
            Self.expectClosed(c)
        }
        #expect(
            host.server.log.filter { $0.contains("a message stalled after 1 of 8 bytes") }.count == 2,
            "\(host.server.log)")
    }

    @Test func anIdleBulkChannelWithoutAControlChannelIsClosed() throws {
        let host = try Host(deadPeerTimeoutNs: 200_000_000)
        let c = try host.bulk(device: "idle")
        Self.expectClosed(c)
        #expect(
            host.server.log.contains { $0.contains("bulk channel of idle idle for 200 ms with no control channel up") },
            "\(host.server.log)")
    }

    static let impossibleHostTimes: [(Int64, Int64)] = [(.max, .max), (.min, 0), (500, 400)]

    @Test(arguments: impossibleHostTimes)
    func aSyncReplyWithImpossibleHostTimesIsRefusedNotTrapped(t2: Int64, t3: Int64) {
        var sequence: UInt64 = 0
        #expect(throws: LinkError.self) {
            _ = try DeviceLink.takeSample(
                send: { _ in }, receive: { .syncReply(sequence: 1, t1: 0, t2: t2, t3: t3) }, now: { 100 },
                sequence: &sequence)
        }
    }

    @Test func aHostThatSaysResumeBeyondTheFileIsRefusedByTheDevice() throws {
        // The device trusts the host no more than the host trusts it: a resume offset past the file is a violation,
        // not an integer trap.
        let listener = try Listener(host: "127.0.0.1", port: 0)
        let tmp = TemporaryDirectory("ppc-hostile")
        try Self.bundle(tmp.sub("b"), clip: 5)
        Thread {
            guard let c = listener.accept(), (try? c.receive(timeoutNs: 5_000_000_000)) != nil else { return }
            try? c.send(.resumeAt(clipID: "s-001", file: "audio.wav", offset: .max))
            _ = try? c.receive(timeoutNs: 5_000_000_000)
        }.start()
        let c = try Connection.connect(host: "127.0.0.1", port: listener.port, channel: .bulk)
        do {
            _ = try BundleSender.send(directory: tmp.sub("b"), clipID: "s-001", over: c)
            Issue.record("accepted")
        } catch let e as LinkError {
            #expect(e.code == .protocolViolation && e.reason.contains("past its 20000 bytes"), "\(e)")
        }
        listener.stop()
    }
}

@Suite("BulkLedger: when a clip may be confirmed")
struct BulkLedgerTests {
    @Test func aClipIsConfirmableOnlyWhenEveryOfferedFileVerifiedAndNoneIsOpen() {
        var l = BulkLedger()
        #expect(l.refusal(toConfirm: "s-001", fileOpen: false)?.contains("no file offered") == true)
        l.offer("clip.mp4", of: "s-001")
        l.offer("meta.json", of: "s-001")
        l.verified("clip.mp4", of: "s-001")
        #expect(l.refusal(toConfirm: "s-001", fileOpen: false)?.contains("not verified: meta.json") == true)
        l.verified("meta.json", of: "s-001")
        #expect(l.refusal(toConfirm: "s-001", fileOpen: true) != nil)
        #expect(l.refusal(toConfirm: "s-001", fileOpen: false) == nil)
        #expect(l.files(of: "s-001") == ["clip.mp4", "meta.json"])
        l.close("s-001")
        #expect(l.refusal(toConfirm: "s-001", fileOpen: false)?.contains("no file offered") == true)
    }

    @Test func aFileOfferedAgainCountsOnlyOnceItsNewBytesVerify() {
        var l = BulkLedger()
        l.offer("clip.mp4", of: "s-001")
        l.verified("clip.mp4", of: "s-001")
        l.offer("clip.mp4", of: "s-001")  // other bytes, not (yet) verified
        #expect(l.refusal(toConfirm: "s-001", fileOpen: false)?.contains("not verified: clip.mp4") == true)
    }

    @Test func clipsKeepSeparateAccounts() {
        var l = BulkLedger()
        l.offer("clip.mp4", of: "a")
        l.verified("clip.mp4", of: "a")
        l.offer("clip.mp4", of: "b")
        #expect(l.refusal(toConfirm: "a", fileOpen: false) == nil)
        #expect(l.refusal(toConfirm: "b", fileOpen: false) != nil)
    }
}
