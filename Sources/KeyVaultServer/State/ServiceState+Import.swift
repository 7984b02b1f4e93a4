import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

extension ServiceState {
    /// An account another server held, brought here (docs/api.md, "Moving an account").
    ///
    /// The chain is replayed from genesis, each box judged at the link it names, as
    /// appends are; the request must be signed by a device active at the chain's head
    /// (so a server that kept an older copy, or a device revoked since, cannot place
    /// it). An account this server holds already is brought forward from its head when
    /// its chain is the start of this one (a newer export of an account moved before),
    /// and refused otherwise. Each link is stored as its append was, all of them in one
    /// transaction: an import stored in part, with devices active that a later link
    /// revokes, is never there. An account deleted here is founded again only by a chain
    /// that goes on from the head it had then.
    ///
    /// Authority: none beyond the chain's own. What the chain revoked is revoked here
    /// from the first link on; a revocation on the old server after the export reaches
    /// this one only with a newer import (the devices' `server move` refuses a server
    /// behind the head they saw). Shares do not move: the accounts they are with live on
    /// the other server, so a chain with grants in force is refused.
    func importAccount(_ request: ImportAccountRequest, signed claim: RequestSignature.Claim, method: String, path: String,
                       query: String, bodyHash: [UInt8], invite: () throws -> Void) async throws -> ImportAccountResponse {
        let now = RecoveryGate.now(), window = configuration.signatureWindowSeconds
        guard claim.timestamp >= now - window, claim.timestamp <= now + window else {
            throw ProtocolError(.staleTimestamp, "the request timestamp is more than \(window) seconds from the server's clock")
        }
        // Whether the account is held here (a point read: no links), and if not the invite,
        // before the replay: it checks a signature per link, and an anonymous client must
        // not make a server that takes accounts by invitation do that for nothing.
        guard let genesis = request.links.first else { throw APIError.badRequest("an import brings a chain of at least its genesis link") }
        let founding = try ChainState(genesis: genesis)
        let account = founding.account
        let isHeld = try await database.links(account, after: UInt64(Int64.max)) != nil
        if !isHeld { try invite() }
        // Then the request's signature, with the key the chain gives the device it names (the
        // link that introduced it, not yet checked itself): one check before the replay checks
        // every link, so that a stranger's request costs one signature check; a holder of the
        // chain who adds a link of its own still has it replayed once, and refused at its end.
        guard let introduced = request.links.first(where: { ($0.type == .genesis || $0.type == .deviceAdd) && $0.body["device"] == claim.device.rawValue }),
              let key = (try? ChainState.newDevice(from: introduced, sequence: introduced.sequence))?.signingKey
        else {
            throw APIError(.wrongSigner, "an import is signed by a device active at the head of the chain it brings")
        }
        guard claim.isValid(method: method, path: path, query: query, bodyHash: bodyHash, key: key) else {
            throw ProtocolError(.badSignature, "the request signature does not verify")
        }
        let state = try ChainState.replay(request.links, checking: request.boxes)
        // The key checked is the one the replayed chain holds for that id (derived from it).
        guard let signer = state.devices[claim.device], signer.isActive, signer.signingKey == key else {
            throw APIError(.wrongSigner, "an import is signed by a device active at the head of the chain it brings")
        }
        try checkImported(request, at: state)
        guard try await database.useOnce(claim.nonce, kind: "import", expires: now + 2 * window, forgetBefore: now - 2 * window) else {
            throw ProtocolError(.replayedNonce, "this request was already received (nonce reused)")
        }

        // Where this server stands: no account yet, or a chain this one must extend (read
        // whole only now, the request signed by a device of the chain it brings).
        let stored = isHeld ? try await database.links(account, after: nil) : nil
        if isHeld, stored == nil { try invite() }  // deleted meanwhile: founded again as any new account
        var held = 0
        if let stored {
            held = stored.links.count
            if held > request.links.count, let last = request.links.last,
               let mine = stored.links.dropFirst(request.links.count - 1).first, mine.hash == last.hash {
                throw APIError(.accountExists, "this server holds a newer chain of account \(account) (to link \(held - 1)) that extends this one: nothing to import; devices can move here")
            }
            guard held >= 1, held <= request.links.count, request.links[held - 1].hash == stored.head else {
                throw APIError(.accountExists, "this server holds another chain of account \(account) (its link \(stored.links.count - 1) is not the import's): nothing was imported")
            }
        }
        // Each link written as its append was, with the boxes made at it; the wraps and the
        // recovery slot, which name the head's keys, with the last; with the first, the boxes
        // of links held here already (an earlier import may have come without them). No box
        // of before the last reset is kept, as the reset itself keeps none.
        let floor = request.links.last(where: { $0.type == .accountReset })?.body["masterGeneration"].flatMap { UInt32($0) } ?? 0
        let boxesAt = Dictionary(grouping: request.boxes.filter { $0.generation >= floor }, by: \.sequence)
        var writes = [ChainWrite]()
        var replayed = founding
        for (index, link) in request.links.enumerated().dropFirst() {
            let change = try replayed.apply(link)
            guard index >= max(held, 1) else { continue }
            var write = try chainWrite(link, change: change, after: replayed, actor: link.signer)
            write.boxes = boxesAt[link.sequence] ?? []
            if writes.isEmpty { write.boxes += boxesAt.filter { $0.key < link.sequence && (held > 0 || $0.key > 0) }.flatMap(\.value) }
            writes.append(write)
        }
        if !writes.isEmpty {
            writes[writes.count - 1].wraps = request.wraps
            writes[writes.count - 1].identityWraps = request.identityWraps
            writes[writes.count - 1].recovery = request.recovery
        }
        if held == 0 || !writes.isEmpty {
            let create = held > 0 ? nil : try self.founding(founding, genesis: genesis, boxes: boxesAt[0] ?? [],
                                                       importedBy: claim.device)
            do {
                try await database.importAccount(account, create: create, writes: writes)
            } catch StoreError.staleChain {
                await chains.forget(account)
                throw ProtocolError(.staleChain, "the account changed here while it was imported; import again")
            }
            await committed(writes, of: account, state: state, replacing: true)
        }
        let appended = request.links.count - held
        try await database.recordAudit(account, event: .accountImport, device: claim.device.rawValue,
                                       detail: appended == 0 ? "nothing new" : "links \(held) to \(state.sequence)")
        return ImportAccountResponse(account: account, head: state.head, sequence: state.sequence, appended: appended)
    }

    /// What an import keeps beside the chain must name the head's keys: wraps of its
    /// members' generations, identity wraps of the generations it keeps, the recovery
    /// slot of its code; and no share may be in force.
    private func checkImported(_ request: ImportAccountRequest, at state: ChainState) throws {
        if let grant = state.grants.values.first {
            throw APIError(.grantExists, "member \(grant.member) is shared with account \(grant.grantee), which lives on the other server: end the share there, then export again")
        }
        let masters = 1...state.masterGeneration
        for wrap in request.wraps {
            guard let member = state.members[wrap.member], (1...member.generation).contains(wrap.memberGeneration),
                  masters.contains(wrap.masterGeneration), base64Decode(wrap.envelope).map({ (62...4096).contains($0.count) }) == true
            else { throw APIError.badRequest("a member wrap names a member key generation of the account, a master key generation and a base64 envelope") }
        }
        let kept = state.identityGenerations
        for wrap in request.identityWraps {
            guard kept.contains(wrap.identityGeneration), masters.contains(wrap.masterGeneration),
                  base64Decode(wrap.envelope).map({ (62...4096).contains($0.count) }) == true
            else { throw APIError.badRequest("an identity wrap names an identity generation the account keeps, a master key generation and a base64 envelope") }
        }
        switch (request.recovery, state.recovery) {
        case (nil, nil): break
        case (let slot?, let recovery?):
            guard slot.names(recovery) else {
                throw APIError.badRequest("the recovery slot is not the one of the code the chain set last")
            }
            _ = try checked(slot)
        case (nil, _?): throw APIError.badRequest("the chain sets a recovery code: its recovery slot comes with the import")
        case (_?, nil): throw APIError.badRequest("the chain sets no recovery code, so an import carries no recovery slot")
        }
    }
}
