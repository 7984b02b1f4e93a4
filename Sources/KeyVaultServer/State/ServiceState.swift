import Foundation
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

/// What the controllers share: the configuration, the database and the in-memory
/// state of this process (chain states, devices), sessions and the recovery gate.
struct ServiceState: Sendable {
    let configuration: ServerConfiguration
    let database: any KeyVaultRepository
    let chains = ChainCache()
    /// Whether a shared store (PostgreSQL) answered its last check (``DatabaseWatchService``).
    let databaseWatch = DatabaseWatch()
    var authenticator: Authenticator
    let recoveryGate: RecoveryGate

    /// - Parameter secret: shared by the replicas of one service (``ServerSecret``).
    init(configuration: ServerConfiguration, database: any KeyVaultRepository, secret: ServerSecret = .ephemeral()) throws {
        self.configuration = configuration
        self.database = database
        authenticator = Authenticator(database: database, nonces: NonceLedger(window: configuration.signatureWindowSeconds),
                                      sessions: try Sessions(secret: secret),
                                      window: configuration.signatureWindowSeconds)
        recoveryGate = try RecoveryGate(database: database, secret: secret)
        instance = Hex.encode(try secret.tag())
    }

    /// This service's public name (`GET /v1/server`): its secret's tag, the same on every
    /// replica and another on every other service. A device names it in a delete, so that
    /// another server cannot replay the delete here.
    let instance: String

    /// The account's replayed chain, cached; 404 when there is no such account.
    ///
    /// On a store other processes write too, the cached state is brought up to the
    /// stored head first (one read, of no rows when nothing changed): a replica never
    /// judges by a chain another replica has moved on from (a recovery code replaced,
    /// a device revoked).
    func chainState(_ account: AccountID) async throws -> ChainState {
        guard let (cached, loaded) = try await chains.state(account, load: { try await loadChain(account) }) else {
            throw APIError.notFound("account")
        }
        // Just read in whole from the store: nothing newer to look for.
        guard database.isSharedWithOtherProcesses, !loaded else { return cached }
        var state = cached
        guard let newer = try await database.links(account, after: state.sequence) else {
            await chains.forget(account)
            throw APIError.notFound("account")
        }
        guard newer.head != state.head else { return state }
        do {
            for stored in newer.links { try state.apply(try JSONDecoder().decode(ChainLink.self, from: stored.json)) }
            guard state.head == newer.head else { throw APIError.notFound("account") }
        } catch {
            // Not a continuation of the cached chain (the account was deleted and made again): replay it all.
            guard let reloaded = try await loadChain(account) else { throw APIError.notFound("account") }
            await chains.store(reloaded, replacing: true)
            return reloaded
        }
        await chains.store(state)
        return state
    }

    private func loadChain(_ account: AccountID) async throws -> ChainState? {
        guard let stored = try await database.links(account) else { return nil }
        return try ChainState(links: stored.links.map { try JSONDecoder().decode(ChainLink.self, from: $0.json) })
    }

    /// Checks a link (and its boxes and wraps) against the chain and stores it in one
    /// transaction, if the head has not moved. `device` is the authenticated sender
    /// (nil for recovery enrollment, where the recovery key signed the link).
    func appendVerified(_ account: AccountID, _ append: AppendRequest, by device: StoredDevice?,
                        approving code: String? = nil, spending token: SingleUse? = nil) async throws -> Response {
        // The chain, then the chain after the link (applied to this copy).
        var after = try await chainState(account)
        let change: ChainChange
        do {
            change = try after.apply(append.link)
        } catch {
            // Refused against the cached state (`after` is still it: a refused link changes
            // nothing): if that state is behind the database, forget it and judge the link
            // against the stored chain instead.
            guard let newer = try await database.links(account, after: after.sequence), !newer.links.isEmpty else { throw error }
            await chains.forget(account)
            after = try await chainState(account)
            change = try after.apply(append.link)
        }
        if let device, append.link.signer != device.id.rawValue {
            throw APIError(.wrongSigner, "a device may only append links it signed itself")
        }
        for box in append.boxes { try checkAppended(box, in: after) }
        // An enrollment (a link approval, or the recovery code adding a device) gives the new
        // device the current master key: without that box it would join and open nothing.
        if append.link.type == .deviceAdd, device == nil || code != nil, let added = change.addedDevice,
           !append.boxes.contains(where: { $0.recipient == added.id.rawValue && $0.generation == after.masterGeneration }) {
            throw APIError.badRequest("an enrollment's device.add comes with a box of the current master key (generation \(after.masterGeneration)) for the device it adds")
        }
        // A reset keeps one device and a new code: both get the new master key in the same append,
        // or the code would enroll a device that opens nothing.
        if append.link.type == .accountReset {
            let g = after.masterGeneration
            for recipient in [append.link.signer, ChainLink.recoverySigner] where !append.boxes.contains(where: { $0.recipient == recipient && $0.generation == g }) {
                throw APIError.badRequest("an account.reset comes with boxes of master key generation \(g) for its device and its recovery code")
            }
        }
        // The recovery slot travels only with the recovery.set link that authorises its keys.
        if append.link.type == .recoverySet || append.link.type == .accountReset {
            guard let slot = append.recovery, let recovery = after.recovery,
                  slot.names(recovery)
            else { throw APIError.badRequest("a \(append.link.type.rawValue) link comes with the recovery slot whose keys it names") }
        } else if append.recovery != nil {
            throw APIError.badRequest("a recovery slot comes only with a recovery.set or account.reset link")
        }
        for wrap in append.wraps {
            guard after.members[wrap.member] != nil, base64Decode(wrap.envelope).map({ (62...4096).contains($0.count) }) == true else {
                throw APIError.badRequest("a member wrap names a member of the account and carries a base64 envelope")
            }
        }
        try checkSharing(append, after: after)
        var write = try chainWrite(append.link, change: change, after: after, actor: device?.id.rawValue ?? ChainLink.recoverySigner)
        write.boxes = append.boxes
        write.wraps = append.wraps
        write.identityWraps = append.identityWraps
        write.shareBoxes = append.shareBoxes
        write.recovery = try append.recovery.map(checked)
        if let code, let device { write.approvesLinkRequest = (code, device.id) }
        write.spends = token
        try await commit(write, of: account, after: after)
        return try .json(["head": after.head, "sequence": String(after.sequence)], status: .created)
    }

    /// What a link changes besides itself, as applying it said (`change`), with the chain
    /// after it: the devices it adds and revokes, the members it removes, the grants it
    /// ends, the keys a reset drops. Nothing compares whole tables, so a link costs the
    /// same however large the account (an import of thousands of links stays linear).
    func chainWrite(_ link: ChainLink, change: ChainChange, after: ChainState, actor: String) throws -> ChainWrite {
        var write = ChainWrite(link: try stored(link), expectedHead: link.previous, audit: (.link(link.type), actor))
        if let added = change.addedDevice { write.newDevices.append(try stored(added, of: after.account)) }
        write.removedMembers = change.removedMembers
        // A grant that let its grantee write and no longer does: the grantee's uploads in flight go.
        write.endedGrants = change.endedGrants.filter { !$0.readOnly }
            .sorted { ($0.member.rawValue, $0.grantee.rawValue) < ($1.member.rawValue, $1.grantee.rawValue) }
            .map { ($0.member, $0.grantee) }
        // A reset keeps no key of before: the boxes of older master generations, the identity's wraps, the share boxes.
        if link.type == .accountReset { write.dropsKeysBefore = after.masterGeneration }
        write.revokedDevices = change.revokedDevices
        return write
    }

    /// Stores a link's write if the head is still the one it was built on, then brings
    /// this process's caches along.
    func commit(_ write: ChainWrite, of account: AccountID, after: ChainState) async throws {
        do {
            try await database.append(account, write)
        } catch StoreError.staleChain {
            await chains.forget(account)
            throw ProtocolError(.staleChain, "another device changed the account first; fetch the chain and try again")
        } catch StoreError.linkRequestClosed {
            throw APIError(.linkRequestClosed, "this link request is no longer pending")
        }
        await committed([write], of: account, state: after)
    }

    /// After writes committed: the device cache first, before anything that suspends (a
    /// request of a revoked device that starts once the write committed must meet the
    /// revocation), then the chain.
    func committed(_ writes: [ChainWrite], of account: AccountID, state: ChainState, replacing: Bool = false) async {
        for write in writes {
            for id in write.revokedDevices { authenticator.devices.revoke(id, of: account, at: write.link.sequence) }
            for device in write.newDevices { authenticator.devices.put(device) }
        }
        await chains.store(state, replacing: replacing)
    }

    /// A box stored with a link must name that link (so that it is judged by the
    /// chain as it stands there, where nothing later has happened yet) and verify.
    func checkAppended(_ box: KeyBox, in state: ChainState) throws {
        guard box.sequence == state.sequence else {
            throw ProtocolError(.boxPosition, "a key box names the link it is stored with (\(state.sequence)), not \(box.sequence)")
        }
        try box.verify(in: state)
    }

    /// The row of a device the chain adds; refused (`malformed_link`) when its name has a
    /// control character, before anything is written (PostgreSQL's text cannot hold NUL).
    func stored(_ device: ChainState.Device, of account: AccountID) throws -> StoredDevice {
        guard ChainLink.isStorableDeviceName(device.name) else {
            throw APIError(.malformedLink, "device \(device.id)'s name must not contain control characters")
        }
        return StoredDevice(id: device.id, account: account, name: device.name, signingKey: device.signingKey.rawRepresentation,
                     boxKey: device.boxKey.rawRepresentation, added: device.added)
    }

    /// The rows that found an account: its genesis link (`state`, the chain it starts),
    /// its first device and first boxes.
    func founding(_ state: ChainState, genesis: ChainLink, boxes: [KeyBox], importedBy: DeviceID? = nil) throws -> AccountGenesis {
        guard let device = state.devices.values.first(where: { $0.added == 0 }) else {
            throw APIError.badRequest("a genesis link introduces its device")
        }
        return AccountGenesis(genesis: try stored(genesis), device: try stored(device, of: state.account), boxes: boxes, importedBy: importedBy)
    }

    func stored(_ link: ChainLink) throws -> StoredLink {
        StoredLink(sequence: link.sequence, hash: link.hash, json: try JSONEncoder().encode(link))
    }

    func checked(_ slot: RecoverySlot) throws -> RecoverySlot {
        guard (try? Hex.decode(slot.salt))?.count == 16, (try? Hex.decode(slot.authKey))?.count == 32,
              (try? Hex.decode(slot.boxKey))?.count == 32, base64Decode(slot.anchor).map({ $0.count >= 62 }) == true
        else { throw APIError.badRequest("a recovery slot has a 16-byte hex salt, 32-byte hex keys and a base64 envelope") }
        do {
            _ = try Argon2id.Parameters(iterations: slot.iterations, memoryKiB: slot.memoryKiB)
        } catch let error as CryptoError {
            // Above the ceiling no client would use the slot: refused as such, not as weak.
            throw APIError(error.code == .parametersAboveCeiling ? .kdfAboveCeiling : .weakKDF, error.message)
        }
        return slot
    }
}
