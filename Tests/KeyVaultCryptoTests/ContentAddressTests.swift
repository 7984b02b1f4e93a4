import Foundation
import PropertyBased
import Testing
@testable import KeyVaultCrypto

struct ContentAddressFile: Decodable {
    struct Vector: Decodable, Sendable, CustomTestStringConvertible {
        let member: String, memberKey: String, generation: UInt32, content: String, address: String
        var testDescription: String { "member \(member), generation \(generation), \(content.count / 2) bytes" }
    }
    struct Large: Decodable { let memberKey: String, generation: UInt32, length: Int, address: String }
    let tests: [Vector]
    let large: Large
    let invalid: [String]
}

@Test(arguments: try Vectors.load("content-address-v1", as: ContentAddressFile.self).tests)
func contentAddressMatchesIndependentImplementation(_ v: ContentAddressFile.Vector) throws {
    let cak = try ContentAddressKey(memberKey: key(v.memberKey), generation: v.generation)
    let address = try cak.address(of: hex(v.content))
    #expect(address.description == v.address)
    #expect(ContentAddress(v.address) == address)
}

@Test func contentAddressOfAFileStreamsAndMatchesTheVector() throws {
    let large = try Vectors.load("content-address-v1", as: ContentAddressFile.self).large
    let content = (0..<large.length).map { UInt8(($0 * 31 + 7) % 251) }
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("kv-ca-\(UUID().uuidString)").path
    try Data(content).write(to: URL(fileURLWithPath: path))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let cak = try ContentAddressKey(memberKey: key(large.memberKey), generation: large.generation)
    var reports = [UInt64]()
    let address = try cak.address(ofFileAt: path) { reports.append($0) }
    #expect(address.description == large.address)
    #expect(reports.count == 2 && reports.last == UInt64(large.length))  // 1 MiB chunks
}

@Test func contentAddressOfAMissingFileIsAnIOError() throws {
    let cak = try ContentAddressKey(memberKey: SymmetricKey(), generation: 1)
    do {
        _ = try cak.address(ofFileAt: "/nonexistent/kv-file")
        Issue.record("no error")
    } catch let error as CryptoError {
        #expect(error.code == .io)
        #expect(error.message.contains("/nonexistent/kv-file"))
    }
}

@Test(arguments: try Vectors.load("content-address-v1", as: ContentAddressFile.self).invalid)
func contentAddressParserRefuses(_ text: String) {
    #expect(ContentAddress(text) == nil)
    #expect(throws: CryptoError.self) { try ContentAddress(parsing: text) }
}

@Test func addressesOfDifferentMembersOrGenerationsNeverCollide() async throws {
    let a = try ContentAddressKey(memberKey: SymmetricKey(), generation: 1)
    let b = try ContentAddressKey(memberKey: SymmetricKey(), generation: 1)
    await propertyCheck(count: 50, input: Gen.uint8().array(of: 0...100)) { content in
        let fromA = try a.address(of: content), fromB = try b.address(of: content)
        #expect(fromA != fromB)
        #expect(try a.address(of: content) == fromA)
    }
}
