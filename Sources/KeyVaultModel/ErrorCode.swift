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
package struct ErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    package let rawValue: String
    package init(rawValue: String) { self.rawValue = rawValue }

    package init(from decoder: any Decoder) throws {
        rawValue = try decoder.singleValueContainer().decode(String.self)
    }

    package func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(rawValue)
    }

    package var description: String { rawValue }
}

// The wire codes, in the order of docs/api.md's table.
extension ErrorCode {
    // 400

    /// Malformed JSON, wrong types, bad ids or addresses in the path, missing or unknown fields.
    package static let badRequest = ErrorCode(rawValue: "bad_request")
    /// A chain link without the shape of docs/formats/account-chain.md.
    package static let malformedLink = ErrorCode(rawValue: "malformed_link")
    /// A chain link of a version this code does not know.
    package static let unsupportedVersion = ErrorCode(rawValue: "unsupported_version")
    /// A key box that is not a base64 sealed box.
    package static let malformedBox = ErrorCode(rawValue: "malformed_box")
    /// A sealed session key that is not base64.
    package static let malformedSession = ErrorCode(rawValue: "malformed_session")
    /// A reveal that does not open the link request's commitment.
    package static let badReveal = ErrorCode(rawValue: "bad_reveal")
    /// A key box naming a link other than the one it is stored with.
    package static let boxPosition = ErrorCode(rawValue: "box_position")
    /// A key box of a generation not current at the link it names.
    package static let wrongGeneration = ErrorCode(rawValue: "wrong_generation")
    /// An attachment object without the framing of docs/formats/attachment.md, or a part that is not an envelope.
    package static let malformedAttachment = ErrorCode(rawValue: "malformed_attachment")
    /// A link signed by someone the account does not have.
    package static let unknownSigner = ErrorCode(rawValue: "unknown_signer")
    /// A key box sealed to someone the account does not have.
    package static let unknownRecipient = ErrorCode(rawValue: "unknown_recipient")
    /// A link naming a device the account does not have.
    package static let noSuchDevice = ErrorCode(rawValue: "no_such_device")
    /// A link naming a member the account does not have.
    package static let unknownMember = ErrorCode(rawValue: "unknown_member")
    /// A link naming an account this account has not pinned as a contact (docs/formats/member-sharing.md).
    package static let unknownContact = ErrorCode(rawValue: "unknown_contact")
    /// A share revoke, or a share box, naming no active grant.
    package static let unknownGrant = ErrorCode(rawValue: "unknown_grant")
    /// Revoking a device that is already revoked.
    package static let alreadyRevoked = ErrorCode(rawValue: "already_revoked")
    /// Revoking the last active device.
    package static let lastDevice = ErrorCode(rawValue: "last_device")
    /// Recovery slot Argon2id parameters below the floor.
    package static let weakKDF = ErrorCode(rawValue: "weak_kdf")
    /// Recovery slot Argon2id parameters above the ceiling clients accept.
    package static let kdfAboveCeiling = ErrorCode(rawValue: "kdf_above_ceiling")

    // 401: the request signature checks, in the order they are made.

    /// A signed route called without a signature.
    package static let unsignedRequest = ErrorCode(rawValue: "unsigned_request")
    /// Signature or MAC headers that are missing or malformed.
    package static let malformedSignature = ErrorCode(rawValue: "malformed_signature")
    /// A device that is enrolled in no account.
    package static let unknownDevice = ErrorCode(rawValue: "unknown_device")
    /// A signature or MAC that does not verify.
    package static let badSignature = ErrorCode(rawValue: "bad_signature")
    /// A timestamp outside the signature window.
    package static let staleTimestamp = ErrorCode(rawValue: "stale_timestamp")
    /// A nonce already used.
    package static let replayedNonce = ErrorCode(rawValue: "replayed_nonce")
    /// A session request with an unknown or expired session.
    package static let unknownSession = ErrorCode(rawValue: "unknown_session")
    /// A recovery proof that does not verify, or a stale or reused challenge.
    package static let badRecoveryProof = ErrorCode(rawValue: "bad_recovery_proof")
    /// An enrollment token that is unknown, used or expired.
    package static let badRecoveryToken = ErrorCode(rawValue: "bad_recovery_token")

    // 403

    /// The signing device was revoked.
    package static let deviceRevoked = ErrorCode(rawValue: "device_revoked")
    /// A device acting outside its account.
    package static let wrongAccount = ErrorCode(rawValue: "wrong_account")
    /// A device appending a link it did not sign.
    package static let wrongSigner = ErrorCode(rawValue: "wrong_signer")
    /// A link signed by a revoked device.
    package static let signerRevoked = ErrorCode(rawValue: "signer_revoked")
    /// A delete or an import signed for another server's instance (or none).
    package static let wrongServer = ErrorCode(rawValue: "wrong_server")
    /// The account's recovery code was set by a device since revoked.
    package static let recoveryCompromised = ErrorCode(rawValue: "recovery_compromised")
    /// Account creation without the server's invite token.
    package static let inviteRequired = ErrorCode(rawValue: "invite_required")
    /// Opening a session from another session.
    package static let signatureRequired = ErrorCode(rawValue: "signature_required")
    /// A grantee's write to a member shared with it read-only.
    package static let readOnlyGrant = ErrorCode(rawValue: "read_only_grant")

    // 404, 405

    /// No such account, attachment, link request or route.
    package static let notFound = ErrorCode(rawValue: "not_found")
    /// A method the route does not have.
    package static let methodNotAllowed = ErrorCode(rawValue: "method_not_allowed")

    // 409

    /// The chain head moved since the writer read it.
    package static let staleChain = ErrorCode(rawValue: "stale_chain")
    /// A rotation that skips or repeats a generation.
    package static let staleGeneration = ErrorCode(rawValue: "stale_generation")
    /// An account (or its first device) that already exists.
    package static let accountExists = ErrorCode(rawValue: "account_exists")
    /// A device that is already part of the account.
    package static let deviceExists = ErrorCode(rawValue: "device_exists")
    /// A member that already exists.
    package static let memberExists = ErrorCode(rawValue: "member_exists")
    /// A share grant before the account has a sharing identity.
    package static let noIdentity = ErrorCode(rawValue: "no_identity")
    /// A share grant naming a contact identity other than the one pinned: verify the contact again.
    package static let contactChanged = ErrorCode(rawValue: "contact_changed")
    /// A share grant for a member and account already shared.
    package static let grantExists = ErrorCode(rawValue: "grant_exists")
    /// A link request that is no longer pending.
    package static let linkRequestClosed = ErrorCode(rawValue: "link_request_closed")
    /// A link request step out of order.
    package static let linkRequestOutOfTurn = ErrorCode(rawValue: "link_request_out_of_turn")
    /// A contact request already answered or revealed, or expired.
    package static let contactRequestClosed = ErrorCode(rawValue: "contact_request_closed")
    /// A contact request step out of order (a reveal before the answer).
    package static let contactRequestOutOfTurn = ErrorCode(rawValue: "contact_request_out_of_turn")
    /// A grantee's name for an attachment that has one: only the sharer's devices rename.
    package static let attachmentNamed = ErrorCode(rawValue: "attachment_named")

    // 413, 429, 500, 503

    /// A body over the endpoint's limit.
    package static let payloadTooLarge = ErrorCode(rawValue: "payload_too_large")
    /// Too many failed recovery proofs (see Retry-After).
    package static let rateLimited = ErrorCode(rawValue: "rate_limited")
    /// Too many pending link requests from this client address, or on this server.
    package static let tooManyLinkRequests = ErrorCode(rawValue: "too_many_link_requests")
    /// Too many open contact requests from this account.
    package static let tooManyContactRequests = ErrorCode(rawValue: "too_many_contact_requests")
    /// A bug in the server, never bad input. The wire string is `internal`.
    package static let internalError = ErrorCode(rawValue: "internal")
    /// The service's database does not answer (503, see Retry-After): try again shortly.
    package static let unavailable = ErrorCode(rawValue: "unavailable")

    /// Every code the service or the shared protocol checks can produce: the server's
    /// status table covers exactly these.
    package static let wireCodes: [ErrorCode] = [
        .badRequest, .malformedLink, .unsupportedVersion, .malformedBox, .malformedSession, .badReveal, .boxPosition,
        .wrongGeneration, .malformedAttachment, .unknownSigner, .unknownRecipient, .noSuchDevice, .unknownMember,
        .unknownContact, .unknownGrant, .alreadyRevoked, .lastDevice, .weakKDF, .kdfAboveCeiling,
        .unsignedRequest, .malformedSignature, .unknownDevice, .badSignature, .staleTimestamp, .replayedNonce,
        .unknownSession, .badRecoveryProof, .badRecoveryToken,
        .deviceRevoked, .wrongAccount, .wrongSigner, .signerRevoked, .recoveryCompromised, .inviteRequired, .signatureRequired,
        .readOnlyGrant, .wrongServer,
        .notFound, .methodNotAllowed,
        .staleChain, .staleGeneration, .accountExists, .deviceExists, .memberExists, .noIdentity, .contactChanged, .grantExists,
        .linkRequestClosed, .linkRequestOutOfTurn, .contactRequestClosed, .contactRequestOutOfTurn, .attachmentNamed,
        .payloadTooLarge, .rateLimited, .tooManyLinkRequests, .tooManyContactRequests, .internalError, .unavailable,
    ]
}

/// The `Retry-After` seconds of a 503 `unavailable`, which tell its two causes apart: a write
/// that lost a race for a lock (not made: worth sending again soon) and a database that does
/// not answer (the caller is told at once). A client sends again only what is shorter than `down`.
package enum RetryAfter {
    package static let busy = 1
    package static let down = 5
}
