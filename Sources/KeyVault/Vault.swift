import Foundation
import KeyVaultCrypto
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault

/// One enrolled device at work on its account: it verifies everything the server
/// sends before using it, keeps the newest chain head it has seen, and writes links
/// the rest of the account can verify.
///
/// A `Vault` is an actor: calls from many tasks at once are safe. Two calls that
/// change the account at once both land, one after the other (a call that finds the
/// chain moved fetches it again and rebuilds on top). Across processes, the device
/// storage's lock keeps one `Vault` per device at a time.
public actor Vault {
    package nonisolated let home: DeviceHome
    package internal(set) var record: DeviceRecord
    package nonisolated let api: ServerAPI
    /// The verified chain's links, kept in the device record (for opening offline).
    package internal(set) var links: [ChainLink] {
        get { record.chain }
        set { record.chain = newValue }
    }
    package internal(set) var state: ChainState?
    /// Sharing identity generations opened this session (never stored on disk).
    var identityCache: [UInt32: SharingIdentityKeys] = [:]
    /// Member keys other accounts shared with this one, opened from checked share boxes.
    var sharedKeys: [AccountID: [MemberID: [UInt32: SymmetricKey]]] = [:]
    /// The clock head statements are dated and judged by (Unix seconds); tests move it.
    package var clock: @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970) }
    /// When this device last stated its account's head, and which (this process only).
    var stated: (time: Int64, sequence: UInt64)?
    let progress: ProgressReporter
    /// The account this device belongs to.
    public nonisolated let account: AccountID
    /// This device's id (derived from its signing key).
    public nonisolated let device: DeviceID
    /// This device's name, as the account's chain records it.
    public nonisolated let deviceName: String
    /// The service this device's account lives on.
    public nonisolated let server: String

    init(home: DeviceHome, record: DeviceRecord, transport: any HTTPTransport, progress: @escaping ProgressReporter) {
        self.home = home
        self.record = record
        self.account = record.account
        self.device = record.device
        self.deviceName = record.name
        self.server = record.server
        self.api = ServerAPI(transport: transport, account: record.account, keys: record.keys)
        self.progress = progress
    }

    // MARK: One operation at a time

    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []
    /// The task running the current operation (its identity, while it runs).
    private var holder: Int?

    /// Runs `body` when no other operation of this vault is running, in the order
    /// the calls came. An actor alone would let calls interleave at every `await`:
    /// one could build a link on a chain another is extending, or save an older head
    /// over a newer one. A call the running operation makes itself (a revocation that
    /// sets a new code, then rotates) runs at once; a call from any other task, also
    /// one the operation started, waits its turn.
    func exclusively<T>(_ body: () async throws -> T) async throws -> T {
        let me = withUnsafeCurrentTask { $0?.hashValue }
        if busy, me != nil, me == holder { return try await body() }
        if busy {
            await withCheckedContinuation { waiting.append($0) }  // handed over by the one before
        } else {
            busy = true
        }
        holder = me
        defer {
            holder = nil
            if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
        }
        return try await body()
    }

    /// Sets what the chain fetched when the vault was made (before any other call).
    func start(links: [ChainLink], state: ChainState) {
        self.links = links
        self.state = state
    }

    /// Runs `body` with `home` locked; when it fails, the lock is released (the vault
    /// it returns holds the lock until it is freed).
    ///
    /// A lock held only for a moment is waited for (up to a second): a process another
    /// thread starts while a vault is open keeps a copy of the lock file's descriptor,
    /// and so the lock, until it execs, after the vault has closed its own copy.
    static func locked(_ home: DeviceHome, _ body: () async throws -> Vault) async throws -> Vault {
        for attempt in 1... {
            do {
                try home.lock()
                break
            } catch let error as KeyVaultError where error.code == .deviceBusy && attempt < 20 {
                try await Task.sleep(for: .milliseconds(50))
            }
        }
        do {
            return try await body()
        } catch {
            home.unlock()
            throw error
        }
    }

    deinit { home.unlock() }

    /// Opens the device in `home` and verifies the account chain: the server's, or
    /// `offline`, the copy this device kept when it last verified one.
    package static func open(home: DeviceHome, transport: (String) throws -> any HTTPTransport, offline: Bool = false,
                            progress: @escaping ProgressReporter = { _ in }) async throws -> Vault {
        // Before the lock, which would create the directory.
        guard try home.exists else { throw home.notFound }
        return try await locked(home) {
            let record = try await home.loadOnThreadOfItsOwn()
            guard record.enrolled else {
                throw KeyVaultError(.enrollmentIncomplete, "this device's enrollment in account \(record.account) did not finish")
            }
            let vault = Vault(home: home, record: record, transport: try transport(record.server), progress: progress)
            if offline {
                guard !record.chain.isEmpty else {
                    throw KeyVaultError(.invalidInput, "this device keeps no copy of the account's chain yet: open it online once")
                }
                try await vault.adopt(record.chain, from: "this device's kept copy")
            } else {
                try await vault.sync()
            }
            return vault
        }
    }

    /// The verified chain state (after `sync`).
    package var chain: ChainState {
        get throws {
            guard let state else { throw KeyVaultError(.chainInvalid, "the chain has not been fetched") }
            return state
        }
    }

    // MARK: Chain

    /// Fetches the chain, replays it from genesis and checks it against the newest
    /// head this device has seen: a chain that forks or goes back is refused.
    public func sync() async throws {
        try await sync(addedBy: nil)
    }

    /// ``sync()``; with `approver`, the chain must also be one where that device added
    /// this one (a device joining by a link: ``link(home:server:transport:account:name:pollInterval:events:askConfirmation:progress:)``).
    package func sync(addedBy approver: DeviceID?) async throws {
        try await exclusively {
            let kept = links.count
            let verified = try adopt(try await api.chain().links, addedBy: approver)
            // Keys of members removed since (by another device) are forgotten here too, but
            // for the generations their names in the chain are sealed under (the account's
            // log still names them; those attachments are gone from the server).
            var forgot = false
            for (id, keys) in record.memberKeys where verified.removedMembers[id] != nil {
                let naming = namingGenerations(of: id)
                guard keys.keys.contains(where: { !naming.contains($0) }) else { continue }
                record.memberKeys[id] = keys.filter { naming.contains($0.key) }
                forgot = true
            }
            // The server's instance, the first time this device sees it (a delete is signed for it).
            let pinned = record.instance == nil ? try? await api.instance() : nil
            if verified.head != record.head || kept != links.count || forgot || pinned != nil {
                record.head = verified.head
                record.sequence = verified.sequence
                if let pinned { record.instance = pinned }
                try home.save(record)
            }
            await stateHead(verified)
        }
    }

    /// Replays `chain` from genesis, checks it against the newest head this device has
    /// seen and that it holds this device, active and with its keys (added by `approver`,
    /// when one is named); then uses it.
    @discardableResult
    func adopt(_ chain: [ChainLink], from source: String = "the server", addedBy approver: DeviceID? = nil) throws -> ChainState {
        let verified = try Self.verify(chain, account: record.account, seenHead: record.head, seenSequence: record.sequence, from: source)
        guard let me = verified.devices[record.device] else {
            throw KeyVaultError(.chainInvalid, "the account chain does not contain this device", kind: .verification)
        }
        // Signed by that device itself: `addedBy` would also name it for a device.add the
        // recovery code signed, when that device set the code (an older code, on a fork).
        if let approver, chain.first(where: { $0.type == .deviceAdd && $0.body["device"] == record.device.rawValue })?.signer != approver.rawValue {
            throw KeyVaultError(.chainInvalid, "in the account chain from \(source), this device was not added by device \(approver), the one its code was made with: it is not the chain the approval was made on", kind: .verification)
        }
        guard me.isActive else {
            throw KeyVaultError(.deviceRevoked, "this device was revoked from the account (link \(me.revoked ?? 0))")
        }
        guard me.boxKey == record.keys.boxKey.publicKey else {
            throw KeyVaultError(.chainInvalid, "the chain names other keys for this device", kind: .verification)
        }
        links = chain
        state = verified
        return verified
    }

    /// Sets the clock head statements are dated and judged by (tests).
    package func setClock(_ clock: @escaping @Sendable () -> Int64) { self.clock = clock }

    /// Signs and posts this device's statement of the head it just verified
    /// (docs/formats/head-statement.md): at most once an hour for one head. Contacts
    /// judge how fresh their view of this account is by these. A refusal is not this
    /// command's failure: the account then only looks stale to its contacts.
    func stateHead(_ state: ChainState) async {
        let now = clock()
        if let stated, stated.sequence == state.sequence, now - stated.time < 3600 { return }
        do {
            try await api.putHeadStatement(.signed(for: state, by: record.keys.signing, time: now))
            stated = (now, state.sequence)
        } catch is CancellationError {
        } catch {
            progress(.headStatementNotTaken(error as? KeyVaultError ?? KeyVaultError(.network, String(describing: error))))
        }
    }

    /// The checks of `sync`, on their own.
    ///
    /// - Throws: `KeyVaultError` `chain_invalid` for a link that does not follow,
    ///   `wrong_account`, `chain_rollback` (shorter than seen), `chain_fork` (a
    ///   different link where this device saw another).
    package static func verify(_ links: [ChainLink], account: AccountID, seenHead: String, seenSequence: UInt64,
                               from source: String = "the server") throws -> ChainState {
        let state: ChainState
        do {
            state = try ChainState(links: links)
        } catch {
            throw KeyVaultError.verification(error, "the account chain from \(source) does not verify")
        }
        guard state.account == account else {
            throw KeyVaultError(.wrongAccount, "\(source) holds the chain of account \(state.account), not \(account)", kind: .verification)
        }
        guard !seenHead.isEmpty else { return state }
        guard state.sequence >= seenSequence else {
            throw KeyVaultError(.chainRollback, "the chain from \(source) ends at link \(state.sequence), but this device has already seen link \(seenSequence): it was rolled back", kind: .verification)
        }
        guard links[Int(seenSequence)].hash == seenHead else {
            throw KeyVaultError(.chainFork, "the chain from \(source) differs from the one this device saw at link \(seenSequence): the chain forked", kind: .verification)
        }
        return state
    }

    public struct Member: Sendable, Equatable {
        public internal(set) var id: MemberID
        public internal(set) var name: String
        /// The member key's newest generation when this value was read.
        public internal(set) var generation: UInt32
        /// The account that shares this member with this one; nil for a member of this account.
        public internal(set) var sharer: AccountID? = nil
        /// For a shared member: whether the grant is read-only (nothing may be put).
        public internal(set) var readOnly = false
    }

    /// The account's members with their names opened.
    public func members() async throws -> [Member] {
        try await exclusively {
            let state = try chain
            var out = [Member]()
            for member in state.members.values.sorted(by: { $0.id.rawValue < $1.id.rawValue }) {
                let key = try await memberKey(member.id, generation: member.nameGeneration)
                let name: String
                do {
                    name = try MemberName.open(member.name, account: account, member: member.id, key: key)
                } catch {
                    throw KeyVaultError.verification(error, "a member name")
                }
                out.append(Member(id: member.id, name: name, generation: member.generation))
            }
            return out.sorted { $0.name < $1.name }
        }
    }

    /// The member called `name` (or with this id): one of this account's, else one
    /// another account shares with it (``sharedMembers()``); a name two sharers use
    /// is ambiguous.
    public func member(named name: String) async throws -> Member {
        try await exclusively {
            let all = try await members()
            if let found = all.first(where: { $0.name == name || $0.id.rawValue == name }) { return found }
            let shared = try await sharedMembers().members
            let matches = shared.filter { $0.name == name || $0.id.rawValue == name }
            if matches.count == 1 { return matches[0] }
            if matches.count > 1 {
                throw KeyVaultError(.invalidInput, "\(matches.count) shared members are called \(name.debugDescription) (from \(Set(matches.compactMap(\.sharer)).count) accounts): name it by its id, one of \(matches.map(\.id.rawValue).joined(separator: ", "))")
            }
            let names = (all + shared).map(\.name)
            throw KeyVaultError(.noSuchMember, "there is no member called \(name.debugDescription)"
                                    + (names.isEmpty ? " (the account has no members yet)" : "; the members are \(names.joined(separator: ", "))"))
        }
    }

    // MARK: Writing links

    func makeLink(_ type: LinkType, _ body: [String: String], after state: ChainState) -> ChainLink {
        var link = ChainLink(sequence: state.sequence + 1, previous: state.head, type: type, signer: device.rawValue,
                             time: Int64(Date().timeIntervalSince1970), body: body)
        link.sign(with: record.keys.signing)
        return link
    }

    /// A box of `key` for `recipient`, made at link `sequence` (the link it is appended with).
    func box(_ key: SymmetricKey, generation: UInt32, at sequence: UInt64, to recipient: String, boxKey: X25519.PublicKey) throws -> KeyBox {
        var box = KeyBox(generation: generation, sequence: sequence, recipient: recipient, box: base64Encode(try boxKey.sealedBox(for: key)),
                         signer: device.rawValue, signature: "")
        box.sign(with: record.keys.signing, account: account)
        return box
    }

    /// Boxes of `key` for every active device of `state` (the state with the link
    /// they go with applied) and the recovery key, unless that code is compromised.
    func boxes(_ key: SymmetricKey, generation: UInt32, in state: ChainState) throws -> [KeyBox] {
        var boxes = try state.activeDevices.map {
            try box(key, generation: generation, at: state.sequence, to: $0.id.rawValue, boxKey: $0.boxKey)
        }
        if let recovery = state.recovery, !recovery.isCompromised {
            boxes.append(try box(key, generation: generation, at: state.sequence, to: ChainLink.recoverySigner, boxKey: recovery.boxKey))
        }
        return boxes
    }

    /// Device and member names have 1 to 100 characters (the chain's limit).
    static func checkName(_ name: String, of what: String) throws {
        guard (1...100).contains(name.count) else { throw KeyVaultError(.invalidInput, "\(what) name has 1 to 100 characters") }
        guard name.printable == name else {
            throw KeyVaultError(.invalidInput, "\(what) name has no control or text-direction characters")
        }
    }

    package static let maxAttempts = 5

    /// Appends a link built on the newest chain. When another device wrote first
    /// (`stale_chain`), fetches the chain again and rebuilds on top, so that two
    /// devices writing at once both land, one after the other.
    ///
    /// With `afterRotations`, each attempt first finishes the rotations a revocation
    /// left undone (also one another device's revocation left, seen only on a retry):
    /// what it makes must never be sealed under a generation a revoked device knows.
    /// With `masterFirst` (a member key rotation), each attempt first rotates the
    /// master key when a revocation left that undone: a member key is never wrapped
    /// under a master key a revoked device holds.
    func write(_ what: String, afterRotations: Bool = false, masterFirst: Bool = false,
               send: ((AppendRequest) async throws -> Void)? = nil,
               _ build: nonisolated(nonsending) (ChainState) async throws -> (AppendRequest, () -> Void)) async throws {
        for attempt in 1...Self.maxAttempts {
            if afterRotations {
                try await finishRevocationFirst()
            } else if masterFirst, try pendingRotation().master {
                try await rotateMaster()
            }
            let state = try chain
            let (request, commit) = try await build(state)
            // Known as this device's own before it is sent: taken with its answer lost, it is still no stranger's.
            if record.noticed != nil { record.written = Array((record.written + [request.link.hash]).suffix(256)) }
            do {
                if let send { try await send(request) } else { try await api.append(request) }
            } catch let error as KeyVaultError where error.code == .staleChain {
                guard attempt < Self.maxAttempts else { break }
                progress(.retryingAfterAnotherDevice)
                try await sync()
                continue
            }
            var next = state
            do {
                try next.apply(request.link)
            } catch {
                throw KeyVaultError.verification(error, "the link this device wrote")
            }
            links.append(request.link)
            self.state = next
            record.head = next.head
            record.sequence = next.sequence
            // This device's own link: never news to it (``untoldEvents()``).
            if record.noticed == state.sequence {
                record.noticed = next.sequence
                record.written = []
            }
            commit()
            try home.save(record)
            return
        }
        throw KeyVaultError(.tooManyConflicts, "other devices kept changing the account during \(what)")
    }

    // MARK: Members

    /// Appends `member.add`; before it, any work a revocation or recovery rotation left
    /// undone (``finishPendingRotations()``).
    public func addMember(name: String) async throws -> Member {
        try await exclusively {
            try Self.checkName(name, of: "a member")
            try await finishRevocationFirst()
            if try await members().contains(where: { $0.name == name }) {
                throw KeyVaultError(.memberExists, "there is already a member called \(name.debugDescription)", kind: .input)
            }
            let id = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
            let key = SymmetricKey()
            try await write("member add", afterRotations: true) { state in
                let (master, g) = try await masterKey()
                let wrap = try MemberKeyWrap.seal(key, account: account, member: id, memberGeneration: 1, under: master, masterGeneration: g)
                let sealedName = try MemberName.seal(name, account: account, member: id, key: key)
                let link = makeLink(.memberAdd, ["member": id.rawValue, "memberGeneration": "1", "name": sealedName], after: state)
                return (AppendRequest(link: link, wraps: [wrap]), { self.record.memberKeys[id] = [1: key] })
            }
            return Member(id: id, name: name, generation: 1)
        }
    }

    /// A new generation of a member key, wrapped under the current master key.
    ///
    /// Appends `member.rotate`; before it, `share.revoke` and `contact.unpin` for what
    /// revoked devices signed, `share.revoke` for each grant of the member whose grantee's
    /// identity changed, and `master.rotate` when a revocation left it undone.
    @discardableResult
    public func rotateMember(_ id: MemberID) async throws -> UInt32 {
        try await exclusively {
            // Never sealed to a grant a revoked device made, nor to a changed identity.
            try await endOrphaned()
            try await endGrantsToChangedContacts(of: id)
            var made: UInt32 = 0
            try await write("member rotate", masterFirst: true) { state in
                guard let member = state.members[id] else { throw KeyVaultError(.noSuchMember, "no such member \(id)") }
                let (master, g) = try await masterKey()
                let h = member.generation + 1
                let key = SymmetricKey()
                let wrap = try MemberKeyWrap.seal(key, account: account, member: id, memberGeneration: h, under: master, masterGeneration: g)
                let link = makeLink(.memberRotate, ["member": id.rawValue, "memberGeneration": String(h)], after: state)
                // The new generation to every account the member is shared with now (not to one unshared).
                let shareBoxes = try await shareBoxes(of: key, member: id, generation: h,
                                                      grants: state.grants.values.filter { $0.member == id }, in: state)
                made = h  // the last build is the one that landed
                return (AppendRequest(link: link, wraps: [wrap], shareBoxes: shareBoxes), { self.record.memberKeys[id, default: [:]][h] = key })
            }
            return made
        }
    }

    /// Gives a member another name, sealed under its newest key generation (so that a
    /// device revoked before does not read it). Appends `member.rename`; before it, any
    /// work a revocation left undone.
    public func renameMember(_ member: Member, to name: String) async throws -> Member {
        try await exclusively {
            try Self.checkName(name, of: "a member")
            guard member.sharer == nil else {
                throw KeyVaultError(.invalidInput, "\(member.name) is shared with this account; only its own account renames it")
            }
            try await finishRevocationFirst()
            if try await members().contains(where: { $0.name == name && $0.id != member.id }) {
                throw KeyVaultError(.memberExists, "there is already a member called \(name.debugDescription)", kind: .input)
            }
            var renamed = member
            try await write("member rename", afterRotations: true) { state in
                guard let current = state.members[member.id] else { throw KeyVaultError(.noSuchMember, "no such member \(member.id)") }
                let h = current.generation
                let sealed = try MemberName.seal(name, account: account, member: member.id, key: try await memberKey(member.id, generation: h),
                                                 generation: h)
                renamed = Member(id: member.id, name: name, generation: h)
                return (AppendRequest(link: makeLink(.memberRename, ["member": member.id.rawValue, "name": sealed, "nameGeneration": String(h)],
                                                     after: state)), {})
            }
            return renamed
        }
    }

    /// Takes a member out of the account: its shares end first (`share.revoke` for
    /// each), then `member.remove`, with which the server deletes the member's key
    /// wraps, attachments and share boxes. This device forgets the member's keys but
    /// those its names are sealed under (the account's log names it still).
    ///
    /// Authority: the member's key generations go out of use; nothing new is sealed
    /// under them. A device (or grantee) that opened an attachment keeps what it wrote
    /// out, and one that holds an old key can open copies it kept, not the server's.
    public func removeMember(_ member: Member) async throws {
        try await exclusively {
            guard member.sharer == nil else {
                throw KeyVaultError(.invalidInput, "\(member.name) is shared with this account; only its own account removes it")
            }
            try await sync()
            for grant in try chain.grants.values.filter({ $0.member == member.id }).sorted(by: { $0.granted < $1.granted }) {
                try await endGrant(member.id, grant.grantee)
            }
            try await write("member remove") { state in
                guard state.members[member.id] != nil else { throw KeyVaultError(.noSuchMember, "no such member \(member.id)") }
                return (AppendRequest(link: makeLink(.memberRemove, ["member": member.id.rawValue], after: state)),
                        { self.record.memberKeys[member.id] = self.record.memberKeys[member.id]?.filter { self.namingGenerations(of: member.id).contains($0.key) } })
            }
        }
    }

    /// The key generations the chain seals `member`'s names under (its add and renames).
    func namingGenerations(of member: MemberID) -> Set<UInt32> {
        Set(links.compactMap { $0.sealedName }.filter { $0.member == member.rawValue }.map(\.generation))
    }

    /// Remembers the newest head of another account's chain this device verified.
    func noteSeen(_ state: ChainState) throws {
        record.seenChains[state.account] = DeviceRecord.SeenHead(head: state.head, sequence: state.sequence)
        try home.save(record)
    }

    /// Writes the device record as it is now.
    func saveRecord() throws {
        try home.save(record)
    }

    // MARK: Account

    /// Deletes the account on its server (only as of the head this device verified: a
    /// change another device made since refuses it, `stale_chain`), then this device's home.
    public func deleteAccount() async throws {
        try await exclusively {
            // Signed for the service this device first saw here: a server naming another now
            // (one that holds the account too, where it would replay the delete) is refused.
            let instance = try await instance(of: api, pinned: record.instance, "the server")
            try await api.deleteAccount(instance: instance, head: try chain.head)
            try home.remove()
        }
    }

    /// `server`'s instance (``ServerAPI/instance()``), refused when it is not the one this
    /// device pinned (`pinned`, if any): a delete is signed for the service first seen there.
    func instance(of server: ServerAPI, pinned: String?, _ what: String) async throws -> String {
        let instance = try await server.instance()
        if let pinned, pinned != instance {
            throw KeyVaultError(.badResponse, "\(what) now names itself as another service than this device first saw (\(instance), not \(pinned)): nothing was deleted",
                                kind: .verification)
        }
        return instance
    }
}
