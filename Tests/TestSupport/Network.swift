import Syscall

/// A loopback listener that never answers a new connection: its accept queue (backlog 0) is full with one connection
/// never accepted, so the kernel drops every further SYN — as a host that is asleep, or a firewall that drops, does.
/// A connection to `port` waits until its own deadline.
public final class SilentListener {
    let fd: Int32
    let filler: Int32
    public let port: Int

    public init() throws {
        fd = try Socket.tcp()
        port = try Socket.listen(fd, on: Socket.ipv4("127.0.0.1", 0)!, backlog: 0, name: "silent listener")
        filler = try Socket.tcp()
        try Socket.connect(filler, to: Socket.ipv4("127.0.0.1", port)!, peer: "silent listener")
    }

    deinit {
        Socket.close(filler)
        Socket.close(fd)
    }
}

/// Polls (every 10 ms, at most 60 s) until `condition` holds; the condition is observed, never guessed by a delay.
public func awaitCondition(_ condition: () -> Bool) -> Bool {
    let deadline = monotonicNowNs() + 60_000_000_000
    while !condition() {
        if monotonicNowNs() > deadline { return false }
        sleepNs(10_000_000)  // poll interval
    }
    return true
}

/// TCP connections to 127.0.0.1:`port` that never send a byte: `each` from every source address in `sources` (any
/// address of 127.0.0.0/8 is this machine's, so a test can stand in for many peers). Each connect is bounded by 5 s;
/// one the listener never takes is left out. Close them with `closeAll`.
public func silentConnections(to port: Int, from sources: [String], each: Int) -> [Int32] {
    var fds: [Int32] = []
    for source in sources {
        for _ in 0..<each {
            guard let fd = try? Socket.tcp() else { return fds }
            do {
                try Socket.bind(fd, to: Socket.ipv4(source, 0)!)
                try Socket.connect(
                    fd, to: Socket.ipv4("127.0.0.1", port)!, peer: "127.0.0.1:\(port)", timeoutNs: 5_000_000_000)
                fds.append(fd)
            } catch {
                Socket.close(fd)
            }
        }
    }
    return fds
}

public func closeAll(_ fds: [Int32]) { for fd in fds { Socket.close(fd) } }

/// `count` addresses of 127.0.0.0/8 from 127.`net`.0.1 on (127.1.0.1, 127.1.0.2, …, 127.1.1.1, …): as many peers as a
/// test needs, none of them 127.0.0.1.
public func loopbackPeers(_ count: Int, net: Int = 1) -> [String] {
    (0..<count).map { i in "127.\(net).\(i / 250).\(1 + i % 250)" }
}
