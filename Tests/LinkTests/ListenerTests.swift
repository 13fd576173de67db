import Foundation
import Glibc
import Syscall
import TestSupport
import Testing

@testable import Link

/// A listener serves through passing shortages and says where each connection came from.
@Suite("Listener: passing accept errors served through")
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
        let failed = listener.next { _ throws(SystemError) -> (fd: Int32, peer: String) in
            throw SystemError(errno: ENOTSOCK, operation: "accept")
        }
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
}
