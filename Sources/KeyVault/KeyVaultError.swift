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

    /// Every code the library reports: the service's (the wire codes), the client's own
    /// checks, and the key hierarchy's. Closed: an app can switch over it. A server
    /// code this version does not know arrives as ``unrecognized`` (the message quotes it).
    ///
    /// - Important: the raw values are stable; never rename one.
    public enum Code: String, Sendable, CaseIterable, CustomStringConvertible {
        // MARK: The service's (docs/api.md, "Errors")
        /// Malformed JSON, wrong types, bad ids or addresses in the path, missing or unknown fields.
        case badRequest = "bad_request"
        /// A chain link without the shape of docs/formats/account-chain.md.
        case malformedLink = "malformed_link"
        /// A chain link of a version this code does not know.
        case unsupportedVersion = "unsupported_version"
        /// A key box that is not a base64 sealed box.
        case malformedBox = "malformed_box"
        /// A sealed session key that is not base64.
        case malformedSession = "malformed_session"
        /// A reveal that does not open the link request's commitment.
        case badReveal = "bad_reveal"
        /// A key box naming a link other than the one it is stored with.
        case boxPosition = "box_position"
        /// A key box of a generation not current at the link it names.
        case wrongGeneration = "wrong_generation"
        /// An attachment object without the framing of docs/formats/attachment.md, or a part that is not an envelope.
        case malformedAttachment = "malformed_attachment"
        /// A link signed by someone the account does not have.
        case unknownSigner = "unknown_signer"
        /// A key box sealed to someone the account does not have.
        case unknownRecipient = "unknown_recipient"
        /// A link naming a device the account does not have.
        case noSuchDevice = "no_such_device"
        /// A link naming a member the account does not have.
        case unknownMember = "unknown_member"
        /// A link naming an account this account has not pinned as a contact (docs/formats/member-sharing.md).
        case unknownContact = "unknown_contact"
        /// A share revoke, or a share box, naming no active grant.
        case unknownGrant = "unknown_grant"
        /// Revoking a device that is already revoked.
        case alreadyRevoked = "already_revoked"
        /// Revoking the last active device.
        case lastDevice = "last_device"
        /// Recovery slot Argon2id parameters below the floor.
        case weakKDF = "weak_kdf"
        /// Recovery slot Argon2id parameters above the ceiling clients accept.
        case kdfAboveCeiling = "kdf_above_ceiling"
        /// A signed route called without a signature.
        case unsignedRequest = "unsigned_request"
        /// Signature or MAC headers that are missing or malformed.
        case malformedSignature = "malformed_signature"
        /// A device that is enrolled in no account.
        case unknownDevice = "unknown_device"
        /// A signature or MAC that does not verify.
        case badSignature = "bad_signature"
        /// A timestamp outside the signature window.
        case staleTimestamp = "stale_timestamp"
        /// A nonce already used.
        case replayedNonce = "replayed_nonce"
        /// A session request with an unknown or expired session.
        case unknownSession = "unknown_session"
        /// A recovery proof that does not verify, or a stale or reused challenge.
        case badRecoveryProof = "bad_recovery_proof"
        /// An enrollment token that is unknown, used or expired.
        case badRecoveryToken = "bad_recovery_token"
        /// The signing device was revoked.
        case deviceRevoked = "device_revoked"
        /// A device acting outside its account.
        case wrongAccount = "wrong_account"
        /// A device appending a link it did not sign.
        case wrongSigner = "wrong_signer"
        /// A link signed by a revoked device.
        case signerRevoked = "signer_revoked"
        /// A delete or an import signed for another server (a server's own refusal).
        case wrongServer = "wrong_server"
        /// The account's recovery code was set by a device since revoked.
        case recoveryCompromised = "recovery_compromised"
        /// Account creation without the server's invite token.
        case inviteRequired = "invite_required"
        /// Opening a session from another session.
        case signatureRequired = "signature_required"
        /// A grantee's write to a member shared with it read-only.
        case readOnlyGrant = "read_only_grant"
        /// No such account, attachment, link request or route.
        case notFound = "not_found"
        /// A method the route does not have.
        case methodNotAllowed = "method_not_allowed"
        /// The chain head moved since the writer read it.
        case staleChain = "stale_chain"
        /// A rotation that skips or repeats a generation.
        case staleGeneration = "stale_generation"
        /// An account (or its first device) that already exists.
        case accountExists = "account_exists"
        /// A device that is already part of the account.
        case deviceExists = "device_exists"
        /// A member that already exists.
        case memberExists = "member_exists"
        /// A share grant before the account has a sharing identity.
        case noIdentity = "no_identity"
        /// A share grant naming a contact identity other than the one pinned: verify the contact again.
        case contactChanged = "contact_changed"
        /// A share grant for a member and account already shared.
        case grantExists = "grant_exists"
        /// A link request that is no longer pending.
        case linkRequestClosed = "link_request_closed"
        /// A link request step out of order.
        case linkRequestOutOfTurn = "link_request_out_of_turn"
        /// A contact request already answered or revealed, or expired.
        case contactRequestClosed = "contact_request_closed"
        /// A contact request step out of order (a reveal before the answer).
        case contactRequestOutOfTurn = "contact_request_out_of_turn"
        /// A name for a shared member's attachment that has one: only the sharer's devices rename.
        case attachmentNamed = "attachment_named"
        /// A body over the endpoint's limit.
        case payloadTooLarge = "payload_too_large"
        /// Too many failed recovery proofs (see Retry-After).
        case rateLimited = "rate_limited"
        /// Too many pending link requests from this client address, or on this server.
        case tooManyLinkRequests = "too_many_link_requests"
        /// Too many open contact requests from this account.
        case tooManyContactRequests = "too_many_contact_requests"
        /// A bug in the server, never bad input. The wire string is `internal`.
        case internalError = "internal"
        /// The server's database does not answer: try again shortly.
        case unavailable

        // MARK: The client's own checks
        case network
        case home
        case notInitialized = "not_initialized"
        case alreadyInitialized = "already_initialized"
        case chainRollback = "chain_rollback"
        case chainFork = "chain_fork"
        case chainInvalid = "chain_invalid"
        case badBox = "bad_box"
        case missingKey = "missing_key"
        case noSuchMember = "no_such_member"
        /// No attachment of that name (or more than one: give its address).
        case noSuchAttachment = "no_such_attachment"
        case sasMismatch = "sas_mismatch"
        case io
        case invalidInput = "invalid_input"
        case badResponse = "bad_response"
        case tooManyConflicts = "too_many_conflicts"
        case responseTooLarge = "response_too_large"
        case insecureHTTP = "insecure_http"
        case passphraseRequired = "passphrase_required"
        case deviceBusy = "device_busy"
        /// The stored device record does not parse (a damaged file, a changed document).
        case homeDamaged = "home_damaged"
        /// The passphrase given does not open the device's sealed keys.
        case wrongPassphrase = "wrong_passphrase"
        /// The device's enrollment or link did not finish: it has keys but is not in the account yet.
        case enrollmentIncomplete = "enrollment_incomplete"
        /// A contact's chain has a device that stated nothing about it within the freshness
        /// window (docs/formats/head-statement.md): the view may be frozen.
        case contactStale = "contact_stale"
        /// A typed recovery code does not parse (``RecoveryCode/Problem`` says where).
        case invalidRecoveryCode = "invalid_recovery_code"
        /// The server answered with an error code this version does not know.
        case unrecognized

        // MARK: The key hierarchy's
        case wrongRecoveryCode = "wrong_recovery_code"
        case malformedAnchor = "malformed_anchor"
        /// A member key wrap that does not open for its member and generation.
        case wrapMismatch = "wrap_mismatch"
        /// An attachment whose content does not match its address, or does not open.
        case addressMismatch = "address_mismatch"

        public var description: String { rawValue }

        /// A wire or protocol code as the library's (``unrecognized`` when it is not one).
        package init(_ code: ErrorCode) { self = Code(rawValue: code.rawValue) ?? .unrecognized }
    }

    public let kind: Kind
    public let code: Code
    public let message: String
    /// The HTTP status, when the server refused.
    public let status: Int?

    /// An error with `code` (its kind by default the code's). Public for an app's own
    /// ``HTTPTransport`` or ``DeviceStorage``, which report `network`,
    /// `response_too_large` or `device_busy` as the library's own do.
    public init(_ code: Code, _ message: String, kind: Kind? = nil, status: Int? = nil) {
        self.code = code
        self.message = message
        self.status = status
        self.kind = kind ?? Self.defaultKind(code)
    }

    static func defaultKind(_ code: Code) -> Kind {
        switch code {
        case .network, .badResponse, .responseTooLarge, .unavailable: .network
        case .home, .homeDamaged, .notInitialized, .enrollmentIncomplete, .alreadyInitialized, .passphraseRequired, .deviceBusy: .home
        case .deviceRevoked: .revoked
        case .chainRollback, .chainFork, .chainInvalid, .wrongAccount, .badBox, .missingKey, .weakKDF, .kdfAboveCeiling, .badReveal,
             .contactStale: .verification
        case .sasMismatch, .linkRequestClosed, .contactRequestClosed, .wrongPassphrase: .rejected
        case .io, .invalidInput, .invalidRecoveryCode, .noSuchMember, .noSuchAttachment, .noSuchDevice, .insecureHTTP: .input
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
            KeyVaultError(Code(error.code), "\(what): \(error.message)", kind: .verification)
        case let error as KeyVaultError:
            error
        default:
            KeyVaultError(.chainInvalid, "\(what): \(error)", kind: .verification)
        }
    }
}
