import Foundation
import KeyVaultModel

/// A device as the server keeps it: what signed requests are checked against.
public struct StoredDevice: Sendable, Equatable {
    public var id: DeviceID
    public var account: AccountID
    public var name: String
    public var signingKey: [UInt8]
    public var boxKey: [UInt8]
    public var added: UInt64
    /// The sequence of the link that revoked it.
    public var revoked: UInt64?
    public var lastSeen: Int64?

    /// Revoked once a link revoked it (stored as that link's sequence, never as a string).
    public var status: DeviceInfo.Status { revoked == nil ? .active : .revoked }

    public init(id: DeviceID, account: AccountID, name: String, signingKey: [UInt8], boxKey: [UInt8],
                added: UInt64, revoked: UInt64? = nil, lastSeen: Int64? = nil) {
        self.id = id
        self.account = account
        self.name = name
        self.signingKey = signingKey
        self.boxKey = boxKey
        self.added = added
        self.revoked = revoked
        self.lastSeen = lastSeen
    }
}

/// One chain link as stored: its JSON, sequence and hash.
public struct StoredLink: Sendable, Equatable {
    public var sequence: UInt64
    public var hash: String
    public var json: Data
    public init(sequence: UInt64, hash: String, json: Data) {
        self.sequence = sequence
        self.hash = hash
        self.json = json
    }
}

/// Everything one chain append writes, in one transaction.
public struct ChainWrite: Sendable {
    public var link: StoredLink
    /// The head the writer saw; the write is refused if the head moved.
    public var expectedHead: String
    public var newDevices: [StoredDevice] = []
    public var revokedDevices: [DeviceID] = []
    public var boxes: [KeyBox] = []
    public var wraps: [MemberWrap] = []
    /// The account's sharing identity wrapped under a master key generation, replacing
    /// a stored wrap of the same identity and master generations.
    public var identityWraps: [IdentityWrap] = []
    /// Member keys sealed to grantees (the account is the sharer), replacing a stored
    /// box of the same grantee, member, member generation and grant.
    public var shareBoxes: [ShareBox] = []
    public var recovery: RecoverySlot?
    /// A pending link request this write approves (single use: it must still be pending).
    public var approvesLinkRequest: (code: String, approver: DeviceID)?
    /// The audit row: its event and the device that signed (or `recovery`); the row
    /// carries the link's sequence.
    public var audit: (event: AuditEvent, device: String?)

    public init(link: StoredLink, expectedHead: String, audit: (event: AuditEvent, device: String?)) {
        self.link = link
        self.expectedHead = expectedHead
        self.audit = audit
    }
}

/// Failures counted in a window (``KeyVaultRepository/recordFailure(_:at:since:limit:cap:)``).
public struct FailureCounts: Sendable, Equatable {
    /// Rows across every key, counted only up to the cap (and not at all when a key
    /// was at its limit, which decides first).
    public var total: Int
    /// Per key asked about: how many, and the time of the oldest. Keys with none are absent.
    public var byKey: [String: Counted]

    public struct Counted: Sendable, Equatable {
        public var count: Int
        public var oldest: Int64
        public init(count: Int, oldest: Int64) {
            self.count = count
            self.oldest = oldest
        }
    }

    public init(total: Int, byKey: [String: Counted]) {
        self.total = total
        self.byKey = byKey
    }
}
