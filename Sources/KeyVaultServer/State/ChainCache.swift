import KeyVaultModel
import KeyVaultProtocol

/// Replayed chain states, so that checking an append does not replay the chain
/// from disk each time. Updated only after a write commits.
///
/// A cached state must never fall behind the database for good: a state behind it
/// refuses every append built on the real head. So a store never replaces a newer
/// state with an older one (requests that committed one after the other may store
/// in the other order, and a load may finish after a store), and an append that
/// does not follow the cached state checks the database's head before it is
/// refused (``ServiceState/appendVerified(_:_:by:approving:)``).
actor ChainCache {
    private var states: [AccountID: ChainState] = [:]

    /// - Returns: the state, and whether `load` read it just now.
    func state(_ account: AccountID, load: () async throws -> ChainState?) async throws -> (ChainState, loaded: Bool)? {
        if let cached = states[account] { return (cached, false) }
        guard let state = try await load() else { return nil }
        store(state)
        return states[account].map { ($0, true) }
    }

    /// Caches `state` unless a newer one of the account is cached; `replacing`: in any
    /// case (a new account, whose sequence restarts at 0).
    func store(_ state: ChainState, replacing: Bool = false) {
        if !replacing, let cached = states[state.account], cached.sequence > state.sequence { return }
        states[state.account] = state
    }

    func forget(_ account: AccountID) { states[account] = nil }
}
