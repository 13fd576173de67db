import Foundation
import Glibc
import Syscall
import TestSupport
import Testing

@testable import Link

/// A listener serves through passing shortages; connections that have not said who they are are bounded; lines about
/// them are throttled.
@Suite("Listener, pending connections and throttled lines")
struct ListenerTests {
    /// A descriptor for a fake accept to hand back (a socket of the test's own; the Connection closes it).
    static func spareSocket() throws -> Int32 { try Socket.tcp() }

    /// EMFILE, ENFILE, ENOBUFS, ENOMEM and ECONNABORTED once took the accept loop down (EMFILE read as "no connection");
    /// each is now counted and accepted through, and only a failure for good or a stop ends `next()`.
    @Test(arguments: [EMFILE, ENFILE, ENOBUFS, ENOMEM, ECONNABORTED, EPROTO])
    func aPassingAcceptErrorIsServedThrough(errno code: Int32) throws {
        let listener = try Listener(host: "127.0.0.1", port: 0)
        var failures = 3
        let seen = Guarded(0)
        listener.onTransientError = { e in
            #expect(e.errno == code)
            seen.withLock { $0 += 1 }
        }
        let next = listener.next { _ throws(SystemError) -> (fd: Int32, peer: String) in
            if failures > 0 {
                failures -= 1
                throw SystemError(errno: code, operation: "accept")
            }
            return (try Socket.tcp(), "127.0.0.9")
        }
        guard case .connection(let c) = next else {
            Issue.record("expected a connection after \(code), got \(next)")
            return
        }
        #expect(c.peer == "127.0.0.9")
        #expect(listener.transientErrors == 3 && seen.withLock { $0 } == 3)
    }

    @Test func aFailureForGoodEndsItAndAStopClosesIt() throws {
        let listener = try Listener(host: "127.0.0.1", port: 0)
        let failed = listener.next { _ throws(SystemError) -> (fd: Int32, peer: String) in throw SystemError(errno: ENOTSOCK, operation: "accept") }
        guard case .failed(let e) = failed else {
            Issue.record("expected a failure, got \(failed)")
            return
        }
        #expect("\(e)".contains("accept on 127.0.0.1:\(listener.port)"))
        listener.stop()
        guard case .closed = listener.next() else {
            Issue.record("a stopped listener gives a connection")
            return
        }
    }

    /// A real connection through the real accept: its peer is the address it came from.
    @Test func aConnectionSaysWhereItCameFrom() throws {
        let listener = try Listener(host: "127.0.0.1", port: 0)
        let fds = silentConnections(to: listener.port, from: ["127.0.0.7"], each: 1)
        defer { closeAll(fds) }
        #expect(listener.accept()?.peer == "127.0.0.7")
    }

    /// A peer's ninth pending connection is refused; past the overall bound, the busiest peer's oldest makes room; a
    /// settled connection no longer counts.
    @Test func pendingConnectionsAreBoundedPerPeerAndOverall() throws {
        let pending = PendingConnections(.init(perPeer: 2, overall: 3))
        let listener = try Listener(host: "127.0.0.1", port: 0)
        let fds = silentConnections(to: listener.port, from: ["127.0.0.2", "127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.4"], each: 1)
        defer { closeAll(fds) }
        let taken = (0..<5).compactMap { _ in listener.accept() }
        #expect(taken.map(\.peer) == ["127.0.0.2", "127.0.0.2", "127.0.0.2", "127.0.0.3", "127.0.0.4"])
        func ticket(_ a: PendingConnections.Admission) -> PendingConnections.Ticket? {
            if case .admitted(let t) = a { return t }
            return nil
        }
        let first = ticket(pending.admit(taken[0]))
        #expect(ticket(pending.admit(taken[1])) != nil)
        guard case .refused(let why) = pending.admit(taken[2]) else {
            Issue.record("a third from one peer was admitted")
            return
        }
        #expect(why.contains("127.0.0.2 already has 2 connections"))
        #expect(ticket(pending.admit(taken[3])) != nil)
        // Full (3): the newcomer gets in; 127.0.0.2, the busiest, loses its oldest, which is shut down.
        #expect(ticket(pending.admit(taken[4])) != nil)
        #expect(pending.counts == (pending: 3, refused: 1, evicted: 1))
        var byte: UInt8 = 0
        #expect(recv(taken[0].fd, &byte, 1, Int32(MSG_DONTWAIT)) == 0, "the evicted connection was shut down")
        if let first { pending.ended(first) }  // its thread ends: already gone from the count
        #expect(pending.counts.pending == 3)
    }

    @Test func linesOfAKindAreThrottledAndTheHeldOnesCounted() {
        let throttle = LogThrottle(burst: 2, windowNs: 1_000)
        #expect(throttle.pass("refused", "a", nowNs: 0) == "a")
        #expect(throttle.pass("refused", "b", nowNs: 1) == "b")
        #expect(throttle.pass("refused", "c", nowNs: 2) == nil)
        #expect(throttle.pass("refused", "d", nowNs: 3) == nil)
        #expect(throttle.pass("other", "x", nowNs: 4) == "x")
        #expect(throttle.held == ["refused": 2])
        #expect(throttle.pass("refused", "e", nowNs: 1_000) == "e (and 2 more like it not shown)")
        #expect(throttle.held.isEmpty)
    }
}
