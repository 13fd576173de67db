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
