import Foundation
import Synchronization
import WebServer

/// What every request to the studio must be, whatever else: the browser's defences against other sites' pages, which
/// a studio on loopback — with no key — otherwise has none of.
///
/// - **Its own name in `Host`** when it has no key: a site that points its own name at 127.0.0.1 (DNS rebinding) makes
///   the browser send that name, and is refused (403). With a key it is not needed — the browser never sends the
///   studio's cookie to another name — and a LAN reaches the studio by names this side cannot list.
/// - **Only its own pages**: a request that says where it comes from (`Origin`: a browser sends it with a POST, a
///   cross-site fetch and every WebSocket) must come from the studio itself (403) — so another site's page cannot
///   open the live socket and watch the devices.
/// - **JSON to change anything**: a POST or PUT must say `Content-Type: application/json`, which a page of another site
///   cannot send without asking first (a CORS preflight the studio never grants), or it is refused (415).
final class RequestCheck: Sendable {
    /// Whether the studio has no key (then `Host` is checked).
    let keyless: Bool
    /// The port the server bound (0 until it has).
    let port = Atomic<Int>(0)

    init(keyless: Bool) { self.keyless = keyless }

    /// The methods that change something.
    static let changing: Set<String> = ["POST", "PUT", "DELETE", "PATCH"]

    func refusal(_ r: WebServer.Request) -> WebServer.Response? {
        let host = r.headers["host"] ?? ""
        if keyless, !Self.isLoopbackName(host, port: port.load(ordering: .relaxed)) {
            return .error(
                403,
                "Host '\(host)' is not this studio's address (127.0.0.1, localhost or [::1] and its port): refused, as a page of another site reaching it through its own name would be"
            )
        }
        if let origin = r.headers["origin"], origin != "http://\(host)", origin != "https://\(host)" {
            return .error(
                403, "\(r.method) \(r.path) from a page of '\(origin)': only the studio's own pages may use it")
        }
        guard Self.changing.contains(r.method) else { return nil }
        let type = r.headers["content-type"] ?? ""
        guard type.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased() == "application/json"
        else {
            return .error(
                415,
                "\(r.method) \(r.path): the body must be JSON and say so (Content-Type: application/json), not '\(type)'"
            )
        }
        return nil
    }

    /// `127.0.0.1:PORT`, `localhost:PORT` or `[::1]:PORT` (the port may be left out when it is 80).
    static func isLoopbackName(_ host: String, port: Int) -> Bool {
        let name: Substring
        let given: Int
        if let colon = host.lastIndex(of: ":"), !host.hasSuffix("]") {
            name = host[..<colon]
            guard let p = Int(host[host.index(after: colon)...]) else { return false }
            given = p
        } else {
            name = host[...]
            given = 80
        }
        return given == port && ["127.0.0.1", "localhost", "[::1]"].contains(name.lowercased())
    }
}
