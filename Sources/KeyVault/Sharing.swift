import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault

// Sharing a member with another account (docs/formats/member-sharing.md). A member
// key is only ever sealed to an identity this account pinned after both people
// compared a safety code; the grantee opens only share boxes its own pin of the
// sharer vouches for. The server relays and is believed in nothing.

extension Vault {
    // MARK: Identity

    /// The identity the newest link of `type` (`identity.set`, or `contact.pin` of
    /// `contact`) at identity generation `generation` names on this account's chain.
    private func identityLink(_ type: LinkType, generation: UInt32, contact: AccountID? = nil) throws -> ChainState.Identity? {
        guard let link = links.last(where: {
            $0.type == type && $0.body["identityGeneration"] == String(generation) && contact.map { $0.rawValue } == $0.body["account"]
        }) else { return nil }
        return try ChainState.identityFields(link, sequence: link.sequence)
    }

    /// The public halves of identity generation `generation` as this account's chain published them.
    func publishedIdentity(_ generation: UInt32) throws -> ChainState.Identity {
        if let current = try chain.identity, current.generation == generation { return current }
        guard let published = try identityLink(.identitySet, generation: generation) else {
            throw KeyVaultError(.missingKey, "this account's chain publishes no sharing identity generation \(generation)")
        }
        return published
    }

    /// The next identity generation after `state`: fresh keys, the `identity.set`
    /// link that publishes them, their wrap under the current master key.
    private func newIdentity(after state: ChainState) async throws -> (keys: SharingIdentityKeys, link: ChainLink, wrap: IdentityWrap) {
        let keys = SharingIdentityKeys(generation: state.nextIdentityGeneration)
        let (master, g) = try await masterKey()
        return (keys, makeLink(.identitySet, keys.linkBody, after: state),
                try IdentityKeyWrap.seal(keys, account: account, under: master, masterGeneration: g))
    }

    /// This account's current sharing identity; made the first time sharing needs it
    /// (an `identity.set` link, its private halves wrapped under the master key).
    func currentIdentity() async throws -> SharingIdentityKeys {
        try await exclusively {
            if let identity = try chain.identity { return try await identityKeys(generation: identity.generation) }
            progress(.makingSharingIdentity)
            var made: SharingIdentityKeys?
            try await write("identity set", afterRotations: true) { state in
                let (keys, link, wrap) = try await newIdentity(after: state)
                made = keys
                return (AppendRequest(link: link, identityWraps: [wrap]), { self.identityCache[keys.generation] = keys })
            }
            guard let made else { throw KeyVaultError(.chainInvalid, "no sharing identity was made") }
            return made
        }
    }

    /// Replaces the sharing identity with a new generation (after a revocation: the
    /// revoked device holds the old private halves), and re-seals every generation of
    /// every member shared now, signed by the new identity, in the same append.
    /// Grantees refuse the new identity until their people verify this account again
    /// (`contact_changed`): nothing signed with the old one is trusted from then on.
    func renewIdentity() async throws {
        try await exclusively {
            try await write("identity renew") { state in
                let (keys, link, wrap) = try await newIdentity(after: state)
                var after = state
                try after.apply(link)
                var boxes = [ShareBox]()
                for grant in after.grants.values.sorted(by: { ($0.member.rawValue, $0.grantee.rawValue) < ($1.member.rawValue, $1.grantee.rawValue) }) {
                    boxes += try await everyGeneration(of: grant, in: after, signer: keys)
                }
                return (AppendRequest(link: link, identityWraps: [wrap], shareBoxes: boxes), { self.identityCache[keys.generation] = keys })
            }
        }
    }

    /// Another account's chain, replayed from its genesis (which must be that
    /// account's id) and checked against the newest head this device saw of it: a
    /// chain that goes back or forks is refused. The server serves it while that
    /// account's chain pins this one. Then fresh: every device active at its head
    /// stated a head of this very chain within ``ChainFreshness/window``
    /// (docs/formats/head-statement.md), so a server that freezes this view of it (to
    /// hide a revocation) is caught once that window has passed.
    ///
    /// - Throws: `contact_stale` when a device of it stated nothing that recent;
    ///   `chain_invalid` when a statement does not verify or names a head this chain
    ///   does not have (the chain is held back, or forked).
    func contactChain(_ other: AccountID) async throws -> ChainState {
        try await exclusively {
            // The statements first: an honest server then shows a chain at least as new as every
            // statement, so a statement of a later head is evidence, never a race.
            let statements = try await api.contactHeadStatements(other)
            let response = try await api.contactChain(other)
            let seen = record.seenChains[other]
            let state = try Self.verify(response.links, account: other, seenHead: seen?.head ?? "", seenSequence: seen?.sequence ?? 0)
            if seen?.head != state.head { try noteSeen(state) }
            let stale: [ChainFreshness.Stale]
            do {
                stale = try ChainFreshness.stale(statements, of: state, links: response.links, now: clock())
            } catch let error as ProtocolError {
                throw KeyVaultError.verification(error, "the server's view of \(other)'s chain")
            }
            guard stale.isEmpty else {
                let now = clock()
                let devices = stale.map { item in
                    "\(item.device.name.debugDescription) (" + (item.daysSilent(at: now).map { "last seen \($0) days ago" } ?? "never seen") + ")"
                }
                throw KeyVaultError(.contactStale,
                                    "\(other) has not been seen lately: \(stale.count == 1 ? "its device" : "its devices") \(devices.joined(separator: ", ")) said nothing of its chain in the last \(ChainFreshness.window / 86400) days, so a server could be hiding a change there (a revoked device) from this account", kind: .verification)
            }
            return state
        }
    }

    /// Whether `contact`'s identity now (on its chain) is the one this account pinned
    /// at `generation`: else it changed (a revocation on its side renewed it), and
    /// nothing more is sealed to the old one, which a revoked device of it holds.
    func contactIsCurrent(_ contact: AccountID, generation: UInt32, in state: ChainState) async throws -> Bool {
        let theirs: ChainState
        do {
            theirs = try await contactChain(contact)
        } catch let error as KeyVaultError where error.code == .notFound {
            return false  // deleted, or no longer pinning this account: nothing more goes to it
        }  // contact_stale goes on: share refuses, a rotation ends the grant (endGrantsToChangedContacts)
        // A revocation on its side since its identity was set: the revoked device holds
        // it, so it is as good as changed, renewed or not.
        guard let now = theirs.identity, now.generation == generation, !theirs.exposedSince(now) else { return false }
        let pinned = try pinnedIdentity(of: contact, generation: generation, in: state)
        return now.signingKey == pinned.signingKey && now.boxKey == pinned.boxKey
    }

    /// Ends the grants of `member` whose grantee's identity changed since it was
    /// pinned (`share.revoke`), before a new generation is made: the new key must not
    /// reach the old identity. The people verify each other again, then share again.
    ///
    /// - Returns: whether it ended any.
    @discardableResult
    func endGrantsToChangedContacts(of member: MemberID) async throws -> Bool {
        var ended = false
        for grant in try chain.grants.values where grant.member == member {
            do {
                guard try await !contactIsCurrent(grant.grantee, generation: grant.granteeIdentityGeneration, in: try chain) else { continue }
                progress(.endingShare(member: member, grantee: grant.grantee, because: .granteeIdentityChanged))
            } catch let error as KeyVaultError where error.kind == .verification {
                // Its view is stale (perhaps frozen by the server) or refused: the next generation
                // must not go to an identity a revoked device may hold.
                progress(.endingShare(member: member, grantee: grant.grantee, because: .granteeNotVerifiable(error)))
            }
            try await endGrant(member, grant.grantee)
            ended = true
        }
        return ended
    }

    /// A `share.revoke` link; done already when another device ended the grant first.
    func endGrant(_ member: MemberID, _ grantee: AccountID) async throws {
        let key = ChainState.GrantKey(member: member, grantee: grantee)
        try await end(.shareRevoke, ["member": member.rawValue, "grantee": grantee.rawValue], "unshare") { $0.grants[key] != nil }
    }

    /// A `contact.unpin` link; done already when another device ended the pin first.
    func unpin(_ contact: AccountID) async throws {
        try await end(.contactUnpin, ["account": contact.rawValue], "contact unpin") { $0.contacts[contact] != nil }
    }

    /// Appends a link of `type` that ends something, while `inForce` says it still is
    /// on the chain it builds on: another device ending it first is as good.
    private func end(_ type: LinkType, _ body: [String: String], _ what: String, inForce: (ChainState) -> Bool) async throws {
        struct EndedAlready: Error {}
        do {
            try await write(what) { state in
                guard inForce(state) else { throw EndedAlready() }
                return (AppendRequest(link: makeLink(type, body, after: state)), {})
            }
        } catch is EndedAlready {}
    }

    /// Signs again, by this device, the pins and grants the person keeps from a device
    /// about to be revoked: each pin (`contact.pin`, the same identity) while the
    /// contact's identity on its own chain is still the pinned one, then each grant
    /// (`share.revoke`, `share.grant` with a box of every generation) while its pin
    /// stands. Only items still in force as `kept` names them (the same link); others
    /// are left to end with the revocation.
    ///
    /// - Returns: the items it signed again.
    func resign(_ kept: [ChainState.Standing], revoking targets: Set<DeviceID>) async throws -> [ChainState.Standing] {
        var signed = [ChainState.Standing]()
        // Whether each contact's identity is still the pinned one, checked once per contact.
        var current = [AccountID: Bool]()
        for item in kept {
            guard case .contactPin(let contact) = item.subject, let pin = try chain.contacts[contact], pin.link == item.link,
                  try await keepable(contact, pin, checked: &current) else { continue }
            try await write("contact pin") { state in
                guard let pin = state.contacts[contact], pin.link == item.link else {
                    throw KeyVaultError(.unknownContact, "another device changed the pin of \(contact) meanwhile")
                }
                let identity = ContactIdentity(account: contact, generation: pin.generation, signingKey: pin.signingKey, boxKey: pin.boxKey)
                return (AppendRequest(link: makeLink(.contactPin, Self.pinBody(identity), after: state)), {})
            }
            signed.append(item)
        }
        for item in kept {
            // The grant rests on its pin: kept only when that pin stays (signed again above, or by a device that stays).
            guard case .shareGrant(let key) = item.subject, let existing = try chain.grants[key], existing.granted == item.link,
                  let pin = try chain.contacts[key.grantee], !targets.contains(pin.signer),
                  try await keepable(key.grantee, pin, checked: &current) else { continue }
            progress(.keepingShare(member: key.member, grantee: key.grantee))
            try await endGrant(key.member, key.grantee)
            do {
                try await grant(key, readOnly: existing.readOnly, signer: try await currentIdentity())
                signed.append(item)
            } catch let error as KeyVaultError where error.kind != .network {
                // Ended and not made again: the safe side. The revocation goes on; the person shares it again.
                progress(.shareNotKept(member: key.member, grantee: key.grantee, reason: error))
            }
        }
        return signed
    }

    /// Whether `contact`'s identity on its own chain is still `pin` (remembered in
    /// `checked`); a contact that is not, or whose view is stale or refused, is not kept.
    private func keepable(_ contact: AccountID, _ pin: ChainState.Identity, checked: inout [AccountID: Bool]) async throws -> Bool {
        if let known = checked[contact] { return known }
        let answer: Bool
        do {
            answer = try await contactIsCurrent(contact, generation: pin.generation, in: try chain)
            if !answer { progress(.contactNotKept(contact, reason: nil)) }
        } catch let error as KeyVaultError where error.kind == .verification {
            progress(.contactNotKept(contact, reason: error))
            answer = false
        }
        checked[contact] = answer
        return answer
    }

    /// The body of a `contact.pin` link of `identity`.
    static func pinBody(_ identity: ContactIdentity) -> [String: String] {
        ["account": identity.account.rawValue, "identityGeneration": String(identity.generation),
         "signingKey": Hex.encode(identity.signingKey.rawRepresentation), "boxKey": Hex.encode(identity.boxKey.rawRepresentation)]
    }

    // MARK: Granting

    /// A member of this account shared with another account.
    public struct Grant: Sendable, Equatable {
        public internal(set) var member: MemberID
        public internal(set) var grantee: AccountID
        public internal(set) var readOnly: Bool
        /// The `share.grant` link.
        public internal(set) var granted: UInt64
    }

    /// The grants in force, from the verified chain.
    public func grants() throws -> [Grant] {
        try chain.grants.values.map { Grant(member: $0.member, grantee: $0.grantee, readOnly: $0.readOnly, granted: $0.granted) }
            .sorted { ($0.member.rawValue, $0.grantee.rawValue) < ($1.member.rawValue, $1.grantee.rawValue) }
    }

    /// Shares `member` with a verified contact: a `share.grant` link, and every
    /// generation of the member key sealed to the identity this account pinned for it
    /// (never to one the server names), signed by this account's identity.
    ///
    /// Appends `share.grant`; before it, `identity.set` when the account has no sharing
    /// identity yet, and any work a revocation or recovery rotation left undone.
    ///
    /// - Throws: `unknown_contact` when `grantee` was not verified (`addContact`),
    ///   `grant_exists` when it is shared with it already.
    @discardableResult
    public func share(_ member: Member, with grantee: AccountID, readOnly: Bool) async throws -> Grant {
        try await exclusively {
            guard member.sharer == nil else {
                throw KeyVaultError(.invalidInput, "\(member.name) is shared with this account by \(member.sharer!); only its own account shares it on")
            }
            try await sync()
            guard let pin = try chain.contacts[grantee] else {
                throw KeyVaultError(.unknownContact, "\(grantee) is not a verified contact of this account", kind: .input)
            }
            let key = ChainState.GrantKey(member: member.id, grantee: grantee)
            guard try chain.grants[key] == nil else {
                throw KeyVaultError(.grantExists, "\(member.name) is already shared with \(grantee)", kind: .input)
            }
            guard try await contactIsCurrent(grantee, generation: pin.generation, in: try chain) else {
                throw KeyVaultError(.contactChanged, "the sharing identity of \(grantee) is no longer the one this account verified, or that account has not verified this one: nothing was shared", kind: .verification)
            }
            try await grant(key, readOnly: readOnly, signer: try await currentIdentity(), afterRotations: true)
            let grant = try chain.grants[key]
            return Grant(member: member.id, grantee: grantee, readOnly: readOnly, granted: grant?.granted ?? 0)
        }
    }

    /// A `share.grant` link for `key`, with a box of every generation of the member's
    /// key sealed to the identity this account pinned for the grantee.
    private func grant(_ key: ChainState.GrantKey, readOnly: Bool, signer: SharingIdentityKeys, afterRotations: Bool = false) async throws {
        try await write("share", afterRotations: afterRotations) { state in
            guard state.members[key.member] != nil else {
                throw KeyVaultError(.noSuchMember, "another device removed member \(key.member) meanwhile: nothing was shared")
            }
            guard let contact = state.contacts[key.grantee] else {
                throw KeyVaultError(.unknownContact, "another device replaced the pin of \(key.grantee) meanwhile: nothing was shared")
            }
            let link = makeLink(.shareGrant, ["member": key.member.rawValue, "grantee": key.grantee.rawValue,
                                              "granteeIdentityGeneration": String(contact.generation),
                                              "readOnly": readOnly ? "true" : "false"], after: state)
            var after = state
            try after.apply(link)
            guard let grant = after.grants[key] else { throw KeyVaultError(.chainInvalid, "the grant did not apply") }
            return (AppendRequest(link: link, shareBoxes: try await everyGeneration(of: grant, in: after, signer: signer)), {})
        }
    }

    /// Takes a share back: a `share.revoke` link, then a member key rotation sealed
    /// to this account's devices and the remaining grants only, so the former grantee
    /// never receives the next generation (and the server refuses its devices).
    ///
    /// Appends `share.revoke`, then `member.rotate` of the member (before it, the master
    /// rotation a revocation left undone).
    ///
    /// - Returns: the member key's new generation.
    @discardableResult
    public func unshare(_ member: Member, with grantee: AccountID) async throws -> UInt32 {
        try await exclusively {
            try await sync()
            let key = ChainState.GrantKey(member: member.id, grantee: grantee)
            guard try chain.grants[key] != nil else {
                throw KeyVaultError(.unknownGrant, "\(member.name) is not shared with \(grantee)", kind: .input)
            }
            try await endGrant(member.id, grantee)
            progress(.rotatingMemberKeyAfterUnshare(member: member.id, name: member.name, grantee: grantee))
            return try await rotateMember(member.id)
        }
    }

    /// Members unshared and not rotated since (an unshare interrupted before its rotation).
    func unsharedWithoutRotation() -> [MemberID] {
        var pending = [MemberID]()
        for (index, link) in links.enumerated() where link.type == .shareRevoke {
            guard let raw = link.body["member"], let member = MemberID(rawValue: raw), state?.members[member] != nil,
                  !pending.contains(member) else { continue }
            if !links[(index + 1)...].contains(where: { $0.type == .memberRotate && $0.body["member"] == raw }) { pending.append(member) }
        }
        return pending
    }

    /// `key` (member generation `generation`) sealed to each grant's grantee at the
    /// identity generation the grant names, as this account pinned it, and signed by
    /// this account's current identity.
    func shareBoxes(of key: SymmetricKey, member: MemberID, generation: UInt32, grants: [ChainState.Grant],
                    in state: ChainState) async throws -> [ShareBox] {
        guard !grants.isEmpty, let identity = state.identity else { return [] }
        return try shareBoxes(of: key, member: member, generation: generation, grants: grants, in: state,
                              signer: try await identityKeys(generation: identity.generation))
    }

    func shareBoxes(of key: SymmetricKey, member: MemberID, generation: UInt32, grants: [ChainState.Grant],
                    in state: ChainState, signer: SharingIdentityKeys) throws -> [ShareBox] {
        try grants.sorted { $0.grantee.rawValue < $1.grantee.rawValue }.map { grant in
            let boxKey = try pinnedIdentity(of: grant.grantee, generation: grant.granteeIdentityGeneration, in: state).boxKey
            var box = ShareBox(member: member, memberGeneration: generation, grantee: grant.grantee,
                               granteeIdentityGeneration: grant.granteeIdentityGeneration, grant: grant.granted,
                               box: base64Encode(try boxKey.sealedBox(for: key)))
            box.sign(with: signer.signing, sharer: account)
            return box
        }
    }

    /// Every generation of the granted member's key so far, sealed for `grant` and
    /// signed by `signer` (a new grant; every grant at an identity renewal).
    private func everyGeneration(of grant: ChainState.Grant, in state: ChainState, signer: SharingIdentityKeys) async throws -> [ShareBox] {
        var boxes = [ShareBox]()
        for h in 1...(state.members[grant.member]?.generation ?? 1) {
            boxes += try shareBoxes(of: try await memberKey(grant.member, generation: h), member: grant.member, generation: h,
                                    grants: [grant], in: state, signer: signer)
        }
        return boxes
    }

    /// The identity this account pinned for `grantee` at identity generation
    /// `generation`: the pin now, or the earlier `contact.pin` a grant still names.
    func pinnedIdentity(of grantee: AccountID, generation: UInt32, in state: ChainState) throws -> ChainState.Identity {
        if let pin = state.contacts[grantee], pin.generation == generation { return pin }
        guard let pinned = try identityLink(.contactPin, generation: generation, contact: grantee) else {
            throw KeyVaultError(.unknownContact, "this account never pinned identity generation \(generation) of \(grantee)")
        }
        return pinned
    }

}
