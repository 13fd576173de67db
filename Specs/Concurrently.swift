import Foundation
import Synchronization

/// Runs one producer and `readers` reader threads at once — real threads, not a task pool that might run them one
/// after another. Readers loop until the producer has finished, then make one last pass. Returns when all have
/// joined; nothing waits on time.
func concurrently(
    readers: Int, producer: @escaping @Sendable () -> Void,
    reader: @escaping @Sendable (_ reader: Int, _ producerDone: Bool) -> Void
) {
    let done = Atomic<Bool>(false)
    let group = DispatchGroup()
    withUnsafePointer(to: done) { donePointer in
        nonisolated(unsafe) let flag = donePointer
        for r in 0..<readers {
            group.enter()
            let t = Thread {
                while !flag.pointee.load(ordering: .acquiring) { reader(r, false) }
                reader(r, true)
                group.leave()
            }
            t.start()
        }
        group.enter()
        let p = Thread {
            producer()
            flag.pointee.store(true, ordering: .releasing)
            group.leave()
        }
        p.start()
        group.wait()
    }
}

/// A counter readers bump, checked at the end so a spec proves its readers actually ran.
final class Tally: Sendable {
    private let value = Atomic<Int>(0)
    func add(_ n: Int = 1) { value.wrappingAdd(n, ordering: .relaxed) }
    var total: Int { value.load(ordering: .relaxed) }
}

/// Violations found by reader threads, reported by the test thread.
final class Violations: Sendable {
    private let list = Mutex<[String]>([])
    func record(_ s: String) { list.withLock { if $0.count < 20 { $0.append(s) } } }
    var all: [String] { list.withLock { $0 } }
}
