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
        let member = try await client.addMember(phone, &state)
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
        func listed() async throws -> [AttachmentInfo] { try await client.attachmentList(phone, base) }
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

/// `member.remove` takes the member's wraps and attachments with it, in the append's
/// transaction; the other members' stay, and nothing can be put under it afterwards.
@Test(arguments: StoreBackend.all) func aRemovedMembersWrapsAndAttachmentsGoWithItsLink(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone")
        var state = try await client.createAccount(phone)
        let emma = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16))), noah = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
        func wrap(_ member: MemberID) throws -> MemberWrap {
            let context = try EnvelopeContext(purpose: "member-key", ["account": state.account.rawValue, "member": member.rawValue,
                                                                     "member-generation": "1", "master-generation": "1"])
            return MemberWrap(member: member, memberGeneration: 1, masterGeneration: 1,
                              envelope: try Envelope.seal(SymmetricKey(), under: SymmetricKey(), generation: 1, context: context).base64)
        }
        let key = try Envelope.seal(SymmetricKey(), under: SymmetricKey(), generation: 1, context: EnvelopeContext(purpose: "attachment-key")).bytes
        let content = try Envelope.seal(SystemRandom.bytes(count: 100), under: SymmetricKey(), generation: 1, context: EnvelopeContext(purpose: "attachment-content")).bytes
        let address = "ca1.1." + Hex.encode(SystemRandom.bytes(count: 32))
        for member in [emma, noah] {
            #expect(try await client.append(phone, &state, AppendRequest(
                link: phone.link(.memberAdd, after: state, body: ["member": member.rawValue, "memberGeneration": "1"]), wraps: [try wrap(member)])).status == .created)
            #expect(try await client.signed(phone, .put, "/v1/accounts/\(state.account)/members/\(member)/attachments/\(address)",
                                            body: AttachmentObject(key: key, content: content).bytes).status == .created)
        }
        func wraps(_ member: MemberID) async throws -> Int {
            (try decode([String: [MemberWrap]].self, try await client.signed(phone, .get, "/v1/accounts/\(state.account)/wraps?member=\(member)"))["wraps"] ?? []).count
        }
        func attachments(_ member: MemberID) async throws -> Int {
            (try decode([String: [AttachmentInfo]].self, try await client.signed(phone, .get, "/v1/accounts/\(state.account)/members/\(member)/attachments"))["attachments"] ?? []).count
        }
        #expect(try await client.append(phone, &state, AppendRequest(
            link: phone.link(.memberRemove, after: state, body: ["member": emma.rawValue]))).status == .created)
        let (emmaWraps, emmaAttachments) = (try await wraps(emma), try await attachments(emma))
        let (noahWraps, noahAttachments) = (try await wraps(noah), try await attachments(noah))
        #expect(emmaWraps == 0 && emmaAttachments == 0)
        #expect(noahWraps == 1 && noahAttachments == 1, "another member's went too")
        // Nothing is put under a removed member, and its id is never added again.
        #expect(try await client.signed(phone, .put, "/v1/accounts/\(state.account)/members/\(emma)/attachments/\(address)",
                                        body: AttachmentObject(key: key, content: content).bytes).status == .notFound)
        let again = try await client.append(phone, &state, AppendRequest(
            link: phone.link(.memberAdd, after: state, body: ["member": emma.rawValue, "memberGeneration": "1"]), wraps: [try wrap(emma)]))
        #expect(again.status == .conflict || again.status == .badRequest, "a removed member's id was added again")
    }
}

/// `account.reset` (issue 22, item 3) on the server: it comes with the new master key's
/// boxes for its device and its code (refused without one); with it the other devices
/// are refused, the boxes of older generations and the old recovery slot are gone.
@Test(arguments: StoreBackend.all) func aResetKeepsNoKeyOfBeforeAndRefusesTheOtherDevices(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone"), laptop = TestDevice("laptop")
        let old = RecoveryFixture()
        var state = try await old.setUp(client, phone)
        #expect(try await client.append(phone, &state, AppendRequest(
            link: phone.link(.deviceAdd, after: state, body: laptop.deviceFields),
            boxes: [try phone.box(old.masterKey, generation: 1, for: laptop, at: state.sequence + 1, account: state.account)])).status == .created)
        let new = RecoveryFixture()
        let link = phone.link(.accountReset, after: state, body: [
            "masterGeneration": "2", "masterKeyCheck": Hex.encode(SystemRandom.bytes(count: 16)),
            "authKey": Hex.encode(new.authKey.publicKey.rawRepresentation), "boxKey": Hex.encode(new.boxKey.publicKey.rawRepresentation),
            "recoveryGeneration": "2"])
        let mine = try phone.box(new.masterKey, generation: 2, for: phone, at: state.sequence + 1, account: state.account)
        var codes = KeyBox(generation: 2, sequence: state.sequence + 1, recipient: ChainLink.recoverySigner,
                           box: base64Encode(try new.boxKey.publicKey.sealedBox(for: new.masterKey)), signer: phone.id.rawValue, signature: "")
        codes.sign(with: phone.signing, account: state.account)
        // Without the code's box the code would enroll a device that opens nothing: refused, nothing changes.
        var unchanged = state
        #expect(try await client.append(phone, &unchanged, AppendRequest(link: link, boxes: [mine], recovery: new.slot)).status == .badRequest)
        #expect(try await client.signed(laptop, .get, "/v1/accounts/\(state.account)/boxes").status == .ok)
        #expect(try await client.append(phone, &state, AppendRequest(link: link, boxes: [mine, codes], recovery: new.slot)).status == .created)

        let refused = try await client.signed(laptop, .get, "/v1/accounts/\(state.account)/boxes")
        #expect(refused.status == .forbidden || refused.status == .unauthorized, "a device the reset revoked is still served")
        let boxes = try decode([String: [KeyBox]].self, try await client.signed(phone, .get, "/v1/accounts/\(state.account)/boxes?recipient=all"))["boxes"] ?? []
        #expect(Set(boxes.map(\.generation)) == [2] && boxes.count == 2, "boxes of before the reset are kept: \(boxes.map(\.generation))")
        let slot = try decode(RecoverySlot.self, try await client.execute(uri: "/v1/accounts/\(state.account)/recovery", method: .get))
        #expect(slot.authKey == Hex.encode(new.authKey.publicKey.rawRepresentation))
    }
}
