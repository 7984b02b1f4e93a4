import KeyVaultCrypto
import KeyVaultProtocol
import KeyVaultVault

/// Why a KeyVault operation stopped: a stable ``code`` to match on, a plain
/// ``message`` (never a secret), what ``kind`` of failure it is and, where it
/// helps, a ``hint`` of what to do next.
///
/// Errors of kind ``Kind/verification`` mean the server's answer failed a check:
/// nothing was changed, and the server is not to be trusted with that answer.
public struct KeyVaultError: Error, Sendable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The server could not be reached or did not speak the protocol.
        case network
        /// The server refused the request (a 4xx with an error code).
        case server
        /// This device has been revoked.
        case revoked
        /// The server's answer failed the client's checks: it is not to be trusted.
        case verification
        /// The device home is missing, corrupt or locked.
        case home
        /// The answer is no: a mismatch the person confirmed, an expired request.
        case rejected
        /// Local input: a missing file, a bad argument value.
        case input
    }

    public struct Code: RawRepresentable, Hashable, Sendable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let network = Code(rawValue: "network")
        public static let home = Code(rawValue: "home")
        public static let notInitialized = Code(rawValue: "not_initialized")
        public static let alreadyInitialized = Code(rawValue: "already_initialized")
        public static let deviceRevoked = Code(rawValue: "device_revoked")
        public static let chainRollback = Code(rawValue: "chain_rollback")
        public static let chainFork = Code(rawValue: "chain_fork")
        public static let chainInvalid = Code(rawValue: "chain_invalid")
        public static let wrongAccount = Code(rawValue: "wrong_account")
        public static let badBox = Code(rawValue: "bad_box")
        public static let missingKey = Code(rawValue: "missing_key")
        public static let weakKDF = Code(rawValue: "weak_kdf")
        public static let noSuchMember = Code(rawValue: "no_such_member")
        public static let noSuchDevice = Code(rawValue: "no_such_device")
        public static let sasMismatch = Code(rawValue: "sas_mismatch")
        public static let linkClosed = Code(rawValue: "link_request_closed")
        public static let badReveal = Code(rawValue: "bad_reveal")
        public static let io = Code(rawValue: "io")
        public static let invalidInput = Code(rawValue: "invalid_input")
        public static let badResponse = Code(rawValue: "bad_response")
        public static let tooManyConflicts = Code(rawValue: "too_many_conflicts")
        public static let kdfAboveCeiling = Code(rawValue: "kdf_above_ceiling")
        public static let responseTooLarge = Code(rawValue: "response_too_large")
        public static let insecureHTTP = Code(rawValue: "insecure_http")
        public static let passphraseRequired = Code(rawValue: "passphrase_required")
        public static let deviceBusy = Code(rawValue: "device_busy")
    }

    public let kind: Kind
    public let code: Code
    public let message: String
    public let hint: String?
    /// The HTTP status, when the server refused.
    public let status: Int?

    package init(_ code: Code, _ message: String, hint: String? = nil, kind: Kind? = nil, status: Int? = nil) {
        self.code = code
        self.message = message
        self.hint = hint
        self.status = status
        self.kind = kind ?? Self.defaultKind(code)
    }

    static func defaultKind(_ code: Code) -> Kind {
        switch code {
        case .network, .badResponse, .responseTooLarge: .network
        case .home, .notInitialized, .alreadyInitialized, .passphraseRequired, .deviceBusy: .home
        case .deviceRevoked: .revoked
        case .chainRollback, .chainFork, .chainInvalid, .wrongAccount, .badBox, .missingKey, .weakKDF, .kdfAboveCeiling, .badReveal: .verification
        case .sasMismatch, .linkClosed: .rejected
        case .io, .invalidInput, .noSuchMember, .noSuchDevice, .insecureHTTP: .input
        default: .server
        }
    }

    public var description: String { message }

    /// A refusal of the server's data, from the shared chain checks or the vault.
    static func verification(_ error: any Error, _ what: String) -> KeyVaultError {
        switch error {
        case let error as ProtocolError:
            KeyVaultError(.chainInvalid, "\(what): \(error.message) (\(error.code))",
                        hint: "the server's data does not verify; do not trust it. Nothing was changed here", kind: .verification)
        case let error as VaultError:
            KeyVaultError(Code(rawValue: error.code.rawValue), "\(what): \(error.message)",
                        hint: "the server's data does not verify; do not trust it. Nothing was changed here", kind: .verification)
        case let error as KeyVaultError:
            error
        default:
            KeyVaultError(.chainInvalid, "\(what): \(error)", kind: .verification)
        }
    }
}
