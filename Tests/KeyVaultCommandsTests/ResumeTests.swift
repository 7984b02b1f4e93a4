import Foundation
import KeyVault
import KeyVaultCrypto
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCommands

// Issue 21, item 4: a transfer cut off resumes from the last stored chunk, and never
// seals other content at an index it sealed before.

/// What the chunk PUTs carried: (upload, index, a digest of the sealed chunk, its tag).
private final class ChunkLog: Sendable {
    private let entries = Locked<[(upload: String, index: Int, digest: String, tag: [UInt8])]>([])
    private let begins = Locked(0)
    var all: [(upload: String, index: Int, digest: String, tag: [UInt8])] { entries.withLock { $0 } }
    var uploadsBegun: Int { begins.withLock { $0 } }
    func record(_ upload: String, _ index: Int, _ body: [UInt8]) {
        let digest = "\(body.count) \(Data(body).hashValue)"  // within one run
        entries.withLock { $0.append((upload, index, digest, Array(body.suffix(16)))) }
    }
    func begun() { begins.withLock { $0 += 1 } }
}

/// The real transport, logging chunk PUTs; it cuts the connection at the PUT of chunk
/// `cutAt`, and may rewrite the server's upload status (`claimStored`: a dishonest count).
private struct CuttingTransport: HTTPTransport {
    let inner: any HTTPTransport
    let log: ChunkLog
    var cutAt: Int?
    var claimStored: Int?

    func send(_ request: HTTPExchange) async throws -> HTTPReply {
        let parts = request.target.split(separator: "?")[0].split(separator: "/").map(String.init)
        if request.method == "PUT", parts.count >= 4, parts[parts.count - 2] == "chunks", parts[parts.count - 4] == "uploads",
           let index = Int(parts[parts.count - 1]) {
            if index == cutAt { throw URLError(.networkConnectionLost) }
            log.record(parts[parts.count - 3], index, request.body)
        }
        if request.method == "POST", parts.last == "uploads" { log.begun() }
        var reply = try await inner.send(request)
        if request.method == "GET", parts.count >= 2, parts[parts.count - 2] == "uploads", let claimStored, reply.status == 200,
           var status = try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any] {
            status["stored"] = claimStored
            reply.body = [UInt8](try JSONSerialization.data(withJSONObject: status))
        }
        return reply
    }
}

private func put(_ story: Story, _ file: String, _ log: ChunkLog, cutAt: Int? = nil,
                 claimStored: Int? = nil) async -> (code: Int32, out: String, err: String) {
    let arguments = ["attachment", "put", "--member", "Emma", file, "--home", story.path("laptop")]
    return await KeyctlMain.$transport.withValue({ server in
        CuttingTransport(inner: keyctlTransport(server), log: log, cutAt: cutAt, claimStored: claimStored)
    }) { await runKeyctl(arguments, terminal: true) }
}

/// The laptop's account, with member Emma, whose attachments these tests put and get.
private func laptopWithEmma(_ story: Story) async throws {
    _ = try await story.run(["init", "--server", story.url, "--name", "laptop", "--recovery-file", story.path("code"), "--yes"], "laptop")
    _ = try await story.run(["member", "add", "Emma"], "laptop")
}

private func journals(_ story: Story) -> [String] {
    (try? FileManager.default.contentsOfDirectory(atPath: story.path("laptop") + "/transfers")) ?? []
}

/// Six chunks; cut at the fifth PUT (chunks after it may be in flight already). The next
/// run sends only what the server lacks from chunk 4 on, every index ever sent carried
/// one sealed chunk, the object opens whole, and no journal is left.
@Test(.timeLimit(.minutes(10)))
func anUploadCutOffResumesAfterTheChunksTheServerHoldsAndSealsNoIndexTwiceWithOtherContent() async throws {
    let story = try await Story("resume-upload")
    try await laptopWithEmma(story)
    let content = Data((0..<(5 << 20) + 1000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 11) })
    let file = story.path("scan.bin")
    try content.write(to: URL(fileURLWithPath: file))

    let log = ChunkLog()
    let first = await put(story, file, log, cutAt: 4)
    #expect(first.code != 0, "the cut upload did not fail")
    let before = log.all.count
    #expect(Set(log.all.map(\.index)).isSuperset(of: [0, 1, 2, 3]) && !log.all.contains { $0.index == 4 })
    #expect(journals(story).count == 1, "the cut upload left no journal")

    let second = await put(story, file, log)
    #expect(second.code == 0, "\(second.err)")
    #expect(second.err.contains("resuming where the last try stopped: 4 of 6 chunks"), "\(second.err)")
    #expect(Set(log.all.dropFirst(before).map(\.index)) == [4, 5], "chunks sent again, or skipped")
    #expect(Set(log.all.map(\.upload)).count == 1, "the resumed upload is another one")
    #expect(log.uploadsBegun == 1)
    #expect(journals(story).isEmpty, "the journal outlived the upload")

    let address = try await #require(try story.run(["attachment", "list", "--member", "Emma"], "laptop")["attachments"] as? [[String: Any]])
    let name = try #require(address.first?["address"] as? String)
    _ = try await story.run(["attachment", "get", "--member", "Emma", name, "-o", story.path("back.bin")], "laptop")
    #expect(FileManager.default.contents(atPath: story.path("back.bin")) == content)
}

/// A journal whose record of a chunk does not match the content read now (the file
/// changed while the cut upload read it): that index is never sealed again under the
/// old upload's key; the upload is given up on the device's side, and the next run
/// starts a new one. A server that claims more chunks than the device ever sent gets
/// a new upload too.
@Test(.timeLimit(.minutes(10)))
func aResumedUploadGivesUpRatherThanSealOtherContentOrBelieveChunksItNeverSent() async throws {
    let story = try await Story("resume-refused")
    try await laptopWithEmma(story)
    let content = Data((0..<(8 << 20) + 5).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 3) })
    let file = story.path("scan.bin")
    try content.write(to: URL(fileURLWithPath: file))

    // Cut at chunk 2: chunks 0 and 1 stored, the records of 2 and of those in flight after it journaled.
    let log = ChunkLog()
    #expect(await put(story, file, log, cutAt: 2).code != 0)
    let journal = story.path("laptop") + "/transfers/" + (try #require(journals(story).first))
    var bytes = try #require(FileManager.default.contents(atPath: journal))
    let header = try #require(bytes.firstIndex(of: 0x0A)) + 1
    // Version 2 (docs/formats/attachment.md, "Resuming an upload"): record i is the tag of
    // sealed chunk i, written before the chunk went out.
    let fields = try #require(try JSONSerialization.jsonObject(with: bytes.prefix(header)) as? [String: Any])
    #expect(fields["version"] as? Int == 2)
    let records = Array(bytes.dropFirst(header))
    #expect(records.count % 16 == 0 && records.count / 16 >= 2, "\(records.count) bytes of records")
    for sent in log.all {
        #expect(Array(records[(sent.index * 16)..<(sent.index * 16 + 16)]) == sent.tag, "record \(sent.index)")
    }
    bytes[header + 2 * 16] ^= 1  // record 2: other content than what is read now
    try bytes.write(to: URL(fileURLWithPath: journal))
    let sentBefore = log.all.count
    let refused = await put(story, file, log)
    #expect(refused.code != 0 && refused.err.contains("changed while it was read"), "\(refused.err)")
    #expect(!log.all.dropFirst(sentBefore).contains { $0.index >= 2 }, "chunk 2 was sealed again under the old key with other content: \(log.all.map(\.index)) \(sentBefore) \(bytes.count)")
    #expect(journals(story).isEmpty)

    // A fresh upload, cut again; then a server that says it holds every chunk.
    #expect(await put(story, file, log, cutAt: 2).code != 0)
    #expect(log.uploadsBegun == 2)
    let answered = await put(story, file, log, claimStored: 9)
    #expect(answered.code == 0, "\(answered.err)")
    #expect(log.uploadsBegun == 3, "the device believed chunks it never sent")
    // Every (upload, index) ever sent carried one sealed chunk.
    let sent = Dictionary(grouping: log.all, by: { "\($0.upload) \($0.index)" })
    #expect(sent.values.allSatisfy { Set($0.map(\.digest)).count == 1 })
}

/// A journal of version 1 (an older build's: HMAC records) is not resumed: the upload
/// starts afresh under a new data key, once, and completes.
@Test(.timeLimit(.minutes(10)))
func anUploadJournalOfVersionOneIsNotResumed() async throws {
    let story = try await Story("resume-v1")
    try await laptopWithEmma(story)
    let file = story.path("scan.bin")
    try Data((0..<(3 << 20) + 5).map { UInt8(truncatingIfNeeded: $0 &* 5 &+ 1) }).write(to: URL(fileURLWithPath: file))
    let log = ChunkLog()
    #expect(await put(story, file, log, cutAt: 2).code != 0)
    let journal = story.path("laptop") + "/transfers/" + (try #require(journals(story).first))
    var bytes = try #require(FileManager.default.contents(atPath: journal))
    let version = try #require(bytes.range(of: Data(#""version":2"#.utf8)))
    bytes[version.upperBound - 1] = UInt8(ascii: "1")
    try bytes.write(to: URL(fileURLWithPath: journal))
    let answered = await put(story, file, log)
    #expect(answered.code == 0, "\(answered.err)")
    #expect(log.uploadsBegun == 2, "a version 1 journal was resumed")
    #expect(journals(story).isEmpty)
}

/// The real transport, failing the GET of chunk `cutAt` and logging which chunks were fetched.
private struct CuttingReads: HTTPTransport {
    let inner: any HTTPTransport
    let fetched: Locked<[Int]>
    let cutAt: Int?
    func send(_ request: HTTPExchange) async throws -> HTTPReply {
        let parts = request.target.split(separator: "?")[0].split(separator: "/").map(String.init)
        if request.method == "GET", parts.count >= 2, parts[parts.count - 2] == "chunks", let index = Int(parts[parts.count - 1]) {
            if index == cutAt { throw URLError(.networkConnectionLost) }
            fetched.withLock { $0.append(index) }
        }
        return try await inner.send(request)
    }
}

/// A download cut off at chunk 3 of 4 leaves what arrived; the next run fetches only
/// chunks 3 on and writes the whole file. A partial file changed in between fails the
/// address check (exit 5): nothing is written and the partial file goes.
@Test(.timeLimit(.minutes(10)))
func aDownloadCutOffGoesOnAfterTheChunksItHasAndChecksThemWithTheRest() async throws {
    let story = try await Story("resume-download")
    try await laptopWithEmma(story)
    let content = Data((0..<(3 << 20) + 77).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ $0 >> 9) })
    try content.write(to: URL(fileURLWithPath: story.path("scan.bin")))
    let address = try await #require(try story.run(["attachment", "put", "--member", "Emma", story.path("scan.bin")], "laptop")["address"] as? String)
    let out = story.root.appendingPathComponent("out")
    try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
    let target = out.appendingPathComponent("back.bin").path
    let fetched = Locked<[Int]>([])
    func get(cutAt: Int?) async -> (code: Int32, out: String, err: String) {
        await KeyctlMain.$transport.withValue({ server in
            CuttingReads(inner: keyctlTransport(server), fetched: fetched, cutAt: cutAt)
        }) { await runKeyctl(["attachment", "get", "--member", "Emma", address, "-o", target, "--home", story.path("laptop")], terminal: true) }
    }
    var result = await get(cutAt: 3)
    #expect(result.code != 0)
    #expect(!FileManager.default.fileExists(atPath: target))
    #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).count == 1, "the cut download left nothing to go on from")
    result = await get(cutAt: nil)
    #expect(result.code == 0, "\(result.err)")
    #expect(result.err.contains("3 of 4 chunks are there already"), "\(result.err)")
    // Chunks 0 to 2 before the cut (fetched a few at once: in any order), then 3 alone.
    #expect(fetched.withLock { $0 }.sorted() == [0, 1, 2, 3] && fetched.withLock { $0 }.last == 3)
    #expect(FileManager.default.contents(atPath: target) == content)
    #expect(try FileManager.default.contentsOfDirectory(atPath: out.path) == ["back.bin"])

    // Cut again into another file; change what it left; the next run refuses it whole.
    let second = out.appendingPathComponent("again.bin").path
    try FileManager.default.removeItem(atPath: target)
    _ = await get(cutAt: 2)
    let partial = out.appendingPathComponent(try #require(try FileManager.default.contentsOfDirectory(atPath: out.path).first)).path
    var bytes = try #require(FileManager.default.contents(atPath: partial))
    bytes[1000] ^= 1
    try bytes.write(to: URL(fileURLWithPath: partial))
    result = await get(cutAt: nil)
    #expect(result.code == 5, "\(result.err)")
    #expect(try FileManager.default.contentsOfDirectory(atPath: out.path).isEmpty, "a refused download left a file")
    _ = second
}

/// The real transport, slowed to 20 ms per chunk PUT, counting them.
private struct SlowChunks: HTTPTransport {
    let inner: any HTTPTransport
    let puts: Locked<Int>
    func send(_ request: HTTPExchange) async throws -> HTTPReply {
        if request.method == "PUT", request.target.contains("/chunks/") {
            try await Task.sleep(for: .milliseconds(20))
            puts.withLock { $0 += 1 }
        }
        return try await inner.send(request)
    }
}

/// A put cancelled part way stops sending: the chunks in flight are cancelled with it,
/// and none is sent after the call returned.
@Test(.timeLimit(.minutes(10)))
func aCancelledPutStopsSendingChunks() async throws {
    let story = try await Story("cancel-put")
    try await laptopWithEmma(story)
    let file = story.path("scan.bin")
    try Data((0..<(9 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 5 &+ $0 >> 13) }).write(to: URL(fileURLWithPath: file))
    let puts = Locked(0)
    let put = Task {
        await KeyctlMain.$transport.withValue({ server in
            SlowChunks(inner: keyctlTransport(server), puts: puts)
        }) { await runKeyctl(["attachment", "put", "--member", "Emma", file, "--home", story.path("laptop")]) }
    }
    let finished = Locked(false)
    Task { _ = await put.value; finished.withLock { $0 = true } }
    while puts.withLock({ $0 }) < 3, !finished.withLock({ $0 }) { try await Task.sleep(for: .milliseconds(5)) }
    #expect(!finished.withLock { $0 }, "the put ended before three chunks")
    put.cancel()
    let result = await put.value
    #expect(result.code != 0, "the cancelled put finished")
    let atReturn = puts.withLock { $0 }
    try await Task.sleep(for: .milliseconds(300))
    #expect(puts.withLock { $0 } == atReturn, "chunks were sent after the put returned")
    #expect(atReturn < 8, "the put went on after it was cancelled: \(atReturn) of 9 chunks")
}
