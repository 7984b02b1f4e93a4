import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault

/// Why a KeyVault operation stopped: a stable ``code`` to match on, a plain
/// ``message`` (never a secret) and what ``kind`` of failure it is. What to do next
/// is the app's to say, in its own words, from the code (keyctl's are in its
/// `Hints.swift`).
///
/// Errors of kind ``Kind/verification`` mean the server's answer failed a check:
/// nothing was changed, and the server is not to be trusted with that answer.
public struct KeyVaultError: Error, Sendable, Equatable, CustomStringConvertible {
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

    /// The wire codes (`ErrorCode`), with the client's own below.
    public typealias Code = ErrorCode

    public let kind: Kind
    public let code: Code
    public let message: String
    /// The HTTP status, when the server refused.
    public let status: Int?

    package init(_ code: Code, _ message: String, kind: Kind? = nil, status: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.kind = kind ?? Self.defaultKind(code)
    }

    static func defaultKind(_ code: Code) -> Kind {
        switch code {
        case .network, .badResponse, .responseTooLarge: .network
        case .home, .homeDamaged, .notInitialized, .enrollmentIncomplete, .alreadyInitialized, .passphraseRequired, .deviceBusy: .home
        case .deviceRevoked: .revoked
        case .chainRollback, .chainFork, .chainInvalid, .wrongAccount, .badBox, .missingKey, .weakKDF, .kdfAboveCeiling, .badReveal,
             .contactStale: .verification
        case .sasMismatch, .linkRequestClosed, .contactRequestClosed, .wrongPassphrase: .rejected
        case .io, .invalidInput, .noSuchMember, .noSuchDevice, .insecureHTTP: .input
        default: .server
        }
    }

    public var description: String { message }

    /// A refusal of the server's data, from the shared chain checks or the vault.
    static func verification(_ error: any Error, _ what: String) -> KeyVaultError {
        switch error {
        case let error as ProtocolError:
            KeyVaultError(.chainInvalid, "\(what): \(error.message) (\(error.code))", kind: .verification)
        case let error as VaultError:
            KeyVaultError(error.code, "\(what): \(error.message)", kind: .verification)
        case let error as KeyVaultError:
            error
        default:
            KeyVaultError(.chainInvalid, "\(what): \(error)", kind: .verification)
        }
    }
}

/// The client's own codes: what it refuses locally. The wire codes it shares with
/// the service are in KeyVaultModel (``ErrorCode``).
extension ErrorCode {
    public static let network = ErrorCode(rawValue: "network")
    public static let home = ErrorCode(rawValue: "home")
    public static let notInitialized = ErrorCode(rawValue: "not_initialized")
    public static let alreadyInitialized = ErrorCode(rawValue: "already_initialized")
    public static let chainRollback = ErrorCode(rawValue: "chain_rollback")
    public static let chainFork = ErrorCode(rawValue: "chain_fork")
    public static let chainInvalid = ErrorCode(rawValue: "chain_invalid")
    public static let badBox = ErrorCode(rawValue: "bad_box")
    public static let missingKey = ErrorCode(rawValue: "missing_key")
    public static let noSuchMember = ErrorCode(rawValue: "no_such_member")
    public static let sasMismatch = ErrorCode(rawValue: "sas_mismatch")
    public static let io = ErrorCode(rawValue: "io")
    public static let invalidInput = ErrorCode(rawValue: "invalid_input")
    public static let badResponse = ErrorCode(rawValue: "bad_response")
    public static let tooManyConflicts = ErrorCode(rawValue: "too_many_conflicts")
    public static let responseTooLarge = ErrorCode(rawValue: "response_too_large")
    public static let insecureHTTP = ErrorCode(rawValue: "insecure_http")
    public static let passphraseRequired = ErrorCode(rawValue: "passphrase_required")
    public static let deviceBusy = ErrorCode(rawValue: "device_busy")
    /// The stored device record does not parse (a damaged file, a changed document).
    public static let homeDamaged = ErrorCode(rawValue: "home_damaged")
    /// The passphrase given does not open the device's sealed keys.
    public static let wrongPassphrase = ErrorCode(rawValue: "wrong_passphrase")
    /// The device's enrollment or link did not finish: it has keys but is not in the account yet.
    public static let enrollmentIncomplete = ErrorCode(rawValue: "enrollment_incomplete")
    /// A contact's chain has a device that stated nothing about it within the freshness
    /// window (docs/formats/head-statement.md): the view may be frozen.
    public static let contactStale = ErrorCode(rawValue: "contact_stale")
}
