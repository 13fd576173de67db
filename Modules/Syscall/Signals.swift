#if canImport(Glibc)
import Glibc
#endif
import CLinux
import Foundation

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

    /// Watches SIGINT and SIGTERM, which then no longer end the process by themselves: `handler` runs on a queue of its
    /// own for each one that arrives, with its name and how many have arrived so far (1, 2, …). Keep the returned
    /// watch for as long as it should run; `cancel()` gives the signals back their default action.
    public static func watchStopRequests(_ handler: @escaping @Sendable (_ signal: String, _ count: Int) -> Void) -> StopRequestWatch {
        StopRequestWatch(handler)
    }

    /// Ends the process at once with `status`, running no exit handlers (a third Ctrl-C: the operator means it).
    public static func exitNow(_ status: Int32) -> Never {
        _exit(status)
    }
}

/// SIGINT and SIGTERM delivered to a handler instead of ending the process (`Signals.watchStopRequests`).
public final class StopRequestWatch: @unchecked Sendable {
    // @unchecked: `count` is touched only on `queue`; the sources are set up in init and cancelled once.
    private let queue = DispatchQueue(label: "ppc.signals")
    private var sources: [any DispatchSourceSignal] = []
    private var count = 0

    init(_ handler: @escaping @Sendable (String, Int) -> Void) {
        for (number, name) in [(SIGINT, "SIGINT"), (SIGTERM, "SIGTERM")] {
            signal(number, SIG_IGN)  // the dispatch source sees it; the default action (ending the process) does not run
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [unowned self] in
                for _ in 0..<max(1, Int(source.data)) {
                    count += 1
                    handler(name, count)
                }
            }
            source.resume()
            sources.append(source)
        }
    }

    public func cancel() {
        for s in sources { s.cancel() }
        signal(SIGINT, SIG_DFL)
        signal(SIGTERM, SIG_DFL)
    }
}
