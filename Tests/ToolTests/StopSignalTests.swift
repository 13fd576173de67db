import Foundation
import Synchronization
import Syscall
import TestSupport
import Testing

/// Ctrl-C and a supervisor's SIGTERM are how a camera's run ends: one that is lost leaves capture running until the
/// supervisor kills it, and the swing just heard is never minted. Every signal must reach the watch, whichever thread
/// the kernel hands it to.
@Suite("Stop signals are never lost", .serialized)
struct StopSignalTests {
    @Test func everyStopSignalReachesTheWatchWhicheverThreadTakesIt() throws {
        let seen = Guarded<[String]>([])  // Guarded, not Mutex: ThreadSanitizer sees its lock
        let watch = try Signals.watchStopRequests { name, count in
            seen.withLock { $0.append("\(count) \(name)") }
        }
        defer { watch.cancel() }
        // Plain threads that block nothing, as a session's capture and encoder threads do: the kernel may hand a
        // process's signal to any of them.
        let stop = Atomic<Bool>(false)
        let busy = (0..<4).map { _ in
            let t = Thread {
                while !stop.load(ordering: .relaxed) { sleepNs(1_000_000) }
            }
            t.start()
            return t
        }
        defer {
            stop.store(true, ordering: .relaxed)
            _ = busy
        }
        // One at a time (two sent at once may be merged by the kernel into one), each waited for before the next.
        for i in 1...200 {
            let name = i.isMultiple(of: 2) ? "SIGTERM" : "SIGINT"
            kill(getpid(), i.isMultiple(of: 2) ? SIGTERM : SIGINT)
            let arrived = awaitCondition { seen.withLock { $0.count } >= i }
            #expect(arrived, "signal \(i) (\(name)) never reached the watch; seen \(seen.withLock { $0.suffix(3) })")
            if !arrived { return }
        }
        #expect(seen.withLock { $0.last } == "200 SIGTERM")
    }
}
