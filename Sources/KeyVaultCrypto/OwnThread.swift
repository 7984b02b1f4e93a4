#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Does `work` on a new thread and suspends until it is done: for work that blocks a
/// thread for long (Argon2id's second, a process waited for), which must hold none of
/// Swift's shared threads (one per core) nor the caller's executor meanwhile. The
/// thread asks for the calling task's priority (where the platform has priorities:
/// Darwin; Linux has none to ask for). When the system will not start a thread (a
/// process at its limit of threads or memory), `work` runs on the caller's thread
/// instead: slower for the others meanwhile, never a wait for a thread that never ran.
/// So `work` must never wait for other tasks to make progress (it may hold the thread
/// they need).
package func onThreadOfItsOwn<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
    try await onThreadOfItsOwn(starting: startThread) { Result { try work() } }.get()
}

/// ``onThreadOfItsOwn(_:)`` for work that does not throw.
package func onThreadOfItsOwn<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
    await onThreadOfItsOwn(starting: startThread, work)
}

/// Starts its body on a new thread, with a task priority's quality of service; false
/// when no thread was started (the body then has not run, and will not).
typealias ThreadStarter = @Sendable (TaskPriority, @escaping @Sendable () -> Void) -> Bool

/// ``onThreadOfItsOwn(_:)`` with the way threads are started given (the tests give one
/// that fails).
func onThreadOfItsOwn<T: Sendable>(starting start: ThreadStarter, _ work: @escaping @Sendable () -> T) async -> T {
    let priority = Task.currentPriority
    return await withCheckedContinuation { continuation in
        let body: @Sendable () -> Void = { continuation.resume(returning: work()) }
        if !start(priority, body) { body() }
    }
}

/// A new detached POSIX thread running `body`, whose return code is checked (Foundation's
/// `Thread.start()` reports no failure: its body then never ran, and a caller waiting for
/// it waited for ever).
private let startThread: ThreadStarter = { priority, body in
    var attributes = pthread_attr_t()
    guard pthread_attr_init(&attributes) == 0 else { return false }
    defer { pthread_attr_destroy(&attributes) }
    guard pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) == 0 else { return false }
    #if canImport(Darwin)
    // A task's priority and a thread's quality of service share their raw values.
    _ = pthread_attr_set_qos_class_np(&attributes, qos_class_t(rawValue: UInt32(priority.rawValue)), 0)
    #endif
    let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    #if canImport(Darwin)
    var thread: pthread_t?
    #else
    var thread = pthread_t()
    #endif
    // The argument is optional on Linux and not on Darwin: read as optional, it is both.
    let started = pthread_create(&thread, &attributes, {
        Unmanaged<ThreadBody>.fromOpaque(($0 as UnsafeMutableRawPointer?)!).takeRetainedValue().run()
        return nil
    }, context)
    if started != 0 { Unmanaged<ThreadBody>.fromOpaque(context).release() }
    return started == 0
}

/// A thread's body, passed to the thread through a retained pointer.
private final class ThreadBody: Sendable {
    let run: @Sendable () -> Void
    init(_ run: @escaping @Sendable () -> Void) { self.run = run }
}
