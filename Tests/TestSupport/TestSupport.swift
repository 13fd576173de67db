import Foundation
import FragmentRing
import Glibc

/// A fresh directory under /tmp, removed when the value is dropped.
public final class TemporaryDirectory: @unchecked Sendable {
    // @unchecked: immutable after init.
    public let path: String

    public init(_ label: String = "ppc") {
        var template = Array("/tmp/\(label)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed: errno \(errno)")
        path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    public func sub(_ name: String) -> String { "\(path)/\(name)" }
}

/// Deterministic fragment bytes for sequence `seq`: every byte derived from it, so a mix-up shows.
public func fragmentBytes(_ seq: UInt64, size: Int) -> [UInt8] {
    var out = [UInt8](repeating: 0, count: size)
    var x = seq &* 0x9E37_79B9_7F4A_7C15 | 1
    for i in 0..<size {
        x ^= x << 13
        x ^= x >> 7
        x ^= x << 17
        out[i] = UInt8(truncatingIfNeeded: x)
    }
    return out
}

/// Reserves, writes and publishes one fragment covering [startNs, startNs + durationNs).
@discardableResult
public func publishFragment(
    _ ring: FragmentRing, startNs: Int64, durationNs: Int64 = 500_000_000, size: Int = 4096, keyframe: Bool = true,
    frames: UInt32 = 60
) throws -> PublishOutcome {
    var r = try ring.reserve()
    let bytes = fragmentBytes(r.sequence.rawValue, size: size)
    try bytes.withUnsafeBytes { try r.write($0) }
    return try ring.publish(
        r,
        FragmentTiming(
            startNs: startNs, endNs: startNs + durationNs, frameCount: frames, startsWithKeyframe: keyframe,
            codec: .opaque))
}

/// The fragment an outcome published (test convenience).
extension PublishOutcome {
    public var published: FragmentInfo? {
        if case .published(let f, _) = self { return f }
        return nil
    }
}

/// A socket of `type` bound to a port on 127.0.0.1 the kernel picked, and that port.
func boundLoopbackSocket(_ type: __socket_type) -> (fd: Int32, port: Int) {
    let fd = socket(AF_INET, Int32(type.rawValue), 0)
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    _ = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
    }
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    _ = withUnsafeMutablePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
    }
    return (fd, Int(UInt16(bigEndian: addr.sin_port)))
}

/// A port on 127.0.0.1 the kernel just handed out for `type` (SOCK_STREAM or SOCK_DGRAM), released again for the test
/// to bind or connect to.
public func freeLoopbackPort(_ type: __socket_type) -> Int {
    let (fd, port) = boundLoopbackSocket(type)
    close(fd)
    return port
}

/// A port on 127.0.0.1 held by a listening socket until `body` returns: an address in use, for a test that needs one.
public func withLoopbackPortInUse<T>(_ body: (Int) throws -> T) rethrows -> T {
    let (fd, port) = boundLoopbackSocket(SOCK_STREAM)
    defer { close(fd) }
    _ = listen(fd, 1)
    return try body(port)
}

/// The path of shot `shot`'s clip bundle in `directory` (a run's clips/ or outbox/, or a host's device folder): clip ids
/// are `<session>-<sessionId>-<shot>`, the session id minted at each run, so tests find a bundle by its shot number. When
/// none or several match, a path naming that is returned, so the test's own check fails saying so.
public func clipPath(_ directory: String, shot: Int = 1) -> String {
    let suffix = String(format: "-%03d", shot)
    let names = ((try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []).filter {
        $0.hasSuffix(suffix) && !$0.hasPrefix(".") && isSessionClipID($0)
    }
    return names.count == 1 ? "\(directory)/\(names[0])" : "\(directory)/<\(names.count) clips of shot \(shot)>"
}

/// True when `name` has the form `<session>-<YYYYMMDDTHHMMSSZ>-<8 hex>-<NNN>`.
public func isSessionClipID(_ name: String) -> Bool {
    let parts = name.split(separator: "-")
    guard parts.count >= 4 else { return false }
    let stamp = parts[parts.count - 3]
    let random = parts[parts.count - 2]
    let shot = parts[parts.count - 1]
    return stamp.count == 16 && stamp.hasSuffix("Z") && stamp.dropFirst(8).first == "T" && random.count == 8
        && random.allSatisfy(\.isHexDigit) && shot.count >= 3 && shot.drop { $0 == "r" }.allSatisfy(\.isNumber)
}

/// A TCP socket connected to 127.0.0.1:`port`, its reads giving up after `readTimeoutSeconds`; nil when it cannot connect.
func connectedLoopbackSocket(port: Int, readTimeoutSeconds: Int) -> Int32? {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var addr = sockaddr_in()
    addr.sin_family = sa_family_t(AF_INET)
    addr.sin_port = in_port_t(UInt16(port).bigEndian)
    addr.sin_addr.s_addr = inet_addr("127.0.0.1")
    let ok = withUnsafePointer(to: &addr) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard ok == 0 else {
        close(fd)
        return nil
    }
    var limit = timeval(tv_sec: readTimeoutSeconds, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &limit, socklen_t(MemoryLayout<timeval>.size))
    return fd
}

/// Sends `request` (raw HTTP) to 127.0.0.1:`port` and returns what comes back up to the end of the response's head
/// ("\r\n\r\n"), or whatever came before the peer closed ("" when it closed at once). Reads give up after
/// `readTimeoutSeconds` (default 30).
public func rawHTTPHead(port: Int, _ request: String, readTimeoutSeconds: Int = 30) -> String {
    guard let fd = connectedLoopbackSocket(port: port, readTimeoutSeconds: readTimeoutSeconds) else {
        return "<cannot connect to 127.0.0.1:\(port)>"
    }
    defer { close(fd) }
    _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    var got: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 4096)
    while !String(decoding: got, as: UTF8.self).contains("\r\n\r\n") {
        let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { break }
        got += buf[0..<n]
    }
    return String(decoding: got, as: UTF8.self)
}

/// A GET of `path` from 127.0.0.1:`port` (Connection: close): the whole response, head and body ("" when nothing came).
public func httpGet(port: Int, _ path: String) -> String {
    guard let fd = connectedLoopbackSocket(port: port, readTimeoutSeconds: 30) else { return "" }
    defer { close(fd) }
    let request = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1:\(port)\r\nConnection: close\r\n\r\n"
    _ = Array(request.utf8).withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    var got: [UInt8] = []
    var buf = [UInt8](repeating: 0, count: 65_536)
    while true {
        let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        if n <= 0 { break }
        got += buf[0..<n]
    }
    return String(decoding: got, as: UTF8.self)
}

/// The JSON body of `httpGet`, as an object (nil when it is none).
public func httpGetJSON(port: Int, _ path: String) -> [String: Any]? {
    let text = httpGet(port: port, path)
    guard let body = text.range(of: "\r\n\r\n").map({ text[$0.upperBound...] }) else { return nil }
    return (try? JSONSerialization.jsonObject(with: Data(body.utf8))) as? [String: Any]
}
