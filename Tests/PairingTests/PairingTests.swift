import Crypto
import Foundation
import Link
import TestSupport
import Testing

@testable import Pairing

@Suite("Pairing: the same code on both sides, confirmed on both, or nothing pinned")
struct PairingTests {
    /// Runs both sides over loopback; each side's person answers `deviceSays` / `hostSays`.
    static func pair(deviceSays: Bool, hostSays: Bool, deviceID: String = "bay-a", admit: String? = nil) throws
        -> (
            device: Result<PairingProtocol.Result, PairingError>, host: Result<PairingProtocol.Result, PairingError>,
            codes: [String]
        )
    {
        let tmp = TemporaryDirectory("ppc-pair")
        let hostID = try Identity.loadOrCreate(tmp.sub("host")).identity
        let deviceIdentity = try Identity.loadOrCreate(tmp.sub("device")).identity
        let listener = try Listener(host: "127.0.0.1", port: 0)
        let codes = Codes()
        let hostSide = HostSide()
        Thread {
            guard let c = listener.accept() else { return }
            hostSide.result = Result { () throws(PairingError) -> PairingProtocol.Result in
                guard (try? c.readPreamble(5)) == PairingProtocol.preamble else { throw PairingError("no preamble") }
                return try PairingProtocol.pairAsHost(
                    c, identity: hostID, hostName: "studio", admit: { _, _ in admit },
                    confirm: { code, _, _ in
                        codes.add(code)
                        return hostSays
                    })
            }
            hostSide.done.signal()
        }.start()
        let c = try Connection.connect(host: "127.0.0.1", port: listener.port, channel: .control)
        let device = Result { () throws(PairingError) -> PairingProtocol.Result in
            try PairingProtocol.pairAsDevice(c, identity: deviceIdentity, deviceID: deviceID) { code, _, _ in
                codes.add(code)
                return deviceSays
            }
        }
        hostSide.done.wait()
        return (device, hostSide.result!, codes.all)
    }

    final class Codes: @unchecked Sendable {
        let lock = NSLock()
        var list: [String] = []
        func add(_ c: String) {
            lock.lock()
            list.append(c)
            lock.unlock()
        }
        var all: [String] {
            lock.lock()
            defer { lock.unlock() }
            return list
        }
    }

    final class HostSide: @unchecked Sendable {
        var result: Result<PairingProtocol.Result, PairingError>?
        let done = DispatchSemaphore(value: 0)
    }

    @Test func bothSidesShowTheSameSixDigitCodeAndLearnEachOthersKeys() throws {
        let r = try Self.pair(deviceSays: true, hostSays: true)
        let d = try r.device.get()
        let h = try r.host.get()
        #expect(r.codes.count == 2 && r.codes[0] == r.codes[1], "\(r.codes)")
        #expect(r.codes[0].count == 7 && r.codes[0].allSatisfy { $0.isNumber || $0 == " " })
        #expect(d.peerName == "studio" && h.peerName == "bay-a")
        #expect(d.code == h.code)
    }

    @Test(arguments: [(true, false), (false, true), (false, false)])
    func aCodeNotConfirmedOnBothSidesPinsNothing(deviceSays: Bool, hostSays: Bool) throws {
        let r = try Self.pair(deviceSays: deviceSays, hostSays: hostSays)
        #expect(throws: PairingError.self) { try r.device.get() }
        #expect(throws: PairingError.self) { try r.host.get() }
    }

    /// Issue 33: two people answer at two screens; the one answering later was ended as a dead peer after the link's
    /// 10 s. Each side now waits for the other's answer as long as a person may take (`answerTimeoutNs`), and one that
    /// does not come is said to be the other person's silence.
    @Test func anAnswerThatDoesNotComeIsSaidToBeThePersonsNotADeadPeer() throws {
        let tmp = TemporaryDirectory("ppc-pair-slow")
        let hostID = try Identity.loadOrCreate(tmp.sub("host")).identity
        let deviceIdentity = try Identity.loadOrCreate(tmp.sub("device")).identity
        let listener = try Listener(host: "127.0.0.1", port: 0)
        let release = DispatchSemaphore(value: 0)
        let hostSide = HostSide()
        Thread {
            guard let c = listener.accept() else { return }
            hostSide.result = Result { () throws(PairingError) -> PairingProtocol.Result in
                guard (try? c.readPreamble(5)) == PairingProtocol.preamble else { throw PairingError("no preamble") }
                return try PairingProtocol.pairAsHost(
                    c, identity: hostID, hostName: "studio", admit: { _, _ in nil },
                    confirm: { _, _, _ in
                        release.wait()  // the host's person is still reading
                        return true
                    })
            }
            hostSide.done.signal()
        }.start()
        let c = try Connection.connect(host: "127.0.0.1", port: listener.port, channel: .control)
        let device = Result { () throws(PairingError) -> PairingProtocol.Result in
            try PairingProtocol.pairAsDevice(
                c, identity: deviceIdentity, deviceID: "bay-a", answerTimeoutNs: 300_000_000
            ) { _, _, _ in true }
        }
        c.shutdownNow()
        release.signal()
        hostSide.done.wait()
        guard case .failure(let e) = device else {
            Issue.record("paired without the host's answer")
            return
        }
        #expect("\(e)".contains("the host's person did not answer within 0.3 s"), "\(e)")
    }

    @Test func aDeviceTheHostWillNotAdmitIsToldWhyBeforeAnyCode() throws {
        let r = try Self.pair(
            deviceSays: true, hostSays: true, admit: "'bay-a' is already paired here with another key")
        #expect(r.codes.isEmpty)
        #expect { try r.device.get() } throws: { "\($0)".contains("already paired here with another key") }
    }

    @Test func theCodeDependsOnEveryByteOfTheExchange() {
        let dh = Crypto.random(32)
        let t: [[UInt8]] = [Crypto.random(80), Crypto.random(120), Crypto.random(64)]
        let base = PairingProtocol.derive(dh: dh, transcript: t).code
        var changed = t
        changed[1][7] ^= 1
        #expect(
            PairingProtocol.derive(dh: dh, transcript: changed).code != base
                || PairingProtocol.derive(dh: dh, transcript: changed).confirmKey
                    != PairingProtocol.derive(dh: dh, transcript: t).confirmKey
        )
        #expect(
            PairingProtocol.derive(dh: Crypto.random(32), transcript: t).confirmKey
                != PairingProtocol.derive(dh: dh, transcript: t).confirmKey)
    }

    @Test func theIdentityIsCreatedOnceReadableOnlyByItsOwnerAndALooseOneIsRefused() throws {
        let tmp = TemporaryDirectory("ppc-identity")
        let dir = tmp.sub("state")
        let (a, created) = try Identity.loadOrCreate(dir)
        #expect(created)
        let (b, again) = try Identity.loadOrCreate(dir)
        #expect(!again && a.keys.publicKey == b.keys.publicKey)
        let mode =
            try FileManager.default.attributesOfItem(atPath: dir + "/identity.key")[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: dir + "/identity.key")
        #expect { try Identity.loadOrCreate(dir) } throws: { "\($0)".contains("readable by others") }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: dir + "/identity.key")
        try Data("not a key\n".utf8).write(to: URL(fileURLWithPath: dir + "/identity.key"))
        #expect { try Identity.loadOrCreate(dir) } throws: { "\($0)".contains("is not a ppc identity") }
    }

    @Test func theStudioKeyIsMadeOnceKeptByItsOwnerAndALooseOneIsRefused() throws {
        let tmp = TemporaryDirectory("ppc-studio-key")
        let dir = tmp.sub("state")
        let first = try AccessKey.loadOrCreate(dir)
        #expect(first.created && first.key.count == 64 && first.path == dir + "/studio.key")
        let again = try AccessKey.loadOrCreate(dir)
        #expect(!again.created && again.key == first.key, "a link given out goes on working across restarts")
        #expect(try AccessKey.loadOrCreate(tmp.sub("other")).key != first.key)
        let mode = try FileManager.default.attributesOfItem(atPath: first.path)[.posixPermissions] as? NSNumber
        #expect(mode?.intValue == 0o600)
        try FileManager.default.setAttributes([.posixPermissions: 0o640], ofItemAtPath: first.path)
        #expect { try AccessKey.loadOrCreate(dir) } throws: { "\($0)".contains("readable by others") }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: first.path)
        try Data("ppc-studio-key-1\nshort\n".utf8).write(to: URL(fileURLWithPath: first.path))
        #expect { try AccessKey.loadOrCreate(dir) } throws: { "\($0)".contains("is not a studio key") }
    }

    @Test func aNameStaysBoundToItsKeyUntilUnpaired() throws {
        let tmp = TemporaryDirectory("ppc-peers")
        let peers = try PairedPeers(directory: tmp.path)
        let k1 = KeyPair.generate().publicKey
        let k2 = KeyPair.generate().publicKey
        try peers.pin(name: "bay-a", key: k1)
        #expect(throws: PairingError.self) { try peers.pin(name: "bay-a", key: k2) }
        #expect(try PairedPeers(directory: tmp.path).name(for: k1) == "bay-a")
        #expect(try peers.unpin("bay-a"))
        try peers.pin(name: "bay-a", key: k2)
        #expect(try PairedPeers(directory: tmp.path).key(for: "bay-a") == k2)
        try Data("{]".utf8).write(to: URL(fileURLWithPath: tmp.path + "/paired.json"))
        #expect(throws: PairingError.self) { _ = try PairedPeers(directory: tmp.path) }
    }
}
