import Catalogue
import Foundation
import Glibc
import Syscall
import TestSupport
import Testing

@testable import Studio
@testable import WebServer

/// The studio against connections that never send a request (issue 33): bounded in count and time, on loopback.
@Suite("Studio under silent connections: pages are answered while they stay open", .serialized)
struct StudioUnderAttackTests {
    static let key = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

    /// Before: civetweb gave each connection a worker from its accept, and the worker waited for a request line. 200
    /// silent connections to the loopback studio held every worker and every API call timed out for 40 s; with the
    /// key, 70 kept a coach's request waiting 15 s. Now a door in front of civetweb holds them (the silent longest making
    /// room) and hands in only connections whose headers are whole; a request made while they are all open is answered
    /// at once — here within 10 s, a bound four times under civetweb's own 30 s wait that answered it before.
    @Test(arguments: [false, true])
    func aPageIsAnsweredWhileSilentConnectionsHoldOn(keyed: Bool) throws {
        let access = keyed ? StudioAccess(key: Self.key) : nil
        let studio = try Studio(
            host: "127.0.0.1", port: 0, library: StudioTests.library.path, catalogue: try StudioTests.catalogued(),
            access: access, live: { [] })
        defer { studio.stop() }
        // 200 from the page's own address, and one each from 70 others.
        var silent = silentConnections(to: studio.port, from: ["127.0.0.1"], each: 200)
        silent += silentConnections(to: studio.port, from: loopbackPeers(70), each: 1)
        defer { closeAll(silent) }
        #expect(silent.count == 270)
        let cookie = keyed ? "Cookie: \(StudioAccess.cookie)=\(Self.key)\r\n" : ""
        for path in ["/api/swings", "/api/clips", "/"] {
            let head = rawHTTPHead(
                port: studio.port,
                "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(studio.port)\r\n\(cookie)Connection: close\r\n\r\n",
                readTimeoutSeconds: 10)
            #expect(head.hasPrefix("HTTP/1.1 200"), "\(path): \(head.prefix(200))")
        }
    }

    /// A connection that sends half a request and stops is answered 408 at the door's deadline and closed; one whose
    /// headers never end is answered 431 — neither ever reaches a worker.
    @Test func aRequestThatNeverEndsIsClosedAtTheDoor() throws {
        let studio = try Studio(
            host: "127.0.0.1", port: 0, library: StudioTests.library.path, catalogue: try StudioTests.catalogued(),
            live: { [] })
        defer { studio.stop() }
        let half = rawHTTPHead(
            port: studio.port, "GET /api/clips HTTP/1.1\r\nHost: 127.0.0.1\r\n", readTimeoutSeconds: 20)
        #expect(half.hasPrefix("HTTP/1.1 408"), "\(half.prefix(200))")
        let long = rawHTTPHead(
            port: studio.port,
            "GET /api/clips HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Fill: " + String(repeating: "a", count: 20_000),
            readTimeoutSeconds: 20)
        #expect(long.hasPrefix("HTTP/1.1 431"), "\(long.prefix(200))")
    }
}
