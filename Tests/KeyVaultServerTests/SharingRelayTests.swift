import Foundation
import HTTPTypes
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultPostgres
import Testing
@testable import KeyVaultServer

// The sharing relay (docs/formats/member-sharing.md, "The relay: routes"): what an
// append must carry, the contact exchange, and what a grantee reaches of a sharer's.

/// An account as a sharing client makes it: one device and a sharing identity.
private struct SharingAccount {
    let device: TestDevice
    let identity = Ed25519.PrivateKey()
    let identityBox = X25519.PrivateKey()
    var state: ChainState
    var account: AccountID { state.account }

    init(_ device: TestDevice, _ state: ChainState) {
        self.device = device
        self.state = state
    }

    /// The identity's public halves, generation 1, as the exchange carries them.
    var keys: IdentityKeys {
        IdentityKeys(generation: 1, signingKey: Hex.encode(identity.publicKey.rawRepresentation),
                     boxKey: Hex.encode(identityBox.publicKey.rawRepresentation))
    }

    var contactIdentity: ContactIdentity {
        ContactIdentity(account: account, generation: 1, signingKey: identity.publicKey, boxKey: identityBox.publicKey)
    }

    /// The body of an identity.set (this identity) or of a contact.pin of it (with `account`).
    var identityFields: [String: String] {
        ["identityGeneration": "1", "signingKey": keys.signingKey, "boxKey": keys.boxKey]
    }

    /// A share box of `member`'s key generation for `grantee`, signed by this identity (or `signer`).
    func box(_ member: MemberID, _ generation: UInt32, for grantee: AccountID, grant: UInt64, signer: Ed25519.PrivateKey? = nil) -> ShareBox {
        var box = ShareBox(member: member, memberGeneration: generation, grantee: grantee, granteeIdentityGeneration: 1, grant: grant,
                           box: base64Encode(SystemRandom.bytes(count: 80)))
        box.sign(with: signer ?? identity, sharer: account)
        return box
    }
}

private func identityWrap(_ generation: UInt32, master: UInt32) -> IdentityWrap {
    IdentityWrap(identityGeneration: generation, masterGeneration: master, envelope: base64Encode(SystemRandom.bytes(count: 100)))
}

private func newMember() -> MemberID { MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16))) }

extension TestClientProtocol {
    /// Appends a link of `account`'s device, with what the relay keeps beside it.
    @discardableResult
    fileprivate func append(_ account: inout SharingAccount, _ type: LinkType, _ body: [String: String],
                            identityWraps: [IdentityWrap] = [], shareBoxes: [ShareBox] = []) async throws -> TestResponse {
        let link = account.device.link(type, after: account.state, body: body)
        return try await append(account.device, &account.state, AppendRequest(link: link, identityWraps: identityWraps, shareBoxes: shareBoxes))
    }

    /// A new account with a sharing identity (identity.set with its wrap).
    fileprivate func sharingAccount(_ name: String) async throws -> SharingAccount {
        let device = TestDevice(name)
        var account = SharingAccount(device, try await createAccount(device))
        let response = try await append(&account, .identitySet, account.identityFields, identityWraps: [identityWrap(1, master: 1)])
        #expect(response.status == .created, "\(String(buffer: response.body))")
        return account
    }

    /// Adds a member to `account`.
    fileprivate func addMember(_ account: inout SharingAccount) async throws -> MemberID {
        let member = newMember()
        let response = try await append(&account, .memberAdd, ["member": member.rawValue, "memberGeneration": "1"])
        #expect(response.status == .created, "\(String(buffer: response.body))")
        return member
    }

    /// `account` pins `contact`'s identity (`contact.pin`).
    fileprivate func pin(_ contact: SharingAccount, on account: inout SharingAccount) async throws {
        var pin = contact.identityFields
        pin["account"] = contact.account.rawValue
        #expect(try await append(&account, .contactPin, pin).status == .created)
    }

    /// Pins `grantee` (if not yet) and grants it `member`, with a box of every generation; returns the grant link.
    @discardableResult
    fileprivate func share(_ member: MemberID, of sharer: inout SharingAccount, with grantee: SharingAccount,
                           readOnly: Bool) async throws -> UInt64 {
        if sharer.state.contacts[grantee.account] == nil { try await pin(grantee, on: &sharer) }
        let grant = sharer.state.sequence + 1
        let generations = 1...(sharer.state.members[member]?.generation ?? 1)
        let response = try await append(&sharer, .shareGrant, grantFields(member, grantee.account, readOnly: readOnly),
                                        shareBoxes: generations.map { sharer.box(member, $0, for: grantee.account, grant: grant) })
        #expect(response.status == .created, "\(String(buffer: response.body))")
        return grant
    }

    /// A sharer, a grantee that pinned it, and a stranger; one member of the sharer's
    /// shared with the grantee to write, another read-only.
    fileprivate func sharedTwoWays() async throws
        -> (sharer: SharingAccount, grantee: SharingAccount, stranger: SharingAccount, writable: MemberID, readable: MemberID) {
        var sharer = try await sharingAccount("sharer")
        var grantee = try await sharingAccount("grantee")
        let stranger = try await sharingAccount("stranger")
        try await pin(sharer, on: &grantee)
        let writable = try await addMember(&sharer)
        let readable = try await addMember(&sharer)
        try await share(writable, of: &sharer, with: grantee, readOnly: false)
        try await share(readable, of: &sharer, with: grantee, readOnly: true)
        return (sharer, grantee, stranger, writable, readable)
    }

    fileprivate func shared(_ account: SharingAccount) async throws -> [SharedWithAccount] {
        let response = try await signed(account.device, .get, "/v1/accounts/\(account.account)/shared")
        #expect(response.status == .ok, "\(String(buffer: response.body))")
        return try decode([String: [SharedWithAccount]].self, response)["shared"] ?? []
    }
}

private func grantFields(_ member: MemberID, _ grantee: AccountID, readOnly: Bool) -> [String: String] {
    ["member": member.rawValue, "grantee": grantee.rawValue, "granteeIdentityGeneration": "1", "readOnly": String(readOnly)]
}

// MARK: Identity wraps

@Test(arguments: StoreBackend.all) func anIdentityIsSetWithItsWrapAndEveryMasterRotationWrapsItAgain(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone")
        var account = SharingAccount(phone, try await client.createAccount(phone))
        var response = try await client.append(&account, .identitySet, account.identityFields)
        #expect(response.status == .badRequest && errorCode(response) == "bad_request", "\(String(buffer: response.body))")
        for wrong in [identityWrap(1, master: 2), identityWrap(2, master: 1),
                      IdentityWrap(identityGeneration: 1, masterGeneration: 1, envelope: base64Encode([UInt8](repeating: 1, count: 20)))] {
            response = try await client.append(&account, .identitySet, account.identityFields, identityWraps: [wrong])
            #expect(response.status == .badRequest && errorCode(response) == "bad_request", "\(wrong)")
        }
        #expect(account.state.identity == nil)
        let first = identityWrap(1, master: 1)
        response = try await client.append(&account, .identitySet, account.identityFields, identityWraps: [first])
        #expect(response.status == .created, "\(String(buffer: response.body))")

        response = try await client.append(&account, .masterRotate, ["masterGeneration": "2"])
        #expect(response.status == .badRequest && errorCode(response) == "bad_request", "\(String(buffer: response.body))")
        response = try await client.append(&account, .masterRotate, ["masterGeneration": "2"], identityWraps: [identityWrap(1, master: 1)])
        #expect(response.status == .badRequest && errorCode(response) == "bad_request", "a wrap under the old master key")
        let second = identityWrap(1, master: 2)
        response = try await client.append(&account, .masterRotate, ["masterGeneration": "2"], identityWraps: [second])
        #expect(response.status == .created, "\(String(buffer: response.body))")

        response = try await client.signed(phone, .get, "/v1/accounts/\(account.account)/identity-wraps")
        #expect(response.status == .ok)
        #expect(try decode([String: [IdentityWrap]].self, response)["wraps"] == [first, second])
    }
}

// MARK: Share boxes on the sharer's chain

@Test(arguments: StoreBackend.all) func aGrantComesWithABoxOfEveryMemberGenerationSignedByTheSharersIdentity(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        var sharer = try await client.sharingAccount("sharer")
        var grantee = try await client.sharingAccount("grantee")
        let member = try await client.addMember(&sharer)
        #expect(try await client.shared(grantee).isEmpty)
        // Before any grant a member rotation needs no box.
        #expect(try await client.append(&sharer, .memberRotate, ["member": member.rawValue, "memberGeneration": "2"]).status == .created)
        var pin = grantee.identityFields
        pin["account"] = grantee.account.rawValue
        #expect(try await client.append(&sharer, .contactPin, pin).status == .created)

        let grant = sharer.state.sequence + 1
        let fields = grantFields(member, grantee.account, readOnly: false)
        var response = try await client.append(&sharer, .shareGrant, fields)
        #expect(response.status == .badRequest && errorCode(response) == "bad_request", "no boxes")
        response = try await client.append(&sharer, .shareGrant, fields, shareBoxes: [sharer.box(member, 1, for: grantee.account, grant: grant)])
        #expect(response.status == .badRequest && errorCode(response) == "bad_request", "generation 2 missing")
        response = try await client.append(&sharer, .shareGrant, fields, shareBoxes: [
            sharer.box(member, 1, for: grantee.account, grant: grant),
            sharer.box(member, 2, for: grantee.account, grant: grant, signer: Ed25519.PrivateKey()),
        ])
        #expect(response.status == .unauthorized && errorCode(response) == "bad_signature", "a forged box: \(String(buffer: response.body))")
        response = try await client.append(&sharer, .shareGrant, fields, shareBoxes: [
            sharer.box(member, 1, for: grantee.account, grant: grant), sharer.box(member, 2, for: grantee.account, grant: grant + 1),
        ])
        #expect(response.status == .badRequest && errorCode(response) == "unknown_grant", "a box of another link")
        let boxes = [sharer.box(member, 1, for: grantee.account, grant: grant), sharer.box(member, 2, for: grantee.account, grant: grant)]
        response = try await client.append(&sharer, .shareGrant, fields, shareBoxes: boxes)
        #expect(response.status == .created, "\(String(buffer: response.body))")

        // While the grant is in force, a rotation of the member seals the new generation to it.
        let rotate = ["member": member.rawValue, "memberGeneration": "3"]
        response = try await client.append(&sharer, .memberRotate, rotate)
        #expect(response.status == .badRequest && errorCode(response) == "bad_request", "\(String(buffer: response.body))")
        let third = sharer.box(member, 3, for: grantee.account, grant: grant)
        response = try await client.append(&sharer, .memberRotate, rotate, shareBoxes: [third])
        #expect(response.status == .created, "\(String(buffer: response.body))")

        // Listed to the grantee once it pins the sharer (a stranger's grants are not listed).
        #expect(try await client.shared(grantee).isEmpty)
        try await client.pin(sharer, on: &grantee)
        #expect(try await client.shared(grantee) == [SharedWithAccount(sharer: sharer.account, boxes: boxes + [third])])
        #expect(try await client.shared(sharer).isEmpty)
    }
}

// MARK: The grantee's reads and writes

@Test(arguments: StoreBackend.all) func aGranteeReadsAndWritesWhatIsSharedWithItWhileTheGrantIsInForce(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        var (sharer, grantee, stranger, writable, readable) = try await client.sharedTwoWays()
        let own = try await client.addMember(&sharer)
        let (address, object) = try sealedAttachment()
        #expect(try await client.signed(sharer.device, .put, "/v1/accounts/\(sharer.account)/members/\(writable)/attachments/\(address)",
                                        body: object).status == .created)

        let base = "/v1/accounts/\(grantee.account)/shared/\(sharer.account)"
        let sharerChain = "/v1/accounts/\(grantee.account)/contacts/\(sharer.account)/chain"
        var response = try await client.signed(grantee.device, .get, sharerChain)
        #expect(response.status == .ok, "\(String(buffer: response.body))")
        let chain = try decode(ChainResponse.self, response)
        #expect(chain.account == sharer.account)
        // And the sharer reads the grantee's, which pins it (to see its identity is still the verified one).
        response = try await client.signed(sharer.device, .get, "/v1/accounts/\(sharer.account)/contacts/\(grantee.account)/chain")
        #expect(response.status == .ok)
        #expect(try decode(ChainResponse.self, response).account == grantee.account)
        #expect(try ChainState(links: chain.links) == sharer.state)

        response = try await client.signed(grantee.device, .get, base + "/members/\(writable)/attachments")
        #expect(try decode([String: [AttachmentInfo]].self, response)["attachments"]?.map(\.address) == [address])
        response = try await client.signed(grantee.device, .get, base + "/members/\(writable)/attachments/\(address)")
        #expect(response.status == .ok && [UInt8](response.body.readableBytesView) == object)

        // A write under a writable grant is stored as the sharer's, and logged with the grantee's device.
        let (added, addedObject) = try sealedAttachment()
        response = try await client.signed(grantee.device, .put, base + "/members/\(writable)/attachments/\(added)", body: addedObject)
        #expect(response.status == .created, "\(String(buffer: response.body))")
        response = try await client.signed(sharer.device, .get, "/v1/accounts/\(sharer.account)/members/\(writable)/attachments/\(added)")
        #expect(response.status == .ok && [UInt8](response.body.readableBytesView) == addedObject)
        response = try await client.signed(sharer.device, .get, "/v1/accounts/\(sharer.account)/audit")
        let audit = try decode([String: [AuditEntry]].self, response)["entries"] ?? []
        #expect(audit.contains { $0.event == "attachment.put" && $0.device == grantee.device.id.rawValue }, "\(audit)")

        response = try await client.signed(grantee.device, .put, base + "/members/\(readable)/attachments/\(added)", body: addedObject)
        #expect(response.status == .forbidden && errorCode(response) == "read_only_grant", "\(String(buffer: response.body))")
        response = try await client.signed(grantee.device, .get, base + "/members/\(readable)/attachments")
        #expect(response.status == .ok)

        // What is not granted to it, and anything for an account with no grant, is not there.
        let strangerBase = "/v1/accounts/\(stranger.account)/shared/\(sharer.account)"
        for (device, uri) in [(grantee.device, base + "/members/\(own)/attachments"),
                              (grantee.device, base + "/members/\(own)/attachments/\(address)"),
                              (stranger.device, "/v1/accounts/\(stranger.account)/contacts/\(sharer.account)/chain"),
                              (stranger.device, "/v1/accounts/\(stranger.account)/contacts/\(grantee.account)/chain"),
                              (stranger.device, strangerBase + "/members/\(writable)/attachments"),
                              (stranger.device, strangerBase + "/members/\(writable)/attachments/\(address)")] {
            response = try await client.signed(device, .get, uri)
            #expect(response.status == .notFound && errorCode(response) == "not_found", "\(uri)")
        }
        response = try await client.signed(stranger.device, .put, strangerBase + "/members/\(writable)/attachments/\(added)", body: addedObject)
        #expect(response.status == .notFound)
        #expect(try await client.shared(stranger).isEmpty)

        // Unshared: gone at once, the boxes of the grant no longer listed.
        #expect(try await client.append(&sharer, .shareRevoke, ["member": writable.rawValue, "grantee": grantee.account.rawValue]).status == .created)
        response = try await client.signed(grantee.device, .get, base + "/members/\(writable)/attachments/\(address)")
        #expect(response.status == .notFound)
        response = try await client.signed(grantee.device, .get, base + "/members/\(readable)/attachments")
        #expect(response.status == .ok, "the read-only grant still stands")
        #expect(try await client.shared(grantee).flatMap(\.boxes).map(\.member) == [readable])
        #expect(try await client.append(&sharer, .shareRevoke, ["member": readable.rawValue, "grantee": grantee.account.rawValue]).status == .created)
        response = try await client.signed(grantee.device, .get, base + "/members/\(readable)/attachments")
        #expect(response.status == .notFound && errorCode(response) == "not_found")
        #expect(try await client.shared(grantee).isEmpty)
        // The chain stays readable while the sharer pins the grantee (it is a contact, whatever is shared).
        #expect(try await client.signed(grantee.device, .get, sharerChain).status == .ok)
    }
}

/// Issue 21: a grantee's attachments of any size go through its sharer's relay in
/// chunks, as the sharer's own do: begun, put, resumed and completed under a grant that
/// writes, read a chunk at a time (and their key part alone) under any grant, and every
/// one of these refused from the revocation on, an upload begun before it included.
@Test(arguments: StoreBackend.all) func aGranteeUploadsAndReadsInChunksThroughTheRelayWhileItsGrantAllows(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        var (sharer, grantee, stranger, writable, readable) = try await client.sharedTwoWays()
        let base = "/v1/accounts/\(grantee.account)/shared/\(sharer.account)"
        // Framing only (the server opens nothing): a key envelope, a chunk of 2^10 and one of 300 + 16.
        let key = try Envelope.seal(SymmetricKey(), under: SymmetricKey(), generation: 1, context: EnvelopeContext(purpose: "attachment-key")).bytes
        let chunks = [SystemRandom.bytes(count: 1040), SystemRandom.bytes(count: 316)]
        let beginBody = Array(try JSONEncoder().encode(BeginUploadRequest(key: Data(key).base64EncodedString(), chunkShift: 10, size: 1324)))
        func uri(_ member: MemberID, _ address: String, _ account: SharingAccount? = nil) -> String {
            (account.map { "/v1/accounts/\($0.account)" } ?? base) + "/members/\(member)/attachments/\(address)"
        }
        func begin(_ member: MemberID, _ address: String, query: String = "", by owner: SharingAccount? = nil) async throws -> TestResponse {
            try await client.signed(owner?.device ?? grantee.device, .post, uri(member, address, owner) + "/uploads" + query, body: beginBody)
        }

        // Under the writable grant: begun, put, asked where it stands, completed; stored as the sharer's, in chunks.
        let address = "ca1.1." + Hex.encode(SystemRandom.bytes(count: 32))
        var response = try await begin(writable, address)
        #expect(response.status == .created, "\(String(buffer: response.body))")
        let upload = try #require(try decode(UploadStarted.self, response).upload)
        let uploadURI = uri(writable, address) + "/uploads/\(upload)"
        #expect(try await client.signed(grantee.device, .put, uploadURI + "/chunks/0", body: chunks[0]).status == .noContent)
        #expect(try decode(UploadStatus.self, try await client.signed(grantee.device, .get, uploadURI)).stored == 1)
        #expect(try await client.signed(grantee.device, .put, uploadURI + "/chunks/1", body: chunks[1]).status == .noContent)
        response = try await client.signed(grantee.device, .post, uploadURI + "/complete")
        #expect(response.status == .created, "\(String(buffer: response.body))")
        response = try await client.signed(sharer.device, .get, uri(writable, address, sharer) + "/chunks")
        #expect(try decode(ChunkList.self, response) == ChunkList(chunks: 2, chunkShift: 10))
        response = try await client.signed(sharer.device, .get, "/v1/accounts/\(sharer.account)/audit")
        let audit = try decode([String: [AuditEntry]].self, response)["entries"] ?? []
        #expect(audit.contains { $0.event == "attachment.put" && $0.device == grantee.device.id.rawValue && ($0.detail ?? "").contains(address) }, "\(audit)")

        // Read back a chunk at a time, its key part alone.
        #expect(try decode(ChunkList.self, try await client.signed(grantee.device, .get, uri(writable, address) + "/chunks")) == ChunkList(chunks: 2, chunkShift: 10))
        for (index, bytes) in chunks.enumerated() {
            #expect([UInt8](buffer: try await client.signed(grantee.device, .get, uri(writable, address) + "/chunks/\(index)").body) == bytes)
        }
        #expect([UInt8](buffer: try await client.signed(grantee.device, .get, uri(writable, address) + "/key").body) == key)
        // The address is there: nothing to upload, and a grantee never replaces (what the sharer checks, a grantee could plant).
        #expect(try decode(UploadStarted.self, try await begin(writable, address, query: "?replace=true")).existed)

        // An upload is its starter's: the grantee's of the address the sharer is uploading
        // does not cancel the sharer's, and neither reaches the other's by its id.
        let busy = "ca1.1." + Hex.encode(SystemRandom.bytes(count: 32))
        let sharersUpload = try #require(try decode(UploadStarted.self, try await begin(writable, busy, by: sharer)).upload)
        let granteesUpload = try #require(try decode(UploadStarted.self, try await begin(writable, busy)).upload)
        #expect(try await client.signed(sharer.device, .get, uri(writable, busy, sharer) + "/uploads/\(sharersUpload)").status == .ok)
        #expect(try await client.signed(grantee.device, .put, uri(writable, busy) + "/uploads/\(sharersUpload)/chunks/0", body: chunks[0]).status == .notFound)
        #expect(try await client.signed(grantee.device, .post, uri(writable, busy) + "/uploads/\(sharersUpload)/complete").status == .notFound)
        #expect(try await client.signed(sharer.device, .put, uri(writable, busy, sharer) + "/uploads/\(granteesUpload)/chunks/0", body: chunks[0]).status == .notFound)

        // Read-only: read in chunks, never begun nor put into.
        let sharerUpload = try #require(try decode(UploadStarted.self, try await begin(readable, address, by: sharer)).upload)
        let readableURI = uri(readable, address, sharer) + "/uploads/\(sharerUpload)"
        #expect(try await client.signed(sharer.device, .put, readableURI + "/chunks/0", body: chunks[0]).status == .noContent)
        #expect(try await client.signed(sharer.device, .put, readableURI + "/chunks/1", body: chunks[1]).status == .noContent)
        #expect(try await client.signed(sharer.device, .post, readableURI + "/complete").status == .created)
        #expect([UInt8](buffer: try await client.signed(grantee.device, .get, uri(readable, address) + "/chunks/1").body) == chunks[1])
        #expect([UInt8](buffer: try await client.signed(grantee.device, .get, uri(readable, address) + "/key").body) == key)
        let other = "ca1.1." + Hex.encode(SystemRandom.bytes(count: 32))
        let otherUpload = try #require(try decode(UploadStarted.self, try await begin(readable, other, by: sharer)).upload)
        let otherURI = uri(readable, other) + "/uploads/\(otherUpload)"
        for response in [try await begin(readable, other), try await client.signed(grantee.device, .put, otherURI + "/chunks/0", body: chunks[0]),
                         try await client.signed(grantee.device, .get, otherURI), try await client.signed(grantee.device, .post, otherURI + "/complete")] {
            #expect(response.status == .forbidden && errorCode(response) == "read_only_grant", "\(String(buffer: response.body))")
        }

        // A stranger reaches none of it.
        let strangerBase = "/v1/accounts/\(stranger.account)/shared/\(sharer.account)/members/\(writable)/attachments/\(address)"
        for (method, path) in [(HTTPRequest.Method.get, "/chunks"), (.get, "/chunks/0"), (.get, "/key"), (.post, "/uploads"),
                               (.put, "/uploads/\(upload)/chunks/0"), (.get, "/uploads/\(upload)"), (.post, "/uploads/\(upload)/complete")] {
            response = try await client.signed(stranger.device, method, strangerBase + path, body: method == .post ? beginBody : [])
            #expect(response.status == .notFound, "\(path)")
        }

        // Unshared: an upload begun before goes no further, and nothing is read.
        let late = "ca1.1." + Hex.encode(SystemRandom.bytes(count: 32))
        let lateUpload = try #require(try decode(UploadStarted.self, try await begin(writable, late)).upload)
        let lateURI = uri(writable, late) + "/uploads/\(lateUpload)"
        #expect(try await client.signed(grantee.device, .put, lateURI + "/chunks/0", body: chunks[0]).status == .noContent)
        #expect(try await client.append(&sharer, .shareRevoke, ["member": writable.rawValue, "grantee": grantee.account.rawValue]).status == .created)
        for (method, path, body) in [(HTTPRequest.Method.put, lateURI + "/chunks/1", chunks[1]), (.get, lateURI, []), (.post, lateURI + "/complete", []),
                                     (.post, uri(writable, late) + "/uploads", beginBody), (.get, uri(writable, address) + "/chunks", []),
                                     (.get, uri(writable, address) + "/chunks/0", []), (.get, uri(writable, address) + "/key", [])] {
            response = try await client.signed(grantee.device, method, path, body: body)
            #expect(response.status == .notFound && errorCode(response) == "not_found", "\(method) \(path)")
        }
        #expect(try await client.signed(sharer.device, .get, uri(writable, late, sharer)).status == .notFound, "never completed")
        // Gone, not only refused: shared again, the upload begun before the revocation is not there.
        try await client.share(writable, of: &sharer, with: grantee, readOnly: false)
        response = try await client.signed(grantee.device, .get, lateURI)
        #expect(response.status == .notFound && errorCode(response) == "not_found", "\(String(buffer: response.body))")
    }
}

/// A grantee whose grant lets it add attachments names one that has no name yet, through
/// the relay (`…/meta`, sealed under the member's key: the server reads nothing); it never
/// renames (the sharer's names, or its own), and a revocation stops it. The names it set stay.
@Test(arguments: StoreBackend.all) func aGranteeNamesAnUnnamedAttachmentThroughTheRelayAndRenamesNone(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        var (sharer, grantee, stranger, writable, readable) = try await client.sharedTwoWays()
        func put(_ member: MemberID) async throws -> String {
            let (address, object) = try sealedAttachment()
            let response = try await client.signed(sharer.device, .put, "/v1/accounts/\(sharer.account)/members/\(member)/attachments/\(address)",
                                                   body: object)
            #expect(response.status == .created)
            return address
        }
        func meta(_ text: String) throws -> [UInt8] {
            try Envelope.seal(Array(text.utf8), under: SymmetricKey(), generation: 1, context: EnvelopeContext(purpose: "attachment-meta")).bytes
        }
        func name(_ member: MemberID, _ address: String, by account: SharingAccount, _ body: [UInt8]) async throws -> TestResponse {
            try await client.signed(account.device, .put, "/v1/accounts/\(account.account)/shared/\(sharer.account)/members/\(member)/attachments/\(address)/meta",
                                    body: body)
        }
        func listed(_ member: MemberID, _ address: String) async throws -> String? {
            try await client.attachmentList(sharer.device, "/v1/accounts/\(sharer.account)/members/\(member)/attachments")
                .first { $0.address == address }?.meta
        }
        let first = try await put(writable), second = try await put(writable), third = try await put(readable)
        let a = try meta("a"), b = try meta("b"), c = try meta("c")

        // Unnamed: the grantee names it, and the sharer lists the name.
        #expect(try await name(writable, first, by: grantee, a).status == .noContent)
        #expect(try await listed(writable, first) == Data(a).base64EncodedString())
        // In the sharer's audit log, with the grantee's device.
        let audit = try decode([String: [AuditEntry]].self, try await client.signed(sharer.device, .get, "/v1/accounts/\(sharer.account)/audit"))["entries"] ?? []
        #expect(audit.filter { $0.event == "attachment.name" }.map(\.device) == [grantee.device.id.rawValue])
        // Named already, by the grantee or by the sharer: refused, the name kept.
        var response = try await name(writable, first, by: grantee, b)
        #expect(response.status == .conflict && errorCode(response) == "attachment_named", "\(response.status)")
        #expect(try await listed(writable, first) == Data(a).base64EncodedString())
        #expect(try await client.signed(sharer.device, .put, "/v1/accounts/\(sharer.account)/members/\(writable)/attachments/\(second)/meta",
                                        body: c).status == .noContent)
        response = try await name(writable, second, by: grantee, b)
        #expect(response.status == .conflict && errorCode(response) == "attachment_named")
        #expect(try await listed(writable, second) == Data(c).base64EncodedString())
        // Not an envelope; no such attachment; a read-only grant; a stranger.
        let unnamed = try await put(writable)
        response = try await name(writable, unnamed, by: grantee, Array("scan.pdf".utf8))
        #expect(response.status == .badRequest && errorCode(response) == "malformed_attachment")
        #expect(try await name(writable, "ca1.1." + Hex.encode(SystemRandom.bytes(count: 32)), by: grantee, a).status == .notFound)
        response = try await name(readable, third, by: grantee, a)
        #expect(response.status == .forbidden && errorCode(response) == "read_only_grant")
        #expect(try await name(writable, unnamed, by: stranger, a).status == .notFound)
        #expect(try await listed(writable, unnamed) == nil)
        #expect(try await listed(readable, third) == nil)
        // Unshared: refused as if nothing were there; the name it set stays the sharer's.
        #expect(try await client.append(&sharer, .shareRevoke, ["member": writable.rawValue, "grantee": grantee.account.rawValue]).status == .created)
        response = try await name(writable, unnamed, by: grantee, a)
        #expect(response.status == .notFound && errorCode(response) == "not_found")
        #expect(try await listed(writable, unnamed) == nil)
        #expect(try await listed(writable, first) == Data(a).base64EncodedString())
    }
}

// MARK: The contact exchange

@Test(arguments: StoreBackend.all) func theContactExchangeRunsOnceAndInOrderBetweenTheTwoAccounts(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let alice = try await client.sharingAccount("alice")
        let bob = try await client.sharingAccount("bob")
        let carol = try await client.sharingAccount("carol")
        let nonceA = SystemRandom.bytes(count: 32), nonceB = SystemRandom.bytes(count: 32)
        let commitment = try #require(ContactCommitment.compute(alice.contactIdentity, nonce: nonceA))
        var response = try await client.signedJSON(alice.device, .post, "/v1/accounts/\(alice.account)/contact-requests",
                                                   ContactRequestCreate(to: bob.account, identity: alice.keys, commitment: Hex.encode(commitment)))
        #expect(response.status == .created, "\(String(buffer: response.body))")
        let created = try decode(ContactRequestInfo.self, response)
        #expect(created.id.utf8.count == 32 && created.from == alice.account && created.to == bob.account && created.response == nil)
        #expect(created.expires > Int64(Date().timeIntervalSince1970) + 500)

        for side in [alice, bob] {
            response = try await client.signed(side.device, .get, "/v1/accounts/\(side.account)/contact-requests")
            #expect(try decode([String: [ContactRequestInfo]].self, response)["requests"] == [created])
            response = try await client.signed(side.device, .get, "/v1/accounts/\(side.account)/contact-requests/\(created.id)")
            #expect(try decode(ContactRequestInfo.self, response) == created)
        }
        response = try await client.signed(carol.device, .get, "/v1/accounts/\(carol.account)/contact-requests/\(created.id)")
        #expect(response.status == .notFound)
        response = try await client.signed(carol.device, .get, "/v1/accounts/\(carol.account)/contact-requests")
        #expect(try decode([String: [ContactRequestInfo]].self, response)["requests"] == [])

        let path = { (account: SharingAccount, step: String) in "/v1/accounts/\(account.account)/contact-requests/\(created.id)/\(step)" }
        response = try await client.signedJSON(alice.device, .post, path(alice, "reveal"), LinkNonce(nonce: Hex.encode(nonceA)))
        #expect(response.status == .conflict && errorCode(response) == "contact_request_out_of_turn", "\(String(buffer: response.body))")

        let answer = ContactResponse(identity: bob.keys, nonce: Hex.encode(nonceB))
        response = try await client.signedJSON(carol.device, .post, path(carol, "respond"), ContactResponse(identity: carol.keys, nonce: answer.nonce))
        #expect(response.status == .notFound, "not to carol")
        response = try await client.signedJSON(alice.device, .post, path(alice, "respond"), ContactResponse(identity: alice.keys, nonce: answer.nonce))
        #expect(response.status == .notFound, "alice asked; she does not answer")
        response = try await client.signedJSON(bob.device, .post, path(bob, "respond"), answer)
        #expect(response.status == .noContent, "\(String(buffer: response.body))")
        response = try await client.signedJSON(bob.device, .post, path(bob, "respond"), answer)
        #expect(response.status == .conflict && errorCode(response) == "contact_request_closed")

        response = try await client.signedJSON(alice.device, .post, path(alice, "reveal"), LinkNonce(nonce: Hex.encode(nonceB)))
        #expect(response.status == .badRequest && errorCode(response) == "bad_reveal")
        response = try await client.signedJSON(bob.device, .post, path(bob, "reveal"), LinkNonce(nonce: Hex.encode(nonceA)))
        #expect(response.status == .notFound, "only the initiator reveals")
        response = try await client.signedJSON(alice.device, .post, path(alice, "reveal"), LinkNonce(nonce: Hex.encode(nonceA)))
        #expect(response.status == .noContent, "\(String(buffer: response.body))")
        response = try await client.signedJSON(alice.device, .post, path(alice, "reveal"), LinkNonce(nonce: Hex.encode(nonceA)))
        #expect(response.status == .conflict && errorCode(response) == "contact_request_closed")

        // Each side computes the safety code from what it read: the same six digits.
        response = try await client.signed(bob.device, .get, "/v1/accounts/\(bob.account)/contact-requests/\(created.id)")
        let done = try decode(ContactRequestInfo.self, response)
        #expect(done.response == answer && done.reveal == Hex.encode(nonceA))
        let reveal = try #require(done.reveal), bobsAnswer = try #require(done.response)
        let alicesCode = ContactSafetyCode.compute(initiator: alice.contactIdentity, commitment: commitment, initiatorNonce: nonceA,
                                                   responder: bob.contactIdentity, responderNonce: try Hex.decode(bobsAnswer.nonce))
        let bobsCode = ContactSafetyCode.compute(initiator: alice.contactIdentity, commitment: try Hex.decode(done.commitment),
                                                 initiatorNonce: try Hex.decode(reveal), responder: bob.contactIdentity, responderNonce: nonceB)
        #expect(alicesCode != nil && alicesCode == bobsCode)
    }
}

@Test(arguments: StoreBackend.all) func aContactRequestNamesTheAccountsCurrentIdentityAnotherAccountAndStaysWithinTheLimit(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let alice = try await client.sharingAccount("alice")
        let bob = try await client.sharingAccount("bob")
        let plain = TestDevice("plain")
        let plainAccount = try await client.createAccount(plain)
        let commitment = Hex.encode(SystemRandom.bytes(count: 32))
        let uri = "/v1/accounts/\(alice.account)/contact-requests"
        var otherKeys = alice.keys
        otherKeys.boxKey = Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation)
        var later = alice.keys
        later.generation = 2
        var upper = alice.keys
        upper.signingKey = upper.signingKey.uppercased()
        let refused: [(ContactRequestCreate, HTTPResponse.Status)] = [
            (ContactRequestCreate(to: bob.account, identity: otherKeys, commitment: commitment), .badRequest),
            (ContactRequestCreate(to: bob.account, identity: bob.keys, commitment: commitment), .badRequest),
            (ContactRequestCreate(to: bob.account, identity: later, commitment: commitment), .badRequest),
            (ContactRequestCreate(to: bob.account, identity: upper, commitment: commitment), .badRequest),
            (ContactRequestCreate(to: bob.account, identity: alice.keys, commitment: "00"), .badRequest),
            (ContactRequestCreate(to: alice.account, identity: alice.keys, commitment: commitment), .badRequest),
            (ContactRequestCreate(to: AccountID(unchecked: Hex.encode(SystemRandom.bytes(count: 16))), identity: alice.keys,
                                  commitment: commitment), .notFound),
        ]
        for (body, status) in refused {
            let response = try await client.signedJSON(alice.device, .post, uri, body)
            #expect(response.status == status, "\(body): \(String(buffer: response.body))")
        }
        // An account without an identity has none to offer.
        var response = try await client.signedJSON(plain, .post, "/v1/accounts/\(plainAccount.account)/contact-requests",
                                                   ContactRequestCreate(to: bob.account, identity: alice.keys, commitment: commitment))
        #expect(response.status == .badRequest)

        var ids: [String] = []
        for _ in 0..<SharingController.maxOpenPerAccount {
            response = try await client.signedJSON(alice.device, .post, uri, ContactRequestCreate(to: bob.account, identity: alice.keys, commitment: commitment))
            #expect(response.status == .created, "\(String(buffer: response.body))")
            ids.append(try decode(ContactRequestInfo.self, response).id)
        }
        response = try await client.signedJSON(alice.device, .post, uri, ContactRequestCreate(to: bob.account, identity: alice.keys, commitment: commitment))
        #expect(response.status == .tooManyRequests && errorCode(response) == "too_many_contact_requests")
        // Bob's own requests are his to count.
        response = try await client.signedJSON(bob.device, .post, "/v1/accounts/\(bob.account)/contact-requests",
                                               ContactRequestCreate(to: alice.account, identity: bob.keys, commitment: commitment))
        #expect(response.status == .created)

        // The answer names the responder's current identity and a 32-byte nonce.
        let respond = "/v1/accounts/\(bob.account)/contact-requests/\(ids[0])/respond"
        response = try await client.signedJSON(bob.device, .post, respond, ContactResponse(identity: alice.keys, nonce: commitment))
        #expect(response.status == .badRequest, "\(String(buffer: response.body))")
        response = try await client.signedJSON(bob.device, .post, respond, ContactResponse(identity: bob.keys, nonce: "abcd"))
        #expect(response.status == .badRequest)
        response = try await client.signed(bob.device, .post, respond, body: Array(#"{"identity":{"generation":1,"signingKey":"","boxKey":""},"nonce":"","extra":1}"#.utf8))
        #expect(response.status == .badRequest && errorCode(response) == "bad_request")
        response = try await client.signed(bob.device, .get, "/v1/accounts/\(bob.account)/contact-requests/not-an-id")
        #expect(response.status == .badRequest)
    }
}

// MARK: Head statements (docs/formats/head-statement.md)

/// A device states its own account's current head, signed, dated now; a contact reads
/// the newest statement of each device, under the same rule as the chain.
@Test(arguments: StoreBackend.all) func headStatementsAreKeptOnlyAsTheirDeviceMadeThemAndShownToPinnedContacts(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        var sharer = try await client.sharingAccount("sharer")
        let grantee = try await client.sharingAccount("grantee")
        let path = "/v1/accounts/\(sharer.account)/head-statements"
        let now = Int64(Date().timeIntervalSince1970)
        func post(_ statement: HeadStatement) async throws -> TestResponse {
            try await client.signedJSON(sharer.device, .post, path, statement)
        }
        let good = HeadStatement.signed(for: sharer.state, by: sharer.device.signing, time: now)
        var other = good
        other.device = grantee.device.id
        #expect(errorCode(try await post(other)) == "wrong_signer")
        var forged = good
        forged.time += 1
        #expect(errorCode(try await post(forged)) == "bad_signature")
        let old = HeadStatement.signed(for: sharer.state, by: sharer.device.signing, time: now - 3600)
        #expect(errorCode(try await post(old)) == "stale_timestamp")
        for extreme in [Int64.min, Int64.max] {  // the window check may not overflow
            #expect(errorCode(try await post(HeadStatement.signed(for: sharer.state, by: sharer.device.signing, time: extreme))) == "stale_timestamp")
        }
        var behind = HeadStatement(account: sharer.account, device: sharer.device.id, sequence: sharer.state.sequence - 1,
                                   head: sharer.state.head, time: now)
        behind.signature = base64Encode(sharer.device.signing.signature(for: behind.signedBytes))
        #expect(errorCode(try await post(behind)) == "stale_chain")
        var unknownField = try JSONSerialization.jsonObject(with: JSONEncoder().encode(good)) as! [String: Any]
        unknownField["note"] = "x"
        let strict = try await client.signed(sharer.device, .post, path, body: Array(try JSONSerialization.data(withJSONObject: unknownField)))
        #expect(strict.status == .badRequest)
        #expect(try await post(good).status == .noContent)

        // The grantee reads them only while the sharer's chain pins it.
        let read = "/v1/accounts/\(grantee.account)/contacts/\(sharer.account)/head-statements"
        #expect(try await client.signed(grantee.device, .get, read).status == .notFound)
        var pin = grantee.identityFields
        pin["account"] = grantee.account.rawValue
        #expect(try await client.append(&sharer, .contactPin, pin).status == .created)
        let shown = try decode([String: [HeadStatement]].self, try await client.signed(grantee.device, .get, read))["statements"]
        #expect(shown == [good])
    }
}
