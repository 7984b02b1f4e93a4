import KeyVaultCrypto

/// What each guess at a recovery code costs (Argon2id: passes and memory), named.
/// `recovery` is the default. Whatever a server hands out is checked against a
/// floor and a ceiling of the library's own, never taken as it comes.
public enum RecoveryCost: String, CaseIterable, Sendable {
    /// The least the library accepts (t = 2, 19 MiB): for tests.
    case floor
    /// t = 2, 64 MiB: for previews and tests.
    case interactive
    /// t = 3, 64 MiB: the default.
    case recovery
    /// t = 3, 256 MiB.
    case moderate
    /// t = 4, 1 GiB.
    case sensitive

    package var parameters: Argon2id.Parameters {
        switch self {
        case .floor: .floor
        case .interactive: .interactive
        case .recovery: .recovery
        case .moderate: .moderate
        case .sensitive: .sensitive
        }
    }
}
