/// Request and response bodies of the HTTP API (docs/api.md, openapi.json).
/// Binary values travel as standard base64; keys and hashes as lowercase hex.

/// A master key sealed to one recipient (a device's X25519 key, or the recovery
/// key) for one generation, signed by the device that made it.
package struct KeyBox: Sendable, Codable, Equatable {
    package var generation: UInt32
    /// The chain link the box was made at: it is judged by the chain as it stood
    /// there (docs/formats/account-chain.md, "Key boxes, version 2").
    package var sequence: UInt64
    /// A device id, or `recovery`.
    package var recipient: String
    /// Base64 sealed box.
    package var box: String
    /// The device (or `recovery`) that sealed it.
    package var signer: String
    /// Base64 Ed25519 signature (docs/formats/account-chain.md, "Key boxes, version 2").
    package var signature: String

    package init(generation: UInt32, sequence: UInt64, recipient: String, box: String, signer: String, signature: String) {
        self.generation = generation
        self.sequence = sequence
        self.recipient = recipient
        self.box = box
        self.signer = signer
        self.signature = signature
    }
}

/// A member key of one generation wrapped (an envelope) under one master key generation.
package struct MemberWrap: Sendable, Codable, Equatable {
    package var member: MemberID
    package var memberGeneration: UInt32
    package var masterGeneration: UInt32
    /// Base64 envelope (docs/formats/envelope.md).
    package var envelope: String

    package init(member: MemberID, memberGeneration: UInt32, masterGeneration: UInt32, envelope: String) {
        self.member = member
        self.memberGeneration = memberGeneration
        self.masterGeneration = masterGeneration
        self.envelope = envelope
    }
}

/// What a recovery code needs to find its account (public, fetched before enrollment).
package struct RecoverySlot: Sendable, Codable, Equatable {
    /// Hex 16-byte Argon2id salt.
    package var salt: String
    package var iterations: UInt32
    package var memoryKiB: UInt32
    /// Hex Ed25519 public key of the recovery auth key (RA).
    package var authKey: String
    /// Hex X25519 public key of the recovery box key (RX).
    package var boxKey: String
    /// Base64 envelope under the recovery wrap key (RW): the account and genesis to expect.
    package var anchor: String

    package init(salt: String, iterations: UInt32, memoryKiB: UInt32, authKey: String, boxKey: String, anchor: String) {
        self.salt = salt
        self.iterations = iterations
        self.memoryKiB = memoryKiB
        self.authKey = authKey
        self.boxKey = boxKey
        self.anchor = anchor
    }
}

/// `POST /v1/accounts`: a self-signed genesis link and its first boxes.
package struct CreateAccountRequest: Sendable, Codable {
    package var genesis: ChainLink
    package var boxes: [KeyBox]
    package var recovery: RecoverySlot?

    package init(genesis: ChainLink, boxes: [KeyBox], recovery: RecoverySlot?) {
        self.genesis = genesis
        self.boxes = boxes
        self.recovery = recovery
    }
}

package struct CreateAccountResponse: Sendable, Codable {
    package var account: AccountID
    package var head: String
    package init(account: AccountID, head: String) {
        self.account = account
        self.head = head
    }
}

/// `POST /v1/accounts/{account}/chain`: one link and the boxes, wraps and recovery
/// slot that go with it, stored in one transaction. The link's `previous` is the
/// head the writer expects; if it moved, the answer is 409 `stale_chain`.
package struct AppendRequest: Sendable, Codable {
    package var link: ChainLink
    package var boxes: [KeyBox]
    package var wraps: [MemberWrap]
    package var recovery: RecoverySlot?
    /// The sharing identity's private halves under the current master key: with an
    /// `identity.set` link, and re-wrapped with every `master.rotate`.
    package var identityWraps: [IdentityWrap]
    /// Member keys sealed to grantees (docs/formats/member-sharing.md): with a
    /// `share.grant` link, and with every member rotation while grants are in force.
    package var shareBoxes: [ShareBox]

    enum CodingKeys: String, CodingKey { case link, boxes, wraps, recovery, identityWraps, shareBoxes }

    package init(link: ChainLink, boxes: [KeyBox] = [], wraps: [MemberWrap] = [], recovery: RecoverySlot? = nil,
                identityWraps: [IdentityWrap] = [], shareBoxes: [ShareBox] = []) {
        self.link = link
        self.boxes = boxes
        self.wraps = wraps
        self.recovery = recovery
        self.identityWraps = identityWraps
        self.shareBoxes = shareBoxes
    }

    package init(from decoder: any Decoder) throws {
        let c = try decoder.container(keyedBy: CodingKeys.self)
        link = try c.decode(ChainLink.self, forKey: .link)
        boxes = try c.decodeIfPresent([KeyBox].self, forKey: .boxes) ?? []
        wraps = try c.decodeIfPresent([MemberWrap].self, forKey: .wraps) ?? []
        recovery = try c.decodeIfPresent(RecoverySlot.self, forKey: .recovery)
        identityWraps = try c.decodeIfPresent([IdentityWrap].self, forKey: .identityWraps) ?? []
        shareBoxes = try c.decodeIfPresent([ShareBox].self, forKey: .shareBoxes) ?? []
    }

    /// The sharing fields only when they carry something: an append without them is the bytes it always was.
    package func encode(to encoder: any Encoder) throws {
        var c = encoder.container(keyedBy: CodingKeys.self)
        try c.encode(link, forKey: .link)
        try c.encode(boxes, forKey: .boxes)
        try c.encode(wraps, forKey: .wraps)
        try c.encodeIfPresent(recovery, forKey: .recovery)
        if !identityWraps.isEmpty { try c.encode(identityWraps, forKey: .identityWraps) }
        if !shareBoxes.isEmpty { try c.encode(shareBoxes, forKey: .shareBoxes) }
    }
}

/// `POST /v1/accounts/import`: an account another server held, brought here
/// (docs/api.md, "Moving an account"): its whole chain from genesis and what the
/// other server kept with it. Signed as any request, by a device active at the
/// chain's head; the server replays the chain and checks every box as it checks an
/// append. An account this server already holds is brought forward when its chain
/// is the start of this one (an import cut off goes on), and refused otherwise.
package struct ImportAccountRequest: Sendable, Codable {
    /// The largest import a server takes, and so the largest an export writes: a chain
    /// of some ten thousand links with its boxes and wraps.
    package static let maxBytes = 16 << 20

    package var links: [ChainLink]
    /// Each names the link it was made at and is judged there.
    package var boxes: [KeyBox]
    package var wraps: [MemberWrap]
    package var recovery: RecoverySlot?
    package var identityWraps: [IdentityWrap]

    package init(links: [ChainLink], boxes: [KeyBox], wraps: [MemberWrap], recovery: RecoverySlot?, identityWraps: [IdentityWrap]) {
        self.links = links
        self.boxes = boxes
        self.wraps = wraps
        self.recovery = recovery
        self.identityWraps = identityWraps
    }
}

/// The answer to an import: the head the server now holds and how many links it appended.
package struct ImportAccountResponse: Sendable, Codable {
    package var account: AccountID
    package var head: String
    package var sequence: UInt64
    package var appended: Int
    package init(account: AccountID, head: String, sequence: UInt64, appended: Int) {
        self.account = account
        self.head = head
        self.sequence = sequence
        self.appended = appended
    }
}

package struct ChainResponse: Sendable, Codable {
    package var account: AccountID
    package var links: [ChainLink]
    package var head: String
    package init(account: AccountID, links: [ChainLink], head: String) {
        self.account = account
        self.links = links
        self.head = head
    }
}

package struct DeviceInfo: Sendable, Codable, Equatable {
    package enum Status: String, Sendable, Codable { case active, revoked }
    package var id: DeviceID
    package var name: String
    package var status: Status
    /// Sequence of the link that added it.
    package var added: UInt64
    package var revoked: UInt64?
    /// Unix seconds of its last signed request, when the server has seen one.
    package var lastSeen: Int64?

    package init(id: DeviceID, name: String, status: Status, added: UInt64, revoked: UInt64? = nil, lastSeen: Int64? = nil) {
        self.id = id
        self.name = name
        self.status = status
        self.added = added
        self.revoked = revoked
        self.lastSeen = lastSeen
    }
}

package struct AttachmentInfo: Sendable, Codable, Equatable {
    package var address: String
    package var size: Int
    package var created: Int64
    /// True when this upload stored nothing new (the address was already there).
    package var existed: Bool?
    /// Base64 of the attachment's sealed name and details (docs/formats/attachment-meta.md),
    /// when a device stored one; the server cannot open it.
    package var meta: String?

    package init(address: String, size: Int, created: Int64, existed: Bool? = nil, meta: String? = nil) {
        self.address = address
        self.size = size
        self.created = created
        self.existed = existed
        self.meta = meta
    }
}

package struct AuditEntry: Sendable, Codable, Equatable {
    package var id: Int64
    package var time: Int64
    /// `link.<type>`, `refused.<code>`, `attachment.put`, `account.delete`, …
    package var event: String
    package var device: String?
    /// The link's sequence number, for `link.*` events.
    package var sequence: UInt64?
    /// What else the event concerns (an attachment's member and address), in words.
    package var detail: String?

    package init(id: Int64, time: Int64, event: String, device: String?, sequence: UInt64? = nil, detail: String?) {
        self.id = id
        self.time = time
        self.event = event
        self.device = device
        self.sequence = sequence
        self.detail = detail
    }
}

/// The error body of every 4xx and 5xx: `{"error": {"code", "message"}}`.
package struct ErrorBody: Sendable, Codable, Equatable {
    package struct Detail: Sendable, Codable, Equatable {
        /// A String, not an ``ErrorCode``: a client reads whatever a server sends and
        /// prints it only after making it terminal safe.
        package var code: String
        package var message: String
    }
    package var error: Detail
    package init(code: ErrorCode, message: String) { error = Detail(code: code.rawValue, message: message) }
}

// MARK: Recovery enrollment

package struct RecoveryChallenge: Sendable, Codable, Equatable {
    /// Hex 32 random bytes, single use.
    package var challenge: String
    /// Unix seconds after which it is refused.
    package var expires: Int64
    package init(challenge: String, expires: Int64) {
        self.challenge = challenge
        self.expires = expires
    }
}

/// Proof of the recovery code: the challenge signed by the recovery auth key (RA).
package struct RecoveryProof: Sendable, Codable, Equatable {
    package var challenge: String
    /// Base64 Ed25519 signature (docs/formats/request-signature.md, "Recovery proof").
    package var signature: String
    package init(challenge: String, signature: String) {
        self.challenge = challenge
        self.signature = signature
    }
}

/// What a proven recovery code may read: the chain and the master key boxes sealed
/// to the recovery key, with a token for one enrollment.
package struct RecoverySession: Sendable, Codable, Equatable {
    /// Hex 32 random bytes: allows one `recovery/enroll` within five minutes.
    package var token: String
    package var expires: Int64
    package var chain: ChainResponse
    package var boxes: [KeyBox]
    package var wraps: [MemberWrap]
    package init(token: String, expires: Int64, chain: ChainResponse, boxes: [KeyBox], wraps: [MemberWrap]) {
        self.token = token
        self.expires = expires
        self.chain = chain
        self.boxes = boxes
        self.wraps = wraps
    }
}

/// `POST …/recovery/enroll`: a device.add link signed with the recovery key, and
/// master key boxes sealed to the new device.
package struct RecoveryEnrollRequest: Sendable, Codable {
    package var token: String
    package var link: ChainLink
    package var boxes: [KeyBox]
    package init(token: String, link: ChainLink, boxes: [KeyBox]) {
        self.token = token
        self.link = link
        self.boxes = boxes
    }
}

extension ChainResponse: Equatable {}

// MARK: Device links

/// `POST …/link-requests`: a new device asks to join, with its public keys and a
/// commitment to its random value (docs/formats/device-link.md, version 4).
package struct LinkRequestCreate: Sendable, Codable, Equatable {
    package var device: DeviceID
    package var name: String
    /// Hex Ed25519 public key.
    package var signingKey: String
    /// Hex X25519 public key.
    package var boxKey: String
    /// Hex SHA-256 commitment to the keys, the name and the new device's 32 random bytes.
    package var commitment: String
    package init(device: DeviceID, name: String, signingKey: String, boxKey: String, commitment: String) {
        self.device = device
        self.name = name
        self.signingKey = signingKey
        self.boxKey = boxKey
        self.commitment = commitment
    }
}

package struct LinkRequestInfo: Sendable, Codable, Equatable {
    package enum Status: String, Sendable, Codable { case pending, approved, refused, expired }
    /// Short code the new device shows (10 characters of the Crockford base32 alphabet).
    package var code: String
    package var status: Status
    package var expires: Int64
    package var request: LinkRequestCreate
    /// Hex 32 bytes the approver posted (`respond`), once it has.
    package var approverNonce: String?
    /// Hex 32 bytes the new device revealed (`reveal`), once it has; they open `request.commitment`.
    package var deviceNonce: String?
    /// The approving device, once it answered.
    package var approver: DeviceID?
    package init(code: String, status: Status, expires: Int64, request: LinkRequestCreate, approverNonce: String? = nil,
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
package struct LinkNonce: Sendable, Codable, Equatable {
    /// Hex 32 random bytes.
    package var nonce: String
    package init(nonce: String) { self.nonce = nonce }
}

// MARK: Sessions

/// `POST …/sessions`: a session for MAC-authenticated requests.
package struct SessionGrant: Sendable, Codable, Equatable {
    /// Hex 16 bytes.
    package var session: String
    /// Base64 sealed box of the 32-byte session key, to the device's box key.
    package var key: String
    package var expires: Int64
    package init(session: String, key: String, expires: Int64) {
        self.session = session
        self.key = key
        self.expires = expires
    }
}

/// `POST …/attachments/{address}/uploads`: an upload in chunks (docs/api.md,
/// "Attachments in chunks"). `size` is the content's length in bytes; the sealed
/// chunks follow from it and `chunkShift`.
package struct BeginUploadRequest: Sendable, Codable, Equatable {
    /// The key part (the data key's wrap, an envelope), base64.
    package var key: String
    package var chunkShift: Int
    package var size: Int

    package init(key: String, chunkShift: Int, size: Int) {
        self.key = key
        self.chunkShift = chunkShift
        self.size = size
    }
}

/// The answer: where to put the chunks, or that the address is already there.
package struct UploadStarted: Sendable, Codable, Equatable {
    /// The upload's id (32 hex digits); absent when the attachment already existed.
    package var upload: String?
    /// How many sealed chunks the upload takes.
    package var chunks: Int
    package var existed: Bool

    package init(upload: String?, chunks: Int, existed: Bool) {
        self.upload = upload
        self.chunks = chunks
        self.existed = existed
    }
}

/// `GET …/attachments/{address}/uploads/{upload}`: an unfinished upload, for a device
/// resuming it. `stored`: the chunks the server holds from index 0 on without a gap
/// (the server's word: the device re-sends from there, and checks the rest in its journal).
package struct UploadStatus: Sendable, Codable, Equatable {
    package var upload: String
    package var chunks: Int
    package var stored: Int

    package init(upload: String, chunks: Int, stored: Int) {
        self.upload = upload
        self.chunks = chunks
        self.stored = stored
    }
}

/// `GET …/attachments/{address}/chunks`: how a version 2 attachment lies in chunks
/// (the server's word: a reader's STREAM check refuses any other count or size).
package struct ChunkList: Sendable, Codable, Equatable {
    package var chunks: Int
    package var chunkShift: Int

    package init(chunks: Int, chunkShift: Int) {
        self.chunks = chunks
        self.chunkShift = chunkShift
    }
}
