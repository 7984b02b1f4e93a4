import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultPostgres
import KeyVaultProtocol
import KeyVaultStore
import KeyVaultTestSupport
import Testing
@testable import KeyVaultServer

// Issue 21: the routes of an upload in chunks. What a chunk must be is checked as it
// arrives; an upload is another device's, member's or address's only by its path;
// the object a chunked upload made is read back whole, as if it had been put whole.

@Test(arguments: StoreBackend.all) func anUploadInChunksChecksEachChunkAndReadsBackAsOneObject(_ backend: StoreBackend) async throws {
    try await testApplication(backend) { $0.maxAttachmentBytes = 8192 }.test(.router) { client in
        let phone = TestDevice("phone")
        var state = try await client.createAccount(phone)
        let member = try await client.addMember(phone, &state)
        let address = "ca1.1." + Hex.encode(SystemRandom.bytes(count: 32))
        let uri = "/v1/accounts/\(state.account)/members/\(member)/attachments/\(address)"
        // Framing only (the server opens nothing): a key envelope, then 2 chunks of 2^10 and one of 300 + 16.
        let key = try Envelope.seal(SymmetricKey(), under: SymmetricKey(), generation: 1, context: EnvelopeContext(purpose: "attachment-key")).bytes
        let chunks = [SystemRandom.bytes(count: 1040), SystemRandom.bytes(count: 1040), SystemRandom.bytes(count: 316)]
        func begin(size: Int, shift: Int = 10, query: String = "") async throws -> TestResponse {
            try await client.signed(phone, .post, uri + "/uploads" + query,
                                    body: Array(try JSONEncoder().encode(BeginUploadRequest(key: Data(key).base64EncodedString(), chunkShift: shift, size: size))))
        }
        // Over the limit, or a chunk size outside 2^10…2^22: refused before anything is stored.
        #expect(try await begin(size: 100_000).status == .contentTooLarge)
        #expect(errorCode(try await begin(size: 100, shift: 9)) == "malformed_attachment")
        var response = try await begin(size: 2 * 1024 + 300)
        #expect(response.status == .created)
        let started = try decode(UploadStarted.self, response)
        let upload = try #require(started.upload)
        #expect(started.chunks == 3 && !started.existed)
        let chunk = { (index: String) in uri + "/uploads/\(upload)/chunks/\(index)" }
        // Where it stands, for a device resuming it: the chunks there from index 0 on, without a gap.
        func stored() async throws -> Int { try decode(UploadStatus.self, try await client.signed(phone, .get, uri + "/uploads/\(upload)")).stored }
        #expect(try await stored() == 0)
        #expect(try await client.signed(phone, .put, chunk("1"), body: chunks[1]).status == .noContent)
        #expect(try await stored() == 0, "chunk 0 is missing")
        // Each chunk exactly its place's length; an index past the last, or not a number, is refused.
        response = try await client.signed(phone, .put, chunk("0"), body: chunks[2])
        #expect(response.status == .badRequest && errorCode(response) == "malformed_attachment")
        #expect(try await client.signed(phone, .put, chunk("3"), body: chunks[2]).status == .badRequest)
        #expect(try await client.signed(phone, .put, chunk("01"), body: chunks[1]).status == .badRequest)
        // Another upload id, or this one under another member's path: no such upload.
        #expect(try await client.signed(phone, .put, uri + "/uploads/\(String(repeating: "e", count: 32))/chunks/0", body: chunks[0]).status == .notFound)
        let stranger = "/v1/accounts/\(state.account)/members/\(Hex.encode(SystemRandom.bytes(count: 16)))/attachments/\(address)"
        #expect(try await client.signed(phone, .put, stranger + "/uploads/\(upload)/chunks/0", body: chunks[0]).status == .notFound)
        for (index, bytes) in chunks.enumerated().prefix(2) {
            #expect(try await client.signed(phone, .put, chunk(String(index)), body: bytes).status == .noContent)
        }
        #expect(try await stored() == 2)
        // Not readable, and not complete, while a chunk is missing.
        #expect(try await client.signed(phone, .get, uri).status == .notFound)
        response = try await client.signed(phone, .post, uri + "/uploads/\(upload)/complete")
        #expect(response.status == .badRequest && String(buffer: response.body).contains("2 of its 3"))
        #expect(try await client.signed(phone, .put, chunk("2"), body: chunks[2]).status == .noContent)
        response = try await client.signed(phone, .post, uri + "/uploads/\(upload)/complete")
        #expect(response.status == .created)
        #expect(try await client.signed(phone, .get, uri + "/uploads/\(upload)").status == .notFound, "a completed upload is no longer one")
        let object = AttachmentObject(key: key, chunkShift: 10, chunks: chunks.flatMap { $0 })
        #expect(try decode(AttachmentInfo.self, response).size == object.bytes.count)
        response = try await client.signed(phone, .get, uri)
        #expect(response.status == .ok && [UInt8](buffer: response.body) == object.bytes, "the object as if put whole")
        // Read a chunk at a time: the list, then each chunk as it was put.
        #expect(try decode(ChunkList.self, try await client.signed(phone, .get, uri + "/chunks")) == ChunkList(chunks: 3, chunkShift: 10))
        for (index, bytes) in chunks.enumerated() {
            #expect([UInt8](buffer: try await client.signed(phone, .get, uri + "/chunks/\(index)").body) == bytes)
        }
        #expect(try await client.signed(phone, .get, uri + "/chunks/3").status == .notFound)
        // An object put whole is read whole: no chunk is cut out of it (that would load it all for each).
        let wholeURI = "/v1/accounts/\(state.account)/members/\(member)/attachments/ca1.1.\(Hex.encode(SystemRandom.bytes(count: 32)))"
        #expect(try await client.signed(phone, .put, wholeURI, body: object.bytes).status == .created)
        #expect(try await client.signed(phone, .get, wholeURI + "/chunks").status == .badRequest)
        #expect(try await client.signed(phone, .get, wholeURI + "/chunks/0").status == .badRequest)
        // The address is there now: a new upload is not needed, and replacing takes a device's signature.
        #expect(try decode(UploadStarted.self, try await begin(size: 10)).existed)
        let session = try await client.openSession(phone, account: state.account)
        response = try await client.macRequest(session, .post, uri + "/uploads?replace=true",
                                               body: Array(try JSONEncoder().encode(BeginUploadRequest(key: Data(key).base64EncodedString(), chunkShift: 10, size: 10))))
        #expect(response.status == .forbidden && errorCode(response) == "signature_required")
    }
}

/// Issue 21: an upload given up on goes after a day even when its account never
/// uploads again (the sweep at each new upload only covers the account uploading):
/// the service sweeps every account's, and a complete upload is never swept.
@Test(arguments: StoreBackend.all) func unfinishedUploadsOfEveryAccountAreSweptAfterADay(_ backend: StoreBackend) async throws {
    try await backend.withStore { store in
        try await buildApplication(testConfiguration { _ in }, database: store, logger: testLogger).test(.router) { client in
            let phone = TestDevice("phone")
            var state = try await client.createAccount(phone)
            let member = try await client.addMember(phone, &state)
            let key = try Envelope.seal(SymmetricKey(), under: SymmetricKey(), generation: 1, context: EnvelopeContext(purpose: "attachment-key")).bytes
            func begin(_ address: String) async throws -> String {
                let response = try await client.signed(phone, .post, "/v1/accounts/\(state.account)/members/\(member)/attachments/\(address)/uploads",
                                                       body: Array(try JSONEncoder().encode(BeginUploadRequest(key: Data(key).base64EncodedString(), chunkShift: 10, size: 100))))
                return try #require(try decode(UploadStarted.self, response).upload)
            }
            let abandoned = "ca1.1." + Hex.encode(SystemRandom.bytes(count: 32)), finished = "ca1.1." + Hex.encode(SystemRandom.bytes(count: 32))
            let gone = try await begin(abandoned)
            let done = try await begin(finished)
            let base = "/v1/accounts/\(state.account)/members/\(member)/attachments/\(finished)/uploads/\(done)"
            #expect(try await client.signed(phone, .put, base + "/chunks/0", body: SystemRandom.bytes(count: 116)).status == .noContent)
            #expect(try await client.signed(phone, .post, base + "/complete").status == .created)

            // Not yet a day old: nothing goes. A day on: the unfinished one goes, the complete one stays.
            #expect(try await store.sweepUnfinishedUploads(before: KeyVaultDatabase.now() - KeyVaultDatabase.unfinishedUploadSeconds) == 0)
            #expect(try await store.sweepUnfinishedUploads(before: KeyVaultDatabase.now() + 1) == 1)
            #expect(try await client.signed(phone, .get, "/v1/accounts/\(state.account)/members/\(member)/attachments/\(abandoned)/uploads/\(gone)").status == .notFound)
            #expect(try await client.signed(phone, .get, "/v1/accounts/\(state.account)/members/\(member)/attachments/\(finished)").status == .ok)
        }
    }
}
