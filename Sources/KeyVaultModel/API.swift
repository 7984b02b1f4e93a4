/// Request and response bodies of the HTTP API (docs/api.md, openapi.json).
/// Binary values travel as standard base64; keys and hashes as lowercase hex.

/// A master key sealed to one recipient (a device's X25519 key, or the recovery
/// key) for one generation, signed by the device that made it.
public struct KeyBox: Sendable, Codable, Equatable {
    public var generation: UInt32
    /// The chain link the box was made at: it is judged by the chain as it stood
    /// there (docs/formats/account-chain.md, "Key boxes, version 2").
    public var sequence: UInt64
    /// A device id, or `recovery`.
    public var recipient: String
    /// Base64 sealed box.
    public var box: String
    /// The device (or `recovery`) that sealed it.
    public var signer: String
    /// Base64 Ed25519 signature (docs/formats/account-chain.md, "Key boxes, version 2").
    public var signature: String

    public init(generation: UInt32, sequence: UInt64, recipient: String, box: String, signer: String, signature: String) {
        self.generation = generation
        self.sequence = sequence
        self.recipient = recipient
        self.box = box
        self.signer = signer
        self.signature = signature
    }
}

/// A member key of one generation wrapped (an envelope) under one master key generation.
public struct MemberWrap: Sendable, Codable, Equatable {
    public var member: MemberID
    public var memberGeneration: UInt32
    public var masterGeneration: UInt32
    /// Base64 envelope (docs/formats/envelope.md).
    public var envelope: String

    public init(member: MemberID, memberGeneration: UInt32, masterGeneration: UInt32, envelope: String) {
        self.member = member
        self.memberGeneration = memberGeneration
        self.masterGeneration = masterGeneration
        self.envelope = envelope
    }
}

/// What a recovery code needs to find its account (public, fetched before enrollment).
public struct RecoverySlot: Sendable, Codable, Equatable {
    /// Hex 16-byte Argon2id salt.
    public var salt: String
    public var iterations: UInt32
    public var memoryKiB: UInt32
    /// Hex Ed25519 public key of the recovery auth key (RA).
    public var authKey: String
    /// Hex X25519 public key of the recovery box key (RX).
    public var boxKey: String
    /// Base64 envelope under the recovery wrap key (RW): the account and genesis to expect.
    public var anchor: String

    public init(salt: String, iterations: UInt32, memoryKiB: UInt32, authKey: String, boxKey: String, anchor: String) {
        self.salt = salt
        self.iterations = iterations
        self.memoryKiB = memoryKiB
        self.authKey = authKey
        self.boxKey = boxKey
        self.anchor = anchor
    }
}

/// `POST /v1/accounts`: a self-signed genesis link and its first boxes.
public struct CreateAccountRequest: Sendable, Codable {
    public var genesis: ChainLink
    public var boxes: [KeyBox]
    public var recovery: RecoverySlot?

    public init(genesis: ChainLink, boxes: [KeyBox], recovery: RecoverySlot?) {
        self.genesis = genesis
        self.boxes = boxes
        self.recovery = recovery
    }
}

public struct CreateAccountResponse: Sendable, Codable {
    public var account: AccountID
    public var head: String
    public init(account: AccountID, head: String) {
        self.account = account
        self.head = head
    }
}

/// `POST /v1/accounts/{account}/chain`: one link and the boxes, wraps and recovery
/// slot that go with it, stored in one transaction. The link's `previous` is the
/// head the writer expects; if it moved, the answer is 409 `stale_chain`.
public struct AppendRequest: Sendable, Codable {
    public var link: ChainLink
    public var boxes: [KeyBox]
    public var wraps: [MemberWrap]
    public var recovery: RecoverySlot?
    /// The sharing identity's private halves under the current master key: with an
    /// `identity.set` link, and re-wrapped with every `master.rotate`.
    public var identityWraps: [IdentityWrap]
    /// Member keys sealed to grantees (docs/formats/member-sharing.md): with a
    /// `share.grant` link, and with every member rotation while grants are in force.
    public var shareBoxes: [ShareBox]

    enum CodingKeys: String, CodingKey { case link, boxes, wraps, recovery, identityWraps, shareBoxes }

    public init(link: ChainLink, boxes: [KeyBox] = [], wraps: [MemberWrap] = [], recovery: RecoverySlot? = nil,
                identityWraps: [IdentityWrap] = [], shareBoxes: [ShareBox] = []) {
        self.link = link
        self.boxes = boxes
        self.wraps = wraps
        self.recovery = recovery
        self.identityWraps = identityWraps
        self.shareBoxes = shareBoxes
    }

    public init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        link = try c.decode(ChainLink.self, forKey: .link)
        boxes = try c.decodeIfPresent([KeyBox].self, forKey: .boxes) ?? []
        wraps = try c.decodeIfPresent([MemberWrap].self, forKey: .wraps) ?? []
        recovery = try c.decodeIfPresent(RecoverySlot.self, forKey: .recovery)
        identityWraps = try c.decodeIfPresent([IdentityWrap].self, forKey: .identityWraps) ?? []
        shareBoxes = try c.decodeIfPresent([ShareBox].self, forKey: .shareBoxes) ?? []
    }

    /// The sharing fields only when they carry something: an append without them is the bytes it always was.
    public func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(link, forKey: .link)
        try c.encode(boxes, forKey: .boxes)
        try c.encode(wraps, forKey: .wraps)
        try c.encodeIfPresent(recovery, forKey: .recovery)
        if !identityWraps.isEmpty { try c.encode(identityWraps, forKey: .identityWraps) }
        if !shareBoxes.isEmpty { try c.encode(shareBoxes, forKey: .shareBoxes) }
    }
}

public struct ChainResponse: Sendable, Codable {
    public var account: AccountID
    public var links: [ChainLink]
    public var head: String
    public init(account: AccountID, links: [ChainLink], head: String) {
        self.account = account
        self.links = links
        self.head = head
    }
}

public struct DeviceInfo: Sendable, Codable, Equatable {
    public enum Status: String, Sendable, Codable { case active, revoked }
    public var id: DeviceID
    public var name: String
    public var status: Status
    /// Sequence of the link that added it.
    public var added: UInt64
    public var revoked: UInt64?
    /// Unix seconds of its last signed request, when the server has seen one.
    public var lastSeen: Int64?

    public init(id: DeviceID, name: String, status: Status, added: UInt64, revoked: UInt64? = nil, lastSeen: Int64? = nil) {
        self.id = id
        self.name = name
        self.status = status
        self.added = added
        self.revoked = revoked
        self.lastSeen = lastSeen
    }
}

public struct AttachmentInfo: Sendable, Codable, Equatable {
    public var address: String
    public var size: Int
    public var created: Int64
    /// True when this upload stored nothing new (the address was already there).
    public var existed: Bool?

    public init(address: String, size: Int, created: Int64, existed: Bool? = nil) {
        self.address = address
        self.size = size
        self.created = created
        self.existed = existed
    }
}

public struct AuditEntry: Sendable, Codable, Equatable {
    public var id: Int64
    public var time: Int64
    /// `link.<type>`, `refused.<code>`, `attachment.put`, `account.delete`, …
    public var event: String
    public var device: String?
    /// The link's sequence number, for `link.*` events.
    public var sequence: UInt64?
    /// What else the event concerns (an attachment's member and address), in words.
    public var detail: String?

    public init(id: Int64, time: Int64, event: String, device: String?, sequence: UInt64? = nil, detail: String?) {
        self.id = id
        self.time = time
        self.event = event
        self.device = device
        self.sequence = sequence
        self.detail = detail
    }
}

/// The error body of every 4xx and 5xx: `{"error": {"code", "message"}}`.
public struct ErrorBody: Sendable, Codable, Equatable {
    public struct Detail: Sendable, Codable, Equatable {
        /// A String, not an ``ErrorCode``: a client reads whatever a server sends and
        /// prints it only after making it terminal safe.
        public var code: String
        public var message: String
    }
    public var error: Detail
    public init(code: ErrorCode, message: String) { error = Detail(code: code.rawValue, message: message) }
}

// MARK: Recovery enrollment

public struct RecoveryChallenge: Sendable, Codable, Equatable {
    /// Hex 32 random bytes, single use.
    public var challenge: String
    /// Unix seconds after which it is refused.
    public var expires: Int64
    public init(challenge: String, expires: Int64) {
        self.challenge = challenge
        self.expires = expires
    }
}

/// Proof of the recovery code: the challenge signed by the recovery auth key (RA).
public struct RecoveryProof: Sendable, Codable, Equatable {
    public var challenge: String
    /// Base64 Ed25519 signature (docs/formats/request-signature.md, "Recovery proof").
    public var signature: String
    public init(challenge: String, signature: String) {
        self.challenge = challenge
        self.signature = signature
    }
}

/// What a proven recovery code may read: the chain and the master key boxes sealed
/// to the recovery key, with a token for one enrollment.
public struct RecoverySession: Sendable, Codable, Equatable {
    /// Hex 32 random bytes: allows one `recovery/enroll` within five minutes.
    public var token: String
    public var expires: Int64
    public var chain: ChainResponse
    public var boxes: [KeyBox]
    public var wraps: [MemberWrap]
    public init(token: String, expires: Int64, chain: ChainResponse, boxes: [KeyBox], wraps: [MemberWrap]) {
        self.token = token
        self.expires = expires
        self.chain = chain
        self.boxes = boxes
        self.wraps = wraps
    }
}

/// `POST …/recovery/enroll`: a device.add link signed with the recovery key, and
/// master key boxes sealed to the new device.
public struct RecoveryEnrollRequest: Sendable, Codable {
    public var token: String
    public var link: ChainLink
    public var boxes: [KeyBox]
    public init(token: String, link: ChainLink, boxes: [KeyBox]) {
        self.token = token
        self.link = link
        self.boxes = boxes
    }
}

extension ChainResponse: Equatable {}

// MARK: Device links

/// `POST …/link-requests`: a new device asks to join, with its public keys and a
/// commitment to its random value (docs/formats/device-link.md, version 2).
public struct LinkRequestCreate: Sendable, Codable, Equatable {
    public var device: DeviceID
    public var name: String
    /// Hex Ed25519 public key.
    public var signingKey: String
    /// Hex X25519 public key.
    public var boxKey: String
    /// Hex SHA-256 commitment to the keys, the name and the new device's 32 random bytes.
    public var commitment: String
    public init(device: DeviceID, name: String, signingKey: String, boxKey: String, commitment: String) {
        self.device = device
        self.name = name
        self.signingKey = signingKey
        self.boxKey = boxKey
        self.commitment = commitment
    }
}

public struct LinkRequestInfo: Sendable, Codable, Equatable {
    public enum Status: String, Sendable, Codable { case pending, approved, refused, expired }
    /// Short code the new device shows (10 characters of the Crockford base32 alphabet).
    public var code: String
    public var status: Status
    public var expires: Int64
    public var request: LinkRequestCreate
    /// Hex 32 bytes the approver posted (`respond`), once it has.
    public var approverNonce: String?
    /// Hex 32 bytes the new device revealed (`reveal`), once it has; they open `request.commitment`.
    public var deviceNonce: String?
    /// The approving device, once it answered.
    public var approver: DeviceID?
    public init(code: String, status: Status, expires: Int64, request: LinkRequestCreate, approverNonce: String? = nil,
                deviceNonce: String? = nil, approver: DeviceID? = nil) {
        self.code = code
        self.status = status
        self.expires = expires
        self.request = request
        self.approverNonce = approverNonce
        self.deviceNonce = deviceNonce
        self.approver = approver
    }
}

/// `POST …/link-requests/{code}/respond` (the approver's r_A) and `…/reveal` (the new device's r_N).
public struct LinkNonce: Sendable, Codable, Equatable {
    /// Hex 32 random bytes.
    public var nonce: String
    public init(nonce: String) { self.nonce = nonce }
}

// MARK: Sessions

/// `POST …/sessions`: a session for MAC-authenticated requests.
public struct SessionGrant: Sendable, Codable, Equatable {
    /// Hex 16 bytes.
    public var session: String
    /// Base64 sealed box of the 32-byte session key, to the device's box key.
    public var key: String
    public var expires: Int64
    public init(session: String, key: String, expires: Int64) {
        self.session = session
        self.key = key
        self.expires = expires
    }
}
