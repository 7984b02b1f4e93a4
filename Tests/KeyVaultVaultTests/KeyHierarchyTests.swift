import Foundation
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCrypto
@testable import KeyVaultVault

struct HierarchyFile: Decodable {
    struct Wraps: Decodable { let masterKey: String, memberKey: String, wraps: [Wrap] }
    struct Wrap: Decodable { let memberGeneration: UInt32, masterGeneration: UInt32, envelope: String }
    struct Name: Decodable { let firstKey: String, name: String, envelope: String }
    struct Attachment: Decodable {
        let addressGeneration: UInt32, addressMemberKey: String, keyGeneration: UInt32, keyMemberKey: String
        let plaintext: String, dataKey: String, address: String, object: String
    }
    let account: String, member: String, otherMember: String
    let memberWraps: Wraps
    let memberName: Name
    let attachment: Attachment

    static func load() throws -> HierarchyFile {
        try vectors.load("key-hierarchy-v1", as: HierarchyFile.self)
    }
}

func key(_ hex: String) throws -> SymmetricKey { try SymmetricKey(SecureBytes(copying: Hex.decode(hex))) }

@Test func memberKeyWrapsOpenAsTheIndependentImplementationSealedThem() throws {
    let v = try HierarchyFile.load()
    let account = try #require(AccountID(rawValue: v.account)), member = try #require(MemberID(rawValue: v.member))
    let other = try #require(MemberID(rawValue: v.otherMember))
    let master = try key(v.memberWraps.masterKey)
    for w in v.memberWraps.wraps {
        let wrap = MemberWrap(member: member, memberGeneration: w.memberGeneration, masterGeneration: w.masterGeneration, envelope: w.envelope)
        let opened = try MemberKeyWrap.open(wrap, account: account, masterKey: master, masterGeneration: w.masterGeneration)
        #expect(Hex.encode(opened) == v.memberWraps.memberKey)
        // Moved to another member, member generation or account: refused.
        for moved in [MemberWrap(member: other, memberGeneration: w.memberGeneration, masterGeneration: w.masterGeneration, envelope: w.envelope),
                      MemberWrap(member: member, memberGeneration: w.memberGeneration + 1, masterGeneration: w.masterGeneration, envelope: w.envelope)] {
            #expect(throws: VaultError.self) { try MemberKeyWrap.open(moved, account: account, masterKey: master, masterGeneration: w.masterGeneration) }
        }
        let elsewhere = AccountID(unchecked: String(repeating: "0", count: 32))
        #expect(throws: VaultError.self) { try MemberKeyWrap.open(wrap, account: elsewhere, masterKey: master, masterGeneration: w.masterGeneration) }
    }
    // Sealing round-trips.
    let fresh = SymmetricKey()
    let sealed = try MemberKeyWrap.seal(fresh, account: account, member: member, memberGeneration: 4, under: master, masterGeneration: 9)
    #expect(try MemberKeyWrap.open(sealed, account: account, masterKey: master, masterGeneration: 9) == fresh)
}

@Test func memberNamesOpenAsTheIndependentImplementationSealedThem() throws {
    let v = try HierarchyFile.load()
    let account = try #require(AccountID(rawValue: v.account)), member = try #require(MemberID(rawValue: v.member))
    #expect(try MemberName.open(v.memberName.envelope, account: account, member: member, key: key(v.memberName.firstKey)) == v.memberName.name)
    #expect(throws: VaultError.self) {
        try MemberName.open(v.memberName.envelope, account: account, member: MemberID(rawValue: v.otherMember)!, key: key(v.memberName.firstKey))
    }
}

@Test func attachmentObjectsOpenAsTheIndependentImplementationSealedThem() throws {
    let v = try HierarchyFile.load()
    let a = v.attachment
    let account = try #require(AccountID(rawValue: v.account)), member = try #require(MemberID(rawValue: v.member))
    let address = try #require(ContentAddress(a.address))
    let addressKeys = try MemberKeys(member: member, generation: a.addressGeneration, memberKey: key(a.addressMemberKey))
    let keyKeys = try MemberKeys(member: member, generation: a.keyGeneration, memberKey: key(a.keyMemberKey))
    let object = try AttachmentObject(bytes: Hex.decode(a.object))
    #expect(object.bytes == (try Hex.decode(a.object)))
    #expect(try AttachmentCrypto.keyGeneration(of: object.key) == a.keyGeneration)
    let plaintext = try AttachmentCrypto.open(object, address: address, account: account, keyKeys: keyKeys, addressKeys: addressKeys)
    #expect(Hex.encode(plaintext) == a.plaintext)
    #expect(try addressKeys.contentAddressKey.address(of: Hex.decode(a.plaintext)) == address)

    // Re-wrapped under another generation, it still opens, and the content is untouched.
    let newer = try MemberKeys(member: member, generation: 7, memberKey: SymmetricKey())
    let rewrapped = AttachmentObject(key: try AttachmentCrypto.rewrap(object.key, address: address, account: account, from: keyKeys, to: newer),
                                     content: object.content)
    #expect(try AttachmentCrypto.open(rewrapped, address: address, account: account, keyKeys: newer, addressKeys: addressKeys)
        .unprotectedCopy() == (try Hex.decode(a.plaintext)))

    // Under another address, or with the address keys of another generation: refused.
    var other = address.mac
    other[0] ^= 1
    let moved = try #require(ContentAddress("ca1.\(address.generation).\(Hex.encode(other))"))
    #expect(throws: VaultError.self) { try AttachmentCrypto.open(object, address: moved, account: account, keyKeys: keyKeys, addressKeys: addressKeys) }
    #expect(throws: VaultError.self) { try AttachmentCrypto.open(object, address: address, account: account, keyKeys: keyKeys, addressKeys: newer) }
}

struct MasterKeyCheckFile: Decodable {
    struct Case: Decodable { let key: String, generation: UInt32, check: String }
    let tests: [Case]
}

/// docs/formats/member-keys.md, "Master key check", as Python's hmac computes it;
/// another key or generation gives another value.
@Test func masterKeyChecksMatchTheIndependentImplementation() throws {
    let file = try vectors.load("master-key-check-v1", as: MasterKeyCheckFile.self)
    #expect(file.tests.count == 4)
    for v in file.tests {
        let k = try key(v.key)
        #expect(try MasterKeyCheck.compute(k, generation: v.generation) == v.check)
        #expect(try MasterKeyCheck.compute(k, generation: v.generation &+ 1) != v.check)
        #expect(try MasterKeyCheck.compute(SymmetricKey(), generation: v.generation) != v.check)
    }
}
