import Foundation
import KeyVault
import KeyVaultMnemonic
import KeyVaultModel
import Testing
@testable import KeyVaultCommands

// Issue 8 item 7: `attachment get -o` writes through a fresh temporary file.

/// The real transport, with attachment content flipped on the way back.
private struct FlippingTransport: HTTPTransport {
    let inner: any HTTPTransport
    func send(_ request: HTTPExchange) async throws -> HTTPReply {
        var reply = try await inner.send(request)
        if request.method == "GET", request.target.contains("/attachments/ca1."), !request.target.hasSuffix("/key"),
           !request.target.hasSuffix("/chunks"), !reply.body.isEmpty {
            reply.body[reply.body.count - 1] ^= 1
        }
        return reply
    }
}

@Test(.timeLimit(.minutes(10)))
func attachmentGetWritesThroughAFreshTemporaryFileAndFollowsNoSymlink() async throws {
    let story = try await Story("attachment-get")
    _ = try await story.run(["init", "--server", story.url, "--name", "laptop", "--recovery-file", story.path("code"), "--yes"], "laptop")
    _ = try await story.run(["member", "add", "Emma"], "laptop")
    let content = Data("scan of a passport\n".utf8)
    try content.write(to: URL(fileURLWithPath: story.path("scan.pdf")))
    let address = try await #require(try story.run(["attachment", "put", "--member", "Emma", story.path("scan.pdf")], "laptop")["address"] as? String)
    let out = story.root.appendingPathComponent("out")
    try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
    let victim = story.path("victim"), before = Data("not yours\n".utf8)
    try before.write(to: URL(fileURLWithPath: victim))
    func get(_ target: String, transport: (@Sendable (String) throws -> any HTTPTransport)? = nil) async -> (Int32, String, String) {
        let arguments = ["attachment", "get", "--member", "Emma", address, "-o", target, "--home", story.path("laptop")]
        guard let transport else { return await runKeyctl(arguments) }
        return await KeyctlMain.$transport.withValue(transport) { await runKeyctl(arguments) }
    }

    // A symlink planted at the old fixed temporary name is never written through.
    let first = out.appendingPathComponent("a.pdf").path
    try FileManager.default.createSymbolicLink(atPath: first + ".keyctl-partial", withDestinationPath: victim)
    var result = await get(first)
    #expect(result.0 == 0, "\(result.2)")
    #expect(FileManager.default.contents(atPath: first) == content)
    #expect(FileManager.default.contents(atPath: victim) == before, "the write went through a planted symlink")
    #expect((try FileManager.default.attributesOfItem(atPath: first)[.posixPermissions] as? Int) == 0o600)

    // A symlink planted at the target itself is replaced by the file, not followed.
    let second = out.appendingPathComponent("b.pdf").path
    try FileManager.default.createSymbolicLink(atPath: second, withDestinationPath: victim)
    result = await get(second)
    #expect(result.0 == 0, "\(result.2)")
    #expect(FileManager.default.contents(atPath: victim) == before, "the write followed the symlink at the target")
    #expect((try FileManager.default.attributesOfItem(atPath: second)[.type] as? FileAttributeType) == .typeRegular)
    #expect(FileManager.default.contents(atPath: second) == content)

    // Content that does not match its address: exit 5, and nothing is left behind.
    let listing = try Set(FileManager.default.contentsOfDirectory(atPath: out.path))
    let third = out.appendingPathComponent("c.pdf").path
    result = await get(third) { server in FlippingTransport(inner: keyctlTransport(server)) }
    #expect(result.0 == 5, "\(result.2)")
    #expect(try Set(FileManager.default.contentsOfDirectory(atPath: out.path)) == listing)

    // A target that is a directory: the rename fails after the write, and the temporary file goes.
    let directoryTarget = out.appendingPathComponent("dir.pdf")
    try FileManager.default.createDirectory(at: directoryTarget, withIntermediateDirectories: true)
    let withDirectory = try Set(FileManager.default.contentsOfDirectory(atPath: out.path))
    result = await get(directoryTarget.path)
    #expect(result.0 == 2 && result.2.contains("cannot write"), "\(result.2)")
    #expect(try Set(FileManager.default.contentsOfDirectory(atPath: out.path)) == withDirectory)

    // A directory that cannot be written: a clear error, and nothing left behind. (Skipped as root, who may write anyway.)
    let locked = story.root.appendingPathComponent("locked")
    try FileManager.default.createDirectory(at: locked, withIntermediateDirectories: true)
    try FileManager.default.setAttributes([.posixPermissions: 0o500], ofItemAtPath: locked.path)
    defer { try? FileManager.default.setAttributes([.posixPermissions: 0o700], ofItemAtPath: locked.path) }
    if getuid() != 0 {
        result = await get(locked.appendingPathComponent("d.pdf").path)
        #expect(result.0 == 2 && result.2.contains("cannot create"), "\(result.2)")
        #expect(try FileManager.default.contentsOfDirectory(atPath: locked.path).isEmpty)
    }
}

/// A long transfer prints where it is at each tenth, not a line per chunk.
@Test func aTransferPrintsItsProgressAtEachTenth() {
    let lines = (1...100).compactMap { Vault.Progress.sendingAttachment(done: $0, of: 100).line }
    #expect(lines.count == 10 && lines.last == "sent 100% (100 of 100 chunks)", "\(lines)")
    #expect((1...3).compactMap { Vault.Progress.receivingAttachment(done: $0, of: 3).line }.count == 3)
    #expect(Vault.Progress.sendingAttachment(done: 1, of: 1).line == nil, "one chunk: nothing worth a line")
}
