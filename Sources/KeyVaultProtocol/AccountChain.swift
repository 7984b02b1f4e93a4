import KeyVaultCrypto
import KeyVaultModel

// docs/formats/account-chain.md is the specification of everything in this file.

/// What one link changed in the state besides its head, as `apply` made it: what a
/// store writes beside the link (rows of devices added and revoked, members removed,
/// the uploads of grants ended), with no comparison of the state before and after.
package struct ChainChange: Sendable, Equatable {
    package var addedDevice: ChainState.Device?
    package var revokedDevices: [DeviceID] = []
    package var removedMembers: [MemberID] = []
    /// The grants the link ended (share.revoke, account.reset), as they stood then.
    package var endedGrants: [ChainState.Grant] = []
    package init() {}
}

/// What an account chain says at its head, built by replaying every link and
/// refusing any that does not follow. Server and client both use it.
package struct ChainState: Sendable, Equatable {
    package struct Device: Sendable, Equatable {
        package var id: DeviceID
        package var name: String
        package var signingKey: Ed25519.PublicKey
        package var boxKey: X25519.PublicKey
        package var added: UInt64
        package var revoked: UInt64?
        /// The device that added this one (for a device added with the recovery
        /// code, the device that set that code); nil for the genesis device.
        package var addedBy: DeviceID?
        package var isActive: Bool { revoked == nil }

        /// Whether the device was in the account just after link `sequence`.
        package func wasActive(at sequence: UInt64) -> Bool { added <= sequence && (revoked.map { $0 > sequence } ?? true) }
    }

    package struct Recovery: Sendable, Equatable {
        package var authKey: Ed25519.PublicKey
        package var boxKey: X25519.PublicKey
        package var generation: UInt32
        /// The link that set this code.
        package var set: UInt64
        /// The device the code comes from: the one that set it, or for a code set
        /// with the previous code, that code's origin.
        package var setBy: DeviceID
        /// The link that revoked `setBy` or a device that added it: from then on
        /// the code signs nothing and receives no key.
        package var compromised: UInt64?
        /// Whether the code is compromised now (only a `recovery.set` by a device ends it).
        package var isCompromised: Bool { compromised != nil }

        /// Whether the code could sign and receive boxes just after link `sequence`.
        func wasTrusted(at sequence: UInt64) -> Bool { compromised.map { $0 > sequence } ?? true }
    }

    package struct Member: Sendable, Equatable {
        package var id: MemberID
        package var generation: UInt32
        /// Base64 envelope of the member's name (opaque to the server), under member key
        /// generation ``nameGeneration`` (docs/formats/member-keys.md).
        package var name: String
        /// 1 from `member.add`; the generation a `member.rename` sealed the name under.
        package var nameGeneration: UInt32 = 1
    }

    /// A sharing identity: this account's (``identity``) or a pinned contact's
    /// (docs/formats/member-sharing.md).
    package struct Identity: Sendable, Equatable {
        package var generation: UInt32
        package var signingKey: Ed25519.PublicKey
        package var boxKey: X25519.PublicKey
        /// The link that set it (`identity.set`) or pinned it (`contact.pin`).
        package var link: UInt64
        /// The device that signed that link.
        package var signer: DeviceID
    }

    /// Who a grant is for: a member of this account and another account.
    package struct GrantKey: Sendable, Hashable {
        package var member: MemberID
        package var grantee: AccountID
        package init(member: MemberID, grantee: AccountID) {
            self.member = member
            self.grantee = grantee
        }
    }

    package struct Grant: Sendable, Equatable {
        package var member: MemberID
        package var grantee: AccountID
        /// The grantee's identity generation, as pinned when the grant was made.
        package var granteeIdentityGeneration: UInt32
        package var readOnly: Bool
        /// The `share.grant` link.
        package var granted: UInt64
        /// The device that signed it.
        package var signer: DeviceID
        /// The `share.revoke` link that ended it.
        package var revoked: UInt64?
    }

    package private(set) var account: AccountID
    package private(set) var head: String
    package private(set) var sequence: UInt64
    package private(set) var devices: [DeviceID: Device]
    /// Every recovery code the chain has set, oldest first.
    package private(set) var recoveries: [Recovery]
    package private(set) var masterGeneration: UInt32
    /// The link at which each master key generation started (index 0: generation 1).
    package private(set) var masterGenerationStarts: [UInt64]
    /// The check value each generation's link committed to, where it carries one.
    package private(set) var masterKeyChecks: [UInt32: String]
    package private(set) var members: [MemberID: Member]
    /// Members taken out (`member.remove`), by the link that removed them: an id is never added again.
    package private(set) var removedMembers: [MemberID: UInt64]
    /// The account's current sharing identity (its last `identity.set`; none after an `account.reset`).
    package private(set) var identity: Identity?
    /// The generation of the identity an `account.reset` retired (0 if none): a new
    /// identity follows it, so that contacts never see a generation go back.
    package private(set) var retiredIdentityGeneration: UInt32
    /// The contacts pinned with `contact.pin`, by account (a re-pin replaces the pin).
    package private(set) var contacts: [AccountID: Identity]
    /// The grants in force.
    package private(set) var grants: [GrantKey: Grant]
    /// The grants taken back, oldest first.
    package private(set) var revokedGrants: [Grant]

    /// The identity generations whose private halves the account keeps (wrapped under
    /// the master key): those since the last `account.reset`, up to the current one.
    package var identityGenerations: [UInt32] {
        guard let identity, identity.generation > retiredIdentityGeneration else { return [] }
        return Array((retiredIdentityGeneration + 1)...identity.generation)
    }

    /// The generation a new `identity.set` takes.
    package var nextIdentityGeneration: UInt32 { (identity?.generation ?? retiredIdentityGeneration) + 1 }

    /// The current recovery code, if one was ever set.
    package var recovery: Recovery? { recoveries.last }

    package var activeDevices: [Device] { devices.values.filter(\.isActive).sorted { $0.added < $1.added } }

    /// Starts a chain from its genesis link.
    ///
    /// - Throws: `ProtocolError` (`malformed_link`, `bad_signature`) when the link
    ///   is not a valid self-signed genesis.
    package init(genesis link: ChainLink) throws {
        try Self.checkShape(link)
        try Self.checkFields(link)
        guard link.type == .genesis, link.sequence == 0, link.previous == ChainLink.noPrevious else {
            throw ProtocolError.malformed("the first link must be a genesis link with sequence 0 and no previous link")
        }
        let device = try Self.newDevice(from: link, sequence: 0)
        guard link.signer == device.id.rawValue else {
            throw ProtocolError.malformed("a genesis link is signed by the device it adds")
        }
        try Self.verify(link, by: device.signingKey)
        guard link.body["masterGeneration"] == "1" else {
            throw ProtocolError.malformed("a genesis link starts master key generation 1")
        }
        account = link.accountID
        head = link.hash
        sequence = 0
        devices = [device.id: device]
        recoveries = []
        masterGeneration = 1
        masterGenerationStarts = [0]
        masterKeyChecks = try Self.masterKeyCheck(link).map { [1: $0] } ?? [:]
        members = [:]
        removedMembers = [:]
        identity = nil
        retiredIdentityGeneration = 0
        contacts = [:]
        grants = [:]
        revokedGrants = []
    }

    /// Replays a whole chain.
    package init(links: [ChainLink]) throws {
        guard let first = links.first else { throw ProtocolError.malformed("an account chain has at least a genesis link") }
        try self.init(genesis: first)
        for link in links.dropFirst() { try apply(link) }
    }

    /// Applies the next link, or throws and changes nothing; returns what it changed.
    ///
    /// Each case makes every check that can throw first and only then changes the state
    /// in place (`aRefusedLinkLeavesTheChainStateAsItWas`): a copy of the state per link,
    /// changed and kept, copied each changed table whole, which made replaying a chain of
    /// n links take time in n².
    ///
    /// - Throws: `stale_chain` when `previous` is not the head (someone else wrote
    ///   first); `malformed_link`, `bad_signature`, `unknown_signer`,
    ///   `signer_revoked`, `no_such_device`, `already_revoked`, `stale_generation`,
    ///   `last_device` for links that do not follow; for the sharing links
    ///   (docs/formats/member-sharing.md) also `unknown_member`, `no_identity`,
    ///   `unknown_contact`, `contact_changed`, `grant_exists`, `unknown_grant`.
    @discardableResult
    package mutating func apply(_ link: ChainLink) throws -> ChainChange {
        try Self.checkShape(link)
        guard link.previous == head, link.sequence == sequence + 1 else {
            throw ProtocolError(.staleChain, "the link follows \(link.previous.prefix(12))… at \(link.sequence), but the head is \(head.prefix(12))… at \(sequence)")
        }
        guard link.type != .genesis else { throw ProtocolError.malformed("only the first link is a genesis link") }
        try Self.checkFields(link)
        // The signer: an active device, or the recovery key for device.add and recovery.set.
        let signingKey: Ed25519.PublicKey
        if link.signer == ChainLink.recoverySigner {
            guard let recovery else { throw ProtocolError(.unknownSigner, "no recovery code is set for this account") }
            guard link.type == .deviceAdd || link.type == .recoverySet else {
                throw ProtocolError(.unknownSigner, "the recovery key may only add a device or set a new recovery code")
            }
            guard !recovery.isCompromised else {
                throw ProtocolError(.recoveryCompromised, "the recovery code was compromised at link \(recovery.compromised ?? 0) (the device it comes from was revoked); it signs nothing")
            }
            signingKey = recovery.authKey
        } else {
            guard let id = DeviceID(rawValue: link.signer), let device = devices[id] else {
                throw ProtocolError(.unknownSigner, "the link is signed by a device this account does not have")
            }
            guard device.isActive else { throw ProtocolError(.signerRevoked, "the link is signed by a revoked device") }
            signingKey = device.signingKey
        }
        try Self.verify(link, by: signingKey)
        // The device the link comes from: its signer, or for the recovery key the device
        // that set the code (checked above: a recovery-signed link has a code to sign with).
        guard let origin = link.signer == ChainLink.recoverySigner ? recovery?.setBy : DeviceID(rawValue: link.signer) else {
            throw ProtocolError(.unknownSigner, "the link is signed by a device this account does not have")
        }

        var change = ChainChange()
        switch link.type {
        case .genesis:
            break
        case .deviceAdd:
            var device = try Self.newDevice(from: link, sequence: link.sequence)
            device.addedBy = origin
            guard devices[device.id] == nil else { throw ProtocolError(.deviceExists, "that device is already part of this account") }
            devices[device.id] = device
            change.addedDevice = device
        case .deviceRevoke:
            let id = try Self.deviceField(link)
            guard var device = devices[id] else { throw ProtocolError(.noSuchDevice, "no such device in this account") }
            guard device.isActive else { throw ProtocolError(.alreadyRevoked, "that device is already revoked") }
            guard activeDevices.count > 1 else {
                throw ProtocolError(.lastDevice, "the last active device cannot be revoked")
            }
            let compromises = recoveryCompromised(byRevoking: id)
            device.revoked = link.sequence
            devices[id] = device
            if compromises, let last = recoveries.indices.last {
                recoveries[last].compromised = link.sequence
            }
            change.revokedDevices = [id]
        case .recoverySet:
            let authKey = try Ed25519.PublicKey(rawRepresentation: Self.hexField(link, "authKey", count: 32))
            let boxKey = try X25519.PublicKey(rawRepresentation: Self.hexField(link, "boxKey", count: 32))
            let generation = try Self.generationField(link, "recoveryGeneration")
            guard generation == (recovery?.generation ?? 0) + 1 else {
                throw ProtocolError(.staleGeneration, "recovery generation \(generation) does not follow \(recovery?.generation ?? 0)")
            }
            recoveries.append(Recovery(authKey: authKey, boxKey: boxKey, generation: generation, set: link.sequence, setBy: origin))
        case .masterRotate:
            let generation = try Self.generationField(link, "masterGeneration")
            guard generation == masterGeneration + 1 else {
                throw ProtocolError(.staleGeneration, "master key generation \(generation) does not follow \(masterGeneration)")
            }
            let check = try Self.masterKeyCheck(link)
            masterGeneration = generation
            masterGenerationStarts.append(link.sequence)
            masterKeyChecks[generation] = check
        case .accountReset:
            // A device, not the recovery code (checked above: the code signs only device.add and recovery.set).
            let generation = try Self.generationField(link, "masterGeneration")
            guard generation == masterGeneration + 1 else {
                throw ProtocolError(.staleGeneration, "master key generation \(generation) does not follow \(masterGeneration)")
            }
            guard let check = try Self.masterKeyCheck(link) else { throw ProtocolError.malformed("account.reset needs masterKeyCheck") }
            let authKey = try Ed25519.PublicKey(rawRepresentation: Self.hexField(link, "authKey", count: 32))
            let boxKey = try X25519.PublicKey(rawRepresentation: Self.hexField(link, "boxKey", count: 32))
            let recoveryGeneration = try Self.generationField(link, "recoveryGeneration")
            guard recoveryGeneration == (recovery?.generation ?? 0) + 1 else {
                throw ProtocolError(.staleGeneration, "recovery generation \(recoveryGeneration) does not follow \(recovery?.generation ?? 0)")
            }
            for (id, device) in devices where device.isActive && id != origin {
                devices[id]?.revoked = link.sequence
                change.revokedDevices.append(id)
            }
            recoveries.append(Recovery(authKey: authKey, boxKey: boxKey, generation: recoveryGeneration, set: link.sequence, setBy: origin))
            masterGeneration = generation
            masterGenerationStarts.append(link.sequence)
            masterKeyChecks[generation] = check
            for id in members.keys { removedMembers[id] = link.sequence }
            change.removedMembers = Array(members.keys)
            members = [:]
            for var grant in grants.values.sorted(by: { $0.granted < $1.granted }) {
                grant.revoked = link.sequence
                revokedGrants.append(grant)
                change.endedGrants.append(grant)
            }
            grants = [:]
            contacts = [:]
            retiredIdentityGeneration = identity?.generation ?? retiredIdentityGeneration
            identity = nil
        case .memberAdd:
            guard let id = link.body["member"].flatMap(MemberID.init(rawValue:)) else {
                throw ProtocolError.malformed("member.add needs a member id (32 hex digits)")
            }
            guard members[id] == nil, removedMembers[id] == nil else { throw ProtocolError(.memberExists, "that member already exists, or was removed") }
            guard try Self.generationField(link, "memberGeneration") == 1 else {
                throw ProtocolError(.staleGeneration, "a new member starts at generation 1")
            }
            members[id] = Member(id: id, generation: 1, name: link.body["name"] ?? "")
        case .memberRotate:
            guard let id = link.body["member"].flatMap(MemberID.init(rawValue:)), var member = members[id] else {
                throw ProtocolError(.unknownMember, "no such member in this account")
            }
            let generation = try Self.generationField(link, "memberGeneration")
            guard generation == member.generation + 1 else {
                throw ProtocolError(.staleGeneration, "member key generation \(generation) does not follow \(member.generation)")
            }
            member.generation = generation
            members[id] = member
        case .memberRename:
            guard let id = link.body["member"].flatMap(MemberID.init(rawValue:)), var member = members[id] else {
                throw ProtocolError(.unknownMember, "no such member in this account")
            }
            guard let name = link.body["name"], !name.isEmpty else { throw ProtocolError.malformed("member.rename needs the sealed name") }
            let generation = try Self.generationField(link, "nameGeneration")
            guard (1...member.generation).contains(generation) else {
                throw ProtocolError(.staleGeneration, "the name is sealed under generation \(generation), which member key generations 1 to \(member.generation) do not hold")
            }
            member.name = name
            member.nameGeneration = generation
            members[id] = member
        case .memberRemove:
            guard let id = link.body["member"].flatMap(MemberID.init(rawValue:)), members[id] != nil else {
                throw ProtocolError(.unknownMember, "no such member in this account")
            }
            guard !grants.keys.contains(where: { $0.member == id }) else {
                throw ProtocolError(.grantExists, "the member is still shared: its share.revoke links come first")
            }
            members[id] = nil
            removedMembers[id] = link.sequence
            change.removedMembers = [id]
        case .identitySet:
            let new = try Self.identityFields(link, sequence: link.sequence)
            let current = identity?.generation ?? retiredIdentityGeneration
            guard new.generation == current + 1 else {
                throw ProtocolError(.staleGeneration, "identity generation \(new.generation) does not follow \(current)")
            }
            identity = new
        case .contactPin:
            let contact = try Self.accountField(link)
            guard contact != account else { throw ProtocolError.malformed("contact.pin names another account than this one") }
            contacts[contact] = try Self.identityFields(link, sequence: link.sequence)
        case .contactUnpin:
            let contact = try Self.accountField(link)
            guard contacts[contact] != nil else {
                throw ProtocolError(.unknownContact, "account \(contact) is not a pinned contact of this account")
            }
            guard !grants.keys.contains(where: { $0.grantee == contact }) else {
                throw ProtocolError(.grantExists, "a member is still shared with \(contact): its share.revoke links come first")
            }
            contacts[contact] = nil
        case .shareGrant:
            let key = try Self.grantKey(link)
            let generation = try Self.generationField(link, "granteeIdentityGeneration")
            guard let readOnly = link.body["readOnly"].flatMap({ ["true": true, "false": false][$0] }) else {
                throw ProtocolError.malformed("share.grant needs readOnly: true or false")
            }
            guard members[key.member] != nil else { throw ProtocolError(.unknownMember, "no such member in this account") }
            guard identity != nil else { throw ProtocolError(.noIdentity, "this account has no sharing identity yet (identity.set)") }
            guard let contact = contacts[key.grantee] else {
                throw ProtocolError(.unknownContact, "account \(key.grantee) is not a pinned contact of this account")
            }
            guard generation == contact.generation else {
                throw ProtocolError(.contactChanged, "the grant names identity generation \(generation) of \(key.grantee), but \(contact.generation) is pinned")
            }
            guard grants[key] == nil else { throw ProtocolError(.grantExists, "that member is already shared with that account") }
            grants[key] = Grant(member: key.member, grantee: key.grantee, granteeIdentityGeneration: generation, readOnly: readOnly,
                                     granted: link.sequence, signer: origin)
        case .shareRevoke:
            let key = try Self.grantKey(link)
            guard var grant = grants[key] else {
                throw ProtocolError(.unknownGrant, "that member is not shared with that account")
            }
            grant.revoked = link.sequence
            grants[key] = nil
            revokedGrants.append(grant)
            change.endedGrants = [grant]
        }
        head = link.hash
        sequence = link.sequence
        return change
    }

    // MARK: History

    /// Whether revoking `id` now compromises the current recovery code: the code
    /// was set by `id`, or by a device that descends from it
    /// (docs/formats/account-chain.md, "History").
    package func recoveryCompromised(byRevoking id: DeviceID) -> Bool {
        guard let recovery, !recovery.isCompromised else { return false }
        return recovery.setBy == id || descends(recovery.setBy, from: id)
    }

    /// The active devices that descend from `id` (``descends(_:from:)``).
    package func devicesAdded(by id: DeviceID) -> [Device] {
        activeDevices.filter { descends($0.id, from: id) }
    }

    /// Whether `id` was added by `ancestor`, directly, with a recovery code it set, or
    /// through devices that are revoked already. A thief's device would otherwise hide
    /// behind a revoked intermediate (the phone adds X, X adds Y, the phone revokes
    /// X): only an active intermediate breaks the line, and revoking it answers for
    /// its own descendants.
    package func descends(_ id: DeviceID, from ancestor: DeviceID) -> Bool {
        var parent = devices[id]?.addedBy
        for _ in 0...devices.count {  // each step goes to an earlier link: no cycles, but bounded anyway
            guard let current = parent else { return false }
            if current == ancestor { return true }
            guard let device = devices[current], !device.isActive else { return false }
            parent = device.addedBy
        }
        return false
    }

    /// The master key generation current just after link `sequence` (nil past the head).
    package func masterGeneration(at sequence: UInt64) -> UInt32? {
        guard sequence <= self.sequence, let index = masterGenerationStarts.lastIndex(where: { $0 <= sequence }) else { return nil }
        return UInt32(index + 1)
    }

    /// The recovery code current just after link `sequence`.
    package func recovery(at sequence: UInt64) -> Recovery? {
        recoveries.last { $0.set <= sequence }
    }

    // MARK: Checks

    static func checkShape(_ link: ChainLink) throws {
        guard link.version == 1 else { throw ProtocolError(.unsupportedVersion, "chain link version \(link.version) is not supported") }
        guard link.previous.utf8.count == 64, (try? Hex.decode(link.previous)) != nil else {
            throw ProtocolError.malformed("previous must be 64 hex digits")
        }
        guard link.signer.utf8.count <= 64, link.body.count <= 32 else {
            throw ProtocolError.malformed("the link has too many fields or too long a signer")
        }
        for (key, value) in link.body {
            guard (1...64).contains(key.utf8.count), value.utf8.count <= 16 * 1024 else {
                throw ProtocolError.malformed("link field \(key.prefix(64)) is too long")
            }
        }
        guard let signature = base64Decode(link.signature), signature.count == 64 else {
            throw ProtocolError.malformed("signature must be a base64 64-byte Ed25519 signature")
        }
    }

    /// Refuses a link type without a row in ``LinkAuthority/table``, and a body with a
    /// field its row does not name: every signed field means something, or is refused.
    static func checkFields(_ link: ChainLink) throws {
        guard let authority = link.type.authority else {
            throw ProtocolError.malformed("\(link.type.rawValue) links have no authority rule; this chain does not take them")
        }
        if let extra = link.body.keys.filter({ !authority.fields.contains($0) }).min() {
            throw ProtocolError.malformed("\(link.type.rawValue) has no field \(extra.prefix(64).debugDescription)")
        }
    }

    static func verify(_ link: ChainLink, by key: Ed25519.PublicKey) throws {
        guard let signature = base64Decode(link.signature), key.isValidSignature(signature, for: link.signedBytes) else {
            throw ProtocolError(.badSignature, "the \(link.type.rawValue) link at \(link.sequence) has an invalid signature")
        }
    }

    package static func newDevice(from link: ChainLink, sequence: UInt64) throws -> Device {
        let signingKey = try Ed25519.PublicKey(rawRepresentation: hexField(link, "signingKey", count: 32))
        let boxKey = try X25519.PublicKey(rawRepresentation: hexField(link, "boxKey", count: 32))
        let id = deviceID(for: signingKey)
        guard link.body["device"] == id.rawValue else {
            throw ProtocolError.malformed("the device id must be derived from its signing key")
        }
        let name = link.body["name"] ?? ""
        guard (1...100).contains(name.count) else { throw ProtocolError.malformed("a device name has 1 to 100 characters") }
        return Device(id: id, name: name, signingKey: signingKey, boxKey: boxKey, added: sequence, addedBy: nil)
    }

    /// The optional `masterKeyCheck` of a genesis or master.rotate link: 32 hex digits.
    static func masterKeyCheck(_ link: ChainLink) throws -> String? {
        guard let check = link.body["masterKeyCheck"] else { return nil }
        guard check.utf8.count == 32, (try? Hex.decode(check)) != nil, check == check.lowercased() else {
            throw ProtocolError.malformed("\(link.type.rawValue) needs masterKeyCheck as 32 lowercase hex digits")
        }
        return check
    }

    /// The `identityGeneration`, `signingKey` and `boxKey` of an identity.set or contact.pin link.
    package static func identityFields(_ link: ChainLink, sequence: UInt64) throws -> Identity {
        let generation = try generationField(link, "identityGeneration")
        let signingKey = try Ed25519.PublicKey(rawRepresentation: hexField(link, "signingKey", count: 32))
        let boxKey = try X25519.PublicKey(rawRepresentation: hexField(link, "boxKey", count: 32))
        guard let signer = DeviceID(rawValue: link.signer) else {
            throw ProtocolError(.unknownSigner, "\(link.type.rawValue) is signed by a device")
        }
        return Identity(generation: generation, signingKey: signingKey, boxKey: boxKey, link: sequence, signer: signer)
    }

    static func accountField(_ link: ChainLink, _ name: String = "account") throws -> AccountID {
        guard let id = link.body[name].flatMap(AccountID.init(rawValue:)) else {
            throw ProtocolError.malformed("\(link.type.rawValue) needs \(name): an account id (32 hex digits)")
        }
        return id
    }

    /// The `member` and `grantee` of a share.grant or share.revoke link.
    static func grantKey(_ link: ChainLink) throws -> GrantKey {
        guard let member = link.body["member"].flatMap(MemberID.init(rawValue:)) else {
            throw ProtocolError.malformed("\(link.type.rawValue) needs a member id (32 hex digits)")
        }
        return GrantKey(member: member, grantee: try accountField(link, "grantee"))
    }

    static func deviceField(_ link: ChainLink) throws -> DeviceID {
        guard let id = link.body["device"].flatMap(DeviceID.init(rawValue:)) else {
            throw ProtocolError.malformed("\(link.type.rawValue) needs a device id (32 hex digits)")
        }
        return id
    }

    static func hexField(_ link: ChainLink, _ name: String, count: Int) throws -> [UInt8] {
        guard let text = link.body[name], let bytes = try? Hex.decode(text), bytes.count == count else {
            throw ProtocolError.malformed("\(link.type.rawValue) needs \(name): \(count * 2) hex digits")
        }
        return bytes
    }

    static func generationField(_ link: ChainLink, _ name: String) throws -> UInt32 {
        guard let text = link.body[name], let value = UInt32(text), value > 0, String(value) == text else {
            throw ProtocolError.malformed("\(link.type.rawValue) needs \(name): a positive decimal number")
        }
        return value
    }
}
