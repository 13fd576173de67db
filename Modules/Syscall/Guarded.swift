import Synchronization

#if canImport(Glibc)
import Glibc
#endif

#if PPC_THREAD_SANITIZER
/// Under ThreadSanitizer (`make tsan` defines PPC_THREAD_SANITIZER): a pthread mutex, which TSan sees. The toolchain's
/// Synchronization library is not built with TSan, so it cannot see a `Mutex`'s lock and reports every access it guards
/// as a race (shown with a four-thread counter: a report on every run); with this, a report is a real race.
public final class Guarded<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked: `value` is only touched between lock and unlock of `lock`.
    private let lock: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    public init(_ value: consuming Value) {
        self.value = value
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_mutex_t())
        pthread_mutex_init(lock, nil)
    }

    deinit {
        pthread_mutex_destroy(lock)
        lock.deallocate()
    }

    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(lock)
        defer { pthread_mutex_unlock(lock) }
        return try body(&value)
    }
}
#else
/// State shared between threads, behind a lock: Synchronization's `Mutex` (futex-based, no allocation), or a pthread
/// mutex when built for ThreadSanitizer (see the PPC_THREAD_SANITIZER variant). Every shared state in ppc uses this.
public typealias Guarded<Value: ~Copyable> = Mutex<Value>
#endif
