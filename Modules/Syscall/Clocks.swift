import CLinux
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Sleeps `ns` nanoseconds on CLOCK_MONOTONIC, resuming after signals. For pacing (heartbeats, transfer budgets,
/// backoff) — never as a way to wait for another thread.
public func sleepNs(_ ns: Int64) {
    guard ns > 0 else { return }
    var now = timespec()
    clock_gettime(CLOCK_MONOTONIC, &now)
    let due = Int64(now.tv_sec) * 1_000_000_000 + Int64(now.tv_nsec) + ns
    var ts = timespec(tv_sec: Int(due / 1_000_000_000), tv_nsec: Int(due % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}

/// Sleeps until `deadlineNs` on CLOCK_MONOTONIC (no-op if it has passed).
public func sleepUntilNs(_ deadlineNs: Int64) {
    var ts = timespec(tv_sec: Int(deadlineNs / 1_000_000_000), tv_nsec: Int(deadlineNs % 1_000_000_000))
    while clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, nil) == EINTR {}
}

/// CLOCK_BOOTTIME now, ns: like CLOCK_MONOTONIC but it also counts time the machine spent suspended, so a gap in it
/// shows a process that was stopped (SIGSTOP) or a machine that slept.
public func bootNowNs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_BOOTTIME, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// Nanoseconds on CLOCK_MONOTONIC: the capture clock.
@inlinable
public func monotonicNowNs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}

/// This boot of the machine (`/proc/sys/kernel/random/boot_id`, a UUID the kernel makes at each boot): CLOCK_MONOTONIC
/// times compare only within one. "unknown" where the file cannot be read.
public let bootID: String = {
    let text = (try? FileSystem.readSmallFile("/proc/sys/kernel/random/boot_id", limit: 64)).map {
        String(decoding: $0, as: UTF8.self)
    }
    let id = text?.trimmingCharacters(in: .whitespacesAndNewlines) ?? ""
    return id.isEmpty ? "unknown" : id
}()

/// CPU time this process has used (all threads, user + system), ns: CLOCK_PROCESS_CPUTIME_ID.
public func processCPUNs() -> Int64 {
    var ts = timespec()
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts)
    return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
}
