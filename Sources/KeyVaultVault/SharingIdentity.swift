import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol

/// The private halves of one generation of an account's sharing identity
/// (docs/formats/member-sharing.md, "Identity"): the Ed25519 key that signs share
/// boxes and the X25519 key member keys are sealed to.
package struct SharingIdentityKeys: Sendable {
    package let generation: UInt32
    package let signing: Ed25519.PrivateKey
    package let boxKey: X25519.PrivateKey

    /// A fresh random identity of this generation.
    package init(generation: UInt32) {
        self.init(generation: generation, signing: Ed25519.PrivateKey(), boxKey: X25519.PrivateKey())
    }

    init(generation: UInt32, signing: Ed25519.PrivateKey, boxKey: X25519.PrivateKey) {
        self.generation = generation
        self.signing = signing
        self.boxKey = boxKey
    }

    /// The `identity.set` link body that publishes the public halves.
    package var linkBody: [String: String] {
        ["identityGeneration": String(generation), "signingKey": Hex.encode(signing.publicKey.rawRepresentation),
         "boxKey": Hex.encode(boxKey.publicKey.rawRepresentation)]
    }

    /// Whether these are the private halves of the public keys `identity` names.
    package func matches(_ identity: ChainState.Identity) -> Bool {
        identity.generation == generation && identity.signingKey == signing.publicKey && identity.boxKey == boxKey.publicKey
    }
}

/// An identity generation's private halves wrapped under a master key generation, as
/// a member key is: an envelope whose context binds the account and the identity
/// generation. Plaintext: the 32-byte Ed25519 seed, then the 32-byte X25519 key.
package enum IdentityKeyWrap {
    static func context(account: AccountID, identityGeneration: UInt32) throws -> EnvelopeContext {
        try EnvelopeContext(purpose: "identity-key", ["account": account.rawValue, "identity-generation": String(identityGeneration)])
    }

    package static func seal(_ keys: SharingIdentityKeys, account: AccountID, under masterKey: SymmetricKey,
                            masterGeneration: UInt32) throws -> IdentityWrap {
        let plaintext = try SecureBytes(count: 64) { out in
            keys.signing.seed.withUnsafeBytes { out.baseAddress!.copyMemory(from: $0.baseAddress!, byteCount: 32) }
            keys.boxKey.rawRepresentation.withUnsafeBytes { (out.baseAddress! + 32).copyMemory(from: $0.baseAddress!, byteCount: 32) }
        }
        let envelope = try Envelope.seal(plaintext, under: masterKey, generation: masterGeneration,
                                         context: context(account: account, identityGeneration: keys.generation))
        return IdentityWrap(identityGeneration: keys.generation, masterGeneration: masterGeneration, envelope: envelope.base64)
    }

    /// Opens a wrap the server sent.
    ///
    /// - Throws: `VaultError` `wrap_mismatch` when it does not open under this master
    ///   key for exactly this account and identity generation (moved or altered).
    package static func open(_ wrap: IdentityWrap, account: AccountID, masterKey: SymmetricKey,
                            masterGeneration: UInt32) throws -> SharingIdentityKeys {
        let mismatch = VaultError(.wrapMismatch, "the server's wrap of sharing identity generation \(wrap.identityGeneration) does not open for that generation: it was moved or altered")
        guard wrap.masterGeneration == masterGeneration, let envelope = try? Envelope(base64: wrap.envelope),
              envelope.generation == masterGeneration else { throw mismatch }
        do {
            let plaintext = try envelope.open(using: masterKey, context: context(account: account, identityGeneration: wrap.identityGeneration))
            guard plaintext.count == 64 else { throw mismatch }
            let seed = try SecureBytes(count: 32) { out in plaintext.withUnsafeBytes { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[0..<32])) } }
            let box = try SecureBytes(count: 32) { out in plaintext.withUnsafeBytes { out.copyMemory(from: UnsafeRawBufferPointer(rebasing: $0[32..<64])) } }
            return SharingIdentityKeys(generation: wrap.identityGeneration, signing: try Ed25519.PrivateKey(seed: seed),
                                       boxKey: try X25519.PrivateKey(rawRepresentation: box))
        } catch is CryptoError {
            throw mismatch
        }
    }
}
