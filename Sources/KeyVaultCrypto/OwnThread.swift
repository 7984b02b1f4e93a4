import Foundation

/// Does `work` on a new thread and suspends until it is done: for work that blocks a
/// thread for long (Argon2id's second, a process waited for), which must hold none of
/// Swift's shared threads (one per core) nor the caller's executor meanwhile. The
/// thread asks for the calling task's priority (where the platform has priorities:
/// Darwin; on Linux Foundation keeps it and changes nothing).
package func onThreadOfItsOwn<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    let quality = quality(of: Task.currentPriority)
    return try await withCheckedThrowingContinuation { continuation in
        start(quality) { continuation.resume(with: Result { try work() }) }
    }
}

/// ``onThreadOfItsOwn(_:)`` for work that does not throw.
package func onThreadOfItsOwn<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    let quality = quality(of: Task.currentPriority)
    return await withCheckedContinuation { continuation in
        start(quality) { continuation.resume(returning: work()) }
    }
}

/// A task's priority as a thread's quality of service (their raw values are the same
/// classes; a medium task gets the default).
private func quality(of priority: TaskPriority) -> QualityOfService {
    QualityOfService(rawValue: Int(priority.rawValue)) ?? .default
}

private func start(_ quality: QualityOfService, _ body: @escaping @Sendable () -> Void) {
    let thread = Thread(block: body)
    thread.qualityOfService = quality
    thread.start()
}
