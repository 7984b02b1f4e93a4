/// The kinds of link in an account chain.
public enum LinkType: String, Sendable, Codable, CaseIterable {
    case genesis
    case deviceAdd = "device.add"
    case deviceRevoke = "device.revoke"
    case recoverySet = "recovery.set"
    case masterRotate = "master.rotate"
    case memberAdd = "member.add"
    case memberRotate = "member.rotate"
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
public struct ChainLink: Sendable, Codable, Equatable {
    /// Format version: 1.
    public var version: Int
    /// 0 for the genesis link, then 1, 2, …
    public var sequence: UInt64
    /// Hex SHA-256 of the previous link (64 zeros for the genesis link).
    public var previous: String
    public var type: LinkType
    /// The device that signed (hex id), or `recovery` for a link signed with the
    /// recovery code's key.
    public var signer: String
    /// Unix time in seconds when the link was made (informational).
    public var time: Int64
    /// Type-specific fields (docs/formats/account-chain.md), all strings.
    public var body: [String: String]
    /// Base64 Ed25519 signature over the link's canonical bytes.
    public var signature: String

    public init(version: Int = 1, sequence: UInt64, previous: String, type: LinkType, signer: String,
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

    /// The signer value for links signed with the recovery auth key.
    public static let recoverySigner = "recovery"
    /// `previous` of a genesis link.
    public static let noPrevious = String(repeating: "0", count: 64)
}
