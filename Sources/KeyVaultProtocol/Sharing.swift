import KeyVaultCrypto
import KeyVaultModel

// docs/formats/member-sharing.md is the specification of everything in this file.

/// An account's sharing identity as another account sees it: the account id and the
/// public halves its chain's `identity.set` link names.
package struct ContactIdentity: Sendable, Equatable {
    package var account: AccountID
    package var generation: UInt32
    package var signingKey: Ed25519.PublicKey
    package var boxKey: X25519.PublicKey

    package init(account: AccountID, generation: UInt32, signingKey: Ed25519.PublicKey, boxKey: X25519.PublicKey) {
        self.account = account
        self.generation = generation
        self.signingKey = signingKey
        self.boxKey = boxKey
    }

    /// An account's current identity, from its replayed chain (nil before `identity.set`).
    package init?(_ chain: ChainState) {
        guard let identity = chain.identity else { return nil }
        self.init(account: chain.account, generation: identity.generation, signingKey: identity.signingKey, boxKey: identity.boxKey)
    }

    /// An identity as the relay carries it (`IdentityKeys`), for `account`; nil when
    /// the generation is 0 or a key is not 32 bytes of lowercase hex.
    package init?(_ keys: IdentityKeys, account: AccountID) {
        guard keys.generation >= 1, Hex.isLowercase(keys.signingKey, byteCount: 32), Hex.isLowercase(keys.boxKey, byteCount: 32),
              let signing = try? Ed25519.PublicKey(rawRepresentation: Hex.decode(keys.signingKey)),
              let box = try? X25519.PublicKey(rawRepresentation: Hex.decode(keys.boxKey)) else { return nil }
        self.init(account: account, generation: keys.generation, signingKey: signing, boxKey: box)
    }

    /// Account, generation and both keys, as the commitment and the safety code take them.
    fileprivate func write(to w: inout CanonicalWriter) {
        w.short(account.rawValue)
        w.u32(generation)
        w.raw(signingKey.rawRepresentation)
        w.raw(boxKey.rawRepresentation)
    }
}

/// The initiator's commitment to its identity and its random value r_A, sent before
/// it sees anything of the responder's: SHA-256 over the account, identity
/// generation, identity keys and r_A.
package enum ContactCommitment {
    package static let nonceByteCount = 32

    /// The commitment, 32 bytes; nil when the nonce is not 32 bytes.
    package static func compute(_ identity: ContactIdentity, nonce: [UInt8]) -> [UInt8]? {
        guard nonce.count == nonceByteCount else { return nil }
        var w = CanonicalWriter(domain: "keyvault/v1/contact/commit")
        identity.write(to: &w)
        w.raw(nonce)
        return SHA256.hash(w.bytes)
    }

    /// True when `nonce` opens `commitment` for this identity (compared in constant time).
    package static func opens(_ commitment: [UInt8], identity: ContactIdentity, nonce: [UInt8]) -> Bool {
        guard commitment.count == 32, let actual = compute(identity, nonce: nonce) else { return false }
        return constantTimeEquals(actual, commitment)
    }
}

/// The six digits both people read to each other before either device pins the
/// other's identity, uniform over 000000-999999 and drawn as ``LinkSAS`` draws its
/// digits, over the ordered transcript: the initiator's identity, commitment and
/// nonce, then the responder's identity and nonce.
package enum ContactSafetyCode {
    /// "ddd ddd"; nil when the commitment or a nonce has the wrong length.
    package static func compute(initiator: ContactIdentity, commitment: [UInt8], initiatorNonce: [UInt8],
                               responder: ContactIdentity, responderNonce: [UInt8]) -> String? {
        guard commitment.count == 32, initiatorNonce.count == ContactCommitment.nonceByteCount,
              responderNonce.count == ContactCommitment.nonceByteCount else { return nil }
        var w = CanonicalWriter(domain: "keyvault/v1/contact/safety-code")
        initiator.write(to: &w)
        w.raw(commitment)
        w.raw(initiatorNonce)
        responder.write(to: &w)
        w.raw(responderNonce)
        return LinkSAS.sixDigits(SHA256.hash(w.bytes))
    }
}

// MARK: Share boxes

extension ShareBox {
    /// The bytes the sharer's identity signs: sharer account, member, member key
    /// generation, grantee account, grantee identity generation, grant link and the
    /// box's hash, so a box cannot be moved to another member, grantee, grant,
    /// generation or sharer.
    package func signedBytes(sharer: AccountID) -> [UInt8] {
        var w = CanonicalWriter(domain: "keyvault/v1/share/box")
        w.short(sharer.rawValue)
        w.short(member.rawValue)
        w.u32(memberGeneration)
        w.short(grantee.rawValue)
        w.u32(granteeIdentityGeneration)
        w.u64(grant)
        w.raw(SHA256.hash(base64Decode(box) ?? []))
        return w.bytes
    }

    /// Signs the box with the sharer's identity signing key (sets `signature`).
    package mutating func sign(with identityKey: Ed25519.PrivateKey, sharer: AccountID) {
        signature = base64Encode(identityKey.signature(for: signedBytes(sharer: sharer)))
    }

    /// Checks the box against the sharer's replayed chain: the member and its key
    /// generation exist, the grant it names is in force for this member and grantee
    /// and names the same grantee identity generation, and the sharer's current
    /// identity signed it.
    ///
    /// - Throws: `ProtocolError` `malformed_box`, `unknown_member`, `wrong_generation`,
    ///   `unknown_grant`, `no_identity`, `bad_signature`, in that order
    ///   (docs/formats/member-sharing.md, "Share boxes").
    package func verify(in sharer: ChainState) throws {
        try checkSealedBox(box, "a share box")
        guard let current = sharer.members[member] else { throw ProtocolError(.unknownMember, "no such member in the sharer's account") }
        guard (1...current.generation).contains(memberGeneration) else {
            throw ProtocolError(.wrongGeneration, "the share box is of member key generation \(memberGeneration), but the member is at \(current.generation)")
        }
        let key = ChainState.GrantKey(member: member, grantee: grantee)
        guard let grant = sharer.grants[key], grant.granted == self.grant else {
            let revoked = sharer.revokedGrants.last { $0.granted == self.grant && $0.member == member && $0.grantee == grantee }
            throw ProtocolError(.unknownGrant, revoked.map { "the grant of link \($0.granted) was revoked at link \($0.revoked ?? 0)" }
                                ?? "link \(self.grant) grants no share of this member to \(grantee)")
        }
        guard granteeIdentityGeneration == grant.granteeIdentityGeneration else {
            throw ProtocolError(.wrongGeneration, "the share box is sealed to identity generation \(granteeIdentityGeneration) of \(grantee), but the grant names \(grant.granteeIdentityGeneration)")
        }
        guard let identity = sharer.identity else { throw ProtocolError(.noIdentity, "the sharer's account has no sharing identity") }
        guard let signature = base64Decode(signature), identity.signingKey.isValidSignature(signature, for: signedBytes(sharer: sharer.account))
        else {
            throw ProtocolError(.badSignature, "the share box of member \(member) for \(grantee) is not signed by the sharer's identity")
        }
    }
}

extension ShareBox {
    /// Checks the box as the grantee must before opening it: both chains replayed by
    /// the grantee's device, the sharer's fetched from the server, its own from its own
    /// account. On top of ``verify(in:)``: the sharer is a contact this account pinned,
    /// and the sharer's identity now is the one pinned (a changed identity is refused
    /// until the person verifies it again, so nothing the server chose is trusted);
    /// the box is for this account, sealed to its identity generation now.
    ///
    /// A sharer that revoked a device after it set its identity is refused as changed
    /// (`contact_changed`): the revoked device holds the identity's private halves,
    /// and could sign a box of a key of its own until the account renews it.
    ///
    /// - Throws: `ProtocolError` `unknown_contact`, `contact_changed`, then what
    ///   ``verify(in:)`` throws, then `unknown_grant` (another grantee) or
    ///   `wrong_generation` (another identity generation of this account).
    package func verify(from sharer: ChainState, for grantee: ChainState) throws {
        guard let pinned = grantee.contacts[sharer.account] else {
            throw ProtocolError(.unknownContact, "\(sharer.account) is not a contact this account verified")
        }
        guard let identity = sharer.identity, identity.generation == pinned.generation,
              identity.signingKey == pinned.signingKey, identity.boxKey == pinned.boxKey
        else {
            throw ProtocolError(.contactChanged, "the sharing identity of \(sharer.account) is not the one this account verified; verify the contact again")
        }
        guard !sharer.exposedSince(identity) else {
            throw ProtocolError(.contactChanged, "\(sharer.account) revoked a device or replaced its recovery code since it set its sharing identity (the device or the old code reaches it): nothing signed with it is trusted until the account renews it and the contact is verified again")
        }
        try verify(in: sharer)
        guard self.grantee == grantee.account else {
            throw ProtocolError(.unknownGrant, "the share box is for \(self.grantee), not for this account")
        }
        guard let own = grantee.identity, own.generation == granteeIdentityGeneration else {
            throw ProtocolError(.wrongGeneration, "the share box is sealed to identity generation \(granteeIdentityGeneration) of this account, which is at \(grantee.identity?.generation ?? 0)")
        }
    }
}

extension ChainState {
    /// Whether a device of this account was revoked, or its recovery code replaced,
    /// after `identity` was set: the revoked device, or whoever has the old code (it
    /// opens the master key the identity was wrapped under), may hold the identity's
    /// private halves, so the identity is no longer to be trusted.
    package func exposedSince(_ identity: Identity) -> Bool {
        devices.values.contains { ($0.revoked ?? 0) > identity.link }
            || recoveries.contains { $0.generation > 1 && $0.set > identity.link }
    }
}

extension IdentityKeys {
    /// The public halves of `identity` as the relay carries them.
    package init(_ identity: ContactIdentity) {
        self.init(generation: identity.generation, signingKey: Hex.encode(identity.signingKey.rawRepresentation),
                  boxKey: Hex.encode(identity.boxKey.rawRepresentation))
    }
}
