import KeyVaultCrypto

/// What `body` returned, or nil when it has not returned within `seconds` (so that a test
/// can fail, expecting an answer, instead of hanging). A body that never ends is left running.
package func within<T: Sendable>(seconds: Int, _ body: @escaping @Sendable () async -> T) async -> T? {
    let outcome = Locked<T?>(nil)
    Task { let result = await body(); outcome.withLock { $0 = result } }
    for _ in 0..<(seconds * 100) {
        if let done = outcome.withLock({ $0 }) { return done }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return nil
}
