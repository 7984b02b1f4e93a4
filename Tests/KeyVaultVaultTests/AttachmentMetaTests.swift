import Foundation
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCrypto
@testable import KeyVaultVault

// docs/formats/attachment-meta.md: an attachment's name and details, sealed under the
// member key and bound to its account, member and address.

private struct MetaFile: Decodable {
    struct Meta: Decodable { let name: String, size: UInt64, time: Int64, type: String, v: Int }
    let account: String, member: String, address: String, otherAddress: String
    let memberKey: String, metaKey: String, generation: UInt32, meta: Meta, plaintext: String, envelope: String
}

@Test func attachmentNamesOpenAsTheIndependentImplementationSealedThemAndOnlyForTheirAttachment() throws {
    let v = try vectors.load("attachment-meta-v1", as: MetaFile.self)
    let account = try #require(AccountID(rawValue: v.account)), member = try #require(MemberID(rawValue: v.member))
    let address = try #require(ContentAddress(v.address)), other = try #require(ContentAddress(v.otherAddress))
    let memberKey = try SymmetricKey(SecureBytes(copying: Hex.decode(v.memberKey)))
    let keys = try MemberKeys(member: member, generation: v.generation, memberKey: memberKey)
    func keysOf(_ member: MemberID, _ key: SymmetricKey = memberKey) throws -> MemberKeys { try MemberKeys(member: member, generation: v.generation, memberKey: key) }
    let sealed = [UInt8](try #require(Data(base64Encoded: v.envelope)))
    #expect(Hex.encode(keys.metaKey.bytes.unprotectedCopy()) == v.metaKey, "AMK = HKDF(FMK, \"keyvault/v1/attachment-meta\")")
    #expect(try AttachmentMeta.generation(of: sealed) == v.generation)
    let opened = try AttachmentMeta.open(sealed, account: account, address: address, keys: keys)
    #expect(opened == AttachmentMeta(name: v.meta.name, type: v.meta.type, time: v.meta.time, size: v.meta.size))
    // Moved to another attachment, member or account, or opened with another key: refused.
    let stranger = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
    #expect(throws: VaultError.self) { try AttachmentMeta.open(sealed, account: account, address: other, keys: keys) }
    #expect(throws: VaultError.self) { try AttachmentMeta.open(sealed, account: account, address: address, keys: try keysOf(stranger)) }
    #expect(throws: VaultError.self) { try AttachmentMeta.open(sealed, account: AccountID(unchecked: Hex.encode(SystemRandom.bytes(count: 16))), address: address, keys: keys) }
    #expect(throws: VaultError.self) { try AttachmentMeta.open(sealed, account: account, address: address, keys: try keysOf(member, SymmetricKey())) }
    // This implementation's plaintext is the independent one's, byte for byte (sorted keys, no escaped slashes).
    let resealed = try opened.seal(account: account, address: address, keys: keys)
    let plain = try Envelope(bytes: resealed).open(using: keys.metaKey, context: AttachmentMeta.context(account: account, member: member, address: address))
    #expect(String(decoding: plain.unprotectedCopy(), as: UTF8.self) == v.plaintext)
    // A name with a control character (a terminal escape) is not sealed.
    var bad = opened
    bad.name = "scan\u{1B}[2J.pdf"
    #expect(throws: VaultError.self) { try bad.seal(account: account, address: address, keys: keys) }
}
