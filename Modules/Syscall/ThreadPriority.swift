import CLinux
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Scheduling priority of the calling thread.
public enum ThreadPriority {
    /// Raises the calling thread's priority (lower nice value) so capture runs ahead of merge and mint work
    /// (seed 000 gave the capture callback the highest tier). Returns what the OS granted, in words, for the report:
    /// an unprivileged process may not lower its nice value, and that is said, not hidden.
    @discardableResult
    public static func raiseCurrent(nice: Int32 = -10) -> String {
        let tid = id_t(ppc_gettid())
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        let before = getpriority(which, tid)
        if setpriority(which, tid, nice) == 0 {
            return "nice \(getpriority(which, tid)) (raised from \(before))"
        }
        let reason = String(cString: strerror(errno))
        return "nice \(before) (asked for \(nice): \(reason))"
    }

    /// Lowers the calling thread's priority (mint, merge and bulk-transfer work yield to capture and to control
    /// messages). Not undone: an unprivileged thread may not raise itself again, so call it on a thread of its own.
    @discardableResult
    public static func lowerCurrent(nice: Int32 = 5) -> String {
        let tid = id_t(ppc_gettid())
        let which = __priority_which_t(PRIO_PROCESS.rawValue)
        _ = setpriority(which, tid, nice)
        return "nice \(getpriority(which, tid))"
    }

    /// The CPUs the calling thread may run on, in order (`ofProcess`: those the process's main thread may, which
    /// confinement is judged against, so confining twice changes nothing).
    public static func allowedCores(ofProcess: Bool = false) -> [Int] {
        var mask = [UInt](repeating: 0, count: 16)  // 1024 CPUs
        let tid = ofProcess ? Int32(getpid()) : 0
        let got = mask.withUnsafeMutableBufferPointer {
            ppc_getaffinity(tid, $0.baseAddress, UInt($0.count * MemoryLayout<UInt>.size))
        }
        guard got > 0 else { return [] }
        var out: [Int] = []
        for (w, word) in mask.enumerated() where word != 0 {
            for b in 0..<UInt.bitWidth where word & (1 << UInt(b)) != 0 { out.append(w * UInt.bitWidth + b) }
        }
        return out
    }

    /// Keeps the calling thread off the first CPU the process may use, when it may use two or more: bulk work (transfer copies,
    /// hashing, and the kernel's loopback and socket work, done on the sending thread's CPU) then never occupies every
    /// core, and a control message always finds one free to run on at once. `confined` says whether that held; `how`
    /// says what was done, in words, for the log.
    @discardableResult
    public static func confineToSpareCores() -> (confined: Bool, how: String) {
        let cores = allowedCores(ofProcess: true)
        guard cores.count >= 2 else { return (false, "on every core (\(cores.count) allowed: none to keep free)") }
        var mask = [UInt](repeating: 0, count: 16)
        for c in cores.dropFirst() { mask[c / UInt.bitWidth] |= 1 << UInt(c % UInt.bitWidth) }
        let r = mask.withUnsafeBufferPointer {
            ppc_setaffinity($0.baseAddress, UInt($0.count * MemoryLayout<UInt>.size))
        }
        if r != 0 { return (false, "on every core (sched_setaffinity: \(String(cString: strerror(errno))))") }
        return (
            true,
            "on cores \(cores.dropFirst().map(String.init).joined(separator: ",")) (core \(cores[0]) kept free for control)"
        )
    }
}
