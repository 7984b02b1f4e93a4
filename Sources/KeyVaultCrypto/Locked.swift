#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a lock, for state shared between threads (caches, ledgers, test doubles).
///
/// Not `Synchronization.Mutex`: on Linux it locks with futexes inside a library built
/// without ThreadSanitizer, so under `swift test --sanitize=thread` every access it
/// guards is reported as a race and a real one would drown among them. A pthread mutex
/// is intercepted by ThreadSanitizer, so the run in CI reports only what is real.
package final class Locked<Value> {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var value: Value

    package init(_ value: Value) {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        precondition(pthread_mutex_init(mutex, nil) == 0, "pthread_mutex_init failed")
        self.value = value
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value, holding the lock; calls must not nest.
    package func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}

/// Sendable as `Mutex` is, but only for a Sendable value: a reference that is not
/// Sendable cannot leave the lock unnoticed.
extension Locked: @unchecked Sendable where Value: Sendable {}
