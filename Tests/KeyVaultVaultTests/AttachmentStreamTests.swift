import Foundation
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCrypto
@testable import KeyVaultVault

// Issue 21 item 1: attachments sealed in chunks (docs/formats/attachment.md, version 2),
// pinned by objects the independent implementation made, tampered ones included.

struct StreamFile: Decodable {
    struct Case: Decodable { let name: String, chunkShift: UInt8, plaintext: String, dataKey: String, address: String, object: String }
    struct Tampered: Decodable {
        struct Object: Decodable { let name: String, object: String, error: String }
        let address: String, plaintext: String, objects: [Object]
    }
    let account: String, member: String
    let addressGeneration: UInt32, addressMemberKey: String, keyGeneration: UInt32, keyMemberKey: String
    struct Relabelled: Decodable { let address: String, object: String, error: String }
    let objects: [Case]
    let tampered: Tampered
    let relabelled: Relabelled

    static func load() throws -> StreamFile { try vectors.load("attachment-stream-v2", as: StreamFile.self) }

    func keys() throws -> (account: AccountID, address: MemberKeys, key: MemberKeys) {
        let member = try #require(MemberID(rawValue: member))
        return (try #require(AccountID(rawValue: account)),
                try MemberKeys(member: member, generation: addressGeneration, memberKey: key(addressMemberKey)),
                try MemberKeys(member: member, generation: keyGeneration, memberKey: key(keyMemberKey)))
    }
}

@Test func streamedObjectsOpenAsTheIndependentImplementationSealedThem() throws {
    let v = try StreamFile.load()
    let keys = try v.keys()
    for c in v.objects {
        let bytes = try Hex.decode(c.object)
        let object = try AttachmentObject(bytes: bytes)
        #expect(object.version == 2 && object.chunkShift == c.chunkShift, "\(c.name)")
        #expect(object.bytes == bytes, "\(c.name): the framing round-trips")
        #expect(AttachmentObject(key: object.key, storedContent: object.storedContent) == object, "\(c.name): as the server stores it")
        let address = try #require(ContentAddress(c.address))
        let opened = try AttachmentCrypto.open(object, address: address, account: keys.account, keyKeys: keys.key, addressKeys: keys.address)
        #expect(Hex.encode(opened) == c.plaintext, "\(c.name)")
        // The data key the key part holds is the one the vector names.
        #expect(try Hex.encode(AttachmentCrypto.openDataKey(object.key, address: address, account: keys.account, keys: keys.key)) == c.dataKey)
    }
}

@Test func aStreamedObjectCutReorderedSplicedOrAlteredIsRefused() throws {
    let v = try StreamFile.load()
    let keys = try v.keys()
    let address = try #require(ContentAddress(v.tampered.address))
    let relabelled = (name: "one chunk relabelled 2^11", object: v.relabelled.object, error: v.relabelled.error,
                      address: try #require(ContentAddress(v.relabelled.address)))
    for t in v.tampered.objects.map({ (name: $0.name, object: $0.object, error: $0.error, address: address) }) + [relabelled] {
        let address = t.address
        do {
            let object = try AttachmentObject(bytes: Hex.decode(t.object))
            _ = try AttachmentCrypto.open(object, address: address, account: keys.account, keyKeys: keys.key, addressKeys: keys.address)
            Issue.record("\(t.name): opened")
        } catch let error as ProtocolError {
            #expect(error.code.rawValue == t.error, "\(t.name): \(error)")
        } catch let error as VaultError {
            #expect(error.code.rawValue == t.error, "\(t.name): \(error)")
        }
    }
}

/// Sealed here and opened here, at every size around the chunk boundaries: the
/// framing, the last chunk and the address check agree with each other.
@Test(arguments: [0, 1, 1023, 1024, 1025, 2047, 2048, 2049, 5000])
func streamedObjectsOfEverySizeAroundAChunkBoundaryRoundTrip(_ size: Int) throws {
    let member = MemberID(unchecked: String(repeating: "ab", count: 16)), account = AccountID(unchecked: String(repeating: "cd", count: 16))
    let keys = try MemberKeys(member: member, generation: 1, memberKey: SymmetricKey())
    let content = SystemRandom.bytes(count: size)
    let address = try keys.contentAddressKey.address(of: content)
    let object = try AttachmentCrypto.seal(content, address: address, account: account, keys: keys, chunkShift: 10)
    let layout = try object.chunkLayout()
    #expect(layout.count == max(1, (size + 1023) / 1024) && layout.plaintextLength == size)
    let parsed = try AttachmentObject(bytes: object.bytes)
    #expect(try AttachmentCrypto.open(parsed, address: address, account: account, keyKeys: keys, addressKeys: keys).unprotectedCopy() == content)
    // Any cut at a chunk boundary (what a stream ended early leaves) is refused.
    for count in 1..<layout.count {
        let cut = AttachmentObject(key: object.key, chunkShift: 10, chunks: Array(object.content[..<layout.range(of: count - 1).upperBound]))
        #expect(throws: VaultError.self) { try AttachmentCrypto.open(cut, address: address, account: account, keyKeys: keys, addressKeys: keys) }
    }
    // The default writes 1 MiB chunks.
    #expect(try AttachmentCrypto.seal(content, address: address, account: account, keys: keys).chunkShift == 20)
}

/// Version 1 objects, which clients stored before version 2, keep opening.
@Test func aWholeObjectOfVersionOneStillOpens() throws {
    let member = MemberID(unchecked: String(repeating: "ab", count: 16)), account = AccountID(unchecked: String(repeating: "cd", count: 16))
    let keys = try MemberKeys(member: member, generation: 1, memberKey: SymmetricKey())
    let content = SystemRandom.bytes(count: 3000)
    let address = try keys.contentAddressKey.address(of: content)
    let object = try AttachmentObject(bytes: AttachmentCrypto.sealWhole(content, address: address, account: account, keys: keys).bytes)
    #expect(object.version == 1)
    #expect(AttachmentObject(key: object.key, storedContent: object.storedContent) == object)
    #expect(try AttachmentCrypto.open(object, address: address, account: account, keyKeys: keys, addressKeys: keys).unprotectedCopy() == content)
}

/// STREAM on its own, before any content address is checked (a reader that hands
/// out chunks as they open relies on it): a chunk opens only at its index, with its
/// last flag, under its associated data.
@Test func aChunkOpensOnlyAtItsPlaceWithItsLastFlagAndItsHeader() throws {
    let key = SymmetricKey(), aad = Array("header".utf8)
    var sealer = StreamAEAD.Sealer(key: key, authenticating: aad)
    let chunks = try (0..<3).map { i in try sealer.seal([UInt8](repeating: UInt8(i), count: 64), last: i == 2) }
    for (i, chunk) in chunks.enumerated() {
        #expect(try StreamAEAD.open(chunk, index: UInt64(i), last: i == 2, using: key, authenticating: aad).unprotectedCopy()
                == [UInt8](repeating: UInt8(i), count: 64))
        #expect(throws: CryptoError.self) { try StreamAEAD.open(chunk, index: UInt64(i), last: i != 2, using: key, authenticating: aad) }
        #expect(throws: CryptoError.self) { try StreamAEAD.open(chunk, index: UInt64(i + 1), last: i == 2, using: key, authenticating: aad) }
        #expect(throws: CryptoError.self) { try StreamAEAD.open(chunk, index: UInt64(i), last: i == 2, using: key, authenticating: Array("other".utf8)) }
    }
}

/// An object's chunks opened in turn into one guarded scratch, as a download does:
/// each lent while it is there and the scratch wiped after each, also after a chunk
/// that does not open (`address_mismatch`, as one longer than the scratch is); what
/// the reader of the content throws comes out as it was thrown.
@Test func chunksOpenInTurnIntoOneScratchWipedAfterEach() throws {
    let dataKey = SymmetricKey()
    var sealer = try AttachmentSealer(resuming: dataKey, chunkShift: 10)
    let contents = (0..<3).map { [UInt8](repeating: UInt8($0 + 1), count: $0 == 2 ? 100 : 1024) }
    let chunks = try contents.enumerated().map { try sealer.seal($0.element, last: $0.offset == 2) }
    let address = try #require(ContentAddress("ca1.1." + String(repeating: "ab", count: 32)))
    let opener = try AttachmentOpener(dataKey: dataKey, chunkShift: 10, address: address)
    var scratch = try SecureScratch(count: 1024)
    var region: UnsafeRawBufferPointer?
    for (i, chunk) in chunks.enumerated() {
        let content = try opener.open(chunk, index: i, of: 3, into: &scratch) { opened in
            region = opened
            return Array(opened)
        }
        #expect(content == contents[i])
        // The scratch lives on, so what it holds can be read: nothing.
        #expect(region.map { $0.allSatisfy { $0 == 0 } } == true, "chunk \(i) was left in the scratch")
    }
    var altered = chunks[0]
    altered[0] ^= 1
    #expect(throws: VaultError.self) { try opener.open(altered, index: 0, of: 3, into: &scratch) { _ in } }
    #expect(throws: VaultError.self) { try opener.open(chunks[1], index: 0, of: 3, into: &scratch) { _ in } }
    var small = try SecureScratch(count: 1023)
    #expect(throws: VaultError.self) { try opener.open(chunks[0], index: 0, of: 3, into: &small) { _ in } }
    // A crypto error of the reader's own (a hash that fails) is not taken for a chunk that does not open.
    #expect(throws: CryptoError.self) {
        try opener.open(chunks[0], index: 0, of: 3, into: &scratch) { _ in throw CryptoError.authenticationFailure }
    }
    #expect(throws: CryptoError.self) { _ = try SecureScratch(count: -1) }
}

/// docs/formats/attachment.md, "Resuming an upload" (journal version 2): record i is the
/// tag of sealed chunk i under the data key, as the independent implementation sealed it.
@Test func uploadJournalRecordsAreTheTagsTheIndependentImplementationSealed() throws {
    struct File: Decodable {
        struct Record: Decodable { let chunk: String, last: Bool, record: String }
        let dataKey: String, chunkShift: UInt8, records: [Record]
    }
    let v = try vectors.load("upload-journal-v2", as: File.self)
    var sealer = try AttachmentSealer(resuming: try SymmetricKey(SecureBytes(copying: Hex.decode(v.dataKey))), chunkShift: v.chunkShift)
    for record in v.records {
        #expect(Hex.encode(Array(try sealer.seal(try Hex.decode(record.chunk), last: record.last).suffix(16))) == record.record)
    }
}
