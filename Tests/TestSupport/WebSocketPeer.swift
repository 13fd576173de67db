import Syscall

#if canImport(Glibc)
import Glibc
#endif

/// A page's WebSocket to a studio at 127.0.0.1:`port`, for tests: `/ws` opened with the studio's own Origin, frames read
/// one at a time (a server's frames are unmasked). A peer made with `small receive buffer` and then never read is a page
/// that stopped reading — a tablet asleep, a frozen tab: what it is sent fills its buffers and then the server's.
public final class WebSocketPeer {
    public let fd: Int32
    /// How long a read may wait before it is an error (a bound, not a pacing).
    let timeoutMs: Int32 = 30_000

    public struct Failure: Error, CustomStringConvertible {
        public let description: String
    }

    /// Opens the connection and completes the handshake; throws when the server does not switch protocols.
    public init(port: Int, path: String = "/ws", smallReceiveBuffer: Bool = false) throws {
        fd = try Socket.tcp()
        if smallReceiveBuffer { Socket.setOption(fd, SOL_SOCKET, SO_RCVBUF, 4096) }
        try Socket.connect(fd, to: Socket.ipv4("127.0.0.1", port)!, peer: "studio")
        let request =
            "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nOrigin: http://127.0.0.1:\(port)\r\nUpgrade: websocket\r\n"
            + "Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
        var bytes = Array(request.utf8)
        _ = try bytes.withUnsafeMutableBytes { try Socket.send(fd, UnsafeRawBufferPointer($0), peer: "studio") }
        var head: [UInt8] = []
        while !head.suffix(4).elementsEqual([13, 10, 13, 10]) {
            guard let b = try read(1).first else {
                throw Failure(
                    description: "closed before the handshake's answer: \(String(decoding: head, as: UTF8.self))")
            }
            head.append(b)
        }
        let status = String(decoding: head, as: UTF8.self)
        guard status.hasPrefix("HTTP/1.1 101") else { throw Failure(description: "not switched: \(status)") }
    }

    deinit { Socket.close(fd) }

    /// Closes the connection now (the server's writes to it fail at once).
    public func close() { Socket.shutdown(fd) }

    /// Pings answered so far (`next` answers each with a pong, as a browser does by itself).
    public private(set) var pingsAnswered = 0

    /// The next message: its opcode (1 text, 2 binary, 8 close, 9 a ping — already answered) and payload; nil when the
    /// connection closed.
    public func next() throws -> (opcode: UInt8, payload: [UInt8])? {
        let h = try read(2)
        guard h.count == 2 else { return nil }
        var length = Int(h[1] & 0x7F)
        if length == 126 {
            let l = try read(2)
            guard l.count == 2 else { return nil }
            length = Int(l[0]) << 8 | Int(l[1])
        } else if length == 127 {
            let l = try read(8)
            guard l.count == 8 else { return nil }
            length = l.reduce(0) { $0 << 8 | Int($1) }
        }
        let payload = try read(length)
        guard payload.count == length else { return nil }
        if h[0] & 0x0F == 9 { try pong(payload) }
        return (h[0] & 0x0F, payload)
    }

    /// Answers a ping with a pong carrying its payload (a client's frames are masked; this mask is zero).
    func pong(_ payload: [UInt8]) throws {
        var frame: [UInt8] = [0x8A, 0x80 | UInt8(min(payload.count, 125)), 0, 0, 0, 0] + payload.prefix(125)
        _ = try frame.withUnsafeMutableBytes { try Socket.send(fd, UnsafeRawBufferPointer($0), peer: "studio") }
        pingsAnswered += 1
    }

    /// The next text message, skipping binary ones; nil when the connection closed.
    public func nextText() throws -> String? {
        while let m = try next() {
            if m.opcode == 1 { return String(decoding: m.payload, as: UTF8.self) }
            if m.opcode == 8 { return nil }
        }
        return nil
    }

    /// Exactly `count` bytes, or fewer when the connection closed.
    func read(_ count: Int) throws -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            guard try Socket.poll(fd, events: Int16(POLLIN), timeoutMs: timeoutMs) != 0 else {
                throw Failure(description: "nothing from the studio within \(timeoutMs) ms")
            }
            let n = try out.withUnsafeMutableBytes {
                try Socket.receive(fd, into: UnsafeMutableRawBufferPointer(rebasing: $0[got...]), peer: "studio")
            }
            if n == 0 { break }
            got += n
        }
        return Array(out[0..<got])
    }
}
