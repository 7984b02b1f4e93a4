import KeyVaultCrypto
import KeyVaultModel

// docs/formats/account-chain.md, "Key boxes, version 2".

// MARK: Key boxes

extension KeyBox {
    /// The bytes a box's signature covers: account, generation, the link it was
    /// made at, recipient and the box's hash, so a box cannot be moved to another
    /// slot, link or account.
    package func signedBytes(account: AccountID) -> [UInt8] {
        var w = CanonicalWriter(domain: "keyvault/v2/key-box")
        w.short(account.rawValue)
        w.u32(generation)
        w.u64(sequence)
        w.short(recipient)
        w.raw(SHA256.hash(base64Decode(box) ?? []))
        return w.bytes
    }

    package mutating func sign(with key: Ed25519.PrivateKey, account: AccountID) {
        signature = base64Encode(key.signature(for: signedBytes(account: account)))
    }

    /// Checks the box against the chain as it stood at the link the box names:
    /// that generation current there, the recipient and the signer active there
    /// (a device not yet revoked, or a recovery code not yet compromised).
    ///
    /// - Throws: `ProtocolError` `malformed_box`, `box_position`, `wrong_generation`,
    ///   `unknown_recipient`, `unknown_signer`, `signer_revoked`,
    ///   `recovery_compromised`, `bad_signature` (docs/formats/account-chain.md).
    package func verify(in state: ChainState) throws {
        try checkSealedBox(box, "a key box")
        let s = sequence
        guard let current = state.masterGeneration(at: s) else {
            throw ProtocolError(.boxPosition, "the key box names link \(s), beyond the head of the chain (\(state.sequence))")
        }
        // Exact, not "at most": a device revoked at r can still name a link before r,
        // and there only the generation it was already given is current.
        guard generation == current else {
            throw ProtocolError(.wrongGeneration, "the key box is of master key generation \(generation), but \(current) was current at link \(s)")
        }
        if recipient == ChainLink.recoverySigner {
            guard let recovery = state.recovery(at: s) else {
                throw ProtocolError(.unknownRecipient, "no recovery code was set at link \(s)")
            }
            guard recovery.wasTrusted(at: s) else {
                throw ProtocolError(.recoveryCompromised, "the recovery code of link \(s) was compromised at link \(recovery.compromised ?? 0); it receives no key")
            }
        } else {
            guard let id = DeviceID(rawValue: recipient), state.devices[id]?.wasActive(at: s) == true else {
                throw ProtocolError(.unknownRecipient, "a key box is addressed to a device active at its link, or the recovery key")
            }
        }
        let key: Ed25519.PublicKey
        if signer == ChainLink.recoverySigner {
            guard let recovery = state.recovery(at: s) else { throw ProtocolError(.unknownSigner, "no recovery code was set at link \(s)") }
            guard recovery.wasTrusted(at: s) else {
                throw ProtocolError(.recoveryCompromised, "the key box is signed by the recovery code compromised at link \(recovery.compromised ?? 0)")
            }
            key = recovery.authKey
        } else {
            guard let id = DeviceID(rawValue: signer), let device = state.devices[id], device.added <= s else {
                throw ProtocolError(.unknownSigner, "a key box is signed by a device of the account at its link")
            }
            guard device.wasActive(at: s) else {
                throw ProtocolError(.signerRevoked, "the key box names link \(s), at or after which its signer was revoked (link \(device.revoked ?? 0))")
            }
            key = device.signingKey
        }
        guard let signature = base64Decode(signature), key.isValidSignature(signature, for: signedBytes(account: state.account)) else {
            throw ProtocolError(.badSignature, "the key box for \(recipient) at generation \(generation) has an invalid signature")
        }
    }
}

/// Refuses (`malformed_box`) a box that is not base64 of a sealed box of at most 4096 bytes.
func checkSealedBox(_ box: String, _ what: String) throws {
    guard let bytes = base64Decode(box), bytes.count >= X25519.sealedBoxOverhead, bytes.count <= 4096 else {
        throw ProtocolError(.malformedBox, "\(what) is a base64 sealed box")
    }
}

extension ChainState {
    /// Replays `links` from genesis and judges each box at the link it names, as it
    /// stood there (an import, an export: boxes kept beside a whole chain).
    ///
    /// - Throws: as ``init(links:)`` and ``KeyBox/verify(in:)``; `box_position` for a box
    ///   naming a link past the head.
    package static func replay(_ links: [ChainLink], checking boxes: [KeyBox]) throws -> ChainState {
        guard let genesis = links.first else { throw ProtocolError(.malformedLink, "a chain starts with its genesis link") }
        let boxesAt = Dictionary(grouping: boxes, by: \.sequence)
        var state = try ChainState(genesis: genesis)
        for box in boxesAt[0] ?? [] { try box.verify(in: state) }
        for link in links.dropFirst() {
            try state.apply(link)
            for box in boxesAt[state.sequence] ?? [] { try box.verify(in: state) }
        }
        if let stray = boxes.first(where: { $0.sequence > state.sequence }) {
            throw ProtocolError(.boxPosition, "a key box names link \(stray.sequence), past the chain's head (\(state.sequence))")
        }
        return state
    }
}

extension RecoverySlot {
    /// Whether this slot names the keys of `recovery` (the code a chain set).
    package func names(_ recovery: ChainState.Recovery) -> Bool {
        authKey == Hex.encode(recovery.authKey.rawRepresentation) && boxKey == Hex.encode(recovery.boxKey.rawRepresentation)
    }
}
