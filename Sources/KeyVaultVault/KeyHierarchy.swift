import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol

// The client's key hierarchy below the master key (docs/formats/member-keys.md and
// docs/formats/attachment.md). Every wrap is an envelope whose context binds where
// it belongs, so a wrap the server moves to another member, generation or account
// does not open.

/// A member key generation wrapped under a master key generation.
package enum MemberKeyWrap {
    static func context(account: AccountID, member: MemberID, memberGeneration: UInt32) throws -> EnvelopeContext {
        try EnvelopeContext(purpose: "member-key", ["account": account.rawValue, "member": member.rawValue,
                                                    "member-generation": String(memberGeneration)])
    }

    /// Wraps `memberKey` (member `member`, generation `memberGeneration`) under master key generation `masterGeneration`.
    package static func seal(_ memberKey: SymmetricKey, account: AccountID, member: MemberID, memberGeneration: UInt32,
                            under masterKey: SymmetricKey, masterGeneration: UInt32) throws -> MemberWrap {
        let envelope = try Envelope.seal(memberKey, under: masterKey, generation: masterGeneration,
                                         context: context(account: account, member: member, memberGeneration: memberGeneration))
        return MemberWrap(member: member, memberGeneration: memberGeneration, masterGeneration: masterGeneration, envelope: envelope.base64)
    }

    /// Opens a wrap the server sent.
    ///
    /// - Throws: `VaultError` `wrap_mismatch` when the wrap does not open under this
    ///   master key for exactly this account, member and generation (moved or altered).
    package static func open(_ wrap: MemberWrap, account: AccountID, masterKey: SymmetricKey, masterGeneration: UInt32) throws -> SymmetricKey {
        let mismatch = VaultError(.wrapMismatch, "the server's wrap of member \(wrap.member.rawValue.prefix(8))… generation \(wrap.memberGeneration) does not open for that member and generation: it was moved or altered")
        guard wrap.masterGeneration == masterGeneration, let envelope = try? Envelope(base64: wrap.envelope),
              envelope.generation == masterGeneration else { throw mismatch }
        do {
            return try SymmetricKey(envelope.open(using: masterKey, context: context(account: account, member: wrap.member,
                                                                                       memberGeneration: wrap.memberGeneration)))
        } catch is CryptoError {
            throw mismatch
        }
    }
}

/// A member's display name, sealed under the member's first key generation (which
/// every later master key re-wraps), so that only devices of the account read it.
package enum MemberName {
    static func context(account: AccountID, member: MemberID) throws -> EnvelopeContext {
        try EnvelopeContext(purpose: "member-name", ["account": account.rawValue, "member": member.rawValue])
    }

    /// The name under member key `generation` (1 for `member.add`; the newest for `member.rename`).
    package static func seal(_ name: String, account: AccountID, member: MemberID, key: SymmetricKey, generation: UInt32 = 1) throws -> String {
        try Envelope.seal(Array(name.utf8), under: key, generation: generation, context: context(account: account, member: member)).base64
    }

    /// Opens a name with the member key of the generation it was sealed under
    /// (``ChainState/Member/nameGeneration``).
    package static func open(_ sealed: String, account: AccountID, member: MemberID, key: SymmetricKey) throws -> String {
        guard let envelope = try? Envelope(base64: sealed),
              let plain = try? envelope.open(using: key, context: context(account: account, member: member)),
              let name = String(validating: plain.unprotectedCopy(), as: UTF8.self) else {
            throw VaultError(.wrapMismatch, "the name of member \(member.rawValue.prefix(8))… does not open under its key")
        }
        return name
    }
}

/// Keys derived from one member key generation.
package struct MemberKeys: Sendable {
    package let member: MemberID
    package let generation: UInt32
    package let contentAddressKey: ContentAddressKey
    /// AWK: wraps attachment data keys.
    let keyWrapKey: SymmetricKey
    /// AMK: seals attachments' names and details (docs/formats/attachment-meta.md).
    let metaKey: SymmetricKey

    package init(member: MemberID, generation: UInt32, memberKey: SymmetricKey) throws {
        self.member = member
        self.generation = generation
        contentAddressKey = try ContentAddressKey(memberKey: memberKey, generation: generation)
        keyWrapKey = try HKDF.deriveKey(from: memberKey, info: Array("keyvault/v1/attachment-key-wrap".utf8))
        metaKey = try HKDF.deriveKey(from: memberKey, info: Array("keyvault/v1/attachment-meta".utf8))
    }
}

/// Sealing and opening attachments (docs/formats/attachment.md).
package enum AttachmentCrypto {
    static func context(_ purpose: String, account: AccountID, member: MemberID, address: ContentAddress) throws -> EnvelopeContext {
        try EnvelopeContext(purpose: purpose, ["account": account.rawValue, "member": member.rawValue, "address": address.description])
    }

    /// Seals `plaintext` (already addressed as `address`) under a fresh data key wrapped
    /// under `keys`, in chunks (version 2).
    package static func seal(_ plaintext: some RawBytes, address: ContentAddress, account: AccountID, keys: MemberKeys,
                             chunkShift: UInt8 = AttachmentObject.defaultChunkShift) throws -> AttachmentObject {
        try seal(reading: { body in try plaintext.withUnsafeBytes(body) }, address: address, account: account, keys: keys,
                 chunkShift: chunkShift)
    }

    /// Seals `plaintext` in one envelope (version 1): what older clients stored, and
    /// what the tests make to check it still opens.
    package static func sealWhole(_ plaintext: [UInt8], address: ContentAddress, account: AccountID, keys: MemberKeys) throws -> AttachmentObject {
        let dataKey = SymmetricKey()
        let content = try Envelope.seal(plaintext, under: dataKey, generation: 1,
                                        context: context("attachment-content", account: account, member: keys.member, address: address))
        return AttachmentObject(key: try wrapDataKey(dataKey, address: address, account: account, keys: keys), content: content.bytes)
    }

    static func wrapDataKey(_ dataKey: SymmetricKey, address: ContentAddress, account: AccountID, keys: MemberKeys) throws -> [UInt8] {
        try Envelope.seal(dataKey, under: keys.keyWrapKey, generation: keys.generation,
                          context: context("attachment-key", account: account, member: keys.member, address: address)).bytes
    }

    /// The member key generation a key part is wrapped under (from its envelope header).
    package static func keyGeneration(of key: [UInt8]) throws -> UInt32 {
        guard let envelope = try? Envelope(bytes: key) else {
            throw VaultError(.malformedAttachment, "the attachment's key part is not an envelope")
        }
        return envelope.generation
    }

    /// Opens the key part with `keys` (of the generation the key part names).
    package static func openDataKey(_ key: [UInt8], address: ContentAddress, account: AccountID, keys: MemberKeys) throws -> SymmetricKey {
        do {
            let envelope = try Envelope(bytes: key)
            return try SymmetricKey(envelope.open(using: keys.keyWrapKey,
                                                  context: context("attachment-key", account: account, member: keys.member, address: address)))
        } catch is CryptoError {
            throw VaultError(.addressMismatch, "the data key of \(address) does not open for this member and address: it was moved or altered")
        }
    }

    /// Re-wraps a key part from `old` keys under `new` keys; the data key never leaves guarded memory.
    package static func rewrap(_ key: [UInt8], address: ContentAddress, account: AccountID, from old: MemberKeys, to new: MemberKeys) throws -> [UInt8] {
        try wrapDataKey(openDataKey(key, address: address, account: account, keys: old), address: address, account: account, keys: new)
    }

    /// Opens an attachment and checks its content against `address`.
    ///
    /// - Parameters:
    ///   - keyKeys: the member keys of the key part's generation.
    ///   - addressKeys: the member keys of the address's generation.
    /// - Throws: `VaultError` `address_mismatch` when anything does not open or the
    ///   content's address is not `address`.
    package static func open(_ object: AttachmentObject, address: ContentAddress, account: AccountID,
                            keyKeys: MemberKeys, addressKeys: MemberKeys) throws -> SecureBytes {
        let dataKey = try openDataKey(object.key, address: address, account: account, keys: keyKeys)
        if object.version == AttachmentObject.streamedVersion {
            return try openStreamed(object, dataKey: dataKey, address: address, addressKeys: addressKeys)
        }
        let plaintext: SecureBytes
        do {
            plaintext = try Envelope(bytes: object.content).open(
                using: dataKey, context: context("attachment-content", account: account, member: keyKeys.member, address: address))
        } catch is CryptoError {
            throw VaultError(.addressMismatch, "the content stored at \(address) does not open under its data key: it was moved or altered")
        }
        let actual = try addressKeys.contentAddressKey.address(of: plaintext)
        guard constantTimeEquals(actual.mac, address.mac), actual.generation == address.generation else {
            throw VaultError(.addressMismatch, "the content stored at \(address) does not match its address")
        }
        return plaintext
    }
}

/// A master key generation's check value (docs/formats/member-keys.md, "Master key
/// check"): the genesis and `master.rotate` links carry it, so a device that opens a
/// box can tell the key in it is the one the generation's maker sealed. Without it, a
/// device revoked later could sign (at a link where it was still active) a box of a
/// key of its own choosing for that generation, and a device that had not opened the
/// generation yet would take it for the real one.
package enum MasterKeyCheck {
    /// 16 bytes of HMAC-SHA256(key, "keyvault/v1/master-key-check" ‖ 0x00 ‖ u32 generation), hex.
    package static func compute(_ key: SymmetricKey, generation: UInt32) throws -> String {
        var data = Array("keyvault/v1/master-key-check".utf8) + [0]
        withUnsafeBytes(of: generation.bigEndian) { data += $0 }
        return Hex.encode(Array(try HMACSHA256.authenticationCode(for: data, using: key).prefix(16)))
    }

    /// Whether `key` matches the check the chain holds for `generation` (true when it holds none).
    package static func matches(_ key: SymmetricKey, generation: UInt32, in state: ChainState) throws -> Bool {
        guard let expected = state.masterKeyChecks[generation] else { return true }
        return constantTimeEquals(Array(try compute(key, generation: generation).utf8), Array(expected.utf8))
    }
}
