/// A few chunk transfers on the network at once, taken in the order they began:
/// ``add(_:)`` starts one, ``next()`` waits for the oldest. Each runs as a detached
/// task (the network needs no actor); cancelling the caller cancels the one it waits
/// for, and ``stop()`` cancels and waits for the rest, so nothing of a failed or
/// cancelled transfer goes on after the call that made it.
struct ChunkWindow<Value: Sendable> {
    private var tasks: [Task<Value, any Error>] = []
    let width: Int

    init(width: Int) { self.width = width }

    var isFull: Bool { tasks.count >= width }
    var isEmpty: Bool { tasks.isEmpty }

    mutating func add(_ work: @escaping @Sendable () async throws -> Value) {
        tasks.append(Task.detached(operation: work))
    }

    /// The oldest transfer's result (its error, or CancellationError for a cancelled caller).
    mutating func next() async throws -> Value {
        let task = tasks.removeFirst()
        let value = try await withTaskCancellationHandler { try await task.value } onCancel: { task.cancel() }
        try Task.checkCancellation()
        return value
    }

    /// Cancels every transfer still running and waits for each to end.
    mutating func stop() async {
        for task in tasks { task.cancel() }
        for task in tasks { _ = try? await task.value }
        tasks = []
    }
}
