import KeyVaultCrypto

/// Runs `work` beside a watcher, both on one thread (a ``OneThreadExecutor``), and
/// counts the watcher's turns while `work` is under way, up to `enough`. Work that
/// blocks that thread (Argon2id derived on it) leaves the watcher only the hops between
/// executors: two or three turns. Work done on a thread of its own leaves it a turn at
/// every yield. (No sleep: a timer's wake-up waits for the shared pool, which the suite
/// beside keeps busy.)
package func watcherTurns<T: Sendable>(upTo enough: Int, while work: @escaping @Sendable () async throws -> T) async throws -> (result: T, turns: Int) {
    let state = Locked((started: false, done: false, turns: 0))
    return try await withTaskExecutorPreference(OneThreadExecutor()) {
        async let result: T = {
            state.withLock { $0.started = true }
            defer { state.withLock { $0.done = true } }
            return try await work()
        }()
        async let watched: Void = {
            while !Task.isCancelled, state.withLock({ !$0.done && $0.turns < enough }) {
                state.withLock { if $0.started { $0.turns += 1 } }
                await Task.yield()
            }
        }()
        let value = try await result
        await watched
        return (value, state.withLock { $0.turns })
    }
}
