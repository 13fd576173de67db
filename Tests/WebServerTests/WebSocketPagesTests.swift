import Foundation
import TestSupport
import Testing

@testable import WebServer

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Live pages are passive: what the host pushes to them never waits for one. Found 2026-12-02: the host's thread
/// reading a device's control channel wrote each push to every page in turn, so one page that stopped reading held it
/// until the host missed three heartbeats and the device dropped its link; and eight open Live pages took all eight of
/// civetweb's workers, so nothing else was served.
@Suite("Studio pages never hold up the host, nor each other")
struct StudioPagesTests {
    /// An HTTP status from the server (0: no answer within the bound).
    static func status(_ port: Int, _ path: String = "/nothing-here") -> Int {
        var request = URLRequest(url: URL(string: "http://127.0.0.1:\(port)\(path)")!)
        request.timeoutInterval = 30  // a bound, not a pacing
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var status = 0
        URLSession.shared.dataTask(with: request) { _, response, _ in
            status = (response as? HTTPURLResponse)?.statusCode ?? 0
            done.signal()
        }.resume()
        done.wait()
        return status
    }

    @Test func aPageThatStopsReadingHoldsUpNeitherThePusherNorTheOtherPages() throws {
        let server = try WebServer(host: "127.0.0.1", port: 0)
        let hub = server.websocket("/ws", greeting: { [#"{"type":"hello"}"#] })
        // Both have their greeting (so both are registered); then one stops reading.
        let stalled = try WebSocketPeer(port: server.port, smallReceiveBuffer: true)
        #expect(try stalled.nextText() == #"{"type":"hello"}"#)
        let page = try WebSocketPeer(port: server.port)
        #expect(try page.nextText() == #"{"type":"hello"}"#)
        // 200 text messages of 64 KiB — 12.5 MiB, more than the stalled page's buffers and the server's hold — and
        // preview frames between them, pushed from another thread as the host's link threads push.
        let pad = String(repeating: "x", count: 64 * 1024)
        let frame = [UInt8](repeating: 7, count: 160 * 90)
        let pushed = DispatchSemaphore(value: 0)
        Thread {
            for i in 0..<200 {
                hub.broadcast(text: #"{"n":\#(i),"pad":"\#(pad)"}"#)
                hub.broadcast(binary: frame, key: "bay-a")
            }
            hub.broadcast(text: "last")
            pushed.signal()
        }.start()
        // A bound, not a pacing: a push that waited for the stalled page would not return for minutes.
        #expect(pushed.wait(timeout: .now() + 60) == .success)
        // The page that reads gets every text message, in order.
        var seen = 0
        while let text = try page.nextText(), text != "last" {
            #expect(text.hasPrefix(#"{"n":\#(seen),"#))
            seen += 1
        }
        #expect(seen == 200)
        // And the server still answers a request.
        #expect(Self.status(server.port) == 404)
        stalled.close()
    }

    @Test func moreLivePagesThanWorkersOnceHeldAreServedAndRequestsStillAnswered() throws {
        let server = try WebServer(host: "127.0.0.1", port: 0, threads: 24)
        let hub = server.websocket("/ws", greeting: { ["hello"] })
        #expect(server.maxWebSockets == 8)
        // Eight pages: with civetweb's eight workers of before, the studio then answered nothing else.
        var pages: [WebSocketPeer] = []
        for _ in 0..<server.maxWebSockets {
            let p = try WebSocketPeer(port: server.port)
            #expect(try p.nextText() == "hello")
            pages.append(p)
        }
        #expect(Self.status(server.port) == 404)
        // One more is refused, and requests are still answered.
        #expect(throws: WebSocketPeer.Failure.self) { _ = try WebSocketPeer(port: server.port) }
        #expect(Self.status(server.port) == 404)
        // A page that closes makes room for another.
        pages.removeLast().close()
        #expect(awaitCondition { hub.count < server.maxWebSockets })  // the server notices the close on its own worker
        let reopened = try WebSocketPeer(port: server.port)
        #expect(try reopened.nextText() == "hello")
    }
}

extension StudioPagesTests {
    /// civetweb never closed an idle WebSocket: a page that vanished (a phone off the Wi-Fi, no FIN) held its worker and
    /// its place for ever. Now a page is pinged after `pageTimeoutMs` without a word from it; one that answers none of
    /// several is closed, and one that answers (as a browser does, by itself) stays.
    @Test func aPageThatVanishesIsClosedAndOneThatAnswersPingsStays() throws {
        let server = try WebServer(host: "127.0.0.1", port: 0, pageTimeoutMs: 200)
        let hub = server.websocket("/ws", greeting: { ["hello"] })
        let vanished = try WebSocketPeer(port: server.port, smallReceiveBuffer: true)
        #expect(try vanished.nextText() == "hello")  // then it reads and answers nothing
        let alive = try WebSocketPeer(port: server.port)
        #expect(try alive.nextText() == "hello")
        #expect(hub.count == 2)
        // The page that answers reads on (a ping every 200 ms) until the one that does not is closed.
        while hub.count == 2, alive.pingsAnswered < 1_000 {  // the bound: 200 s of pings
            guard try alive.next() != nil else { break }
        }
        #expect(hub.count == 1)
        let closedAfter = alive.pingsAnswered
        // As many pings again and more: the answering page is still open, and still hears what is pushed.
        while alive.pingsAnswered < 2 * closedAfter + 5 {
            guard try alive.next() != nil else { break }
        }
        #expect(hub.count == 1)
        hub.broadcast(text: "still here")
        #expect(try alive.nextText() == "still here")
    }
}
