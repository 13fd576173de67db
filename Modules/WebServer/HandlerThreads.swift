import Foundation

/// The threads route handlers run on: each with `stackBytes` of stack, where civetweb's own workers have about 100 KiB
/// (Debian builds it with `USE_STACK_SIZE=102400`).
///
/// A handler parses JSON from outside, reads catalogues and formats answers; on a civetweb worker the stack was the
/// limit nobody chose (300 levels of `[` in a request body overflowed it and crashed ppc-host). The worker keeps the
/// connection's I/O — civetweb's calls stay on civetweb's thread — and hands only the handler to a thread of this pool,
/// waiting for its answer: two context switches a request. There are never more handlers running than workers
/// waiting, so the pool grows to at most civetweb's worker count and a thread, once made, is kept for the next one.
final class HandlerThreads: @unchecked Sendable {
    // @unchecked: `jobs` and `idle` are touched only under `condition`.
    let stackBytes: Int
    private let condition = NSCondition()
    private var jobs: [Job] = []
    /// Threads not running a job (waiting, or made and not yet waiting).
    private var idle = 0
    private var stopping = false

    /// 1 MiB: ten times a civetweb worker's stack (assumed ample: the deepest JSON taken parses in under 50 KiB,
    /// measured 2026-12-03 with a debug build, `JSONInputTests`).
    init(stackBytes: Int = 1 << 20) { self.stackBytes = stackBytes }

    final class Job: @unchecked Sendable {
        // @unchecked: `result` is written by the pool's thread before `done` is signalled, read after the wait.
        let work: () -> WebServer.Response
        var result: WebServer.Response?
        let done = DispatchSemaphore(value: 0)
        init(_ work: @escaping () -> WebServer.Response) { self.work = work }
    }

    /// Runs `work` on one of the pool's threads and returns its answer.
    func run(_ work: @escaping () -> WebServer.Response) -> WebServer.Response {
        let job = Job(work)
        condition.lock()
        jobs.append(job)
        if jobs.count > idle {
            let thread = Thread { [self] in serve() }
            thread.name = "ppc.studio.handler"
            thread.stackSize = stackBytes
            idle += 1
            thread.start()
        }
        condition.signal()
        condition.unlock()
        job.done.wait()
        return job.result!
    }

    /// Lets the pool's threads end once no job is left (the server has stopped: none will come).
    func stop() {
        condition.lock()
        stopping = true
        condition.broadcast()
        condition.unlock()
    }

    private func serve() {
        while true {
            condition.lock()
            while jobs.isEmpty && !stopping { condition.wait() }
            if jobs.isEmpty {
                idle -= 1
                condition.unlock()
                return
            }
            let job = jobs.removeFirst()
            idle -= 1
            condition.unlock()
            job.result = job.work()
            condition.lock()
            idle += 1
            condition.unlock()
            job.done.signal()
        }
    }
}
