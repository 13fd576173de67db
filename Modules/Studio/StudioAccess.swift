import Crypto
import Foundation
import WebServer

/// Who may use a studio served beyond loopback: whoever holds its key. The key comes once in a link (`/?key=…`); the
/// page it opens keeps it in a cookie (HttpOnly: no script reads it; SameSite=Strict: no other site's page sends it, so
/// no other page can flag or discard a clip) and takes it out of the address bar. A script may give it as `?key=` on
/// any request instead. Every other request — pages, the API, media, the WebSocket — is answered 403 with what to do.
public struct StudioAccess: Sendable {
    public static let cookie = "ppc_studio"
    let key: [UInt8]

    /// nil for a key too short to guess at (under 16 characters).
    public init?(key: String) {
        guard key.utf8.count >= 16 else { return nil }
        self.key = Array(key.utf8)
    }

    func holds(_ presented: Substring) -> Bool { Crypto.equal(Array(presented.utf8), key) }

    /// The web server's gate: nil lets the request through.
    func admit(_ r: WebServer.Request) -> WebServer.Response? {
        if let presented = r.query["key"] {
            guard holds(presented[...]) else {
                return Self.refusal(r, "the key in this link is not this studio's (was a new one made?)")
            }
            guard r.method == "GET", Self.isPage(r.path) else { return nil }
            // A page opened from the link: the key goes into the cookie and out of the address (and the history).
            var to = URLComponents()
            to.path = r.path
            let rest = r.query.filter { $0.key != "key" }.sorted { $0.key < $1.key }
            if !rest.isEmpty { to.queryItems = rest.map { URLQueryItem(name: $0.key, value: $0.value) } }
            let keyText = String(decoding: key, as: UTF8.self)
            return .bytes(
                status: 303, contentType: "text/plain; charset=utf-8", body: Data(),
                headers: [
                    "Location: \(to.string ?? "/")", "Cache-Control: no-store",
                    "Set-Cookie: \(Self.cookie)=\(keyText); Path=/; HttpOnly; SameSite=Strict; Max-Age=31536000",
                ])
        }
        if let held = Self.cookieValue(r.headers["cookie"]) {
            return holds(held)
                ? nil : Self.refusal(r, "this browser holds an old key of this studio (was a new one made?)")
        }
        return Self.refusal(r, "this studio is served to the network and asks for its key")
    }

    /// A page (HTML, script, style), not the API, a media file or the live socket.
    static func isPage(_ path: String) -> Bool {
        !path.hasPrefix("/api/") && !path.hasPrefix("/media/") && path != "/ws"
    }

    /// `ppc_studio`'s value in a Cookie header ("a=1; ppc_studio=…").
    static func cookieValue(_ header: String?) -> Substring? {
        guard let header else { return nil }
        for part in header.split(separator: ";") {
            let pair = part.drop { $0 == " " }
            if pair.hasPrefix(cookie + "=") { return pair.dropFirst(cookie.count + 1) }
        }
        return nil
    }

    static func refusal(_ r: WebServer.Request, _ why: String) -> WebServer.Response {
        let what =
            "\(why): open the link ppc-host printed when it started (http://…/?key=…); the key is the host's studio.key, in its state directory"
        if !isPage(r.path) { return .error(403, what) }
        let page = """
            <!doctype html><meta charset="utf-8"><title>ppc Studio: key needed</title>
            <body style="font-family: sans-serif; max-width: 40em; margin: 3em auto"><h1>ppc Studio</h1><p>\(what).</p></body>
            """
        return .bytes(
            status: 403, contentType: "text/html; charset=utf-8", body: Data(page.utf8),
            headers: ["Cache-Control: no-store"])
    }
}
