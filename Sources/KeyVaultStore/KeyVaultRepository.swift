import Foundation
import KeyVaultModel

/// What the service stores, as one protocol with a method per transaction-sized
/// intent. `KeyVaultDatabase` (SQLite through GRDB, the embedded default) and
/// `PostgresKeyVaultDatabase` (module KeyVaultPostgres, for several replicas on
/// one database) conform, and pass the same tests (Tests/KeyVaultStoreTests).
///
/// Every method is atomic on its own: a check and the write that depends on it
/// (the chain head, an account's existence, an attachment's address, the limits on
/// pending link requests) hold in one transaction, whoever else writes at the same
/// time. Refusals are ``StoreError``s; nothing else about the backend leaks out.
package protocol KeyVaultRepository: Sendable {
    /// Whether other service processes may write this store too (replicas on one
    /// PostgreSQL). Then a process's memory never stands in for the store where a
    /// write elsewhere must be seen at once: a device's revocation.
    var isSharedWithOtherProcesses: Bool { get }

    /// Told by the service's database watch, at each failed check while it says the store
    /// is down: work waiting on the store for longer than a request's own deadline is given
    /// up (a store that holds connections closes them), so that the store is used again as
    /// soon as it answers. Does nothing by default.
    func storeDoesNotAnswer()

    // MARK: Accounts and the chain

    /// Creates an account from its genesis link, first device and boxes.
    ///
    /// - Throws: `StoreError.accountExists` when the account (or device) is already there.
    func createAccount(_ account: AccountID, genesis: StoredLink, device: StoredDevice, boxes: [KeyBox],
                       recovery: RecoverySlot?) async throws

    /// Appends one link and everything that goes with it, if the head is still the expected one.
    ///
    /// - Throws: `StoreError.staleChain` (nothing written) when the head moved; `.notFound`;
    ///   `.linkRequestClosed` when the link request it approves is no longer pending;
    ///   `.usedBefore` when the value it spends (``ChainWrite/spends``) was used before.
    func append(_ account: AccountID, _ write: ChainWrite) async throws

    /// An account brought from another server: created from `create` when given, then
    /// each write appended as ``append(_:_:)`` would, all in one transaction.
    ///
    /// - Throws: as ``createAccount(_:genesis:device:boxes:recovery:)`` and ``append(_:_:)``; nothing is stored then.
    func importAccount(_ account: AccountID, create: AccountGenesis?, writes: [ChainWrite]) async throws

    /// The chain's links from `after` (exclusive), in order, and the head; nil for no such account.
    func links(_ account: AccountID, after: UInt64?) async throws -> (links: [StoredLink], head: String)?

    /// Deletes the account and everything of it in one transaction: also its identity
    /// wraps, the share boxes it stored and those naming it, and the contact requests
    /// from or to it.
    ///
    /// With `expectedHead`, only while the chain's head is that one. The head and `device`
    /// (the deleting one) are kept: only that device, importing a chain that goes on from
    /// that head, founds the account here again.
    ///
    /// - Throws: `StoreError.notFound`; `.staleChain` when the head is another (nothing deleted).
    func deleteAccount(_ account: AccountID, expectedHead: String?, by device: DeviceID?) async throws

    // MARK: Boxes, wraps, recovery

    /// The stored JSON of each box, as the server encoded it when the box was written,
    /// ordered by generation and recipient.
    func boxesJSON(_ account: AccountID, recipient: String?, generation: UInt32?) async throws -> [Data]

    /// A device's read of its own boxes, on the request path: ``boxesJSON(_:recipient:generation:)``
    /// of every generation. `seen`: the head this request's ``useNonceReadingDevice(_:device:timestamp:touchingAt:forgetBefore:)``
    /// saw; a store shared by replicas may answer from a copy it read at that very head.
    func deviceBoxesJSON(_ account: AccountID, recipient: String, seen: HeadSeen?) async throws -> [Data]

    func wraps(_ account: AccountID, member: MemberID?) async throws -> [MemberWrap]

    func recoverySlot(_ account: AccountID) async throws -> RecoverySlot?

    // MARK: Sharing (docs/formats/member-sharing.md, "The relay")

    /// The account's identity wraps, ordered by identity then master generation.
    func identityWraps(_ account: AccountID) async throws -> [IdentityWrap]

    /// Keeps a device's head statement (docs/formats/head-statement.md) unless the one
    /// kept for that device is newer: one per device.
    func putHeadStatement(_ statement: HeadStatement) async throws

    /// The head statements kept for the account's devices, by device.
    func headStatements(_ account: AccountID) async throws -> [HeadStatement]

    /// The share boxes naming `grantee` that `sharer` stored, ordered by member, member
    /// generation and grant. Read per sharer the grantee pinned: anyone may store boxes
    /// naming any account, and a stranger's must cost the grantee's read nothing. Whether
    /// each box's grant is still in force is the caller's to judge, on the sharer's chain.
    func shareBoxes(grantee: AccountID, from sharer: AccountID) async throws -> [ShareBox]

    // MARK: Contact requests

    /// Stores a new contact request from `info.from` to `info.to`, unless `info.from`
    /// already has `maxOpenPerAccount` unexpired ones. Requests expired for a day are swept.
    ///
    /// - Throws: `StoreError.notFound` (no account `info.to` or `info.from`), `.tooManyLinkRequests`.
    func createContactRequest(_ info: ContactRequestInfo, maxOpenPerAccount: Int) async throws

    /// The request, expired or not; nil when there is none.
    func contactRequest(id: String) async throws -> ContactRequestInfo?

    /// The unexpired requests from or to `account`, at most 100, soonest to expire first.
    func contactRequests(of account: AccountID) async throws -> [ContactRequestInfo]

    /// Records the answer of the account the request is to: once, while it is unexpired.
    ///
    /// - Throws: `StoreError.notFound` (no such request to `account`), `.linkRequestClosed`.
    func respondToContactRequest(id: String, to account: AccountID, response: ContactResponse) async throws

    /// Records the initiator's revealed value: once, after the answer, while unexpired.
    /// The caller has checked that it opens the commitment.
    ///
    /// - Throws: `StoreError.notFound` (no such request from `account`), `.linkRequestOutOfTurn`
    ///   (not answered yet), `.linkRequestClosed` (revealed already or expired).
    func revealContactRequest(id: String, from account: AccountID, nonce: String) async throws

    // MARK: Devices and nonces

    /// A point read on the request path.
    func device(_ id: DeviceID) async throws -> StoredDevice?

    func devices(_ account: AccountID) async throws -> [StoredDevice]

    /// Records the nonce of a signed request of `device`; false when that device already
    /// used it. Nonces with timestamps before `forgetBefore` may be forgotten.
    func useNonce(_ nonce: String, device: DeviceID, timestamp: Int64, forgetBefore: Int64) async throws -> Bool

    /// `useNonce`, then the device as stored after it: one round trip where the store
    /// can fold them (PostgreSQL), for the request path of replicas, where a revocation
    /// another process committed must be seen by the very next request. When the nonce was
    /// fresh and the device is active, `touch(_:at:)` at `now` in the same round trip: the
    /// device returned then has `now` as its last-seen time. `head`: its account's head in
    /// the same snapshot, where the store reads it (PostgreSQL), for ``deviceBoxesJSON(_:recipient:seen:)``.
    func useNonceReadingDevice(_ nonce: String, device: DeviceID, timestamp: Int64, touchingAt now: Int64,
                               forgetBefore: Int64) async throws -> (fresh: Bool, device: StoredDevice?, head: HeadSeen?)

    // MARK: Single use and failure counts (recovery), shared by replicas

    /// Records `value` of `kind` (a recovery challenge, a token) as used until
    /// `expires`; false when it already was. Entries that expired before
    /// `forgetBefore` may be forgotten.
    func useOnce(_ value: String, kind: String, expires: Int64, forgetBefore: Int64) async throws -> Bool

    /// Counts one failure under each of `keys` at `time`, unless one of them has
    /// `limit` failures since `since` already, or `cap` rows are counted in all since
    /// then: then nothing is counted. Atomic across replicas: failures sent at once
    /// never count past the limit. Failures before `since` may be forgotten.
    ///
    /// - Returns: whether it was counted, and the counts found before.
    func recordFailure(_ keys: [String], at time: Int64, since: Int64, limit: Int, cap: Int) async throws -> (counted: Bool, before: FailureCounts)

    /// Records that a device made a signed request (at most once a minute per device).
    func touch(_ id: DeviceID, at time: Int64) async throws

    // MARK: Attachments

    /// Stores an attachment unless its address is already there for this member.
    func putAttachment(_ account: AccountID, member: MemberID, address: String, key: Data, data: Data,
                       device: DeviceID) async throws -> AttachmentInfo

    /// Stores an attachment, replacing what is at its address for this member (a
    /// device of the owning account found it does not open: another party planted it).
    func replaceAttachment(_ account: AccountID, member: MemberID, address: String, key: Data, data: Data,
                           device: DeviceID) async throws -> AttachmentInfo

    /// The wrapped data key and the sealed content of an attachment: whole in `data`, or
    /// (uploaded in chunks) its header in `data` and its chunks under `upload`.
    func attachment(_ account: AccountID, member: MemberID, address: String) async throws -> StoredAttachment?

    /// Whether an attachment is there, and how it is kept, without reading its content (an
    /// object put whole may be tens of MiB): the chunk list and an upload's start need no more.
    func attachmentLayout(_ account: AccountID, member: MemberID, address: String) async throws -> AttachmentLayout?

    // MARK: Uploads in chunks (docs/api.md, "Attachments in chunks")

    /// Begins an upload of `chunks` sealed chunks: nothing is readable until it is
    /// complete. Drops this account's uploads left unfinished for a day, and one
    /// `starter` began before of the same member and address (given up on).
    ///
    /// `starter` is the account whose device began it: `account` itself, or a grantee
    /// uploading through the relay. An upload is its starter's alone (the steps below
    /// find it only with its starter), and each starter has its own allowance of
    /// ``KeyVaultDatabase/maxUnfinishedUploads`` in `account`: a grantee neither cancels
    /// nor blocks the account's own uploads.
    func beginUpload(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID, key: Data,
                     chunkShift: Int, size: Int, chunks: Int) async throws

    /// An unfinished upload of this account, member, address and starter: its chunk
    /// size exponent, content size, chunk count and key part's length.
    func unfinishedUpload(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID) async throws
        -> (chunkShift: Int, size: Int, chunks: Int, keyLength: Int)?

    /// Stores chunk `index` of an unfinished upload (again: replaced); false when there
    /// is no such upload for this account, member, address and starter.
    func putUploadChunk(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID,
                        index: Int, data: Data) async throws -> Bool

    /// Makes a complete upload the attachment at its address (replacing what is there
    /// only with `replace`; otherwise an attachment already there wins and the upload
    /// is dropped). `objectSize` is the object's size as a whole, for the list.
    func completeUpload(_ account: AccountID, member: MemberID, address: String, upload: String, startedBy starter: AccountID,
                        replace: Bool, objectSize: Int, device: DeviceID) async throws -> UploadOutcome

    /// How many chunks of an upload are stored from index 0 on without a gap: where a
    /// resumed upload goes on.
    func storedChunkPrefix(upload: String) async throws -> Int

    /// Sealed chunk `index` of an attachment stored in chunks.
    func attachmentChunk(upload: String, index: Int) async throws -> Data?

    func attachmentKey(_ account: AccountID, member: MemberID, address: String) async throws -> Data?

    /// Replaces the wrapped data key of an attachment; false when there is no such attachment.
    func replaceAttachmentKey(_ account: AccountID, member: MemberID, address: String, key: Data,
                              device: DeviceID) async throws -> Bool

    func attachments(_ account: AccountID, member: MemberID) async throws -> [AttachmentInfo]

    /// Stores the sealed name and details of an attachment: from a device of the account
    /// (`grantee` nil), replacing any before; from a grantee's device, only where it has none,
    /// and then logged in the account's audit log (`attachment.name`, that device).
    func setAttachmentMeta(_ account: AccountID, member: MemberID, address: String, meta: Data,
                           grantee: DeviceID?) async throws -> MetaWrite

    /// Deletes every account's uploads begun before `before` and not completed, with
    /// their chunks; returns how many went.
    func sweepUnfinishedUploads(before: Int64) async throws -> Int

    /// Deletes an attachment, its chunks and its sealed name; false when there is none.
    func deleteAttachment(_ account: AccountID, member: MemberID, address: String, device: DeviceID) async throws -> Bool

    // MARK: Device-link requests

    /// Stores a new pending request within the limits (see `KeyVaultDatabase`).
    ///
    /// - Throws: `StoreError.notFound`, `.tooManyLinkRequests`.
    func createLinkRequest(_ account: AccountID, code: String, expires: Int64, request: LinkRequestCreate,
                           client: String, perClient: Int, total: Int, perAccountOverTotal: Int) async throws

    /// Records the approver's random value: once per request, while it is pending.
    func respondToLinkRequest(_ account: AccountID, code: String, nonce: String, by device: DeviceID) async throws

    /// Records the new device's revealed value: once, after the approver answered.
    func revealLinkRequest(_ account: AccountID, code: String, nonce: String) async throws

    func linkRequest(_ account: AccountID, code: String) async throws -> LinkRequestInfo?

    /// At most 100 pending requests, soonest to expire first.
    func pendingLinkRequests(_ account: AccountID) async throws -> [LinkRequestInfo]

    /// Refuses a pending request; it cannot be approved afterwards.
    func refuseLinkRequest(_ account: AccountID, code: String, by device: DeviceID) async throws

    // MARK: Audit

    func recordAudit(_ account: AccountID, event: AuditEvent, device: String?, detail: String?) async throws

    /// One page of the audit log, oldest first, after entry `after`. Ids grow in commit
    /// order as seen by readers, so paging on `after` never skips an entry.
    func audit(_ account: AccountID, after: Int64, limit: Int) async throws -> [AuditEntry]
}

/// Entries per page of the audit log: a client reads on with `after` the last id until a page is empty.
package let auditPageSize = 1000

extension KeyVaultRepository {
    /// One process per store, unless the store says otherwise.
    package func storeDoesNotAnswer() {}
    package var isSharedWithOtherProcesses: Bool { false }

    package func useNonceReadingDevice(_ nonce: String, device id: DeviceID, timestamp: Int64, touchingAt now: Int64,
                                       forgetBefore: Int64) async throws -> (fresh: Bool, device: StoredDevice?, head: HeadSeen?) {
        let fresh = try await useNonce(nonce, device: id, timestamp: timestamp, forgetBefore: forgetBefore)
        guard var device = try await device(id) else { return (fresh, nil, nil) }
        if fresh, device.revoked == nil, device.isDueSeen(at: now) {
            // As the request path's own touch: a failed one costs only the time.
            try? await touch(id, at: now)
            device = try await self.device(id) ?? device
        }
        return (fresh, device, nil)
    }

    package func deviceBoxesJSON(_ account: AccountID, recipient: String, seen: HeadSeen?) async throws -> [Data] {
        try await boxesJSON(account, recipient: recipient, generation: nil)
    }

    /// Deletes the account whatever its head, keeping no deleting device (the store tests).
    package func deleteAccount(_ account: AccountID) async throws { try await deleteAccount(account, expectedHead: nil, by: nil) }

    /// The whole chain and the head.
    package func links(_ account: AccountID) async throws -> (links: [StoredLink], head: String)? {
        try await links(account, after: nil)
    }

    package func boxes(_ account: AccountID, recipient: String?, generation: UInt32?) async throws -> [KeyBox] {
        try await boxesJSON(account, recipient: recipient, generation: generation).map { try JSONDecoder().decode(KeyBox.self, from: $0) }
    }

    /// The first page of the audit log after `after`.
    package func audit(_ account: AccountID, after: Int64 = 0) async throws -> [AuditEntry] {
        try await audit(account, after: after, limit: auditPageSize)
    }
}
