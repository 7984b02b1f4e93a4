import Foundation
import KeyVault
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultTestSupport
import Testing

// Issue 21: attachments in chunks from the library's side: the server's limit is
// asked before any work, files are sealed and written back chunk by chunk.

@Suite struct AttachmentStreamingTests {
    /// What the server takes is asked first: content over it is neither read nor
    /// sealed nor sent, and says how large it is and what the server takes.
    @Test func anAttachmentOverTheServersLimitIsRefusedBeforeAnythingIsSealed() async throws {
        try await Fixture.run { fixture, laptop in
            let emma = try await laptop.addMember(name: "Emma")
            let puts = Locked(0)
            fixture.transport.answer { request in
                if request.method == "PUT", request.target.contains("/attachments/") { puts.withLock { $0 += 1 } }
                return request.target == "/v1/limits" ? HTTPReply(status: 200, body: Array(#"{"maxAttachmentBytes":1000,"maxWholeAttachmentBytes":1000}"#.utf8)) : nil
            }
            await expectRefusal("payload_too_large", kind: .rejected) {
                _ = try await laptop.put(SystemRandom.bytes(count: 5000), member: emma)
            }
            let directory = try TemporaryDirectory("kv-limit")
            let path = directory.path("scan.pdf")
            try Data(SystemRandom.bytes(count: 5000)).write(to: URL(fileURLWithPath: path))
            await expectRefusal("payload_too_large", kind: .rejected) {
                _ = try await laptop.put(fileAt: path, member: emma)
            }
            #expect(puts.withLock { $0 } == 0, "nothing was sent")
            // Under the limit it goes through.
            _ = try await laptop.put(SystemRandom.bytes(count: 500), member: emma)
            #expect(puts.withLock { $0 } == 1)
        }
    }

    /// A file of several chunks goes up as a version 2 object and comes back through
    /// a temporary file, equal; a stored object cut short writes nothing.
    @Test func aFileIsSealedInChunksAndWrittenBackOnlyWhenWhole() async throws {
        try await Fixture.run { fixture, laptop in
            let emma = try await laptop.addMember(name: "Emma")
            let directory = try TemporaryDirectory("kv-stream")
            let content = SystemRandom.bytes(count: 3 << 20 | 12345)
            let path = try directory.file("video.mp4", holding: content)
            let put = try await laptop.put(fileAt: path, member: emma)
            #expect(put.size == content.count && !put.existed)
            #expect(try await laptop.address(of: content, member: emma) == put.address)

            // As the server holds it: version 2, four chunks of 1 MiB (the last smaller).
            let stored = try await laptop.api.attachment(member: emma.id, address: put.address, sharer: nil)
            let object = try AttachmentObject(bytes: stored)
            let chunkCount = try object.chunkLayout().count
            #expect(object.version == 2 && object.chunkShift == 20 && chunkCount == 4)

            let out = directory.path("copy.mp4")
            #expect(try await laptop.get(put.address, member: emma, toFileAt: out) == content.count)
            #expect(Array(try Data(contentsOf: URL(fileURLWithPath: out))) == content)
            #expect(try await laptop.get(put.address, member: emma).unprotectedCopy() == content)

            // It came back chunk by chunk: the server was asked for each.
            // A dishonest server cuts the object after its third chunk (it says there are
            // three), or swaps two chunks: refused, and nothing is written.
            let chunkList = "/attachments/\(put.address)/chunks"
            let sealed = [1: try await laptop.api.attachmentChunk(member: emma.id, address: put.address, index: 1),
                          2: try await laptop.api.attachmentChunk(member: emma.id, address: put.address, index: 2)]
            let tamperings: [TamperingTransport.Rule] = [
                { request, reply in
                    guard request.method == "GET", request.target.hasSuffix(chunkList) else { return }
                    reply.body = Array(try JSONEncoder().encode(ChunkList(chunks: 3, chunkShift: 20)))
                },
                { request, reply in
                    guard request.method == "GET", request.target.hasSuffix(chunkList + "/1") || request.target.hasSuffix(chunkList + "/2") else { return }
                    reply.body = sealed[request.target.hasSuffix("/1") ? 2 : 1]!
                },
            ]
            let refused = directory.path("refused.mp4")
            for rule in tamperings {
                fixture.transport.tamper(rule)
                await expectRefusal("address_mismatch", kind: .verification) {
                    _ = try await laptop.get(put.address, member: emma, toFileAt: refused)
                }
                #expect(!FileManager.default.fileExists(atPath: refused))
            }
            #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).sorted() == ["copy.mp4", "video.mp4"],
                    "no temporary file is left behind")
        }
    }

    /// A transfer in chunks reports each chunk as a typed value (keyctl prints every tenth).
    @Test func aTransferInChunksReportsItsProgress() async throws {
        try await Fixture.run { fixture, laptop in
            let emma = try await laptop.addMember(name: "Emma")
            laptop.home.unlock()
            let seen = Locked<[Vault.Progress]>([])
            let watched = try await Vault.open(home: fixture.home("laptop"), transport: { _ in fixture.transport },
                                               progress: { event in seen.withLock { $0.append(event) } })
            let content = SystemRandom.bytes(count: 2 << 20 | 1)
            let put = try await watched.put(content, member: emma)
            #expect(seen.withLock { $0 }.filter { if case .sendingAttachment = $0 { true } else { false } }
                    == (1...3).map { .sendingAttachment(done: $0, of: 3) })
            _ = try await watched.get(put.address, member: emma)
            #expect(seen.withLock { $0 }.filter { if case .receivingAttachment = $0 { true } else { false } }
                    == (1...3).map { .receivingAttachment(done: $0, of: 3) })
        }
    }

    /// A server that says it takes `Int.max` bytes and has no chunk list: the object is
    /// fetched whole, within the client's own ceiling (the sum with its 64 KiB of slack
    /// once overflowed and stopped the process).
    @Test func aServerThatSaysItTakesEverythingStillHasAWholeObjectReadWithinTheCeiling() async throws {
        try await Fixture.run { fixture, laptop in
            let emma = try await laptop.addMember(name: "Emma")
            let content = SystemRandom.bytes(count: 500)
            let put = try await laptop.put(content, member: emma)
            let wholeGets = Locked(0)
            fixture.transport.answer { request in
                if request.target == "/v1/limits" {
                    return HTTPReply(status: 200, body: Array(#"{"maxAttachmentBytes":9223372036854775807,"maxWholeAttachmentBytes":9223372036854775807}"#.utf8))
                }
                if request.target.hasSuffix("/chunks") {
                    return HTTPReply(status: 404, body: Array(#"{"error":{"code":"not_found","message":"no chunk list"}}"#.utf8))
                }
                if request.method == "GET", request.target.contains("/attachments/") { wholeGets.withLock { $0 += 1 } }
                return nil
            }
            #expect(try await laptop.get(put.address, member: emma).unprotectedCopy() == content)
            #expect(wholeGets.withLock { $0 } > 0, "the object was not fetched whole")
        }
    }
}
