import Foundation

/// Does `work` on a new thread and suspends until it is done: for work that blocks a
/// thread for long (Argon2id's second, a process waited for), which must hold none of
/// Swift's shared threads (one per core) nor the caller's executor meanwhile.
package func onThreadOfItsOwn<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        Thread { continuation.resume(with: Result { try work() }) }.start()
    }
}

/// ``onThreadOfItsOwn(_:)`` for work that does not throw.
package func onThreadOfItsOwn<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await withCheckedContinuation { continuation in
        Thread { continuation.resume(returning: work()) }.start()
    }
}
