import Foundation
import KeyVaultModel

/// A device as the server keeps it: what signed requests are checked against.
package struct StoredDevice: Sendable, Equatable {
    package var id: DeviceID
    package var account: AccountID
    package var name: String
    package var signingKey: [UInt8]
    package var boxKey: [UInt8]
    package var added: UInt64
    /// The sequence of the link that revoked it.
    package var revoked: UInt64?
    package var lastSeen: Int64?

    /// Revoked once a link revoked it (stored as that link's sequence, never as a string).
    package var status: DeviceInfo.Status { revoked == nil ? .active : .revoked }

    /// A device's last-seen time is updated at most once in this many seconds.
    package static let seenInterval: Int64 = 60

    /// Whether a request at `now` updates the last-seen time (as every store's `touch`).
    package func isDueSeen(at now: Int64) -> Bool { lastSeen.map { now - $0 > Self.seenInterval } ?? true }

    package init(id: DeviceID, account: AccountID, name: String, signingKey: [UInt8], boxKey: [UInt8],
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
package struct StoredLink: Sendable, Equatable {
    package var sequence: UInt64
    package var hash: String
    package var json: Data
    package init(sequence: UInt64, hash: String, json: Data) {
        self.sequence = sequence
        self.hash = hash
        self.json = json
    }
}

/// An account's chain head as one statement of a shared store saw it. The key boxes change
/// only with the head (every write of them is a chain write), so boxes read at one head are
/// the boxes at that head: what a replica's copy of them is kept under.
package struct HeadSeen: Sendable, Equatable {
    package var sequence: Int64
    package var hash: String
    package init(sequence: Int64, hash: String) {
        self.sequence = sequence
        self.hash = hash
    }

    /// Both, or no head (a statement's outer join found no account).
    package init?(_ sequence: Int64?, _ hash: String?) {
        guard let sequence, let hash else { return nil }
        self.init(sequence: sequence, hash: hash)
    }
}

/// Everything one chain append writes, in one transaction.
package struct ChainWrite: Sendable {
    package var link: StoredLink
    /// The head the writer saw; the write is refused if the head moved.
    package var expectedHead: String
    package var newDevices: [StoredDevice] = []
    package var revokedDevices: [DeviceID] = []
    package var boxes: [KeyBox] = []
    package var wraps: [MemberWrap] = []
    /// The account's sharing identity wrapped under a master key generation, replacing
    /// a stored wrap of the same identity and master generations.
    package var identityWraps: [IdentityWrap] = []
    /// Member keys sealed to grantees (the account is the sharer), replacing a stored
    /// box of the same grantee, member, member generation and grant.
    package var shareBoxes: [ShareBox] = []
    package var recovery: RecoverySlot?
    /// Members the link removes (`member.remove`): their wraps, attachments, uploads and
    /// share boxes are deleted with it.
    package var removedMembers: [MemberID] = []
    /// Grants the link ends or makes read-only (`share.revoke`, a reset, a re-grant):
    /// the grantee's unfinished uploads of the member, begun through the relay, are
    /// deleted with it.
    package var endedGrants: [(member: MemberID, grantee: AccountID)] = []
    /// An `account.reset`: the master key boxes of generations before this one, every
    /// identity wrap and every share box of the account are deleted with it.
    package var dropsKeysBefore: UInt32?
    /// A pending link request this write approves (single use: it must still be pending).
    package var approvesLinkRequest: (code: String, approver: DeviceID)?
    /// A value this write uses up (a recovery enrollment's token): recorded as used in
    /// the write's own transaction, so a write that is refused or lost spends nothing.
    /// Refused with ``StoreError/usedBefore`` when it was used before.
    package var spends: SingleUse?
    /// The audit row: its event and the device that signed (or `recovery`); the row
    /// carries the link's sequence.
    package var audit: (event: AuditEvent, device: String?)

    package init(link: StoredLink, expectedHead: String, audit: (event: AuditEvent, device: String?)) {
        self.link = link
        self.expectedHead = expectedHead
        self.audit = audit
    }
}

/// A value used once (a recovery challenge or token, an import's claim): recorded as used
/// until `expires`.
package struct SingleUse: Sendable, Equatable {
    package var kind: String
    package var value: String
    package var expires: Int64

    package init(kind: String, value: String, expires: Int64) {
        self.kind = kind
        self.value = value
        self.expires = expires
    }
}

/// What creates an account: its genesis link, first device and first boxes.
package struct AccountGenesis: Sendable {
    package var genesis: StoredLink
    package var device: StoredDevice
    package var boxes: [KeyBox]
    /// The device that signed the import creating the account (none for a plain creation):
    /// an account deleted here is founded again only by the device that deleted it.
    package var importedBy: DeviceID?
    package init(genesis: StoredLink, device: StoredDevice, boxes: [KeyBox], importedBy: DeviceID? = nil) {
        self.genesis = genesis
        self.device = device
        self.boxes = boxes
        self.importedBy = importedBy
    }
}

/// Failures counted in a window (``KeyVaultRepository/recordFailure(_:at:since:limit:cap:)``).
package struct FailureCounts: Sendable, Equatable {
    /// Rows across every key, counted only up to the cap (and not at all when a key
    /// was at its limit, which decides first).
    package var total: Int
    /// Per key asked about: how many, and the time of the oldest. Keys with none are absent.
    package var byKey: [String: Counted]

    package struct Counted: Sendable, Equatable {
        package var count: Int
        package var oldest: Int64
        package init(count: Int, oldest: Int64) {
            self.count = count
            self.oldest = oldest
        }
    }

    package init(total: Int, byKey: [String: Counted]) {
        self.total = total
        self.byKey = byKey
    }
}
