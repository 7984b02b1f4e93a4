/// The kinds of link in an account chain.
package enum LinkType: String, Sendable, Codable, CaseIterable {
    case genesis
    case deviceAdd = "device.add"
    case deviceRevoke = "device.revoke"
    case recoverySet = "recovery.set"
    case masterRotate = "master.rotate"
    case memberAdd = "member.add"
    case memberRotate = "member.rotate"
    /// A member's name, sealed again under its newest key generation.
    case memberRename = "member.rename"
    /// A member taken out of the account: its keys, wraps and attachments go.
    case memberRemove = "member.remove"
    /// The account wiped but for its signer: every other device revoked, every member,
    /// share and contact ended, a new master key and recovery code.
    case accountReset = "account.reset"
    /// The account's sharing identity (docs/formats/member-sharing.md).
    case identitySet = "identity.set"
    /// Another account's sharing identity, verified with a safety code.
    case contactPin = "contact.pin"
    /// A member shared with a pinned contact.
    case shareGrant = "share.grant"
    /// A share taken back.
    case shareRevoke = "share.revoke"
    /// A pinned contact's pin ended (its grants ended first).
    case contactUnpin = "contact.unpin"
}

/// One link of an account chain, as it travels in JSON. The signed bytes and the
/// hash are defined in docs/formats/account-chain.md (KeyVaultProtocol computes them).
package struct ChainLink: Sendable, Codable, Equatable {
    /// Format version: 1.
    package var version: Int
    /// 0 for the genesis link, then 1, 2, …
    package var sequence: UInt64
    /// Hex SHA-256 of the previous link (64 zeros for the genesis link).
    package var previous: String
    package var type: LinkType
    /// The device that signed (hex id), or `recovery` for a link signed with the
    /// recovery code's key.
    package var signer: String
    /// Unix time in seconds when the link was made (informational).
    package var time: Int64
    /// Type-specific fields (docs/formats/account-chain.md), all strings.
    package var body: [String: String]
    /// Base64 Ed25519 signature over the link's canonical bytes.
    package var signature: String

    package init(version: Int = 1, sequence: UInt64, previous: String, type: LinkType, signer: String,
                time: Int64, body: [String: String], signature: String = "") {
        self.version = version
        self.sequence = sequence
        self.previous = previous
        self.type = type
        self.signer = signer
        self.time = time
        self.body = body
        self.signature = signature
    }

    /// For a link that seals a member's name (`member.add`, `member.rename`): the member
    /// and the key generation the name is sealed under; nil for any other link.
    package var sealedName: (member: String, generation: UInt32)? {
        guard let member = body["member"], body["name"] != nil else { return nil }
        switch type {
        case .memberAdd: return (member, 1)
        case .memberRename: return body["nameGeneration"].flatMap { UInt32($0) }.map { (member, $0) }
        default: return nil
        }
    }

    /// The signer value for links signed with the recovery auth key.
    package static let recoverySigner = "recovery"
    /// `previous` of a genesis link.
    package static let noPrevious = String(repeating: "0", count: 64)
}
