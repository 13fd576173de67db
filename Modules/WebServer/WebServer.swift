import Admission
import CCivetweb
import Foundation
import Synchronization
import Syscall

/// Why the web server could not start. Each case says it in words that name no command's flag: the tool that asked
/// for the address prefixes its own (`--http 127.0.0.1:80: cannot listen there (in use)`).
public enum WebServerError: Error, Sendable, Equatable, CustomStringConvertible {
    /// `host` is no IPv4 address or name this machine resolves.
    case notAnAddress(host: String, why: String)
    /// The address is taken, or not one of this machine's.
    case cannotListen(host: String, port: Int, why: String)
    /// civetweb could not start its loopback side (its threads, its port).
    case serverDidNotStart(String)
    /// The pages to serve are not where they should be.
    case pagesMissing(String)

    public var description: String {
        switch self {
        case .notAnAddress(let host, let why): "\(host): not an address to listen on (\(why))"
        case .cannotListen(let host, let port, let why): "\(host):\(port): cannot listen there (\(why))"
        case .serverDidNotStart(let why): "the web server did not start: \(why)"
        case .pagesMissing(let path): "the studio's pages are missing (\(path))"
        }
    }
}

/// An HTTP server with WebSocket over civetweb (Debian's libcivetweb): a thread pool, static files with Range,
/// ETag/Last-Modified and Cache-Control handled by civetweb itself, WebSocket framing. The only importer of CCivetweb.
///
/// Routes are URI prefixes, registered before or after `start`; each handler runs on one of civetweb's worker threads
/// and returns a `Response`. Bodies are read whole up to `maxBodyBytes` (a larger one is refused with 413). A `Gate`,
/// given at init, sees every request and WebSocket connection first (its body not yet read) and may answer instead.
public final class WebServer: @unchecked Sendable {
    // @unchecked: `ctx` is set once in init; routes and sockets are behind their own locks.
    let ctx: OpaquePointer
    public let port: Int
    let routes = Mutex<[Route]>([])
    public static let maxBodyBytes = 1 << 20

    /// Sees each request before its route does (its body not yet read): nil lets it through, a response answers
    /// instead. A WebSocket connection it answers is refused.
    public typealias Gate = @Sendable (Request) -> Response?
    let gate: Gate?

    final class Route: @unchecked Sendable {
        let prefix: String
        let handler: @Sendable (Request) -> Response
        let gate: Gate?
        let threads: HandlerThreads
        let door: FrontDoor
        init(
            prefix: String, handler: @escaping @Sendable (Request) -> Response, gate: Gate?, threads: HandlerThreads,
            door: FrontDoor
        ) {
            self.prefix = prefix
            self.handler = handler
            self.gate = gate
            self.threads = threads
            self.door = door
        }
    }

    public struct Request: Sendable {
        public var method: String
        /// The URI's path, percent-decoded and cleaned by civetweb (no `..`).
        public var path: String
        public var query: [String: String]
        public var headers: [String: String]
        public var body: Data
        public var remoteAddress: String

        public init(
            method: String, path: String, query: [String: String] = [:], headers: [String: String] = [:],
            body: Data = Data(), remoteAddress: String = ""
        ) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.body = body
            self.remoteAddress = remoteAddress
        }
    }

    public enum Response: Sendable {
        /// A body with a status and type; `headers` added as given (each "Name: value").
        case bytes(status: Int, contentType: String, body: Data, headers: [String])
        /// A file from disk: served by civetweb (If-None-Match / If-Modified-Since → 304, Cache-Control), but a
        /// request with a Range by `sendRange` (206, 416, or the whole file when the range is to be ignored).
        case file(path: String, contentType: String, headers: [String])

        public static func json(_ object: Any, status: Int = 200) -> Response {
            answer(status) { try JSONBody.data(object) }
        }

        /// A typed answer (`Encodable`) as JSON.
        public static func json<T: Encodable>(_ value: T, status: Int = 200) -> Response {
            answer(status) { try JSONBody.data(encoding: value) }
        }

        static func answer(_ status: Int, _ body: () throws -> Data) -> Response {
            func answer(_ status: Int, _ body: Data) -> Response {
                .bytes(
                    status: status, contentType: "application/json; charset=utf-8", body: body,
                    headers: ["Cache-Control: no-store"])
            }
            do {
                return answer(status, try body())
            } catch {
                // A value with no JSON form is the server's own mistake: said as such, not sent as something else.
                return answer(
                    500,
                    (try? JSONBody.data(["error": "the server could not write its answer as JSON: \(error)"]))
                        ?? Data("{}".utf8))
            }
        }

        /// An error as JSON: `{"error": message}`.
        public static func error(_ status: Int, _ message: String) -> Response {
            .json(["error": message], status: status)
        }
    }

    /// Starts listening on `host`:`port` (port 0 picks a free one) with `threads` workers. Each open
    /// WebSocket holds a worker for its life (civetweb is a thread per connection), so at most `threads` − 16 are
    /// accepted and the rest are kept for pages, the API and media: with 8 workers and no such limit, eight open Live
    /// tabs left nothing to serve anything else.
    ///
    /// A page is pinged after `pageTimeoutMs` without a word from it (a browser answers at once, by itself), and
    /// civetweb closes one that answers none of several pings — about seven timeouts, measured with civetweb 1.15: 14 s
    /// at 2 s. Without the pings civetweb never closed an idle WebSocket, so a page that vanished (a phone off the Wi-Fi)
    /// held its worker and its place for ever.
    public init(
        host: String, port requested: Int, threads: Int = 64, gate: Gate? = nil, pageTimeoutMs: Int = 10_000,
        say: @escaping @Sendable (String) -> Void = { _ in }
    ) throws(WebServerError) {
        self.gate = gate
        maxWebSockets = max(1, threads - 16)
        guard (0...65535).contains(requested) else {
            throw .cannotListen(host: host, port: requested, why: "no such port")
        }
        let address: sockaddr_in
        do { address = try Socket.lookupIPv4(host, requested) } catch {
            throw .notAnAddress(host: host, why: "\(error)")
        }
        _ = mg_init_library(0)
        // civetweb serves only its front door, on a loopback port of its own: every connection reaches it with its
        // request's headers already whole (`FrontDoor`). A relayed connection's next request on keep-alive, or its
        // body, must then come within civetweb's own deadline.
        let options = [
            "listening_ports", "127.0.0.1:0", "num_threads", "\(max(2, threads))",
            "enable_keep_alive", "yes", "static_file_max_age", "3600", "websocket_timeout_ms", "\(pageTimeoutMs)",
            "enable_websocket_ping_pong", "yes",
            "request_timeout_ms", "10000",
        ]
        var cStrings = options.map { strdup($0) } + [nil]
        defer { for s in cStrings { free(s) } }
        var callbacks = mg_callbacks()
        let started = cStrings.withUnsafeMutableBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buf.count) {
                mg_start(&callbacks, nil, $0)
            }
        }
        guard let started else {
            throw .serverDidNotStart("civetweb could not listen on a loopback port of its own")
        }
        var ports = [mg_server_port](repeating: mg_server_port(), count: 4)
        let n = mg_get_server_ports(started, 4, &ports)
        guard n > 0 else {
            mg_stop(started)
            throw .serverDidNotStart("civetweb could not say its loopback port")
        }
        do {
            door = try FrontDoor(
                listen: address, name: "\(host):\(requested)", backendPort: Int(ports[0].port),
                pending: PendingConnections(), say: say)
        } catch {
            mg_stop(started)
            throw .cannotListen(
                host: host, port: requested,
                why: error.errno == EADDRINUSE ? "in use" : "not an address of this machine, or \(error)")
        }
        ctx = started
        port = door.port
        door.start()
    }

    /// The door every connection comes through first (see `FrontDoor`).
    let door: FrontDoor

    deinit { stop() }

    /// The most WebSocket connections held at once (all paths' hubs share civetweb's workers; each hub is held to it).
    public let maxWebSockets: Int

    let stopped = Atomic<Bool>(false)
    /// Where route handlers run: threads with the stack a handler needs, not a civetweb worker's 100 KiB.
    let handlers = HandlerThreads()

    /// Stops serving: waits for the workers to finish what they are doing.
    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        door.stop()
        mg_stop(ctx)
        handlers.stop()
    }

    /// Serves the path `prefix` and every path under it (`prefix/…`), as civetweb matches: an exact match first, then
    /// the first registered prefix followed by `/`, then civetweb's patterns (so "/" is reached last, by pattern). Two
    /// prefixes one inside the other ("/a", "/a/b") go to whichever was registered first: register the longer first.
    public func handle(_ prefix: String, _ handler: @escaping @Sendable (Request) -> Response) {
        let route = Route(prefix: prefix, handler: handler, gate: gate, threads: handlers, door: door)
        routes.withLock { $0.append(route) }
        mg_set_request_handler(
            ctx, prefix,
            { conn, cbdata in
                guard let conn, let cbdata else { return 0 }
                let route = Unmanaged<Route>.fromOpaque(cbdata).takeUnretainedValue()
                return WebServer.serve(conn, route)
            }, Unmanaged.passUnretained(route).toOpaque())
    }

    /// The request as civetweb parsed it (`mg_get_request_info`), without its body.
    static func request(_ info: mg_request_info, door: FrontDoor?) -> Request {
        let method = info.request_method.map { String(cString: $0) } ?? "GET"
        let path = info.local_uri.map { String(cString: $0) } ?? "/"
        var query: [String: String] = [:]
        if let q = info.query_string.map({ String(cString: $0) }) {
            for item in URLComponents(string: "?" + q)?.queryItems ?? [] { query[item.name] = item.value ?? "" }
        }
        var headers: [String: String] = [:]
        withUnsafeBytes(of: info.http_headers) { raw in
            let all = raw.bindMemory(to: mg_header.self)
            for h in all.prefix(Int(info.num_headers)) {
                if let n = h.name, let v = h.value { headers[String(cString: n).lowercased()] = String(cString: v) }
            }
        }
        let relay = withUnsafeBytes(of: info.remote_addr) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        // civetweb sees the door's relay; the door knows whose connection it relays.
        let remote = door?.peer(ofRelayPort: Int(info.remote_port)) ?? relay
        return Request(method: method, path: path, query: query, headers: headers, remoteAddress: remote)
    }

    static func serve(_ conn: OpaquePointer, _ route: Route) -> Int32 {
        guard let info = mg_get_request_info(conn)?.pointee else { return 0 }
        var request = request(info, door: route.door)
        let method = request.method
        if let refusal = route.gate?(request) { return write(conn, refusal, head: method == "HEAD") }
        var body = Data()
        if info.content_length > Int64(maxBodyBytes) {
            write(conn, .error(413, "request body of \(info.content_length) bytes: at most \(maxBodyBytes)"))
            return 413
        }
        if info.content_length > 0 || method == "POST" || method == "PUT" {
            var buf = [UInt8](repeating: 0, count: 16_384)
            while body.count <= maxBodyBytes {
                let n = buf.withUnsafeMutableBytes { mg_read(conn, $0.baseAddress, $0.count) }
                if n <= 0 { break }
                body.append(contentsOf: buf[0..<Int(n)])
            }
            // A chunked body declares no length: it is read up to the bound and, past it, refused as one declared too
            // long is (before, the part read was parsed and refused as "not a JSON object").
            if body.count > maxBodyBytes {
                write(conn, .error(413, "request body of more than \(maxBodyBytes) bytes: at most \(maxBodyBytes)"))
                return 413
            }
        }
        request.body = body
        let given = request
        let response = route.threads.run { route.handler(given) }
        if case .file(let path, let type, let extra) = response, let range = request.headers["range"] {
            return sendRange(conn, range, of: path, contentType: type, headers: extra, request: request)
        }
        return write(conn, response, head: method == "HEAD")
    }

    @discardableResult
    static func write(_ conn: OpaquePointer, _ response: Response, head: Bool = false) -> Int32 {
        switch response {
        case .bytes(let status, let type, let body, let extra):
            let reason = String(cString: mg_get_response_code_text(conn, Int32(status)))
            var header =
                "HTTP/1.1 \(status) \(reason)\r\nContent-Type: \(type)\r\nContent-Length: \(body.count)\r\nX-Content-Type-Options: nosniff\r\n"
            for h in extra { header += h + "\r\n" }
            header += "\r\n"
            _ = header.utf8CString.withUnsafeBufferPointer { mg_write(conn, $0.baseAddress, $0.count - 1) }
            // HEAD: the headers only
            if !head { _ = body.withUnsafeBytes { mg_write(conn, $0.baseAddress, $0.count) } }
            return Int32(status)
        case .file(let path, let type, let extra):  // a ranged request is answered by `sendRange`
            // civetweb would open a FIFO where a file should be and wait for a writer, holding a worker for ever.
            if FileSystem.exists(path) && !FileSystem.isRegularFile(path) {
                return write(
                    conn, .error(404, "\((path as NSString).lastPathComponent): not a regular file"), head: head)
            }
            let headers = extra.isEmpty ? nil : extra.joined(separator: "\r\n")
            mg_send_mime_file2(conn, path, type, headers)
            return 200
        }
    }

    // MARK: WebSocket

    /// Accepts WebSocket connections at `path`; `greeting` gives the messages a new connection is sent first (the
    /// state it should start from, so a page needs no poll).
    public func websocket(_ path: String, greeting: @escaping @Sendable () -> [String] = { [] }) -> WebSocketHub {
        let hub = WebSocketHub(greeting: greeting, gate: gate, limit: maxWebSockets, door: door)
        hubs.withLock { $0.append(hub) }
        mg_set_websocket_handler(
            ctx, path,
            // 0 accepts; a connection the gate answers, or one too many, is refused with an HTTP status
            { conn, cbdata in
                guard let conn, let cbdata else { return 1 }
                let hub = Unmanaged<WebSocketHub>.fromOpaque(cbdata).takeUnretainedValue()
                guard hub.hasRoom else {
                    WebServer.write(conn, .error(503, "\(hub.limit) live pages are open already: close one and reload"))
                    return 1
                }
                guard let gate = hub.gate else { return 0 }
                guard let info = mg_get_request_info(conn)?.pointee else { return 1 }
                guard let refusal = gate(WebServer.request(info, door: hub.door)) else { return 0 }
                // civetweb sends nothing for a refused upgrade: the page (and docs/studio.md) expect the gate's status.
                WebServer.write(conn, refusal)
                return 1
            },
            { conn, cbdata in
                guard let conn, let cbdata else { return }
                Unmanaged<WebSocketHub>.fromOpaque(cbdata).takeUnretainedValue().ready(conn)
            },
            { _, _, _, _, _ in 1 },  // messages from pages are not read: the page's actions go through the JSON API
            { conn, cbdata in
                guard let conn, let cbdata else { return }
                Unmanaged<WebSocketHub>.fromOpaque(cbdata).takeUnretainedValue().closed(conn)
            },
            Unmanaged.passUnretained(hub).toOpaque())
        return hub
    }

    let hubs = Mutex<[WebSocketHub]>([])
}

/// The WebSocket connections at one path: a message broadcast reaches each open one.
///
/// A broadcast never waits for a page: each connection has its own outbox and a thread that writes it (`Viewer`). Before
/// 2026-12-02 the broadcast wrote to every connection in turn, on the caller's thread — the host's thread reading a
/// device's control channel — so one tab that stopped reading (a tablet asleep, a frozen page) held that thread until
/// the host missed three heartbeats and the device dropped its link. Text messages queue in order, at most
/// `Viewer.textLimit`; a page that falls that far behind is closed (it reconnects and gets the greeting: the state
/// afresh). Binary messages (preview frames) keep only the newest per key: a slow page sees an older picture, never a
/// backlog.
public final class WebSocketHub: @unchecked Sendable {
    // @unchecked: `viewers` is only touched under `lock`.
    let lock = NSLock()
    var viewers: [OpaquePointer: Viewer] = [:]
    let greeting: @Sendable () -> [String]
    let gate: WebServer.Gate?
    /// The most connections held at once; more are refused (each holds one of civetweb's workers for its life).
    let limit: Int

    let door: FrontDoor

    init(greeting: @escaping @Sendable () -> [String], gate: WebServer.Gate?, limit: Int, door: FrontDoor) {
        self.door = door
        self.greeting = greeting
        self.gate = gate
        self.limit = limit
    }

    /// Open connections now.
    public var count: Int {
        lock.lock()
        defer { lock.unlock() }
        return viewers.count
    }

    /// Whether another connection may be accepted.
    var hasRoom: Bool { count < limit }

    func ready(_ conn: OpaquePointer) {
        let viewer = Viewer(conn)
        // The greeting is queued first and the viewer registered under the same lock, so no broadcast comes between
        // the state it gives and the changes after it.
        lock.lock()
        for m in greeting() { viewer.post(text: m) }
        viewers[conn] = viewer
        lock.unlock()
        viewer.start()
    }

    /// civetweb frees `conn` once this returns: the viewer's thread is stopped first (a write in progress ends: the peer
    /// has gone, or civetweb's own send timeout).
    func closed(_ conn: OpaquePointer) {
        lock.lock()
        let viewer = viewers.removeValue(forKey: conn)
        lock.unlock()
        viewer?.stop()
    }

    /// Queues a text message (JSON) for every open connection; returns at once.
    public func broadcast(text: String) {
        lock.lock()
        defer { lock.unlock() }
        for v in viewers.values { v.post(text: text) }
    }

    /// Queues a binary message for every open connection, replacing one with the same `key` not yet written (a
    /// device's preview frame: the newest only); returns at once.
    public func broadcast(binary: [UInt8], key: String) {
        lock.lock()
        defer { lock.unlock() }
        for v in viewers.values { v.post(binary: binary, key: key) }
    }

    /// One open connection: its outbox and the thread that writes it, the only writer to `conn` besides civetweb itself
    /// (which serialises writes per connection).
    final class Viewer: @unchecked Sendable {
        // @unchecked: the outbox and the flags are touched under `condition`; `conn` is written only by the thread.
        let conn: OpaquePointer
        let condition = NSCondition()
        var texts: [String] = []
        var binaries: [(key: String, bytes: [UInt8])] = []
        /// False once the page fell `textLimit` behind or a write to it failed: nothing more is queued or written.
        var writing = true
        /// The page fell `textLimit` behind: a close frame is written, once, so it reconnects from the greeting.
        var closeOwed = false
        var stopping = false
        var finished = false
        /// Text messages a page may fall behind before it is closed: minutes of a busy bay's device states and shots
        /// (assumed).
        static let textLimit = 256

        init(_ conn: OpaquePointer) { self.conn = conn }

        func post(text: String) {
            condition.lock()
            defer { condition.unlock() }
            guard writing, !stopping else { return }
            if texts.count >= Self.textLimit {
                abandon()
                closeOwed = true
            } else {
                texts.append(text)
            }
            condition.signal()
        }

        func post(binary: [UInt8], key: String) {
            condition.lock()
            defer { condition.unlock() }
            guard writing, !stopping else { return }
            if let i = binaries.firstIndex(where: { $0.key == key }) {
                binaries[i].bytes = binary
            } else {
                binaries.append((key, binary))
            }
            condition.signal()
        }

        /// Under `condition`: nothing more is queued or written to this page.
        func abandon() {
            writing = false
            texts.removeAll()
            binaries.removeAll()
        }

        func start() {
            let t = Thread { [self] in run() }
            t.name = "ppc.studio.page"
            t.start()
        }

        func run() {
            while true {
                condition.lock()
                while !stopping && !closeOwed && (!writing || (texts.isEmpty && binaries.isEmpty)) { condition.wait() }
                if stopping {
                    finished = true
                    condition.broadcast()
                    condition.unlock()
                    return
                }
                if closeOwed {
                    closeOwed = false
                    condition.unlock()
                    _ = mg_websocket_write(conn, Int32(MG_WEBSOCKET_OPCODE_CONNECTION_CLOSE), nil, 0)
                    continue
                }
                let t = texts
                let b = binaries
                texts.removeAll(keepingCapacity: true)
                binaries.removeAll(keepingCapacity: true)
                condition.unlock()
                var written = true
                for m in t where written { written = WebSocketHub.send(conn, text: m) > 0 }
                for m in b where written {
                    written =
                        m.bytes.withUnsafeBytes {
                            mg_websocket_write(conn, Int32(MG_WEBSOCKET_OPCODE_BINARY), $0.baseAddress, $0.count)
                        } > 0
                }
                if !written {
                    // The connection is going: nothing more is written until civetweb closes it.
                    condition.lock()
                    abandon()
                    condition.unlock()
                }
            }
        }

        /// Stops the thread and waits until it has (a write in progress finishes first).
        func stop() {
            condition.lock()
            stopping = true
            condition.signal()
            while !finished { condition.wait() }
            condition.unlock()
        }
    }

    static func send(_ conn: OpaquePointer, text: String) -> Int32 {
        var t = text
        return t.withUTF8 { mg_websocket_write(conn, Int32(MG_WEBSOCKET_OPCODE_TEXT), $0.baseAddress, $0.count) }
    }
}

extension WebServer {
    /// Answers a request that carries a `Range` with `path`'s bytes as `ByteRange` decides: 206 and the part, 416
    /// when the range lies past the end, or 200 and the whole file when it is to be ignored (invalid, several, or an
    /// `If-Range` for another version). An `If-None-Match` that names the file's current version is a 304, as civetweb
    /// would answer it. Validators are civetweb's own (`ETag` "mtime-in-hex.size", `Last-Modified`), so a page's cached
    /// copy stays valid whichever path served it.
    static func sendRange(
        _ conn: OpaquePointer, _ range: String, of path: String, contentType: String, headers extra: [String],
        request: Request
    ) -> Int32 {
        let head = request.method == "HEAD"
        let fd: FileDescriptor
        do { fd = try FileDescriptor.openRegularFile(path) } catch {
            let why =
                error.errno == EINVAL || error.errno == EISDIR
                ? "not a regular file" : String(cString: strerror(error.errno))
            return write(conn, .error(404, "\(request.path): cannot open (\(why))"), head: head)
        }
        let st: stat
        do { st = try fd.status() } catch { return write(conn, .error(500, "\(request.path): \(error)"), head: head) }
        guard (st.st_mode & S_IFMT) == S_IFREG else {
            return write(conn, .error(404, "\(request.path): not a file"), head: head)
        }
        let size = Int64(st.st_size)
        let etag = "\"\(String(UInt(bitPattern: st.st_mtim.tv_sec), radix: 16)).\(size)\""
        let modified = httpDate(st.st_mtim.tv_sec)
        // The caller's Cache-Control, when it gives one (a share link's media: private, no-store), else civetweb's.
        let cache =
            extra.contains { $0.lowercased().hasPrefix("cache-control:") } ? [] : ["Cache-Control: max-age=3600"]
        var common =
            [
                "Content-Type: \(contentType)", "Accept-Ranges: bytes", "ETag: \(etag)", "Last-Modified: \(modified)",
                "X-Content-Type-Options: nosniff",
            ] + cache + extra
        if let match = request.headers["if-none-match"],
            match.split(separator: ",").contains(where: { $0.trimmingSpaces == etag || $0.trimmingSpaces == "*" })
        {
            return writeHead(conn, 304, common.filter { !$0.hasPrefix("Content-Type") })
        }
        var answer = ByteRange.resolve(range, size: size)
        if let ifRange = request.headers["if-range"]?.trimmingSpaces, ifRange != etag, ifRange != modified {
            answer = .whole
        }
        switch answer {
        case .unsatisfiable:
            let body = (try? JSONBody.data(["error": "Range \(range): \(request.path) is \(size) bytes"])) ?? Data()
            return write(
                conn,
                .bytes(
                    status: 416, contentType: "application/json; charset=utf-8", body: body,
                    headers: ["Content-Range: bytes */\(size)", "Cache-Control: no-store"]), head: head)
        case .whole:
            common.append("Content-Length: \(size)")
            writeHead(conn, 200, common)
            if !head { sendBytes(conn, fd, from: 0, count: size) }
            return 200
        case .part(let first, let last):
            common += ["Content-Length: \(last - first + 1)", "Content-Range: bytes \(first)-\(last)/\(size)"]
            writeHead(conn, 206, common)
            if !head { sendBytes(conn, fd, from: first, count: last - first + 1) }
            return 206
        }
    }

    @discardableResult
    static func writeHead(_ conn: OpaquePointer, _ status: Int, _ headers: [String]) -> Int32 {
        let reason = String(cString: mg_get_response_code_text(conn, Int32(status)))
        var text = "HTTP/1.1 \(status) \(reason)\r\n"
        for h in headers { text += h + "\r\n" }
        text += "\r\n"
        _ = text.utf8CString.withUnsafeBufferPointer { mg_write(conn, $0.baseAddress, $0.count - 1) }
        return Int32(status)
    }

    /// `count` bytes of `fd` from `offset`, 64 KiB at a time; stops when the client goes (a write fails) or the file
    /// ends early (then the client sees a short body rather than invented bytes).
    static func sendBytes(_ conn: OpaquePointer, _ fd: borrowing FileDescriptor, from offset: Int64, count: Int64) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65_536, alignment: 64)
        defer { buffer.deallocate() }
        var at = offset
        var left = count
        while left > 0 {
            let want = Int(min(Int64(buffer.count), left))
            guard let n = try? fd.read(into: UnsafeMutableRawBufferPointer(rebasing: buffer[0..<want]), at: at), n > 0
            else { return }
            let sent = mg_write(conn, buffer.baseAddress, n)
            guard sent == n else { return }
            at += Int64(n)
            left -= Int64(n)
        }
    }

    /// An HTTP date (IMF-fixdate), e.g. "Wed, 02 Dec 2026 14:09:58 GMT".
    static func httpDate(_ seconds: Int) -> String {
        var t = time_t(seconds)
        var tm = tm()
        gmtime_r(&t, &tm)
        let days = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
        let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]
        func two(_ v: Int32) -> String { v < 10 ? "0\(v)" : "\(v)" }
        return
            "\(days[Int(tm.tm_wday)]), \(two(tm.tm_mday)) \(months[Int(tm.tm_mon)]) \(1900 + tm.tm_year) \(two(tm.tm_hour)):\(two(tm.tm_min)):\(two(tm.tm_sec)) GMT"
    }
}
