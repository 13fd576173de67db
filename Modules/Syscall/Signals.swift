import CLinux
import Foundation
import Synchronization

#if canImport(Glibc)
import Glibc
#endif

/// Signal hygiene for a tool's main.
public enum Signals {
    /// Unblocks every signal, and ignores SIGPIPE. A process spawned from a thread that had signals blocked (a libdispatch worker, say)
    /// inherits that mask and would then ignore SIGTERM: a host or device that cannot be stopped is worse than one
    /// that says it stopped.
    public static func unblockAll() {
        var none = sigset_t()
        sigemptyset(&none)
        sigprocmask(SIG_SETMASK, &none, nil)
        // A peer that closes a socket (or a reader that closes a pipe) is an EPIPE error to handle, never a signal that
        // ends the process: every send already passes MSG_NOSIGNAL; this covers anything else that writes.
        signal(SIGPIPE, SIG_IGN)
    }

    /// Blocks SIGPIPE on the calling thread, for good: sendfile(2) has no MSG_NOSIGNAL, so a closed peer would raise it.
    public static func blockBrokenPipeOnThisThread() {
        var pipe = sigset_t()
        sigemptyset(&pipe)
        sigaddset(&pipe, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipe, nil)
    }

    /// Takes a SIGPIPE pending on the calling thread (raised while blocked), so it never reaches the process later.
    public static func consumePendingBrokenPipe() {
        var pipe = sigset_t()
        sigemptyset(&pipe)
        sigaddset(&pipe, SIGPIPE)
        var none = timespec()
        _ = sigtimedwait(&pipe, nil, &none)
    }

    /// Watches SIGINT and SIGTERM, which then no longer end the process by themselves: `handler` runs on a thread of
    /// its own for each one that arrives, with its name and how many have arrived so far (1, 2, …). Keep the returned
    /// watch for as long as it should run; `cancel()` gives the signals back their default action. One watch at a time:
    /// a new one replaces the last.
    ///
    /// Not a `DispatchSource`: libdispatch on Linux reads signals through a signalfd whose readiness depends on which
    /// thread the kernel gave the signal to, and a run's Ctrl-C was seen lost that way (the run went on to the end of its
    /// source). A handler that writes a byte to a pipe works whichever thread takes the signal.
    public static func watchStopRequests(
        _ handler: @escaping @Sendable (_ signal: String, _ count: Int) -> Void
    ) throws(SystemError) -> StopRequestWatch {
        let route = try StopSignalRoute.shared()
        let watch = StopRequestWatch(handler, route: route)
        route.current.withLock { $0 = watch }
        try syscall("sigaction SIGINT, SIGTERM") { ppc_route_stop_signals(route.writeEnd) }
        return watch
    }

    /// Ends the process at once with `status`, running no exit handlers (a third Ctrl-C: the operator means it).
    public static func exitNow(_ status: Int32) -> Never {
        _exit(status)
    }
}

/// SIGINT and SIGTERM delivered to a handler instead of ending the process (`Signals.watchStopRequests`).
public final class StopRequestWatch: Sendable {
    private let handler: @Sendable (String, Int) -> Void
    private let route: StopSignalRoute
    /// How many have arrived; touched only by the route's reader thread.
    private let arrived = Atomic<Int>(0)

    fileprivate init(_ handler: @escaping @Sendable (String, Int) -> Void, route: StopSignalRoute) {
        self.handler = handler
        self.route = route
    }

    fileprivate func deliver(_ signal: Int32) {
        let count = arrived.add(1, ordering: .relaxed).newValue
        handler(signal == SIGTERM ? "SIGTERM" : "SIGINT", count)
    }

    /// Gives SIGINT and SIGTERM their default action back; a signal already taken but not yet handled is dropped.
    public func cancel() {
        route.current.withLock { current in
            guard current === self else { return }
            _ = ppc_route_stop_signals(-1)
            current = nil
        }
    }
}

/// The process's one stop-signal pipe and the thread that reads it. Made with the first watch and kept for the process's
/// life: a handler still running on another thread then never writes to a closed or reused descriptor.
private final class StopSignalRoute: Sendable {
    private static let made = Guarded<StopSignalRoute?>(nil)

    static func shared() throws(SystemError) -> StopSignalRoute {
        try made.withLock { (slot: inout StopSignalRoute?) throws(SystemError) -> StopSignalRoute in
            if let slot { return slot }
            let route = try StopSignalRoute()
            slot = route
            return route
        }
    }

    let writeEnd: Int32
    let current = Guarded<StopRequestWatch?>(nil)

    private init() throws(SystemError) {
        var ends: [Int32] = [-1, -1]
        try syscall("pipe for stop signals") { pipe(&ends) }
        for end in ends { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        // A full pipe (65 536 signals unread) drops a byte rather than block the thread the signal interrupted.
        _ = fcntl(ends[1], F_SETFL, fcntl(ends[1], F_GETFL) | O_NONBLOCK)
        writeEnd = ends[1]
        let readEnd = ends[0]
        let thread = Thread { [self] in
            var byte: UInt8 = 0
            while true {
                let n = read(readEnd, &byte, 1)
                if n == 1 {
                    current.withLock { $0 }?.deliver(Int32(byte))
                } else if n == -1 && errno == EINTR {
                    continue
                } else {
                    return  // never: the write end is never closed
                }
            }
        }
        thread.name = "ppc.signals"
        thread.start()
    }
}
