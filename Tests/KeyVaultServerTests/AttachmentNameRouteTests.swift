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

// Issue 22, item 2: an attachment's name travels sealed beside it (`…/meta`, an
// envelope the server stores and lists and cannot open), and an attachment can be
// deleted. The server sees no name; a delete takes a device's own signature.

@Test(arguments: StoreBackend.all) func anAttachmentsSealedNameIsStoredListedAndGoesWithIt(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone")
        var state = try await client.createAccount(phone)
        let member = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
        try await client.append(phone, &state, AppendRequest(link: phone.link(.memberAdd, after: state, body: ["member": member.rawValue, "memberGeneration": "1"])))
        let base = "/v1/accounts/\(state.account)/members/\(member)/attachments"
        let address = "ca1.1." + Hex.encode(SystemRandom.bytes(count: 32))
        let uri = base + "/" + address
        let meta = try Envelope.seal(Array("{}".utf8), under: SymmetricKey(), generation: 1, context: EnvelopeContext(purpose: "attachment-meta")).bytes

        // No attachment there: nothing to name, nothing to delete.
        #expect(try await client.signed(phone, .put, uri + "/meta", body: meta).status == .notFound)
        #expect(try await client.signed(phone, .delete, uri).status == .notFound)
        let key = try Envelope.seal(SymmetricKey(), under: SymmetricKey(), generation: 1, context: EnvelopeContext(purpose: "attachment-key")).bytes
        let content = try Envelope.seal(SystemRandom.bytes(count: 100), under: SymmetricKey(), generation: 1, context: EnvelopeContext(purpose: "attachment-content")).bytes
        #expect(try await client.signed(phone, .put, uri, body: AttachmentObject(key: key, content: content).bytes).status == .created)

        // Not an envelope, or larger than a name needs: refused, nothing stored.
        var response = try await client.signed(phone, .put, uri + "/meta", body: Array("scan.pdf".utf8))
        #expect(response.status == .badRequest && errorCode(response) == "malformed_attachment")
        #expect(try await client.signed(phone, .put, uri + "/meta", body: meta + [UInt8](repeating: 0, count: 8192)).status == .contentTooLarge)
        func listed() async throws -> [AttachmentInfo] {
            try decode([String: [AttachmentInfo]].self, try await client.signed(phone, .get, base))["attachments"] ?? []
        }
        #expect(try await listed().first?.meta == nil)
        #expect(try await client.signed(phone, .put, uri + "/meta", body: meta).status == .noContent)
        #expect(try await listed().first?.meta == Data(meta).base64EncodedString())

        // A delete destroys: a device's own signature, never a session's.
        let session = try await client.openSession(phone, account: state.account)
        response = try await client.macRequest(session, .delete, uri)
        #expect(response.status == .forbidden && errorCode(response) == "signature_required")
        #expect(try await client.signed(phone, .delete, uri).status == .noContent)
        #expect(try await listed().isEmpty)
        #expect(try await client.signed(phone, .get, uri).status == .notFound)
        // Put again, it has no name from before.
        #expect(try await client.signed(phone, .put, uri, body: AttachmentObject(key: key, content: content).bytes).status == .created)
        #expect(try await listed().first?.meta == nil)
        let audit = try decode([String: [AuditEntry]].self, try await client.signed(phone, .get, "/v1/accounts/\(state.account)/audit"))["entries"] ?? []
        #expect(audit.contains { $0.event == "attachment.delete" })
    }
}
