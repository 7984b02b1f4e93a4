import Foundation
import KeyVaultCrypto
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault

// Rotation and revocation: a new master key, the work a revocation or a recovery
// rotation leaves (pending rotations), revoking devices with what they did (driven by
// the authority table, `LinkAuthority.table`), and the recovery code.

extension Vault {
    // MARK: Master key

    /// A new master key generation, sealed to every active device and the recovery
    /// key; every generation of every member key is wrapped under it.
    ///
    /// Appends `master.rotate`.
    @discardableResult
    public func rotateMaster() async throws -> UInt32 {
        try await exclusively {
            var made: UInt32 = 0
            try await write("master rotate") { state in
                let g = state.masterGeneration + 1
                let key = SymmetricKey()
                var wraps = [MemberWrap]()
                for member in state.members.values.sorted(by: { $0.id.rawValue < $1.id.rawValue }) {
                    for h in 1...member.generation {
                        let memberKey = try await memberKey(member.id, generation: h)
                        wraps.append(try MemberKeyWrap.seal(memberKey, account: account, member: member.id, memberGeneration: h,
                                                            under: key, masterGeneration: g))
                    }
                }
                // The sharing identity's private halves, every generation, follow the master key.
                var identityWraps = [IdentityWrap]()
                for i in state.identityGenerations {
                    identityWraps.append(try IdentityKeyWrap.seal(try await identityKeys(generation: i), account: account,
                                                                  under: key, masterGeneration: g))
                }
                let link = makeLink(.masterRotate, ["masterGeneration": String(g),
                                                    "masterKeyCheck": try MasterKeyCheck.compute(key, generation: g)], after: state)
                var after = state
                try after.apply(link)
                made = g  // the last build is the one that landed
                return (AppendRequest(link: link, boxes: try boxes(key, generation: g, in: after), wraps: wraps, identityWraps: identityWraps),
                        { self.record.masterKeys[g] = key })
            }
            return made
        }
    }

    /// Work a revocation or recovery rotation left undone (interrupted): pins and
    /// grants a revoked device signed, a master key rotation, member key rotations
    /// after a revocation, a recovery rotation or an unshare, and a new sharing
    /// identity after a revocation or a recovery rotation.
    public struct PendingRotation: Sendable, Equatable {
        public var master: Bool
        public var members: [MemberID]
        /// The sharing identity was set before the last revocation or recovery
        /// rotation: a revoked device, or the old code, reaches its private halves, so a
        /// new generation replaces it.
        public var identity: Bool = false
        /// Pins and grants a revoked device signed that are still in force, and the
        /// grants that rest on such a pin: ended first (`share.revoke`, `contact.unpin`).
        public var ends: [Standing] = []
        public var isEmpty: Bool { !master && members.isEmpty && !identity && ends.isEmpty }
    }

    public func pendingRotation() throws -> PendingRotation {
        let state = try chain
        // An account.reset leaves nothing of before it to rotate: its own master key and code are new.
        let reset = links.lastIndex { $0.type == .accountReset } ?? -1
        let lastRevoke = links.lastIndex { $0.type == .deviceRevoke }.flatMap { $0 > reset ? $0 : nil }
        let lastRecovery = links.lastIndex { $0.type == .recoverySet && $0.body["recoveryGeneration"] != "1" }.flatMap { $0 > reset ? $0 : nil }
        // An unshare is finished by a member rotation the former grantee never receives.
        let unshared = unsharedWithoutRotation()
        let ends = state.revocation(of: [], by: device).ended.map(Standing.init)
        guard let start = [lastRevoke, lastRecovery].compactMap({ $0 }).max() else {
            return PendingRotation(master: false, members: unshared, ends: ends)
        }
        // A revoked device held the identity and the master key; a superseded recovery
        // code opens the master key it was sealed, and with it the identity's wraps.
        let lastIdentity = links.lastIndex { $0.type == .identitySet }.flatMap { $0 > reset ? $0 : nil }
        let identity = lastIdentity.map { start > $0 } ?? false
        // The rotation starts with the first master rotation after the revocation or
        // the new code: a member key made before that (added or rotated) was wrapped
        // under a master key the revoked device or the old code opens, so only a
        // member rotation after it counts.
        let masterRotated = links[(start + 1)...].firstIndex { $0.type == .masterRotate }
        let later = masterRotated.map { links[($0 + 1)...] } ?? []
        var members = [MemberID]()
        for member in state.members.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            let added = links.firstIndex { $0.type == .memberAdd && $0.body["member"] == member.rawValue } ?? 0
            guard added < (masterRotated ?? links.endIndex) else { continue }
            if !later.contains(where: { $0.type == .memberRotate && $0.body["member"] == member.rawValue }) { members.append(member) }
        }
        return PendingRotation(master: masterRotated == nil, members: members + unshared.filter { !members.contains($0) },
                               identity: identity, ends: ends)
    }

    /// Before something new is made under the current generations (a member, an
    /// upload): finishes the rotations a revocation left undone, so that nothing
    /// new is ever made under a generation a revoked device knows.
    func finishRevocationFirst() async throws {
        // Until none is left: another device's revocation may land while this one's rotation runs.
        for _ in 0..<Self.maxAttempts {
            guard !(try pendingRotation().isEmpty) else { return }
            progress(.finishingPendingWork)
            try await finishPendingRotations()
        }
        throw KeyVaultError(.tooManyConflicts, "revocations kept coming while their key rotations were being finished")
    }

    /// Finishes pending rotations, with progress.
    ///
    /// Appends what ``pendingRotation()`` lists, in this order: `share.revoke` and
    /// `contact.unpin` for what revoked devices signed, `master.rotate`, `identity.set`,
    /// and `member.rotate` for each member.
    public func finishPendingRotations() async throws {
        try await exclusively {
            // First what revoked devices granted: nothing made below is sealed to it.
            try await endOrphaned()
            let pending = try pendingRotation()
            let total = (pending.master ? 1 : 0) + pending.members.count + (pending.identity ? 1 : 0)
            var done = 0
            if pending.master {
                progress(.rotatingMasterKey(step: done + 1, of: total))
                try await rotateMaster()
                done += 1
            }
            // Right after the master key (its private halves go under the new one), and
            // before the member keys, whose new generations it then signs.
            if try pendingRotation().identity {
                progress(.renewingSharingIdentity(step: done + 1, of: total))
                try await renewIdentity()
                done += 1
            }
            for member in pending.members where try pendingRotation().members.contains(member) {
                progress(.rotatingMemberKey(member, step: done + 1, of: total))
                try await rotateMember(member)
                done += 1
            }
        }
    }

    /// Ends every pin and grant in force that a revoked device signed, and every grant
    /// that rests on such a pin (``ChainState/revocation(of:keeping:keepingContacts:by:)``): the grants
    /// with `share.revoke` (their members' keys then rotate), then the pins with
    /// `contact.unpin`. Another device ending one first is as good.
    func endOrphaned() async throws {
        let ends = try chain.revocation(of: [], by: device).ended
        for item in ends {
            guard case .shareGrant(let key) = item.subject else { continue }
            progress(.endingShare(member: key.member, grantee: key.grantee, because: .madeByRevokedDevice))
            try await endGrant(key.member, key.grantee)
        }
        for item in ends {
            guard case .contactPin(let contact) = item.subject else { continue }
            progress(.endingPin(contact: contact))
            try await unpin(contact)
        }
    }

    // MARK: Devices

    /// The device `text` names: a whole id, a unique prefix of one, or a unique name.
    public func device(matching text: String) throws -> Device {
        let devices = try chain.devices.values.map(Device.init)
        if let id = DeviceID(rawValue: text), let device = devices.first(where: { $0.id == id }) { return device }
        let matches = devices.filter { (text.count >= 4 && $0.id.rawValue.hasPrefix(text)) || $0.name == text }
        guard matches.count == 1 else {
            throw KeyVaultError(.noSuchDevice, matches.isEmpty ? "no device of this account matches \(text.debugDescription)"
                                                             : "\(text.debugDescription) matches \(matches.count) devices")
        }
        return matches[0]
    }

    /// What revoking a device takes with it (docs/formats/account-chain.md, "History"
    /// and "Authority").
    public struct RevocationPlan: Sendable, Equatable {
        /// The device asked for, then every active device it added (directly or with
        /// a recovery code it set), and theirs in turn, less those kept.
        public internal(set) var targets: [Device]
        /// Devices it added that stay: kept by the person, or this device.
        public internal(set) var kept: [Device]
        /// Contact pins and share grants those devices signed (and grants resting on
        /// such a pin), ended before the master key rotation.
        public var ended: [Standing] { endedOnChain.map(Standing.init) }
        package internal(set) var endedOnChain: [ChainState.Standing]
        /// Pins and grants they signed that the person keeps (by the contact's account
        /// id): re-signed by this device.
        public var keptStanding: [Standing] { keptOnChain.map(Standing.init) }
        package internal(set) var keptOnChain: [ChainState.Standing]
        /// Whether the recovery code is (or will be) compromised: it needs replacing.
        public internal(set) var compromisesRecovery: Bool
        /// Set by ``Vault/revoke(_:newRecoveryCode:parameters:)``: a new code was set.
        public internal(set) var replacedRecoveryCode = false
    }

    /// The devices, pins and grants revoking `target` ends, keeping the devices and
    /// the contacts (by account id: their pins and the grants to them) in `keep`.
    ///
    /// - Throws: `invalid_input` when `target` is this device, or when `keep` names a
    ///   device that `target` (or a device revoked with it) did not add, or a contact
    ///   whose pin and grants it did not sign.
    public func revocationPlan(for target: Device, keeping keep: Set<DeviceID> = [],
                               keepingContacts keepContacts: Set<AccountID> = []) throws -> RevocationPlan {
        try revocationPlan(for: [target], keeping: keep, keepingContacts: keepContacts)
    }

    /// The same for several devices revoked at once, in one rotation (pruning devices
    /// long unseen): `targets` first in the plan, in their order.
    public func revocationPlan(for targets: [Device], keeping keep: Set<DeviceID> = [],
                               keepingContacts keepContacts: Set<AccountID> = []) throws -> RevocationPlan {
        let state = try chain
        guard !targets.isEmpty else { throw KeyVaultError(.invalidInput, "no device to revoke") }
        let chained = try targets.map { target in
            guard target.id != device else {
                throw KeyVaultError(.invalidInput, "this device cannot revoke itself: revoke it from another device of the account")
            }
            guard let chained = state.devices[target.id] else {
                throw KeyVaultError(.noSuchDevice, "\(target.id) is not a device of this account")
            }
            return chained
        }
        let what = targets.count == 1 ? targets[0].name.debugDescription : "the devices revoked"
        let revocation = state.revocation(of: chained, keeping: keep, keepingContacts: keepContacts, by: device)
        for id in keep where !revocation.keptDevices.contains(where: { $0.id == id }) {
            throw KeyVaultError(.invalidInput, "\(id) is to be kept, but \(what) did not add it, so revoking it does not revoke that device; nothing was changed")
        }
        for id in keepContacts where !revocation.kept.contains(where: { $0.account == id }) {
            throw KeyVaultError(.invalidInput, "\(id) is to be kept, but \(what) neither pinned nor shared with that account, so revoking it ends nothing of it; nothing was changed")
        }
        return RevocationPlan(targets: revocation.devices.map(Device.init), kept: revocation.keptDevices.map(Device.init), endedOnChain: revocation.ended,
                              keptOnChain: revocation.kept, compromisesRecovery: revocation.compromisesRecovery)
    }

    /// Revokes a device, the devices it added, and the pins and grants they signed
    /// (``revocationPlan(for:keeping:keepingContacts:)``).
    ///
    /// Appends what ``revoke(_:newRecoveryCode:parameters:)`` does for the plan
    /// ``revocationPlan(for:keeping:keepingContacts:)`` makes.
    public func revoke(_ target: Device) async throws {
        _ = try await exclusively {
            try await revoke(try revocationPlan(for: target))
        }
    }

    /// Revokes every device of `plan`, then every device that descends from them and
    /// is not kept, until none is left: the thief may add one between the plan and
    /// the revocation landing, and once the revocations land the revoked devices can
    /// add nothing more. Re-signs the pins and grants the plan keeps; ends every other
    /// pin and grant a revoked device signed (``endOrphaned()``). When the recovery
    /// code is compromised then (the plan said so, or the thief set one meanwhile),
    /// sets the code `newRecoveryCode` gives (nil: the account is left without a
    /// working code until one is set). Then rotates the master key, renews the sharing
    /// identity and rotates every member key, so that no revoked device ever receives
    /// a generation made after it. Resumable: running it again (with the same plan) finishes.
    ///
    /// Appends, in this order: `contact.pin` and `share.grant` again for each kept contact
    /// (signed by this device), `device.revoke`, `share.revoke` and `contact.unpin` for
    /// what the revoked devices signed, `recovery.set` (when a new code is given),
    /// `master.rotate`, `identity.set`, and `member.rotate` for each member.
    ///
    /// - Returns: the plan as carried out: every device revoked, and those kept.
    @discardableResult
    public func revoke(_ plan: RevocationPlan, newRecoveryCode: () throws -> RecoveryCode? = { nil },
                       parameters cost: RecoveryCost = .recovery) async throws -> RevocationPlan {
        try await revoke(plan, newRecoveryCode: newRecoveryCode, argon2: cost.parameters)
    }

    /// The same at any Argon2id parameters for the new code.
    @discardableResult
    package func revoke(_ plan: RevocationPlan, newRecoveryCode: () throws -> RecoveryCode?,
                        argon2 parameters: Argon2id.Parameters) async throws -> RevocationPlan {
        try await exclusively {
            // The plan is the caller's value: whatever it says, this device is never among the revoked.
            guard !plan.targets.contains(where: { $0.id == device }) else {
                throw KeyVaultError(.invalidInput, "this device cannot revoke itself: revoke it from another device of the account")
            }
            let keep = Set(plan.kept.map(\.id))
            var done = plan
            // First, while nothing is revoked yet, the pins and grants the person keeps are
            // signed again by this device: exactly those the plan showed (a grant the thief
            // adds meanwhile is not among them), and a pin only while the contact's identity
            // is still the pinned one. Everything else a revoked device signed ends below.
            done.keptOnChain = try await resign(plan.keptOnChain, revoking: Set(plan.targets.map(\.id)))
            var next = plan.targets
            var rounds = 0
            while !next.isEmpty {
                // Each round revokes at least one device for good, so the account's size bounds
                // the rounds; a server that keeps undoing them is not followed for ever.
                rounds += 1
                guard rounds <= (try chain.devices.count) + 1 else {
                    throw KeyVaultError(.tooManyConflicts, "the devices to revoke kept coming back active", kind: .verification)
                }
                for target in next where try chain.devices[target.id]?.isActive == true {
                    progress(.revokingDevice(name: target.name, id: target.id))
                    do {
                        try await write("device revoke") { state in
                            (AppendRequest(link: makeLink(.deviceRevoke, ["device": target.id.rawValue], after: state)), {})
                        }
                    } catch let error as KeyVaultError where error.code == .alreadyRevoked {
                        // Another device (perhaps the thief's, to make this stop) revoked it first: done.
                        try await sync()
                    }
                }
                // The same rule as the plan's, on the chain as it is now; and any target a
                // server claimed was revoked already but is not.
                let state = try chain
                let added = state.revocation(of: done.targets.compactMap { state.devices[$0.id] }, keeping: keep, by: device).devices
                    .filter { added in !done.targets.contains { $0.id == added.id } }.map(Device.init)
                next = done.targets.filter { state.devices[$0.id]?.isActive == true } + added
                done.targets += added
            }
            // What the revoked devices signed, as the chain has it now (the thief may have pinned
            // more meanwhile): all of it ends, before any new key is made.
            done.endedOnChain = try chain.revocation(of: [], by: device).ended
            try await endOrphaned()
            // The new code first, so that the master key made next is sealed to it.
            if try chain.recovery?.isCompromised == true {
                done.compromisesRecovery = true
                let code: RecoveryCode?
                do {
                    code = try newRecoveryCode()
                } catch {
                    // Every revocation has landed: rotate away from the revoked devices anyway
                    // (sealed to devices only), then report why the code was not replaced.
                    try await finishPendingRotations()
                    throw error
                }
                if let code {
                    try await setRecoveryCode(code, argon2: parameters)
                    done.replacedRecoveryCode = true
                }
            }
            try await finishPendingRotations()
            return done
        }
    }

    // MARK: Recovery code

    /// Sets a new recovery code (the old one stops working), and rotates the master
    /// key so that nothing the old code could open is current.
    ///
    /// Appends `recovery.set`; when it replaces a code, then what
    /// ``finishPendingRotations()`` appends (`master.rotate`, `identity.set` when the
    /// account has a sharing identity, `member.rotate` for each member).
    public func setRecoveryCode(_ code: RecoveryCode, parameters cost: RecoveryCost = .recovery) async throws {
        try await setRecoveryCode(code, argon2: cost.parameters)
    }

    /// What ``resetAccount(recoveryCode:parameters:)`` ended and made.
    public struct ResetResult: Sendable, Equatable {
        public var revokedDevices = 0
        public var removedMembers = 0
        public var endedShares = 0
        public var masterGeneration: UInt32 = 0
        public var recoveryGeneration: UInt32 = 0
    }

    /// Wipes the account but for this device, in one link (`account.reset`): every other
    /// device is revoked, every member removed (the server deletes its keys and
    /// attachments with the link), every share and contact ended; a new master key is
    /// sealed to this device and to `code`, which replaces the recovery code. Other
    /// devices and the old code open nothing afterwards. The account id stays.
    ///
    /// Authority: what the link grants is the new master key and `code`, both this
    /// device's doing: revoking this device later compromises `code`, as for `recovery.set`.
    public func resetAccount(recoveryCode code: RecoveryCode, parameters cost: RecoveryCost = .recovery) async throws -> ResetResult {
        try await resetAccount(recoveryCode: code, argon2: cost.parameters)
    }

    package func resetAccount(recoveryCode code: RecoveryCode, argon2 parameters: Argon2id.Parameters) async throws -> ResetResult {
        try await exclusively {
            guard code.mnemonic.wordCount == RecoveryCode.wordCount else {
                throw KeyVaultError(.invalidInput, "a recovery code has 24 words; this one has \(code.mnemonic.wordCount)")
            }
            try await sync()
            let salt = SystemRandom.bytes(count: Argon2id.saltByteCount)
            progress(.derivingRecoveryKeys(iterations: parameters.iterations, memoryKiB: parameters.memoryKiB))
            let keys = try await RecoveryKeys.derive(code: code.mnemonic, salt: salt, parameters: parameters)
            guard let genesis = links.first?.hash else { throw KeyVaultError(.chainInvalid, "no chain") }
            var result = ResetResult()
            try await write("account reset") { state in
                let g = state.masterGeneration + 1, r = (state.recovery?.generation ?? 0) + 1
                let master = SymmetricKey()
                let link = makeLink(.accountReset, ["masterGeneration": String(g), "masterKeyCheck": try MasterKeyCheck.compute(master, generation: g),
                                                    "authKey": Hex.encode(keys.authKey.publicKey.rawRepresentation),
                                                    "boxKey": Hex.encode(keys.boxKey.publicKey.rawRepresentation),
                                                    "recoveryGeneration": String(r)], after: state)
                var after = state
                try after.apply(link)
                let anchor = try RecoveryAnchor(account: account, genesis: genesis).seal(under: keys, generation: r)
                result = ResetResult(revokedDevices: state.activeDevices.count - after.activeDevices.count, removedMembers: state.members.count,
                                     endedShares: state.grants.count, masterGeneration: g, recoveryGeneration: r)
                return (AppendRequest(link: link, boxes: try boxes(master, generation: g, in: after),
                                      recovery: keys.slot(salt: salt, parameters: parameters, anchor: anchor)), {
                    // Nothing of before is kept: the old keys open nothing the account still has.
                    self.record.masterKeys = [g: master]
                    self.record.memberKeys = [:]
                    self.identityCache = [:]
                    self.sharedKeys = [:]
                })
            }
            return result
        }
    }

    /// The same at any Argon2id parameters (the tests).
    package func setRecoveryCode(_ code: RecoveryCode, argon2 parameters: Argon2id.Parameters) async throws {
        try await exclusively {
            // DESIGN: a recovery code is 24 words (256 bits); shorter BIP39 codes are not enough for a key that opens everything.
            guard code.mnemonic.wordCount == RecoveryCode.wordCount else {
                throw KeyVaultError(.invalidInput, "a recovery code has 24 words; this one has \(code.mnemonic.wordCount)")
            }
            // Open every key first, so that the rotation after the new code needs nothing more from the server.
            let state = try chain
            _ = try await masterKey()
            for member in state.members.values {
                for h in 1...member.generation { _ = try await memberKey(member.id, generation: h) }
            }
            for i in state.identityGenerations { _ = try await identityKeys(generation: i) }
            let salt = SystemRandom.bytes(count: Argon2id.saltByteCount)
            progress(.derivingRecoveryKeys(iterations: parameters.iterations, memoryKiB: parameters.memoryKiB))
            let keys = try await RecoveryKeys.derive(code: code.mnemonic, salt: salt, parameters: parameters)
            guard let genesis = links.first?.hash else { throw KeyVaultError(.chainInvalid, "no chain") }
            var generation: UInt32 = 0
            try await write("recovery rotate") { state in
                generation = (state.recovery?.generation ?? 0) + 1
                let anchor = try RecoveryAnchor(account: account, genesis: genesis).seal(under: keys, generation: generation)
                let link = makeLink(.recoverySet, ["authKey": Hex.encode(keys.authKey.publicKey.rawRepresentation),
                                               "boxKey": Hex.encode(keys.boxKey.publicKey.rawRepresentation),
                                               "recoveryGeneration": String(generation)], after: state)
                // The generation current where the link lands: after a retry, another device may have rotated it.
                let (master, g) = try await masterKey()
                let recoveryBox = try box(master, generation: g, at: link.sequence, to: ChainLink.recoverySigner, boxKey: keys.boxKey.publicKey)
                return (AppendRequest(link: link, boxes: [recoveryBox], recovery: keys.slot(salt: salt, parameters: parameters, anchor: anchor)), {})
            }
            if generation > 1 {
                progress(.rotatingMasterKeyAwayFromOldRecoveryCode)
                try await finishPendingRotations()
            }
        }
    }
}
