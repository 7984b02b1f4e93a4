/// A stable snake_case error code: the wire format clients match on
/// (`{"error": {"code": "device_revoked", …}}`, docs/api.md "Errors").
///
/// Defined once and shared by the service, the shared protocol checks and the
/// client, so no code is ever copied between error types as a string. The codes
/// the service or the protocol can produce are here; the key hierarchy adds its own
/// beside `VaultError`. The library's public codes are its own closed enum,
/// `KeyVaultError.Code`, which has every one of these (a test holds it to that).
///
/// - Important: the raw values are the wire format. Never rename one; add a new code instead.
public struct ErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public let rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }

    public init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    public var description: String { rawValue }
}

// The wire codes, in the order of docs/api.md's table.
extension ErrorCode {
    // 400

    /// Malformed JSON, wrong types, bad ids or addresses in the path, missing or unknown fields.
    public static let badRequest = ErrorCode(rawValue: "bad_request")
    /// A chain link without the shape of docs/formats/account-chain.md.
    public static let malformedLink = ErrorCode(rawValue: "malformed_link")
    /// A chain link of a version this code does not know.
    public static let unsupportedVersion = ErrorCode(rawValue: "unsupported_version")
    /// A key box that is not a base64 sealed box.
    public static let malformedBox = ErrorCode(rawValue: "malformed_box")
    /// A sealed session key that is not base64.
    public static let malformedSession = ErrorCode(rawValue: "malformed_session")
    /// A reveal that does not open the link request's commitment.
    public static let badReveal = ErrorCode(rawValue: "bad_reveal")
    /// A key box naming a link other than the one it is stored with.
    public static let boxPosition = ErrorCode(rawValue: "box_position")
    /// A key box of a generation not current at the link it names.
    public static let wrongGeneration = ErrorCode(rawValue: "wrong_generation")
    /// An attachment object without the framing of docs/formats/attachment.md, or a part that is not an envelope.
    public static let malformedAttachment = ErrorCode(rawValue: "malformed_attachment")
    /// A link signed by someone the account does not have.
    public static let unknownSigner = ErrorCode(rawValue: "unknown_signer")
    /// A key box sealed to someone the account does not have.
    public static let unknownRecipient = ErrorCode(rawValue: "unknown_recipient")
    /// A link naming a device the account does not have.
    public static let noSuchDevice = ErrorCode(rawValue: "no_such_device")
    /// A link naming a member the account does not have.
    public static let unknownMember = ErrorCode(rawValue: "unknown_member")
    /// A link naming an account this account has not pinned as a contact (docs/formats/member-sharing.md).
    public static let unknownContact = ErrorCode(rawValue: "unknown_contact")
    /// A share revoke, or a share box, naming no active grant.
    public static let unknownGrant = ErrorCode(rawValue: "unknown_grant")
    /// Revoking a device that is already revoked.
    public static let alreadyRevoked = ErrorCode(rawValue: "already_revoked")
    /// Revoking the last active device.
    public static let lastDevice = ErrorCode(rawValue: "last_device")
    /// Recovery slot Argon2id parameters below the floor.
    public static let weakKDF = ErrorCode(rawValue: "weak_kdf")
    /// Recovery slot Argon2id parameters above the ceiling clients accept.
    public static let kdfAboveCeiling = ErrorCode(rawValue: "kdf_above_ceiling")

    // 401: the request signature checks, in the order they are made.

    /// A signed route called without a signature.
    public static let unsignedRequest = ErrorCode(rawValue: "unsigned_request")
    /// Signature or MAC headers that are missing or malformed.
    public static let malformedSignature = ErrorCode(rawValue: "malformed_signature")
    /// A device that is enrolled in no account.
    public static let unknownDevice = ErrorCode(rawValue: "unknown_device")
    /// A signature or MAC that does not verify.
    public static let badSignature = ErrorCode(rawValue: "bad_signature")
    /// A timestamp outside the signature window.
    public static let staleTimestamp = ErrorCode(rawValue: "stale_timestamp")
    /// A nonce already used.
    public static let replayedNonce = ErrorCode(rawValue: "replayed_nonce")
    /// A session request with an unknown or expired session.
    public static let unknownSession = ErrorCode(rawValue: "unknown_session")
    /// A recovery proof that does not verify, or a stale or reused challenge.
    public static let badRecoveryProof = ErrorCode(rawValue: "bad_recovery_proof")
    /// An enrollment token that is unknown, used or expired.
    public static let badRecoveryToken = ErrorCode(rawValue: "bad_recovery_token")

    // 403

    /// The signing device was revoked.
    public static let deviceRevoked = ErrorCode(rawValue: "device_revoked")
    /// A device acting outside its account.
    public static let wrongAccount = ErrorCode(rawValue: "wrong_account")
    /// A device appending a link it did not sign.
    public static let wrongSigner = ErrorCode(rawValue: "wrong_signer")
    /// A link signed by a revoked device.
    public static let signerRevoked = ErrorCode(rawValue: "signer_revoked")
    /// The account's recovery code was set by a device since revoked.
    public static let recoveryCompromised = ErrorCode(rawValue: "recovery_compromised")
    /// Account creation without the server's invite token.
    public static let inviteRequired = ErrorCode(rawValue: "invite_required")
    /// Opening a session from another session.
    public static let signatureRequired = ErrorCode(rawValue: "signature_required")
    /// A grantee's write to a member shared with it read-only.
    public static let readOnlyGrant = ErrorCode(rawValue: "read_only_grant")

    // 404, 405

    /// No such account, attachment, link request or route.
    public static let notFound = ErrorCode(rawValue: "not_found")
    /// A method the route does not have.
    public static let methodNotAllowed = ErrorCode(rawValue: "method_not_allowed")

    // 409

    /// The chain head moved since the writer read it.
    public static let staleChain = ErrorCode(rawValue: "stale_chain")
    /// A rotation that skips or repeats a generation.
    public static let staleGeneration = ErrorCode(rawValue: "stale_generation")
    /// An account (or its first device) that already exists.
    public static let accountExists = ErrorCode(rawValue: "account_exists")
    /// A device that is already part of the account.
    public static let deviceExists = ErrorCode(rawValue: "device_exists")
    /// A member that already exists.
    public static let memberExists = ErrorCode(rawValue: "member_exists")
    /// A share grant before the account has a sharing identity.
    public static let noIdentity = ErrorCode(rawValue: "no_identity")
    /// A share grant naming a contact identity other than the one pinned: verify the contact again.
    public static let contactChanged = ErrorCode(rawValue: "contact_changed")
    /// A share grant for a member and account already shared.
    public static let grantExists = ErrorCode(rawValue: "grant_exists")
    /// A link request that is no longer pending.
    public static let linkRequestClosed = ErrorCode(rawValue: "link_request_closed")
    /// A link request step out of order.
    public static let linkRequestOutOfTurn = ErrorCode(rawValue: "link_request_out_of_turn")
    /// A contact request already answered or revealed, or expired.
    public static let contactRequestClosed = ErrorCode(rawValue: "contact_request_closed")
    /// A contact request step out of order (a reveal before the answer).
    public static let contactRequestOutOfTurn = ErrorCode(rawValue: "contact_request_out_of_turn")

    // 413, 429, 500

    /// A body over the endpoint's limit.
    public static let payloadTooLarge = ErrorCode(rawValue: "payload_too_large")
    /// Too many failed recovery proofs (see Retry-After).
    public static let rateLimited = ErrorCode(rawValue: "rate_limited")
    /// Too many pending link requests from this client address, or on this server.
    public static let tooManyLinkRequests = ErrorCode(rawValue: "too_many_link_requests")
    /// Too many open contact requests from this account.
    public static let tooManyContactRequests = ErrorCode(rawValue: "too_many_contact_requests")
    /// A bug in the server, never bad input. The wire string is `internal`.
    public static let internalError = ErrorCode(rawValue: "internal")

    /// Every code the service or the shared protocol checks can produce: the server's
    /// status table covers exactly these.
    public static let wireCodes: [ErrorCode] = [
        .badRequest, .malformedLink, .unsupportedVersion, .malformedBox, .malformedSession, .badReveal, .boxPosition,
        .wrongGeneration, .malformedAttachment, .unknownSigner, .unknownRecipient, .noSuchDevice, .unknownMember,
        .unknownContact, .unknownGrant, .alreadyRevoked, .lastDevice, .weakKDF, .kdfAboveCeiling,
        .unsignedRequest, .malformedSignature, .unknownDevice, .badSignature, .staleTimestamp, .replayedNonce,
        .unknownSession, .badRecoveryProof, .badRecoveryToken,
        .deviceRevoked, .wrongAccount, .wrongSigner, .signerRevoked, .recoveryCompromised, .inviteRequired, .signatureRequired,
        .readOnlyGrant,
        .notFound, .methodNotAllowed,
        .staleChain, .staleGeneration, .accountExists, .deviceExists, .memberExists, .noIdentity, .contactChanged, .grantExists,
        .linkRequestClosed, .linkRequestOutOfTurn, .contactRequestClosed, .contactRequestOutOfTurn,
        .payloadTooLarge, .rateLimited, .tooManyLinkRequests, .tooManyContactRequests, .internalError,
    ]
}
