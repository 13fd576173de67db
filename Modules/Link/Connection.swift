import Crypto
import Foundation
import Glibc
import Synchronization
import Syscall

/// One TCP connection carrying framed ``LinkMessage``s. Both channels set TCP_NODELAY so a 50-byte message is never
/// held back. Bulk's writes are bounded by the sender instead of by TCP_NOTSENT_LOWAT: one chunk is unacknowledged at
/// a time, so no more than a chunk ever waits in the kernel (a 128 KiB low-water mark on top of that measured 663–733
/// against 821–877 MB/s without it, 1 MiB chunks, 2026-11-30: it only woke the sender more often).
public final class Connection: @unchecked Sendable {
    // @unchecked: the descriptor is immutable; one thread sends and one thread receives (documented on each method).
    public let fd: Int32
    public let peer: String
    /// Set by a finished handshake: every message from then on travels sealed, one record each.
    var session: SecureSession?
    /// Bytes read before the connection's kind was known (a host's first read), handed to the first reads after.
    var pushback: [UInt8] = []

    /// Whether the connection is encrypted and authenticated.
    public var isSecure: Bool { session != nil }
    /// The peer's static public key, once a handshake has authenticated it.
    public var peerKey: [UInt8]? { session?.peer }

    init(fd: Int32, peer: String) {
        self.fd = fd
        self.peer = peer
    }

    deinit { Socket.close(fd) }

    /// How long a connection waits for the host to answer by default (`link.connectTimeoutNs`: 3 s, assumed — one SYN
    /// retransmission). Without it a host that never answers holds the caller for the kernel's SYN retries, ~2 min.
    public static let connectTimeoutNs: Int64 = 3_000_000_000

    /// Connects to `host:port`, retrying a refused connection with exponential backoff (50 ms doubling, `attempts` in
    /// all): a host that is starting, or restarting after a crash, is reached as soon as it listens. A host that does
    /// not answer within `timeoutNs` is not tried again: it is asleep, gone or dropping, and would cost as much again.
    public static func connect(
        host: String, port: Int, channel: LinkMessage.Channel, attempts: Int, timeoutNs: Int64 = connectTimeoutNs
    ) throws(LinkError) -> Connection {
        var delayNs: Int64 = 50_000_000
        for attempt in 1...max(1, attempts) {
            do {
                return try connect(host: host, port: port, channel: channel, timeoutNs: timeoutNs)
            } catch  where attempt < attempts && error.reason.contains("refused") {
                sleepNs(delayNs)
                delayNs *= 2
            }
        }
        throw LinkError(.io, "connect \(host):\(port): no host after \(attempts) attempts")
    }

    /// Connects to `host:port` — an IPv4 address, or a name the system resolves to one (the first it gives) — once,
    /// waiting at most `timeoutNs` for it to answer. A name is looked up at every connection, so a host whose address
    /// changed (DHCP) is found again; its key, pinned under the name at pairing, still proves it is the same host.
    public static func connect(
        host: String, port: Int, channel: LinkMessage.Channel, timeoutNs: Int64 = connectTimeoutNs
    ) throws(LinkError) -> Connection {
        let addr: sockaddr_in
        do { addr = try Socket.lookupIPv4(host, port) } catch {
            throw LinkError(.io, "connect \(host):\(port): \(error)")
        }
        let fd: Int32
        do { fd = try Socket.tcp() } catch { throw LinkError(.io, "socket: \(reason(error))") }
        do {
            try Socket.connect(fd, to: addr, peer: "\(host):\(port)", timeoutNs: timeoutNs)
        } catch {
            Socket.close(fd)
            if error.errno == ETIMEDOUT {
                throw LinkError(
                    .io,
                    String(
                        format:
                            "connect %@:%d: no answer within %.1f s (link.connectTimeoutNs): the host is asleep, gone, or dropping connections",
                        host, port, Double(timeoutNs) / 1e9))
            }
            throw LinkError(.io, "connect \(host):\(port): \(reason(error))")
        }
        let c = Connection(fd: fd, peer: "\(host):\(port)")
        c.configure(channel)
        return c
    }

    public func configure(_ channel: LinkMessage.Channel) {
        // Every message leaves in one write, so Nagle only ever delays: a small ack held behind an unacknowledged one
        // waits out the peer's delayed ACK (40 ms). Off on both channels.
        Socket.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        // Across a network both channels leave through one transmit queue, and a FIFO there puts a heartbeat behind
        // whatever bulk has queued (measured across a 1 Gbit/s link: control p99 6.4 ms under bulk against 0.44 ms
        // idle). Each channel is marked for what it is: control first (DSCP EF for switches that honour it, priority 6,
        // interactive: band 0 of Linux's default pfifo_fast), bulk last (DSCP CS1, lower effort, priority 2: band 2),
        // preview between. IP_TOS is set first: it also sets the priority, which the explicit one then overrides.
        let (tos, priority): (Int32, Int32) =
            switch channel {
            case .control: (0xB8, 6)
            case .bulk: (0x20, 2)
            case .preview: (0x88, 0)
            }
        Socket.setOption(fd, Int32(IPPROTO_IP), IP_TOS, tos)
        Socket.setOption(fd, SOL_SOCKET, SO_PRIORITY, priority)
    }

    /// Sends one message (one thread at a time).
    public func send(_ m: LinkMessage) throws(LinkError) {
        let frame = m.encoded()
        if let session {
            guard frame.count <= SecureSession.maxPlain else {
                throw LinkError(.oversize, "\(m.name) of \(frame.count) bytes exceeds a record")
            }
            frame.withUnsafeBytes {
                session.scratch.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: frame.count)
            }
            if let e = sendRecord(session, plainBytes: frame.count) {
                throw LinkError(.io, "send \(m.name) to \(peer): \(reason(e))")
            }
            return
        }
        if let e = frame.withUnsafeBytes({ sendAll($0) }) {
            throw LinkError(.io, "send \(m.name) to \(peer): \(reason(e))")
        }
    }

    /// Seals the first `plainBytes` of the session's scratch buffer into one record and sends it.
    func sendRecord(_ session: SecureSession, plainBytes: Int) -> SystemError? {
        let n = session.sender.seal(
            UnsafeRawBufferPointer(rebasing: session.scratch[0..<plainBytes]),
            into: UnsafeMutableRawBufferPointer(rebasing: session.sealed[4...]))
        session.sealed.storeBytes(of: UInt32(n).littleEndian, toByteOffset: 0, as: UInt32.self)
        return sendAll(UnsafeRawBufferPointer(rebasing: session.sealed[0..<(4 + n)]))
    }

    /// Sends every byte of `bytes` (MSG_NOSIGNAL always: a closed peer is EPIPE, not SIGPIPE); the failure, if any.
    func sendAll(_ bytes: UnsafeRawBufferPointer, flags: Int32 = 0) -> SystemError? {
        var off = 0
        while off < bytes.count {
            do throws(SystemError) {
                off += try Socket.send(fd, UnsafeRawBufferPointer(rebasing: bytes[off...]), flags: flags, peer: peer)
            } catch { return error }
        }
        return nil
    }

    /// A chunk frame's 29-byte prefix (header and fields), written into `h` (32 bytes of room).
    static func chunkPrefix(
        _ h: UnsafeMutableRawBufferPointer, offset: UInt64, xxh3: UInt64, compressed: Bool, count: Int
    ) {
        h[0] = LinkMessage.version
        h[1] = 22
        h[2] = 0
        h[3] = 0
        h.storeBytes(of: UInt32(LinkMessage.chunkFieldsSize + count).littleEndian, toByteOffset: 4, as: UInt32.self)
        h.storeBytes(of: offset.littleEndian, toByteOffset: 8, as: UInt64.self)
        h.storeBytes(of: xxh3.littleEndian, toByteOffset: 16, as: UInt64.self)
        h[24] = compressed ? 1 : 0
        h.storeBytes(of: UInt32(count).littleEndian, toByteOffset: 25, as: UInt32.self)
    }

    /// Sends a `chunk` frame with its data straight from `data` — header and fields from the stack, then the bytes, in one
    /// sendmsg — so a chunk's payload is never copied on our side. The frame is the same as `send(.chunk(…))`.
    public func sendChunk(offset: UInt64, xxh3: UInt64, compressed: Bool, data: UnsafeRawBufferPointer)
        throws(LinkError)
    {
        guard data.count <= LinkMessage.maxChunkBytes else {
            throw LinkError(.oversize, "chunk of \(data.count) bytes exceeds \(LinkMessage.maxChunkBytes)")
        }
        if let session {
            // Encrypted: prefix and data assembled into one record (the one copy sealing needs anyway).
            let headLen = LinkMessage.headerSize + LinkMessage.chunkFieldsSize
            Self.chunkPrefix(session.scratch, offset: offset, xxh3: xxh3, compressed: compressed, count: data.count)
            if data.count > 0 {
                (session.scratch.baseAddress! + headLen).copyMemory(from: data.baseAddress!, byteCount: data.count)
            }
            if let e = sendRecord(session, plainBytes: headLen + data.count) {
                throw LinkError(.io, "send chunk to \(peer): \(reason(e))")
            }
            return
        }
        var head = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))  // 32 bytes of room for the 29-byte prefix
        let failure: SystemError? = withUnsafeMutableBytes(of: &head) { h -> SystemError? in
            Self.chunkPrefix(h, offset: offset, xxh3: xxh3, compressed: compressed, count: data.count)
            let headLen = LinkMessage.headerSize + LinkMessage.chunkFieldsSize
            // The prefix and the data in one sendmsg (sendmsg, not writev: MSG_NOSIGNAL, so a peer that closed
            // mid-chunk is an EPIPE error, not a SIGPIPE that kills the process); whatever of them it did not take, after.
            var sent = 0
            while sent < headLen {
                var iov = (
                    iovec(iov_base: h.baseAddress! + sent, iov_len: headLen - sent),
                    iovec(iov_base: UnsafeMutableRawPointer(mutating: data.baseAddress), iov_len: data.count)
                )
                let taken: Result<Int, SystemError> = withUnsafeMutableBytes(of: &iov) { v in
                    let vectors = UnsafeMutableBufferPointer(
                        rebasing: v.bindMemory(to: iovec.self)[0..<(data.count > 0 ? 2 : 1)])
                    do throws(SystemError) { return .success(try Socket.send(fd, vectors, peer: peer)) } catch {
                        return .failure(error)
                    }
                }
                switch taken {
                case .success(let n): sent += n
                case .failure(let e): return e
                }
            }
            return sendAll(UnsafeRawBufferPointer(rebasing: data[(sent - headLen)...]))
        }
        if let e = failure { throw LinkError(.io, "send chunk to \(peer): \(reason(e))") }
    }

    /// Sends an uncompressed `chunk` frame whose data are `count` bytes of the open file `file` at `fileOffset`: the
    /// prefix from the stack with MSG_MORE (so it leaves with the data), then the data by sendfile — TCP takes
    /// references to the file's page-cache pages, so not even the kernel copies them on this side. The frame is the same
    /// as `send(.chunk(…))`.
    ///
    /// sendfile has no MSG_NOSIGNAL: a peer that closed makes the kernel raise SIGPIPE at the calling thread. It is
    /// blocked on that thread (for good: call this on a transfer thread of its own) and any pending one is consumed, so a
    /// closed peer is an EPIPE error here, never the end of the process.
    public func sendChunk(offset: UInt64, xxh3: UInt64, file: Int32, at fileOffset: Int, count: Int) throws(LinkError) {
        guard count <= LinkMessage.maxChunkBytes else {
            throw LinkError(.oversize, "chunk of \(count) bytes exceeds \(LinkMessage.maxChunkBytes)")
        }
        if let session {
            // Encrypted: the data must pass through the cipher, so sendfile gives way to one read into the record.
            let headLen = LinkMessage.headerSize + LinkMessage.chunkFieldsSize
            Self.chunkPrefix(session.scratch, offset: offset, xxh3: xxh3, compressed: false, count: count)
            let got: Int
            do {
                got = try Descriptor.read(
                    file, into: UnsafeMutableRawBufferPointer(rebasing: session.scratch[headLen..<(headLen + count)]),
                    at: Int64(fileOffset))
            } catch {
                throw LinkError(.io, "read chunk for \(peer): \(reason(error))")
            }
            guard got == count else { throw LinkError(.io, "read chunk for \(peer): the file is shorter than it said") }
            if let e = sendRecord(session, plainBytes: headLen + count) {
                throw LinkError(.io, "send chunk to \(peer): \(reason(e))")
            }
            return
        }
        Signals.blockBrokenPipeOnThisThread()
        var head = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        let failure: SystemError? = withUnsafeMutableBytes(of: &head) { h -> SystemError? in
            Self.chunkPrefix(h, offset: offset, xxh3: xxh3, compressed: false, count: count)
            let headLen = LinkMessage.headerSize + LinkMessage.chunkFieldsSize
            if let e = sendAll(UnsafeRawBufferPointer(rebasing: h[0..<headLen]), flags: Int32(MSG_MORE)) { return e }
            var at = off_t(fileOffset)
            let end = off_t(fileOffset + count)
            while at < end {
                do throws(SystemError) {
                    // 0 bytes: the file is shorter than it said.
                    if try Socket.sendFile(fd, from: file, offset: &at, count: Int(end - at), peer: peer) == 0 {
                        return SystemError(errno: EIO, operation: "sendfile", path: peer)
                    }
                } catch { return error }
            }
            return nil
        }
        if let e = failure {
            if e.errno == EPIPE { Signals.consumePendingBrokenPipe() }  // the SIGPIPE sendfile raised at this thread
            throw LinkError(.io, "send chunk to \(peer): \(reason(e))")
        }
    }

    /// What `receive(chunkInto:)` got: a chunk whose data is now in the caller's buffer, or any other message.
    public enum BulkReceipt: Sendable {
        case chunk(offset: UInt64, xxh3: UInt64, compressed: Bool, count: Int)
        case message(LinkMessage)
    }

    /// Receives one message; a chunk's data goes straight into the memory `destination` names for it (a buffer the
    /// receiver keeps: no allocation, no copy beyond the kernel's), any other message is decoded as `receive()` would.
    /// `destination` sees the chunk's offset, whether it is compressed and its length before a data byte is read, and
    /// throws to refuse it. A chunk larger than its destination or than its frame is refused as oversize or malformed.
    /// `timeoutNs` bounds the wait for the message's first byte (nil: no bound); once it has come, the rest must follow
    /// within ``messageDeadlineNs`` plus ``allowanceNs(forBytes:)``.
    public func receive(
        timeoutNs: Int64? = nil,
        chunkInto destination: (_ offset: UInt64, _ compressed: Bool, _ count: Int) throws(LinkError) ->
            UnsafeMutableRawBufferPointer
    ) throws(LinkError) -> BulkReceipt {
        var head = (UInt64(0), UInt64(0), UInt64(0), UInt64(0))
        let headLen = LinkMessage.headerSize + LinkMessage.chunkFieldsSize
        try awaitFirstByte(timeoutNs: timeoutNs)
        var deadline = monotonicNowNs() + Self.messageDeadlineNs
        return try withUnsafeMutableBytes(of: &head) {
            (h: UnsafeMutableRawBufferPointer) throws(LinkError) -> BulkReceipt in
            try readExactly(
                into: UnsafeMutableRawBufferPointer(rebasing: h[0..<LinkMessage.headerSize]), deadlineNs: deadline)
            let (type, length) = try LinkMessage.header(Array(h[0..<LinkMessage.headerSize]))
            deadline += Self.allowanceNs(forBytes: length)
            guard type == 22 else {
                return .message(
                    try LinkMessage.decode(type: type, payload: try readExactly(length, deadlineNs: deadline)))
            }
            guard length >= LinkMessage.chunkFieldsSize else {
                throw LinkError(.malformed, "chunk: truncated payload of \(length) bytes")
            }
            try readExactly(
                into: UnsafeMutableRawBufferPointer(rebasing: h[LinkMessage.headerSize..<headLen]), deadlineNs: deadline
            )
            let offset = UInt64(littleEndian: h.loadUnaligned(fromByteOffset: 8, as: UInt64.self))
            let sum = UInt64(littleEndian: h.loadUnaligned(fromByteOffset: 16, as: UInt64.self))
            let z = h[24]
            let n = Int(UInt32(littleEndian: h.loadUnaligned(fromByteOffset: 25, as: UInt32.self)))
            guard n == length - LinkMessage.chunkFieldsSize else {
                throw LinkError(
                    .malformed,
                    "chunk: data length \(n) does not match its frame (\(length - LinkMessage.chunkFieldsSize))")
            }
            guard n <= LinkMessage.maxChunkBytes else {
                throw LinkError(.oversize, "chunk of \(n) bytes exceeds \(LinkMessage.maxChunkBytes)")
            }
            let buffer = try destination(offset, z == 1, n)
            guard n <= buffer.count else {
                throw LinkError(.oversize, "chunk of \(n) bytes exceeds its destination of \(buffer.count)")
            }
            try readExactly(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<n]), deadlineNs: deadline)
            return .chunk(offset: offset, xxh3: sum, compressed: z == 1, count: n)
        }
    }

    /// Once a message's first byte has come, its header must follow within this, and its payload within this plus an
    /// allowance for its size: a peer that sends one byte and falls silent (or trickles) never holds a connection, or
    /// the thread serving it, for longer.
    public static let messageDeadlineNs: Int64 = 2_000_000_000

    /// The slowest a payload may arrive, bytes per second (a 1 MiB chunk: 8 s more).
    public static let slowestBytesPerSecond = 128 << 10

    /// The time a payload of `bytes` is allowed on top of ``messageDeadlineNs``.
    public static func allowanceNs(forBytes bytes: Int) -> Int64 {
        Int64(bytes) * 1_000_000_000 / Int64(slowestBytesPerSecond)
    }

    /// Waits up to `timeoutNs` for something to read (nil: for ever); a dead peer when nothing comes.
    func awaitFirstByte(timeoutNs: Int64?) throws(LinkError) {
        guard let timeoutNs, pushback.isEmpty, (session?.unread ?? 0) == 0 else { return }
        let events: Int16
        do {
            events = try Socket.poll(
                fd, events: Int16(POLLIN), timeoutMs: Int32(clamping: max(0, timeoutNs) / 1_000_000))
        } catch {
            throw LinkError(.io, "poll \(peer): \(reason(error))")
        }
        if events == 0 { throw LinkError(.deadPeer, "\(peer): nothing received for \(timeoutNs / 1_000_000) ms") }
    }

    func readExactly(into out: UnsafeMutableRawBufferPointer, deadlineNs: Int64? = nil) throws(LinkError) {
        guard let session else { return try readSocket(into: out, deadlineNs: deadlineNs) }
        var got = 0
        while got < out.count {
            if session.unread == 0 { try readRecord(session, deadlineNs: deadlineNs) }
            let take = min(session.unread, out.count - got)
            (out.baseAddress! + got).copyMemory(from: session.plain.baseAddress! + session.plainStart, byteCount: take)
            session.plainStart += take
            got += take
        }
    }

    /// Reads one sealed record and opens it into the session's plaintext buffer. A record that does not open is the
    /// end of the connection: it was altered, replayed or reordered, or one before it was dropped.
    func readRecord(_ session: SecureSession, deadlineNs: Int64?) throws(LinkError) {
        var lengthBytes: UInt32 = 0
        try withUnsafeMutableBytes(of: &lengthBytes) { (b: UnsafeMutableRawBufferPointer) throws(LinkError) in
            try readSocket(into: b, deadlineNs: deadlineNs)
        }
        let n = Int(UInt32(littleEndian: lengthBytes))
        guard n >= SecretStream.overhead, n <= SecureSession.maxSealed else {
            throw LinkError(
                .tampered,
                "\(peer): a record of \(n) bytes is not one this link makes (record \(session.receiver.count + 1))")
        }
        try readSocket(into: UnsafeMutableRawBufferPointer(rebasing: session.sealed[0..<n]), deadlineNs: deadlineNs)
        guard
            let plain = session.receiver.open(
                UnsafeRawBufferPointer(rebasing: session.sealed[0..<n]), into: session.plain)
        else {
            throw LinkError(
                .tampered,
                "\(peer): record \(session.receiver.count + 1) failed authentication — altered, replayed, reordered, or one before it dropped; the connection is closed"
            )
        }
        session.plainStart = 0
        session.plainEnd = plain
    }

    /// Reads exactly `out.count` bytes from the socket (after any bytes pushed back).
    func readSocket(into out: UnsafeMutableRawBufferPointer, deadlineNs: Int64? = nil) throws(LinkError) {
        var got = 0
        let n = out.count
        if !pushback.isEmpty {
            let take = min(n, pushback.count)
            pushback.withUnsafeBytes { out.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: take) }
            pushback.removeFirst(take)
            got = take
        }
        while got < n {
            let r: Int
            do {
                // With a deadline, what is already here is taken without waiting (one call, the common case while a
                // chunk streams in); only when nothing is does the wait begin, bounded by what is left of the deadline.
                r = try Socket.receive(
                    fd, into: UnsafeMutableRawBufferPointer(rebasing: out[got...]), waiting: deadlineNs == nil,
                    peer: peer)
            } catch  where error.errno == EAGAIN || error.errno == EWOULDBLOCK {
                // Past the deadline the wait is zero, not skipped: bytes that came meanwhile are read, never taken
                // for a stall.
                let left = max(0, deadlineNs! - monotonicNowNs())
                let events: Int16
                do {
                    events = try Socket.poll(
                        fd, events: Int16(POLLIN), timeoutMs: Int32(clamping: (left + 999_999) / 1_000_000))
                } catch {
                    throw LinkError(.io, "poll \(peer): \(reason(error))")
                }
                if events == 0 {
                    throw LinkError(
                        .stalled,
                        "\(peer): a message stalled after \(got) of \(n) bytes (a message must arrive whole within its deadline)"
                    )
                }
                continue
            } catch {
                throw LinkError(.io, "receive from \(peer): \(reason(error))")
            }
            if r == 0 {
                throw LinkError(
                    .closed, "\(peer) closed the connection\(got > 0 ? " mid-message (\(got) of \(n) bytes)" : "")")
            }
            got += r
        }
    }

    /// Receives one message (one thread at a time); `timeoutNs` bounds the wait for its first byte.
    /// Once it has come, the rest of the message must follow within its deadline (``messageDeadlineNs``).
    public func receive(timeoutNs: Int64? = nil) throws(LinkError) -> LinkMessage {
        try awaitFirstByte(timeoutNs: timeoutNs)
        var deadline = monotonicNowNs() + Self.messageDeadlineNs
        let header = try readExactly(LinkMessage.headerSize, deadlineNs: deadline)
        let (type, length) = try LinkMessage.header(header)
        deadline += Self.allowanceNs(forBytes: length)
        return try LinkMessage.decode(type: type, payload: try readExactly(length, deadlineNs: deadline))
    }

    func readExactly(_ n: Int, deadlineNs: Int64?) throws(LinkError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: n)
        var failure: LinkError?
        out.withUnsafeMutableBytes { b in
            do { try readExactly(into: b, deadlineNs: deadlineNs) } catch {
                failure = (error as Any) as? LinkError ?? LinkError(.io, "\(error)")
            }
        }
        if let failure { throw failure }
        return out
    }

    /// Sends raw bytes (tests use it to send malformed frames).
    public func sendRaw(_ bytes: [UInt8]) {
        _ = bytes.withUnsafeBytes { sendAll($0) }
    }

    /// Stops both directions now (the peer sees the connection close).
    public func shutdownNow() { Socket.shutdown(fd) }
}

/// A system error's reason, as strerror says it (the operation and the peer are in the link error's own words).
func reason(_ e: SystemError) -> String { String(cString: strerror(e.errno)) }

/// A listening TCP socket on 127.0.0.1 or another IPv4 address (or the first a name stands for: `localhost`, this
/// machine's own name).
///
/// An accept that fails for a passing reason never ends it: out of descriptors (EMFILE, ENFILE), of kernel memory
/// (ENOBUFS, ENOMEM), a peer gone before it was taken (ECONNABORTED), or one of the network errors accept(2) says to
/// retry. It backs off (10 ms, doubling to 1 s, while the shortage lasts) and accepts again; each such error is counted
/// and told to `onTransientError`. Before 2026-12-03 `accept()` took EMFILE for the end of the listener: 1 100 idle
/// connections under a 1 024-descriptor limit made ppc-host stop, with status 0.
public final class Listener: @unchecked Sendable {
    // @unchecked: the descriptor is immutable; `stopping` is behind `pause`, the counter atomic.
    public let fd: Int32
    public let port: Int
    let name: String
    let pause = NSCondition()
    var stopping = false
    let transientErrorCount = Atomic<Int>(0)
    /// Told each passing accept error (on the accepting thread; it must return at once).
    public var onTransientError: (@Sendable (SystemError) -> Void)?

    public init(host: String, port: Int) throws(LinkError) {
        let addr: sockaddr_in
        do { addr = try Socket.lookupIPv4(host, port) } catch {
            throw LinkError(.io, "listen on \(host):\(port): \(error)")
        }
        let fd: Int32
        do { fd = try Socket.tcp() } catch { throw LinkError(.io, "socket: \(reason(error))") }
        do {
            self.port = try Socket.listen(fd, on: addr, backlog: 128, name: "\(host):\(port)")
        } catch {
            Socket.close(fd)
            throw LinkError(.io, "listen on \(host):\(port): \(reason(error))")
        }
        self.fd = fd
        name = "\(host):\(self.port)"
    }

    deinit { Socket.close(fd) }

    /// What the next accept gave.
    public enum Next: Sendable {
        /// A connection; its `peer` is the address it came from.
        case connection(Connection)
        /// `stop()` was called.
        case closed
        /// The listening socket failed for good (not a passing shortage): the listener is of no more use.
        case failed(LinkError)
    }

    /// Passing accept errors met so far (each retried).
    public var transientErrors: Int { transientErrorCount.load(ordering: .relaxed) }

    /// Waits for the next connection, through any passing shortage; `.closed` once stopped.
    public func next() -> Next { next(accepting: Socket.acceptWithPeer) }

    /// `next()` with the accept call given (tests give one that fails as they choose).
    func next(accepting accept: (Int32) throws(SystemError) -> (fd: Int32, peer: String)) -> Next {
        var backOffMs: Int64 = 10
        while true {
            if isStopping { return .closed }
            do {
                let (c, peer) = try accept(fd)
                return .connection(Connection(fd: c, peer: peer))
            } catch {
                if isStopping || error.errno == EINVAL { return .closed }  // EINVAL: shut down by stop()
                guard Socket.acceptErrorIsTransient(error.errno) else {
                    return .failed(LinkError(.io, "accept on \(name): \(error)"))
                }
                transientErrorCount.add(1, ordering: .relaxed)
                onTransientError?(error)
                if Socket.acceptErrorExhausts(error.errno) {
                    rest(ms: backOffMs)
                    backOffMs = min(backOffMs * 2, 1_000)
                }
            }
        }
    }

    var isStopping: Bool {
        pause.lock()
        defer { pause.unlock() }
        return stopping
    }

    /// Waits `ms` or until `stop()`.
    func rest(ms: Int64) {
        pause.lock()
        defer { pause.unlock() }
        if !stopping { _ = pause.wait(until: Date(timeIntervalSinceNow: Double(ms) / 1000)) }
    }

    /// Waits for the next connection; nil once the listener is closed or has failed (`next()` says which).
    public func accept() -> Connection? {
        if case .connection(let c) = next() { return c }
        return nil
    }

    /// Waits up to `timeoutNs` for the next connection; nil when none came (or the listener is closed).
    public func accept(timeoutNs: Int64) -> Connection? {
        guard
            let ready = try? Socket.poll(
                fd, events: Int16(POLLIN), timeoutMs: Int32(clamping: max(0, timeoutNs) / 1_000_000)), ready != 0
        else { return nil }
        return accept()
    }

    /// Stops accepting (wakes a thread blocked in `accept` or backing off).
    public func stop() {
        pause.lock()
        stopping = true
        pause.broadcast()
        pause.unlock()
        Socket.shutdown(fd)
    }
}
