#if canImport(Glibc)
import Glibc
#endif

/// The socket calls the link makes, each through ``syscall(_:path:_:)`` (EINTR retried, errno typed; EBADF and EFAULT
/// trap). `peer` names the other end in errors. Sends never raise SIGPIPE: a closed peer is EPIPE.
public enum Socket {
    /// A TCP socket (IPv4), close-on-exec.
    public static func tcp() throws(SystemError) -> Int32 {
        try syscall("socket") { Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0) }
    }

    /// `host:port` (dotted IPv4) as a socket address; nil when `host` is not one or `port` is out of range.
    public static func ipv4(_ host: String, _ port: Int) -> sockaddr_in? {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
        guard (0...65535).contains(port), inet_pton(AF_INET, host, &addr.sin_addr) == 1 else { return nil }
        return addr
    }

    /// Why a name gave no IPv4 address: the host as given and the resolver's reason (`gai_strerror`).
    public struct LookupError: Error, Sendable, CustomStringConvertible {
        public let host: String
        public let reason: String
        public var description: String { "cannot find \(host): \(reason)" }
    }

    /// The IPv4 address `host` stands for, with `port`: a dotted address is itself; a name is looked up as the system
    /// looks names up (/etc/hosts, DNS, mDNS where nsswitch has it) and the first address it gives is taken. A host that
    /// moves (DHCP) keeps its name. Blocks for as long as the resolver does (resolv.conf's timeout).
    public static func lookupIPv4(_ host: String, _ port: Int) throws(LookupError) -> sockaddr_in {
        guard (0...65535).contains(port) else { throw LookupError(host: host, reason: "port \(port) is out of range") }
        if let literal = ipv4(host, port) { return literal }
        var hints = addrinfo()
        hints.ai_family = AF_INET
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, nil, &hints, &list)
        guard status == 0, let first = list else {
            let reason = status == EAI_SYSTEM ? String(cString: strerror(errno)) : String(cString: gai_strerror(status))
            throw LookupError(host: host, reason: reason)
        }
        defer { freeaddrinfo(first) }
        // AF_INET was asked for, so every entry is one.
        guard let found = first.pointee.ai_addr else { throw LookupError(host: host, reason: "no IPv4 address") }
        var address = found.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { $0.pointee }
        address.sin_port = UInt16(truncatingIfNeeded: port).bigEndian
        return address
    }

    /// A socket address as dotted IPv4 and port (`192.168.1.10:7600`).
    public static func describe(_ address: sockaddr_in) -> String {
        var a = address.sin_addr
        var text = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
        _ = inet_ntop(AF_INET, &a, &text, socklen_t(INET_ADDRSTRLEN))
        let dotted = text.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return "\(dotted):\(UInt16(bigEndian: address.sin_port))"
    }

    public static func connect(_ fd: Int32, to address: sockaddr_in, peer: String) throws(SystemError) {
        var a = address
        try syscall("connect", path: peer) {
            withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// Connects `fd` to `address`, giving up after `timeoutNs` with ETIMEDOUT. A blocking connect waits for the kernel's
    /// SYN retries — about two minutes (net.ipv4.tcp_syn_retries 6) — when nothing answers: a host asleep, a firewall
    /// that drops, a listener whose queue is full. Non-blocking for the connect only; the socket is left blocking.
    public static func connect(_ fd: Int32, to address: sockaddr_in, peer: String, timeoutNs: Int64) throws(SystemError)
    {
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK)
        defer { _ = fcntl(fd, F_SETFL, flags) }
        var a = address
        let started = withUnsafePointer(to: &a) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        if started == 0 { return }
        let e = errno
        guard e == EINPROGRESS || e == EINTR else { throw SystemError(errno: e, operation: "connect", path: peer) }
        // Waits for the outcome: writable once connected or refused. EINTR restarts the wait with what is left.
        let deadline = monotonicNowNs() + max(0, timeoutNs)
        while true {
            let left = deadline - monotonicNowNs()
            guard left > 0 else { throw SystemError(errno: ETIMEDOUT, operation: "connect", path: peer) }
            let ready = try poll(fd, events: Int16(POLLOUT), timeoutMs: Int32(clamping: (left + 999_999) / 1_000_000))
            if ready != 0 { break }
        }
        var failure: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        try syscall("getsockopt", path: peer) { getsockopt(fd, SOL_SOCKET, SO_ERROR, &failure, &length) }
        if failure != 0 { throw SystemError(errno: failure, operation: "connect", path: peer) }
    }

    /// Binds `fd` to `address` (SO_REUSEADDR first) and listens; returns the port bound (the one chosen for port 0).
    public static func listen(_ fd: Int32, on address: sockaddr_in, backlog: Int32, name: String) throws(SystemError)
        -> Int
    {
        var a = address
        setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
        try syscall("bind", path: name) {
            withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
        try syscall("listen", path: name) { Glibc.listen(fd, backlog) }
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try syscall("getsockname", path: name) {
            withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
        }
        return Int(UInt16(bigEndian: bound.sin_port))
    }

    /// The next connection on a listening socket.
    public static func accept(_ fd: Int32) throws(SystemError) -> Int32 {
        try syscall("accept") { Glibc.accept(fd, nil, nil) }
    }

    /// The next connection on a listening socket and the address it came from ("192.168.1.20"; the port left out: a
    /// peer is its address, whatever port it dials from).
    public static func acceptWithPeer(_ fd: Int32) throws(SystemError) -> (fd: Int32, peer: String) {
        var address = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let c = try syscall("accept") {
            withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.accept(fd, $0, &length) }
            }
        }
        return (c, peerAddress(address))
    }

    /// The address part of an IPv4 or IPv6 socket address, as text.
    static func peerAddress(_ storage: sockaddr_storage) -> String {
        var s = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN))
        switch Int32(s.ss_family) {
        case AF_INET:
            withUnsafePointer(to: &s) {
                $0.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { a in
                    var addr = a.pointee.sin_addr
                    _ = inet_ntop(AF_INET, &addr, &text, socklen_t(text.count))
                }
            }
        case AF_INET6:
            withUnsafePointer(to: &s) {
                $0.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { a in
                    var addr = a.pointee.sin6_addr
                    _ = inet_ntop(AF_INET6, &addr, &text, socklen_t(text.count))
                }
            }
        default: return "family \(s.ss_family)"
        }
        return String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Whether an `accept` error is the environment's passing state (no descriptor or memory to spare now, a peer that
    /// went before it was taken, a network error TCP reports through accept — accept(2) asks that these be retried),
    /// not the end of the listening socket.
    public static func acceptErrorIsTransient(_ errno: Int32) -> Bool {
        [
            EMFILE, ENFILE, ENOBUFS, ENOMEM, ECONNABORTED, EPERM, EPROTO, ENETDOWN, ENOPROTOOPT, EHOSTDOWN, ENONET,
            EHOSTUNREACH,
            EOPNOTSUPP, ENETUNREACH, EAGAIN,
        ].contains(errno)
    }

    /// Whether an `accept` error is one that exhausts a resource (descriptors, kernel memory): worth backing off for.
    public static func acceptErrorExhausts(_ errno: Int32) -> Bool {
        [EMFILE, ENFILE, ENOBUFS, ENOMEM].contains(errno)
    }

    /// Binds `fd` to `address` (a local address this machine has) before it connects, so a connection comes from it.
    public static func bind(_ fd: Int32, to address: sockaddr_in) throws(SystemError) {
        var a = address
        try syscall("bind", path: describe(address)) {
            withUnsafePointer(to: &a) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    Glibc.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        }
    }

    /// Sets an integer socket option; whether the kernel took it.
    @discardableResult
    public static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) -> Bool {
        var v = value
        return setsockopt(fd, level, name, &v, socklen_t(MemoryLayout<Int32>.size)) == 0
    }

    /// An integer socket option's value, or nil.
    public static func option(_ fd: Int32, _ level: Int32, _ name: Int32) -> Int32? {
        var v: Int32 = 0
        var length = socklen_t(MemoryLayout<Int32>.size)
        return getsockopt(fd, level, name, &v, &length) == 0 ? v : nil
    }

    /// send(2), MSG_NOSIGNAL always; the bytes the kernel took.
    public static func send(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, flags: Int32 = 0, peer: String)
        throws(SystemError) -> Int
    {
        try syscall("send", path: peer) { Glibc.send(fd, bytes.baseAddress, bytes.count, Int32(MSG_NOSIGNAL) | flags) }
    }

    /// sendmsg(2) of `iovecs`, MSG_NOSIGNAL always; the bytes the kernel took.
    public static func send(_ fd: Int32, _ iovecs: UnsafeMutableBufferPointer<iovec>, peer: String) throws(SystemError)
        -> Int
    {
        var message = msghdr()
        message.msg_iov = iovecs.baseAddress
        message.msg_iovlen = iovecs.count
        return try syscall("sendmsg", path: peer) { Glibc.sendmsg(fd, &message, Int32(MSG_NOSIGNAL)) }
    }

    /// sendfile(2): up to `count` bytes of `file` from `offset` (advanced) into socket `fd`.
    public static func sendFile(_ fd: Int32, from file: Int32, offset: inout off_t, count: Int, peer: String)
        throws(SystemError) -> Int
    {
        try syscall("sendfile", path: peer) { Glibc.sendfile(fd, file, &offset, count) }
    }

    /// recv(2) into `buffer`; 0 when the peer closed. Not `waiting`: what is there now, or EAGAIN (MSG_DONTWAIT).
    public static func receive(
        _ fd: Int32, into buffer: UnsafeMutableRawBufferPointer, waiting: Bool = true, peer: String
    ) throws(SystemError) -> Int {
        try syscall("recv", path: peer) {
            Glibc.recv(fd, buffer.baseAddress, buffer.count, waiting ? 0 : Int32(MSG_DONTWAIT))
        }
    }

    /// Waits up to `timeoutMs` (negative: for ever) for `events` on `fd`; the events that came (empty: none).
    public static func poll(_ fd: Int32, events: Int16, timeoutMs: Int32) throws(SystemError) -> Int16 {
        var p = pollfd(fd: fd, events: events, revents: 0)
        let ready = try syscall("poll") { Glibc.poll(&p, 1, timeoutMs) }
        return ready == 0 ? 0 : p.revents
    }

    /// Waits up to `timeoutMs` (negative: for ever) for the events each of `fds` asks for; how many have some (their
    /// `revents` say which).
    public static func poll(_ fds: UnsafeMutableBufferPointer<pollfd>, timeoutMs: Int32) throws(SystemError) -> Int {
        Int(try syscall("poll") { Glibc.poll(fds.baseAddress, nfds_t(fds.count), timeoutMs) })
    }

    /// The local port a socket is bound to (the one the kernel chose for a bind to port 0).
    public static func localPort(_ fd: Int32) throws(SystemError) -> Int {
        var bound = sockaddr_in()
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        try syscall("getsockname") {
            withUnsafeMutablePointer(to: &bound) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
            }
        }
        return Int(UInt16(bigEndian: bound.sin_port))
    }

    /// Ends the sending direction only (the peer reads an end of stream; what it sends is still read).
    public static func shutdownWrite(_ fd: Int32) { _ = Glibc.shutdown(fd, Int32(SHUT_WR)) }

    /// A send that waits longer than `timeoutNs` fails with EAGAIN (SO_SNDTIMEO): a peer that stops reading does not
    /// hold the sender for ever.
    @discardableResult
    public static func setSendTimeout(_ fd: Int32, ns: Int64) -> Bool {
        var t = timeval(tv_sec: Int(ns / 1_000_000_000), tv_usec: Int(ns % 1_000_000_000 / 1_000))
        return setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &t, socklen_t(MemoryLayout<timeval>.size)) == 0
    }

    /// Stops both directions now (a thread blocked on the socket wakes).
    public static func shutdown(_ fd: Int32) { _ = Glibc.shutdown(fd, Int32(SHUT_RDWR)) }

    /// Closes a descriptor this process owns.
    public static func close(_ fd: Int32) { _ = Glibc.close(fd) }
}

/// Signals to other processes (the tools' benchmarks and campaigns stop what they started).
public enum ProcessSignal {
    /// Sends `signal` to `pid`; false when there is no such process.
    @discardableResult
    public static func send(_ signal: Int32, to pid: Int32) -> Bool { Glibc.kill(pid, signal) == 0 }

    /// True while `pid` is a live process (signal 0).
    public static func isAlive(_ pid: Int32) -> Bool { Glibc.kill(pid, 0) == 0 || errno != ESRCH }
}
