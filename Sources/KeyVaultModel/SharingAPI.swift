/// Request and response bodies of the sharing relay (docs/formats/member-sharing.md,
/// "The relay"; docs/api.md). Keys, commitments and nonces travel as lowercase hex.

/// The public halves of one generation of an account's sharing identity, as the
/// contact exchange carries them. The account is the request's `from` or `to`.
package struct IdentityKeys: Sendable, Codable, Equatable {
    package var generation: UInt32
    /// Hex Ed25519 public key (signs share boxes).
    package var signingKey: String
    /// Hex X25519 public key (receives member keys).
    package var boxKey: String
    package init(generation: UInt32, signingKey: String, boxKey: String) {
        self.generation = generation
        self.signingKey = signingKey
        self.boxKey = boxKey
    }
}

/// The private halves of one sharing identity generation, wrapped (an envelope) under
/// one master key generation, as a member key is: every device of the account, and the
/// recovery code, open it; the server cannot.
package struct IdentityWrap: Sendable, Codable, Equatable {
    package var identityGeneration: UInt32
    package var masterGeneration: UInt32
    /// Base64 envelope (docs/formats/envelope.md) of the 32-byte Ed25519 seed and the 32-byte X25519 private key.
    package var envelope: String
    package init(identityGeneration: UInt32, masterGeneration: UInt32, envelope: String) {
        self.identityGeneration = identityGeneration
        self.masterGeneration = masterGeneration
        self.envelope = envelope
    }
}

/// `POST /v1/accounts/{A}/contact-requests`: A asks to verify B, sending its identity
/// and a commitment to its random value r_A before it sees anything of B's.
package struct ContactRequestCreate: Sendable, Codable, Equatable {
    package var to: AccountID
    package var identity: IdentityKeys
    /// Hex SHA-256 commitment (``ContactCommitment`` in KeyVaultProtocol).
    package var commitment: String
    package init(to: AccountID, identity: IdentityKeys, commitment: String) {
        self.to = to
        self.identity = identity
        self.commitment = commitment
    }
}

/// `POST …/contact-requests/{id}/respond`: B's identity and random value r_B.
package struct ContactResponse: Sendable, Codable, Equatable {
    package var identity: IdentityKeys
    /// Hex 32 random bytes.
    package var nonce: String
    package init(identity: IdentityKeys, nonce: String) {
        self.identity = identity
        self.nonce = nonce
    }
}

/// A contact request as both sides read it: A's part, B's answer once given, A's
/// reveal once made. Nothing in it is trusted: each device computes the safety code
/// from what it holds, and the people compare.
package struct ContactRequestInfo: Sendable, Codable, Equatable {
    /// Hex 16 random bytes.
    package var id: String
    package var from: AccountID
    package var to: AccountID
    package var expires: Int64
    package var identity: IdentityKeys
    package var commitment: String
    package var response: ContactResponse?
    /// Hex r_A, once revealed (it opens `commitment`).
    package var reveal: String?
    package init(id: String, from: AccountID, to: AccountID, expires: Int64, identity: IdentityKeys, commitment: String,
                response: ContactResponse? = nil, reveal: String? = nil) {
        self.id = id
        self.from = from
        self.to = to
        self.expires = expires
        self.identity = identity
        self.commitment = commitment
        self.response = response
        self.reveal = reveal
    }
}

/// `GET /v1/accounts/{G}/shared`: per sharer, the share boxes naming G of grants in force.
package struct SharedWithAccount: Sendable, Codable, Equatable {
    package var sharer: AccountID
    package var boxes: [ShareBox]
    package init(sharer: AccountID, boxes: [ShareBox]) {
        self.sharer = sharer
        self.boxes = boxes
    }
}
