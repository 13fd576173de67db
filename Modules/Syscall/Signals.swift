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
}
