import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault

// The key ring: every key this device opens, each from what the server keeps (a box
// sealed to this device, a wrap under the master key), checked against the verified
// chain before use, and cached (the master and member keys in the device record, the
// sharing identity for this session only).

extension Vault {
    // MARK: Master key

    /// The current master key: from the cache, else from this device's box, verified.
    package func masterKey() async throws -> (key: SymmetricKey, generation: UInt32) {
        try await exclusively {
            let state = try chain
            let g = state.masterGeneration
            if let cached = record.masterKeys[g] { return (cached, g) }
            let boxes = try await api.boxes(generation: g)
            guard let box = boxes.first(where: { $0.recipient == record.device.rawValue && $0.generation == g }) else {
                throw KeyVaultError(.missingKey, "the server has no master key box of generation \(g) for this device", kind: .verification)
            }
            let key = try Self.open(box, in: state, with: record.keys.boxKey)
            record.masterKeys[g] = key
            try home.save(record)
            return (key, g)
        }
    }

    /// Verifies a key box against the chain and opens it.
    static func open(_ box: KeyBox, in state: ChainState, with boxKey: X25519.PrivateKey) throws -> SymmetricKey {
        do {
            try box.verify(in: state)
        } catch {
            throw KeyVaultError.verification(error, "the master key box for generation \(box.generation) is refused")
        }
        guard let sealed = base64Decode(box.box), let key = try? SymmetricKey(boxKey.openSealedBox(sealed)) else {
            throw KeyVaultError(.badBox, "the master key box for generation \(box.generation) does not open with this device's key",
                              kind: .verification)
        }
        // Signed by a device active where it names is not enough: one revoked later could
        // have sealed a key of its own choosing. The generation's link says which key it is;
        // where it names none (a link without the field), only a signer trusted now counts.
        if state.masterKeyChecks[box.generation] == nil {
            let trustedNow = box.signer == ChainLink.recoverySigner
                ? state.recovery.map { !$0.isCompromised && $0 == state.recovery(at: box.sequence) } ?? false
                : DeviceID(rawValue: box.signer).flatMap { state.devices[$0] }?.isActive == true
            guard trustedNow else {
                throw KeyVaultError(.badBox, "the master key box for generation \(box.generation) was made by a signer revoked since, and that generation's link names no key check to compare it with", kind: .verification)
            }
        }
        guard try MasterKeyCheck.matches(key, generation: box.generation, in: state) else {
            throw KeyVaultError(.badBox, "the master key in the box for generation \(box.generation) is not the one the chain's link for that generation names (signed by \(box.signer.prefix(8))…)", kind: .verification)
        }
        return key
    }

    // MARK: Under the master key

    /// A member key generation: from the cache, else from its wrap under the current master key.
    package func memberKey(_ member: MemberID, generation: UInt32) async throws -> SymmetricKey {
        try await exclusively {
            if let cached = record.memberKeys[member]?[generation] { return cached }
            guard let current = try chain.members[member], (1...current.generation).contains(generation) else {
                throw KeyVaultError(.noSuchMember, "member \(member) has no key generation \(generation)")
            }
            let key = try await unwrapUnderMasterKey("member \(member.rawValue.prefix(8))… generation \(generation)",
                                                     wraps: { try await api.wraps(member: member) },
                                                     matching: { $0.member == member && $0.memberGeneration == generation && $0.masterGeneration == $1 },
                                                     open: { try MemberKeyWrap.open($0, account: account, masterKey: $1, masterGeneration: $2) })
            record.memberKeys[member, default: [:]][generation] = key
            try home.save(record)
            return key
        }
    }

    /// The private halves of identity generation `generation`: opened from its wrap
    /// under the current master key and checked against the keys the chain publishes.
    func identityKeys(generation: UInt32) async throws -> SharingIdentityKeys {
        try await exclusively {
            if let cached = identityCache[generation] { return cached }
            let published = try publishedIdentity(generation)
            let keys = try await unwrapUnderMasterKey("sharing identity generation \(generation)",
                                                      wraps: { try await api.identityWraps() },
                                                      matching: { $0.identityGeneration == generation && $0.masterGeneration == $1 },
                                                      open: { try IdentityKeyWrap.open($0, account: account, masterKey: $1, masterGeneration: $2) })
            guard keys.matches(published) else {
                throw KeyVaultError(.badBox, "the sharing identity in the server's wrap of generation \(generation) is not the one this account's chain publishes",
                                    kind: .verification)
            }
            identityCache[generation] = keys
            return keys
        }
    }

    /// What the server keeps wrapped under the master key, opened: the wrap `matching`
    /// the current master generation, opened with that key. The server choosing no wrap,
    /// or one that does not open, is refused as untrusted.
    private func unwrapUnderMasterKey<Wrap, Key>(_ what: String, wraps: () async throws -> [Wrap],
                                                 matching: (Wrap, UInt32) -> Bool,
                                                 open: (Wrap, SymmetricKey, UInt32) throws -> Key) async throws -> Key {
        let (master, g) = try await masterKey()
        guard let wrap = try await wraps().first(where: { matching($0, g) }) else {
            throw KeyVaultError(.missingKey, "the server has no wrap of \(what) under master key \(g)", kind: .verification)
        }
        do {
            return try open(wrap, master, g)
        } catch {
            throw KeyVaultError.verification(error, "the wrap of \(what) is refused")
        }
    }

    // MARK: Member keys as attachments use them

    func memberKeys(_ member: MemberID, generation: UInt32) async throws -> MemberKeys {
        try MemberKeys(member: member, generation: generation, memberKey: try await memberKey(member, generation: generation))
    }

    /// The keys of `member` at `generation`: this account's own, or the ones a sharer's box gave.
    func memberKeys(_ member: Member, generation: UInt32) async throws -> MemberKeys {
        guard member.sharer != nil else { return try await memberKeys(member.id, generation: generation) }
        return try MemberKeys(member: member.id, generation: generation, memberKey: try await sharedKey(member, generation: generation))
    }
}
