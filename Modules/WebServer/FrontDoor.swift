import Admission
import Foundation
import Syscall

/// What a studio page sees first: a door in front of civetweb that takes every connection, waits for its request
/// headers, and only then hands it in.
///
/// ```
/// browser ──TCP──▶ FrontDoor (the public address) ──headers whole?──▶ relay ──▶ civetweb (127.0.0.1:ephemeral)
///                   │ per peer ≤ 8 pending, ≤ 128 in all (the silent longest makes room)
///                   │ headers within 5 s, at most 16 KiB
///                   └ per peer ≤ 24 relayed
/// ```
///
/// civetweb gives each connection a worker thread from the moment it is accepted, and the worker waits for the request
/// line: 200 silent connections to the loopback studio held every worker, and every API call timed out for 40 s; with
/// `--studio-on-network` 70 were enough to keep a coach's keyed request waiting 15 s (issue 33). civetweb has no hook
/// before a worker is taken, so the door is in front of it: a silent connection costs a descriptor and a small thread
/// here, never a worker, and is closed at its deadline or when a newer one needs its place (`PendingConnections`).
/// Once a request's headers are whole, the connection is relayed byte for byte to civetweb over loopback: keep-alive,
/// Range, WebSocket upgrades all pass through unchanged. civetweb's own deadlines (`request_timeout_ms`) then bound
/// what a relayed connection may hold.
///
/// civetweb sees every connection come from 127.0.0.1; the door keeps which of its ports relays which peer, so a
/// request still says where it came from (`peer(ofRelayPort:)`).
final class FrontDoor: @unchecked Sendable {
    // @unchecked: `listener` and `backendPort` are set once in init; shared state is behind `Guarded`s and atomics.
    let listener: Int32
    let port: Int
    let backendPort: Int
    let pending: PendingConnections
    let refusals = LogThrottle()
    let say: @Sendable (String) -> Void
    /// Relayed connections now, by peer address.
    let relayed = Guarded<[String: Int]>([:])
    /// The peer each relay's local port stands for.
    let relayPeers = Guarded<[Int: String]>([:])
    let stopping = Guarded(false)

    struct Limits {
        /// How long a connection may take to send its request's headers (assumed: a browser sends them at once).
        var headerDeadlineNs: Int64 = 5_000_000_000
        /// The most header bytes taken (assumed: a page's requests carry a few hundred, a cookie included).
        var headerBytes = 16 << 10
        /// Relayed connections a peer may hold at once: a browser's six for a host, a Live and a swing page's WebSocket
        /// each, several tabs (assumed).
        var relayedPerPeer = 24
        /// A page that stops reading a response this long is closed (a tab asleep; it asks again from where it was).
        var sendTimeoutNs: Int64 = 60_000_000_000
    }
    let limits: Limits

    init(
        listen address: sockaddr_in, name: String, backendPort: Int, pending: PendingConnections,
        limits: Limits = Limits(), say: @escaping @Sendable (String) -> Void
    ) throws(SystemError) {
        let fd = try Socket.tcp()
        do { port = try Socket.listen(fd, on: address, backlog: 128, name: name) } catch {
            Socket.close(fd)
            throw error
        }
        listener = fd
        self.backendPort = backendPort
        self.pending = pending
        self.limits = limits
        self.say = say
    }

    deinit { Socket.close(listener) }

    func start() {
        let t = Thread { [self] in acceptLoop() }
        t.name = "ppc.studio.door"
        t.start()
    }

    func stop() {
        stopping.withLock { $0 = true }
        Socket.shutdown(listener)
    }

    var isStopping: Bool { stopping.withLock { $0 } }

    /// The peer a relay's local port stands for, while it relays.
    func peer(ofRelayPort port: Int) -> String? { relayPeers.withLock { $0[port] } }

    func note(_ kind: String, _ line: String) {
        if let shown = refusals.pass(kind, line) { say(shown) }
    }

    func acceptLoop() {
        var backOffNs: Int64 = 10_000_000
        while !isStopping {
            let client: Int32
            let peer: String
            do {
                (client, peer) = try Socket.acceptWithPeer(listener)
                backOffNs = 10_000_000
            } catch {
                if isStopping || error.errno == EINVAL { return }
                guard Socket.acceptErrorIsTransient(error.errno) else {
                    say("studio: stopped taking connections on port \(port): \(error)")
                    return
                }
                note("accept", "studio: accept failed for now (\(error)); backing off and serving on")
                if Socket.acceptErrorExhausts(error.errno) {
                    sleepNs(backOffNs)  // a shortage of descriptors or memory: give it time to pass
                    backOffNs = min(backOffNs * 2, 1_000_000_000)
                }
                continue
            }
            let (ticket, eviction) = pending.admit(peer: peer) { Socket.shutdown(client) }
            if let e = eviction {
                note(
                    e.perPeer ? "evict-peer" : "evict-all",
                    "studio: closed a connection from \(e.peer) that sent no request for \(PendingConnections.seconds(e.silentNs)), to make room for a newer one"
                )
            }
            let t = Thread { [self] in
                serve(client, peer: peer, ticket: ticket)
                pending.ended(ticket)
                Socket.close(client)
            }
            t.stackSize = 256 << 10
            t.name = "ppc.studio.relay"
            t.start()
        }
    }

    /// Waits for the request's headers, then relays the connection to civetweb until either side ends it.
    func serve(_ client: Int32, peer: String, ticket: PendingConnections.Ticket) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: max(limits.headerBytes, 64 << 10), alignment: 16)
        defer { buffer.deallocate() }
        guard let head = readHeaders(client, peer: peer, into: buffer) else { return }
        pending.settled(ticket)
        let admitted = relayed.withLock { r -> Bool in
            guard r[peer, default: 0] < limits.relayedPerPeer else { return false }
            r[peer, default: 0] += 1
            return true
        }
        guard admitted else {
            note("busy", "studio: \(peer) already has \(limits.relayedPerPeer) connections open; answered 503")
            answer(
                client, 503, "Service Unavailable",
                "\(peer) already has \(limits.relayedPerPeer) connections open to this studio")
            return
        }
        defer {
            relayed.withLock { r in
                r[peer, default: 1] -= 1
                if r[peer] == 0 { r[peer] = nil }
            }
        }
        guard let backend = try? Socket.tcp() else { return }
        defer { Socket.close(backend) }
        var relayPort = 0
        do {
            try Socket.bind(backend, to: Socket.ipv4("127.0.0.1", 0)!)
            relayPort = try Socket.localPort(backend)
            relayPeers.withLock { $0[relayPort] = peer }
            try Socket.connect(
                backend, to: Socket.ipv4("127.0.0.1", backendPort)!, peer: "studio backend", timeoutNs: 5_000_000_000)
        } catch {
            relayPeers.withLock { $0[relayPort] = nil }
            say("studio: cannot reach its own web server on 127.0.0.1:\(backendPort): \(error)")
            answer(client, 503, "Service Unavailable", "the studio's web server is not answering")
            return
        }
        defer { relayPeers.withLock { $0[relayPort] = nil } }
        Socket.setSendTimeout(client, ns: limits.sendTimeoutNs)
        Socket.setOption(client, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        Socket.setOption(backend, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        guard sendAll(backend, UnsafeRawBufferPointer(rebasing: buffer[0..<head])) else { return }
        relay(client, backend, buffer)
    }

    /// Reads until the request's headers are whole (a blank line); the bytes read, or nil when the connection ended,
    /// went past the deadline or sent too much (then it was answered and is to be closed).
    func readHeaders(_ client: Int32, peer: String, into buffer: UnsafeMutableRawBufferPointer) -> Int? {
        let deadline = monotonicNowNs() + limits.headerDeadlineNs
        var have = 0
        while true {
            let left = deadline - monotonicNowNs()
            guard left > 0 else {
                note(
                    "slow",
                    "studio: \(peer) sent no whole request within \(limits.headerDeadlineNs / 1_000_000_000) s; closed")
                answer(
                    client, 408, "Request Timeout",
                    "no whole request within \(limits.headerDeadlineNs / 1_000_000_000) s")
                return nil
            }
            guard
                let ready = try? Socket.poll(
                    client, events: Int16(POLLIN), timeoutMs: Int32(clamping: (left + 999_999) / 1_000_000))
            else { return nil }
            if ready == 0 { continue }
            guard have < limits.headerBytes else {
                answer(
                    client, 431, "Request Header Fields Too Large", "request headers past \(limits.headerBytes) bytes")
                return nil
            }
            let n: Int
            do {
                n = try Socket.receive(
                    client, into: UnsafeMutableRawBufferPointer(rebasing: buffer[have..<limits.headerBytes]), peer: peer
                )
            } catch {
                return nil
            }
            if n == 0 { return nil }  // it went (or was made to make room)
            let from = max(0, have - 3)
            have += n
            if Self.endOfHeaders(UnsafeRawBufferPointer(rebasing: buffer[from..<have])) { return have }
        }
    }

    /// Whether `bytes` hold the blank line that ends a request's headers.
    static func endOfHeaders(_ bytes: UnsafeRawBufferPointer) -> Bool {
        guard bytes.count >= 4 else { return false }
        for i in 0...(bytes.count - 4)
        where bytes[i] == 13 && bytes[i + 1] == 10 && bytes[i + 2] == 13 && bytes[i + 3] == 10 { return true }
        return false
    }

    /// Copies each way until civetweb closes, or either side fails. A page that stops sending (its request done) has
    /// its half passed on; civetweb ending the connection ends the relay.
    func relay(_ client: Int32, _ backend: Int32, _ buffer: UnsafeMutableRawBufferPointer) {
        var fds = [
            pollfd(fd: client, events: Int16(POLLIN), revents: 0),
            pollfd(fd: backend, events: Int16(POLLIN), revents: 0),
        ]
        var clientOpen = true
        while true {
            // a page that has finished sending is no longer watched (its hang-up would wake the poll for ever)
            fds[0].fd = clientOpen ? client : -1
            guard (try? fds.withUnsafeMutableBufferPointer { try Socket.poll($0, timeoutMs: -1) }) != nil else {
                return
            }
            if fds[1].revents != 0 {
                guard let n = try? Socket.receive(backend, into: buffer, peer: "studio backend"), n > 0 else { return }
                guard sendAll(client, UnsafeRawBufferPointer(rebasing: buffer[0..<n])) else { return }
            }
            if clientOpen, fds[0].revents != 0 {
                let n = (try? Socket.receive(client, into: buffer, peer: "studio page")) ?? 0
                if n > 0 {
                    guard sendAll(backend, UnsafeRawBufferPointer(rebasing: buffer[0..<n])) else { return }
                } else {
                    clientOpen = false
                    Socket.shutdownWrite(backend)
                }
            }
        }
    }

    func sendAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) -> Bool {
        var at = 0
        while at < bytes.count {
            guard let n = try? Socket.send(fd, UnsafeRawBufferPointer(rebasing: bytes[at...]), peer: "studio"), n > 0
            else { return false }
            at += n
        }
        return true
    }

    /// A short answer before closing (the page learns why, not just that the connection went).
    func answer(_ client: Int32, _ status: Int, _ reason: String, _ why: String) {
        let body = "{\"error\":\"\(why)\"}"
        let text =
            "HTTP/1.1 \(status) \(reason)\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: \(body.utf8.count)\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n\(body)"
        _ = text.utf8CString.withUnsafeBytes { sendAll(client, UnsafeRawBufferPointer(rebasing: $0.dropLast())) }
    }
}
