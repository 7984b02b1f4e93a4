import Foundation
import KeyVaultTestSupport
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

@Test(arguments: try vectors.load("content-address-v1", as: ContentAddressFile.self).tests)
func contentAddressMatchesIndependentImplementation(_ v: ContentAddressFile.Vector) throws {
    let cak = try ContentAddressKey(memberKey: key(v.memberKey), generation: v.generation)
    let address = try cak.address(of: hex(v.content))
    #expect(address.description == v.address)
    #expect(ContentAddress(v.address) == address)
}

@Test func contentAddressOfAFileStreamsAndMatchesTheVector() throws {
    let large = try vectors.load("content-address-v1", as: ContentAddressFile.self).large
    let content = (0..<large.length).map { UInt8(($0 * 31 + 7) % 251) }
    let directory = try TemporaryDirectory("kv-ca")
    let path = try directory.file("content", holding: content)
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

@Test(arguments: try vectors.load("content-address-v1", as: ContentAddressFile.self).invalid)
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

@Test func readAheadOfALargeFileGivesTheSameAddressAsMemory() throws {
    let content = SystemRandom.bytes(count: 9 << 20 | 123)  // over the 4 MiB read-ahead threshold
    let directory = try TemporaryDirectory("kv-ra")
    let path = try directory.file("content", holding: content)
    let cak = try ContentAddressKey(memberKey: SymmetricKey(), generation: 2)
    var last: UInt64 = 0
    #expect(try cak.address(ofFileAt: path) { last = $0 } == cak.address(of: content))
    #expect(last == UInt64(content.count))
}

struct StopHere: Error {}

@Test func aFailingConsumerStopsTheReadAheadCleanly() throws {
    let directory = try TemporaryDirectory("kv-stop")
    let path = directory.path("content")
    try Data(count: 12 << 20).write(to: URL(fileURLWithPath: path))
    for stopAfter in [1, 2, 5] {
        var chunks = 0
        #expect(throws: StopHere.self) {
            try forEachChunk(ofFileAt: path) { _, _ in
                chunks += 1
                if chunks == stopAfter { throw StopHere() }
            }
        }
        #expect(chunks == stopAfter)
    }
}

@Test func aPipeIsReadToTheEnd() throws {
    // /dev/zero through `head` is not a regular file: the plain read path.
    let process = Process()
    process.executableURL = URL(fileURLWithPath: "/bin/sh")
    let directory = try TemporaryDirectory("kv-fifo")
    let fifo = directory.path("fifo")
    #expect(mkfifo(fifo, 0o600) == 0)
    process.arguments = ["-c", "head -c 3000000 /dev/zero > '\(fifo)'"]
    try process.run()
    var total: UInt64 = 0
    try forEachChunk(ofFileAt: fifo) { _, soFar in total = soFar }
    process.waitUntilExit()
    #expect(total == 3_000_000)
}
