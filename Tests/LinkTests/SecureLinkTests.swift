import Crypto
import Foundation
import Syscall
import Testing

@testable import Link

/// The encrypted link against a relay that can alter, drop, replay and reorder what crosses it, and against keys that
/// are not the pinned ones. Every failure closes the connection with a named reason; nothing reaches the host's
/// message reader that the device did not send, in order.
@Suite("Encrypted link: authenticated both ways, every record checked")
struct SecureLinkTests {
    let hostKeys = KeyPair.generate()
    let deviceKeys = KeyPair.generate()

    func hostSecurity(paired: Bool = true) -> HostSecurity {
        let device = deviceKeys.publicKey
        return HostSecurity(identity: hostKeys, deviceFor: { paired && $0 == device ? "bay-a" : nil })
    }

    /// A host in a thread: accepts one connection, then collects every message until the connection fails.
    final class OneHost: @unchecked Sendable {
        let listener: Listener
        var opening: Result<Connection.Opening, LinkError>?
        var received: [LinkMessage] = []
        var ended: LinkError?
        let done = DispatchSemaphore(value: 0)

        init(security: HostSecurity) throws {
            listener = try Listener(host: "127.0.0.1", port: 0)
            Thread { [self] in
                guard let c = listener.accept() else { return }
                do {
                    opening = .success(try c.accept(as: security))
                    while true { received.append(try c.receive(timeoutNs: 5_000_000_000)) }
                } catch let e as LinkError {
                    if opening == nil { opening = .failure(e) }
                    ended = e
                } catch {}
                done.signal()
            }.start()
        }
        var port: Int { listener.port }
        func wait() { done.wait() }
    }

    @Test func aPairedDeviceAndItsHostExchangeMessagesAndChunksSealed() throws {
        let host = try OneHost(security: hostSecurity())
        let c = try Connection.connect(host: "127.0.0.1", port: host.port, channel: .bulk)
        try c.secure(as: DeviceSecurity(identity: deviceKeys, hostKey: hostKeys.publicKey), channel: .bulk)
        #expect(c.isSecure && c.peerKey == hostKeys.publicKey)
        try c.send(.hello(protocolVersion: 1, deviceID: "bay-a", channel: .bulk, captureProfile: "640x360@120 h264"))
        let data = (0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        try data.withUnsafeBytes { try c.sendChunk(offset: 0, xxh3: 7, compressed: false, data: $0) }
        try c.send(.bye(reason: "done"))
        c.shutdownNow()
        host.wait()
        guard case .success(.secure(let device)) = host.opening else {
            Issue.record("opening \(String(describing: host.opening))")
            return
        }
        #expect(device == "bay-a")
        #expect(host.received.count == 3, "\(host.received.map(\.name))")
        if host.received.count == 3, case .chunk(let offset, _, _, let bytes) = host.received[1] {
            #expect(offset == 0 && bytes == data)
        } else {
            Issue.record("no chunk: \(host.received.map(\.name))")
        }
        #expect(host.ended?.code == .closed)
    }

    @Test func anUnpairedDeviceIsRefusedAtTheHandshakeAndHearsOnlyThatItIsNotPaired() throws {
        let host = try OneHost(security: hostSecurity(paired: false))
        let c = try Connection.connect(host: "127.0.0.1", port: host.port, channel: .control)
        #expect {
            try c.secure(as: DeviceSecurity(identity: deviceKeys, hostKey: hostKeys.publicKey), channel: .control)
        } throws: { e in
            (e as? LinkError)?.code == .refused && (e as? LinkError)?.reason == "not paired with this host"
        }
        host.wait()
        #expect(host.received.isEmpty)
        #expect(host.opening.map { if case .failure(let e) = $0 { e.code == .unauthenticated } else { false } } == true)
    }

    @Test func aDeviceThatPinnedAnotherHostKeyIsRefusedAndSaysTheHostIsNotThePinnedOne() throws {
        let host = try OneHost(security: hostSecurity())
        let impostorPinned = KeyPair.generate().publicKey  // the device pinned some other host (or a swapped key)
        let c = try Connection.connect(host: "127.0.0.1", port: host.port, channel: .control)
        #expect(throws: LinkError.self) {
            try c.secure(as: DeviceSecurity(identity: deviceKeys, hostKey: impostorPinned), channel: .control)
        }
        host.wait()
        #expect(host.received.isEmpty)
    }

    @Test func aHostThatIsNotThePinnedOneCannotAnswer() throws {
        // The device pinned `hostKeys`, but this host holds another identity (and even "knows" the device's key).
        let device = deviceKeys.publicKey
        let impostor = HostSecurity(identity: KeyPair.generate(), deviceFor: { $0 == device ? "bay-a" : nil })
        let host = try OneHost(security: impostor)
        let c = try Connection.connect(host: "127.0.0.1", port: host.port, channel: .control)
        #expect {
            try c.secure(as: DeviceSecurity(identity: deviceKeys, hostKey: hostKeys.publicKey), channel: .control)
        } throws: { e in (e as? LinkError)?.code == .unauthenticated }
        host.wait()
    }

    /// What the relay does to the device → host direction's sealed records (record 0 is handshake message 1, record 1
    /// the stream header; sealed messages start at 2).
    enum Fault: CaseIterable, Sendable { case flipABit, drop, replay, reorder }

    /// Relays device → host, parsing the preamble and length-framed records, applying `fault` to record 4 (the second
    /// sealed message after hello); host → device is copied as it comes.
    final class Relay: @unchecked Sendable {
        let listener: Listener
        init(to port: Int, fault: Fault) throws {
            listener = try Listener(host: "127.0.0.1", port: 0)
            Thread { [self] in
                guard let device = listener.accept() else { return }
                guard let host = try? Connection.connect(host: "127.0.0.1", port: port, channel: .control) else {
                    return
                }
                Thread {  // host → device
                    var b = [UInt8](repeating: 0, count: 65536)
                    while true {
                        let n = b.withUnsafeMutableBytes {
                            (try? Socket.receive(host.fd, into: $0, waiting: true, peer: "h")) ?? 0
                        }
                        if n <= 0 { break }
                        device.sendRaw(Array(b[0..<n]))
                    }
                    device.shutdownNow()
                }.start()
                do {
                    host.sendRaw(try device.readPreamble(5))
                    var index = 0
                    var held: [UInt8]?
                    while true {
                        let len = try device.readPreamble(4)
                        let n = Int(len[0]) | Int(len[1]) << 8 | Int(len[2]) << 16 | Int(len[3]) << 24
                        var record = len + (try device.readPreamble(n))
                        defer { index += 1 }
                        guard index == 4 else {
                            host.sendRaw(record)
                            if let h = held {
                                host.sendRaw(h)
                                held = nil
                            }
                            continue
                        }
                        switch fault {
                        case .flipABit:
                            record[record.count / 2] ^= 0x10
                            host.sendRaw(record)
                        case .drop: break
                        case .replay:
                            host.sendRaw(record)
                            host.sendRaw(record)
                        case .reorder: held = record  // sent after the next one
                        }
                    }
                } catch {}
                host.shutdownNow()
            }.start()
        }
        var port: Int { listener.port }
    }

    @Test(arguments: Fault.allCases)
    func aRecordAlteredDroppedReplayedOrReorderedClosesTheConnectionAsTampered(fault: Fault) throws {
        let host = try OneHost(security: hostSecurity())
        let relay = try Relay(to: host.port, fault: fault)
        let c = try Connection.connect(host: "127.0.0.1", port: relay.port, channel: .control)
        try c.secure(as: DeviceSecurity(identity: deviceKeys, hostKey: hostKeys.publicKey), channel: .control)
        try c.send(.hello(protocolVersion: 1, deviceID: "bay-a", channel: .control, captureProfile: "640x360@120 h264"))
        // The host may close before the device has sent them all: the device's sends after the fault may fail.
        for i in 0..<4 { try? c.send(.heartbeat(sequence: UInt64(i), deviceTimeNs: Int64(i))) }
        host.wait()
        c.shutdownNow()
        // hello and the first heartbeat passed; the faulted record (for a replay: its second copy), and everything after
        // it, never did.
        let expected = fault == .replay ? ["hello", "heartbeat", "heartbeat"] : ["hello", "heartbeat"]
        #expect(host.received.map(\.name) == expected, "\(fault): \(host.received.map(\.name))")
        #expect(host.ended?.code == .tampered, "\(fault): \(String(describing: host.ended))")
        #expect(
            host.ended?.reason.contains("failed authentication") == true
                || host.ended?.reason.contains("not one this link makes") == true)
    }

    @Test func aWholeConnectionReplayedGetsNothingThrough() throws {
        // Record everything a real device sends, then replay it byte for byte on a new connection to the same host.
        let captured = Captured()
        let host = try OneHost(security: hostSecurity())
        let tap = try Tap(to: host.port, into: captured)
        let c = try Connection.connect(host: "127.0.0.1", port: tap.port, channel: .control)
        try c.secure(as: DeviceSecurity(identity: deviceKeys, hostKey: hostKeys.publicKey), channel: .control)
        try c.send(.hello(protocolVersion: 1, deviceID: "bay-a", channel: .control, captureProfile: "640x360@120 h264"))
        try c.send(.bye(reason: "done"))
        c.shutdownNow()
        host.wait()
        #expect(host.received.count == 2)
        let second = try OneHost(security: hostSecurity())
        let replayer = try Connection.connect(host: "127.0.0.1", port: second.port, channel: .control)
        replayer.sendRaw(captured.bytes)
        second.wait()
        #expect(second.received.isEmpty, "a replayed connection delivered \(second.received.map(\.name))")
        #expect(
            second.ended?.code == .tampered || second.ended?.code == .unauthenticated,
            "\(String(describing: second.ended))")
    }

    final class Captured: @unchecked Sendable {
        let lock = NSLock()
        var data: [UInt8] = []
        func add(_ b: [UInt8]) {
            lock.lock()
            data += b
            lock.unlock()
        }
        var bytes: [UInt8] {
            lock.lock()
            defer { lock.unlock() }
            return data
        }
    }

    /// Copies device → host (recording it) and host → device.
    final class Tap: @unchecked Sendable {
        let listener: Listener
        init(to port: Int, into captured: Captured) throws {
            listener = try Listener(host: "127.0.0.1", port: 0)
            Thread { [self] in
                guard let device = listener.accept(),
                    let host = try? Connection.connect(host: "127.0.0.1", port: port, channel: .control)
                else { return }
                @Sendable func pump(_ from: Connection, _ to: Connection, record: Bool) {
                    var b = [UInt8](repeating: 0, count: 65536)
                    while true {
                        let n = b.withUnsafeMutableBytes {
                            (try? Socket.receive(from.fd, into: $0, waiting: true, peer: "t")) ?? 0
                        }
                        if n <= 0 { break }
                        if record { captured.add(Array(b[0..<n])) }
                        to.sendRaw(Array(b[0..<n]))
                    }
                    to.shutdownNow()
                }
                Thread { pump(host, device, record: false) }.start()
                pump(device, host, record: true)
            }.start()
        }
        var port: Int { listener.port }
    }

    @Test func handshakeMessagesThatAreNotOneAreRefusedNotTrapped() throws {
        // Truncated, oversized and random message 1s, and a message 2 from nobody: errors, never a crash.
        for n in [0, 1, 31, 32, 79, 80, 81, 200, 4097] {
            let junk = Crypto.random(n)
            #expect(throws: LinkError.self) { _ = try LinkHandshake.respond(identity: hostKeys, message: junk) }
        }
        let (initiator, _) = try LinkHandshake.initiate(
            identity: deviceKeys, responder: hostKeys.publicKey, payload: [0])
        for n in [0, 31, 48, 64, 100] {
            #expect(throws: LinkError.self) { _ = try LinkHandshake.finish(initiator, message: Crypto.random(n)) }
        }
        // A low-order point as a key: refused, not agreed on.
        #expect(KeyPair.generate().agree(with: [UInt8](repeating: 0, count: 32)) == nil)
    }
}
