import Crypto
import Foundation
import FuzzDriver
import Glibc

@testable import Link

/// Link frames as a peer may send them. Properties held for every input:
/// - the header check and the decoder never trap; they accept or throw a ``LinkError`` naming why;
/// - what decodes re-encodes to a frame that decodes to the same bytes again (nothing is read that cannot be written);
/// - the connection's two receive paths (`receive()` and the bulk `receive(chunkInto:)`) never trap on the same bytes
///   arriving over a socket, and never hand out a chunk larger than its destination;
/// - the encrypted link's handshake (message 1 as a host reads it, message 2 as a device reads it, and a host's whole
///   first read, preamble and records included) never traps and never accepts bytes no paired device made.
@_cdecl("FuzzWire_main")
func fuzzerMain(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    runFuzzer(argc, argv)
}

@_cdecl("LLVMFuzzerTestOneInput")
func fuzzWire(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = fuzzInput(data, size)
    decodeAsFrame(bytes)
    receiveOverSocket(bytes, bulk: false)
    receiveOverSocket(bytes, bulk: true)
    handshake(bytes)
    return 0
}

/// Fixed keys, so a crash reproduces from its input alone.
let fuzzHost = KeyPair(secretKey: [UInt8](repeating: 7, count: 32))!
let fuzzDevice = KeyPair(secretKey: [UInt8](repeating: 9, count: 32))!

func handshake(_ bytes: [UInt8]) {
    if let r = try? LinkHandshake.respond(identity: fuzzHost, message: bytes) {
        // Only a holder of the device's secret can make a message 1 that opens: random bytes never do.
        precondition(r.peer != fuzzDevice.publicKey, "a message 1 nobody made claims the paired device's key")
    }
    if let (initiator, _) = try? LinkHandshake.initiate(
        identity: fuzzDevice, responder: fuzzHost.publicKey, payload: [0])
    {
        precondition(
            (try? LinkHandshake.finish(initiator, message: bytes)) == nil, "a message 2 nobody made was accepted")
    }
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { return }
    let prefixed = (bytes.first.map { $0 & 1 == 1 } ?? false) ? LinkHandshake.preamble + bytes.dropFirst() : bytes
    _ = prefixed.withUnsafeBytes { send(fds[1], $0.baseAddress, min($0.count, 64 << 10), Int32(MSG_NOSIGNAL)) }
    shutdown(fds[1], Int32(SHUT_WR))
    let c = Connection(fd: fds[0], peer: "fuzz")
    let device = fuzzDevice.publicKey
    let security = HostSecurity(identity: fuzzHost, deviceFor: { $0 == device ? "dev" : nil }, allowPlaintext: true)
    if case .secure = try? c.accept(as: security) { preconditionFailure("a handshake nobody made was accepted") }
    close(fds[1])
}

func decodeAsFrame(_ bytes: [UInt8]) {
    guard bytes.count >= LinkMessage.headerSize else {
        _ = try? LinkMessage.header(bytes)
        return
    }
    guard let (type, length) = try? LinkMessage.header(Array(bytes[0..<LinkMessage.headerSize])) else { return }
    let payload = Array(bytes[LinkMessage.headerSize...].prefix(length))
    guard let m = try? LinkMessage.decode(type: type, payload: payload) else { return }
    let frame = m.encoded()
    guard let (t2, l2) = try? LinkMessage.header(Array(frame[0..<LinkMessage.headerSize])),
        let again = try? LinkMessage.decode(type: t2, payload: Array(frame[LinkMessage.headerSize...]))
    else { fatalError("\(m.name) decoded but its own encoding does not") }
    precondition(
        l2 == frame.count - LinkMessage.headerSize && again.encoded() == frame, "\(m.name) does not round-trip")
}

/// The bytes written into one end of a socket pair, read back through a ``Connection`` until it refuses or runs out.
func receiveOverSocket(_ bytes: [UInt8], bulk: Bool) {
    var fds: [Int32] = [0, 0]
    guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0 else { return }
    // Small inputs fit the socket's buffer, so the write never blocks; the writer's end is then closed.
    _ = bytes.withUnsafeBytes { send(fds[1], $0.baseAddress, min($0.count, 64 << 10), Int32(MSG_NOSIGNAL)) }
    close(fds[1])
    let c = Connection(fd: fds[0], peer: "fuzz")
    let destination = UnsafeMutableRawBufferPointer.allocate(byteCount: 4096, alignment: 16)
    defer { destination.deallocate() }
    for _ in 0..<64 {
        do {
            if bulk {
                let r = try c.receive(timeoutNs: 0) { _, _, count throws(LinkError) in
                    guard count <= 2048 else { throw LinkError(.oversize, "larger than this test's destination") }
                    return UnsafeMutableRawBufferPointer(rebasing: destination[0..<2048])
                }
                if case .chunk(_, _, _, let n) = r { precondition(n <= 2048, "a chunk of \(n) bytes was put in 2048") }
            } else {
                _ = try c.receive(timeoutNs: 0)
            }
        } catch {
            return
        }
    }
}
