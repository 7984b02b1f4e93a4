import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultPostgres
import Testing
@testable import KeyVaultServer

@Test(arguments: StoreBackend.all) func healthAnswersOK(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let response = try await client.execute(uri: "/health", method: .get)
        #expect(response.status == .ok)
        #expect(String(buffer: response.body) == #"{"status":"ok"}"#)
    }
}

@Test(arguments: StoreBackend.all) func openAPIDescribesExactlyTheRoutes(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let response = try await client.execute(uri: "/openapi.json", method: .get)
        #expect(response.status == .ok)
        let spec = try #require(try JSONSerialization.jsonObject(with: Data(buffer: response.body)) as? [String: Any])
        #expect(spec["openapi"] as? String == "3.1.0")
        let paths = try #require(spec["paths"] as? [String: [String: Any]])
        let documented = Set(paths.flatMap { path, operations in operations.keys.map { "\($0.uppercased()) \(path)" } })
        let routed = Set(try testRoutes().map { "\($0.method.rawValue) \($0.path)" })
        #expect(documented == routed)
    }
}

/// The description the service serves is openapi.json, byte for byte (compiled in with
/// SwiftPM's `embedInCode`, so an installed binary alone serves it too).
@Test func theServedAPIDescriptionIsOpenAPIJSONByteForByte() async throws {
    let source = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources/KeyVaultServer/openapi.json")
    try await testApplication().test(.router) { client in
        let served = try await client.execute(uri: "/openapi.json", method: .get)
        let file = Array(try Data(contentsOf: source))
        #expect(served.status == .ok && Array(buffer: served.body) == file)
    }
}

@Test(arguments: StoreBackend.all) func anAccountIsCreatedFromASelfSignedGenesis(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone")
        let state = try await client.createAccount(phone)
        let again = try await client.execute(uri: "/v1/accounts", method: .post,
                                             body: try jsonBody(CreateAccountRequest(genesis: phone.genesis(), boxes: [], recovery: nil)))
        #expect(again.status == .conflict && errorCode(again) == "account_exists")
        let chain = try await client.signed(phone, .get, "/v1/accounts/\(state.account)/chain")
        #expect(chain.status == .ok)
        let body = try decode(ChainResponse.self, chain)
        #expect(body.links.count == 1 && body.head == state.head && body.account == state.account)
    }
}

@Test(arguments: StoreBackend.all) func aGenesisWithABadSignatureOrShapeIsRefused(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        var forged = TestDevice("phone").genesis()
        forged.body["name"] = "evil"
        var response = try await client.execute(uri: "/v1/accounts", method: .post,
                                                body: try jsonBody(CreateAccountRequest(genesis: forged, boxes: [], recovery: nil)))
        #expect(response.status == .unauthorized && errorCode(response) == "bad_signature")
        var other = TestDevice("phone").genesis()
        other.signer = TestDevice("x").id.rawValue
        response = try await client.execute(uri: "/v1/accounts", method: .post,
                                            body: try jsonBody(CreateAccountRequest(genesis: other, boxes: [], recovery: nil)))
        #expect(response.status == .badRequest && errorCode(response) == "malformed_link")
    }
}

@Test(arguments: StoreBackend.all) func accountCreationCanRequireAnInvite(_ backend: StoreBackend) async throws {
    try await testApplication(backend) { $0.inviteToken = "family-invite-0123456789" }.test(.router) { client in
        let request = CreateAccountRequest(genesis: TestDevice("phone").genesis(), boxes: [], recovery: nil)
        var response = try await client.execute(uri: "/v1/accounts", method: .post, body: try jsonBody(request))
        #expect(response.status == .forbidden && errorCode(response) == "invite_required")
        response = try await client.execute(uri: "/v1/accounts", method: .post,
                                            headers: [HTTPField.Name("KeyVault-Invite")!: "family-invite-0123456789"], body: try jsonBody(request))
        #expect(response.status == .created)
    }
}

@Test(arguments: StoreBackend.all) func signedRequestsAreRefusedWithPreciseCodes(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone")
        let state = try await client.createAccount(phone)
        let uri = "/v1/accounts/\(state.account)/chain"

        var response = try await client.execute(uri: uri, method: .get)
        #expect(response.status == .unauthorized && errorCode(response) == "unsigned_request")

        response = try await client.signed(TestDevice("stranger"), .get, uri)
        #expect(response.status == .unauthorized && errorCode(response) == "unknown_device")

        var headers = phone.signedHeaders(.get, uri, body: [])
        headers[HTTPField.Name(RequestSignature.signatureHeader)!] = base64Encode([UInt8](repeating: 1, count: 64))
        response = try await client.execute(uri: uri, method: .get, headers: headers)
        #expect(response.status == .unauthorized && errorCode(response) == "bad_signature")

        // Signed for another path: the signature covers method, path and query.
        headers = phone.signedHeaders(.get, "/v1/accounts/\(state.account)/devices", body: [])
        response = try await client.execute(uri: uri, method: .get, headers: headers)
        #expect(errorCode(response) == "bad_signature")

        headers = phone.signedHeaders(.get, uri, body: [], timestamp: Int64(Date().timeIntervalSince1970) - 3600)
        response = try await client.execute(uri: uri, method: .get, headers: headers)
        #expect(response.status == .unauthorized && errorCode(response) == "stale_timestamp")

        headers = phone.signedHeaders(.get, uri, body: [])
        #expect(try await client.execute(uri: uri, method: .get, headers: headers).status == .ok)
        response = try await client.execute(uri: uri, method: .get, headers: headers)
        #expect(response.status == .unauthorized && errorCode(response) == "replayed_nonce")

        headers[HTTPField.Name(RequestSignature.nonceHeader)!] = "not hex!"
        response = try await client.execute(uri: uri, method: .get, headers: headers)
        #expect(response.status == .unauthorized && errorCode(response) == "malformed_signature")

        // A device of one account cannot read another account.
        let other = try await client.createAccount(TestDevice("other phone"))
        response = try await client.signed(phone, .get, "/v1/accounts/\(other.account)/chain")
        #expect(response.status == .forbidden && errorCode(response) == "wrong_account")
    }
}

@Test(arguments: StoreBackend.all) func aDeviceIsAddedAndARevokedDeviceIsRefusedOnItsNextRequest(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone"), tablet = TestDevice("tablet")
        var state = try await client.createAccount(phone)
        let masterKey = SymmetricKey()
        let add = phone.link(.deviceAdd, after: state, body: tablet.deviceFields)
        var response = try await client.append(phone, &state, AppendRequest(
            link: add, boxes: [try phone.box(masterKey, generation: 1, for: tablet, at: state.sequence + 1, account: state.account)]))
        #expect(response.status == .created, "\(String(buffer: response.body))")

        response = try await client.signed(tablet, .get, "/v1/accounts/\(state.account)/boxes")
        let boxes = try decode([String: [KeyBox]].self, response)["boxes"] ?? []
        #expect(boxes.count == 1 && boxes[0].recipient == tablet.id.rawValue)
        let opened = try tablet.boxKey.openSealedBox(try #require(base64Decode(boxes[0].box)))
        #expect(opened == masterKey.bytes)

        response = try await client.signed(phone, .get, "/v1/accounts/\(state.account)/devices")
        let devices = try decode([String: [DeviceInfo]].self, response)["devices"] ?? []
        #expect(devices.map(\.name) == ["phone", "tablet"] && devices.allSatisfy { $0.status == .active })

        let revoke = phone.link(.deviceRevoke, after: state, body: ["device": tablet.id.rawValue])
        response = try await client.append(phone, &state, AppendRequest(link: revoke))
        #expect(response.status == .created)

        response = try await client.signed(tablet, .get, "/v1/accounts/\(state.account)/chain")
        #expect(response.status == .forbidden && errorCode(response) == "device_revoked")

        // The last active device cannot be revoked.
        let last = phone.link(.deviceRevoke, after: state, body: ["device": phone.id.rawValue])
        response = try await client.append(phone, &state, AppendRequest(link: last))
        #expect(response.status == .badRequest && errorCode(response) == "last_device")

        // The refusal is in the audit log.
        response = try await client.signed(phone, .get, "/v1/accounts/\(state.account)/audit")
        let events = (try decode([String: [AuditEntry]].self, response)["entries"] ?? []).map(\.event)
        #expect(events.contains("link.device.revoke") && events.contains("refused.device_revoked"))
    }
}

@Test(arguments: StoreBackend.all) func aLinkThatDoesNotFollowIsRefusedAndChangesNothing(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone")
        var state = try await client.createAccount(phone)
        let head = state.head
        // Skips a master generation.
        var response = try await client.append(phone, &state, AppendRequest(link: phone.link(.masterRotate, after: state, body: ["masterGeneration": "3"])))
        #expect(response.status == .conflict && errorCode(response) == "stale_generation")
        // Signed by a device that is not in the account.
        let stranger = TestDevice("stranger")
        var foreign = stranger.link(.masterRotate, after: state, body: ["masterGeneration": "2"])
        foreign.signer = stranger.id.rawValue
        response = try await client.append(phone, &state, AppendRequest(link: foreign))
        #expect(errorCode(response) == "unknown_signer")
        // A box signed by nobody in the account.
        let rotate = phone.link(.masterRotate, after: state, body: ["masterGeneration": "2"])
        response = try await client.append(phone, &state, AppendRequest(
            link: rotate, boxes: [try stranger.box(SymmetricKey(), generation: 2, for: phone, at: state.sequence + 1, account: state.account)]))
        #expect(errorCode(response) == "unknown_signer")
        let chain = try decode(ChainResponse.self, try await client.signed(phone, .get, "/v1/accounts/\(state.account)/chain"))
        #expect(chain.head == head && chain.links.count == 1)
    }
}

@Test(arguments: StoreBackend.all) func twoDevicesRotatingAtOnceEndOnOneChain(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone"), tablet = TestDevice("tablet")
        var state = try await client.createAccount(phone)
        try await client.append(phone, &state, AppendRequest(link: phone.link(.deviceAdd, after: state, body: tablet.deviceFields)))
        let snapshot = state
        // Both sign a rotation on the same head and send them together.
        let fromPhone = AppendRequest(link: phone.link(.masterRotate, after: snapshot, body: ["masterGeneration": "2"]))
        let fromTablet = AppendRequest(link: tablet.link(.masterRotate, after: snapshot, body: ["masterGeneration": "2"]))
        let chainURI = "/v1/accounts/\(snapshot.account)/chain"
        async let first = client.signedJSON(phone, .post, chainURI, fromPhone)
        async let second = client.signedJSON(tablet, .post, chainURI, fromTablet)
        let statuses = [try await first, try await second].map { ($0.status, errorCode($0)) }
        #expect(statuses.filter { $0.0 == .created }.count == 1)
        #expect(statuses.contains { $0.0 == .conflict && $0.1 == "stale_chain" })
        // The loser retries on top of the new head.
        let chain = try decode(ChainResponse.self, try await client.signed(tablet, .get, "/v1/accounts/\(state.account)/chain"))
        var latest = try ChainState(links: chain.links)
        #expect(latest.masterGeneration == 2)
        let retry = try await client.append(tablet, &latest, AppendRequest(link: tablet.link(.masterRotate, after: latest, body: ["masterGeneration": "3"])))
        #expect(retry.status == .created)
        #expect(latest.masterGeneration == 3 && latest.sequence == 3)
    }
}

@Test(arguments: StoreBackend.all) func attachmentsAreStoredOncePerMemberAndLimitedInSize(_ backend: StoreBackend) async throws {
    try await testApplication(backend) { $0.maxAttachmentBytes = 4096 }.test(.router) { client in
        let phone = TestDevice("phone")
        var state = try await client.createAccount(phone)
        let member = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
        try await client.append(phone, &state, AppendRequest(link: phone.link(.memberAdd, after: state, body: ["member": member.rawValue, "memberGeneration": "1"])))
        let memberKey = SymmetricKey()
        let content = SystemRandom.bytes(count: 1000)
        let address = try ContentAddressKey(memberKey: memberKey, generation: 1).address(of: content)
        let dataKey = SymmetricKey()
        let wrappedKey = try Envelope.seal(dataKey, under: memberKey, generation: 1, context: EnvelopeContext(purpose: "attachment-key")).bytes
        let sealedContent = try Envelope.seal(content, under: dataKey, generation: 1,
                                        context: EnvelopeContext(purpose: "attachment-content", ["object": address.description])).bytes
        let sealed = AttachmentObject(key: wrappedKey, content: sealedContent).bytes
        let uri = "/v1/accounts/\(state.account)/members/\(member)/attachments/\(address)"
        var response = try await client.signed(phone, .put, uri, body: sealed)
        #expect(response.status == .created)
        #expect(try decode(AttachmentInfo.self, response).existed == false)
        response = try await client.signed(phone, .put, uri, body: sealed)
        #expect(response.status == .ok)
        #expect(try decode(AttachmentInfo.self, response).existed == true)
        response = try await client.signed(phone, .get, uri)
        #expect(response.status == .ok && [UInt8](buffer: response.body) == sealed)
        response = try await client.signed(phone, .get, "/v1/accounts/\(state.account)/members/\(member)/attachments")
        #expect((try decode([String: [AttachmentInfo]].self, response)["attachments"] ?? []).map(\.address) == [address.description])

        response = try await client.signed(phone, .put, uri, body: [UInt8](repeating: 1, count: 5000))
        #expect(response.status == .contentTooLarge && errorCode(response) == "payload_too_large")
        response = try await client.signed(phone, .put, uri.replacingOccurrences(of: "ca1.1.", with: "ca1.x."), body: sealed)
        #expect(response.status == .badRequest)
        response = try await client.signed(phone, .put, uri, body: Array(sealed.prefix(30)))
        #expect(response.status == .badRequest && errorCode(response) == "malformed_attachment")
        response = try await client.signed(phone, .put, uri, body: sealedContent)  // a bare envelope, no key part
        #expect(response.status == .badRequest && errorCode(response) == "malformed_attachment")

        // Re-wrapping replaces the key part only; a key that is not an envelope is refused.
        let rewrapped = try Envelope.seal(dataKey, under: SymmetricKey(), generation: 2, context: EnvelopeContext(purpose: "attachment-key")).bytes
        response = try await client.signed(phone, .put, uri + "/key", body: Array(rewrapped.prefix(20)))
        #expect(response.status == .badRequest && errorCode(response) == "malformed_attachment")
        response = try await client.signed(phone, .put, uri + "/key", body: rewrapped)
        #expect(response.status == .noContent)
        response = try await client.signed(phone, .get, uri + "/key")
        #expect(response.status == .ok && [UInt8](buffer: response.body) == rewrapped)
        response = try await client.signed(phone, .get, uri)
        #expect(try AttachmentObject(bytes: [UInt8](buffer: response.body)) == AttachmentObject(key: rewrapped, content: sealedContent))
        response = try await client.signed(phone, .put, uri.replacingOccurrences(of: "ca1.1.", with: "ca1.2.") + "/key", body: rewrapped)
        #expect(response.status == .notFound)
        let stranger = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
        response = try await client.signed(phone, .put, "/v1/accounts/\(state.account)/members/\(stranger)/attachments/\(address)", body: sealed)
        #expect(response.status == .notFound)

        // Replacing what is at an address takes the device's own signature: a session (which a
        // stolen secret file can make) is refused, and the object stays.
        let planted = try Envelope.seal(SystemRandom.bytes(count: 100), under: SymmetricKey(), generation: 1,
                                        context: EnvelopeContext(purpose: "attachment-content", ["object": address.description])).bytes
        let other = AttachmentObject(key: rewrapped, content: planted).bytes
        let session = try await client.openSession(phone, account: state.account)
        response = try await client.macRequest(session, .put, uri + "?replace=true", body: other)
        #expect(response.status == .forbidden && errorCode(response) == "signature_required")
        response = try await client.signed(phone, .put, uri + "?replace=maybe", body: other)
        #expect(response.status == .badRequest)
        response = try await client.signed(phone, .get, uri)
        #expect(try AttachmentObject(bytes: [UInt8](buffer: response.body)) == AttachmentObject(key: rewrapped, content: sealedContent))
        response = try await client.signed(phone, .put, uri + "?replace=true", body: other)
        #expect(response.status == .created)
        response = try await client.signed(phone, .get, uri)
        #expect([UInt8](buffer: response.body) == other)
    }
}

@Test(arguments: StoreBackend.all) func deletingAnAccountRemovesEverythingOfIt(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone")
        let state = try await client.createAccount(phone)
        // Only named for this server, and only as of the head: a delete signed for another
        // server (replayed here), for none, or for a head that moved on, deletes nothing.
        let instance = try decode([String: String].self, try await client.execute(uri: "/v1/server", method: .get))["instance"] ?? ""
        #expect(instance.count == 16)
        for query in ["", "?head=\(state.head)", "?instance=0123456789abcdef&head=\(state.head)"] {
            let refused = try await client.signed(phone, .delete, "/v1/accounts/\(state.account)" + query)
            #expect(refused.status == .forbidden && errorCode(refused) == "wrong_server", "\(query)")
        }
        #expect(try await client.signed(phone, .delete, "/v1/accounts/\(state.account)?instance=\(instance)").status == .badRequest)
        let stale = try await client.signed(phone, .delete, "/v1/accounts/\(state.account)?instance=\(instance)&head=\(String(repeating: "0", count: 64))")
        #expect(stale.status == .conflict && errorCode(stale) == "stale_chain")
        let response = try await client.signed(phone, .delete, "/v1/accounts/\(state.account)?instance=\(instance)&head=\(state.head)")
        #expect(response.status == .noContent)
        let after = try await client.signed(phone, .get, "/v1/accounts/\(state.account)/chain")
        #expect(after.status == .unauthorized && errorCode(after) == "unknown_device")
        // Its id is not taken again (a copy of its chain as it once stood cannot come back
        // here); its device can found another account: nothing of it was left.
        let again = try await client.execute(uri: "/v1/accounts", method: .post, headers: [.contentType: "application/json"],
                                             body: try jsonBody(CreateAccountRequest(genesis: phone.genesis(), boxes: [], recovery: nil)))
        #expect(again.status == .conflict && String(buffer: again.body).contains("deleted"), "\(String(buffer: again.body))")
        let other = try await client.execute(uri: "/v1/accounts", method: .post, headers: [.contentType: "application/json"],
                                             body: try jsonBody(CreateAccountRequest(genesis: phone.genesis(time: 1_800_000_000), boxes: [], recovery: nil)))
        #expect(other.status == .created, "\(String(buffer: other.body))")
    }
}

@Test(arguments: StoreBackend.all) func badInputGetsA4xxWithAnErrorBodyAndNeverA500(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone")
        let state = try await client.createAccount(phone)
        let chainURI = "/v1/accounts/\(state.account)/chain"
        let bodies: [String] = [
            "", "null", "[]", "{", #"{"link": 5}"#, #"{"link": {"version": "1"}}"#,
            #"{"link": {"version": 1, "sequence": -1, "previous": "", "type": "x", "signer": "", "time": 0, "body": {}, "signature": ""}}"#,
            #"{"link": {"version": 1, "sequence": 1, "previous": "zz", "type": "master.rotate", "signer": "a", "time": 0, "body": {}, "signature": "!!"}}"#,
            String(repeating: "[", count: 10000),
        ]
        for body in bodies {
            let response = try await client.signed(phone, .post, chainURI, body: Array(body.utf8))
            #expect((400..<500).contains(response.status.code), "\(body.prefix(40)) → \(response.status)")
            #expect(errorCode(response) != nil)
        }
        for (method, uri) in [(HTTPRequest.Method.get, "/v1/nothing"), (.patch, chainURI), (.get, "/v1/accounts/XYZ/chain"),
                              (.get, chainURI + "?after=minus"), (.get, "/v1/accounts/\(state.account)/boxes?generation=-2")] {
            let response = try await client.signed(phone, method, uri)
            #expect((400..<500).contains(response.status.code), "\(method) \(uri) → \(response.status)")
            #expect(errorCode(response) != nil)
        }
        let huge = try await client.signed(phone, .post, chainURI, body: [UInt8](repeating: 32, count: 2 << 20))
        #expect(huge.status == .contentTooLarge)
        // Second review of the service, finding 3: who a request claims to be is judged before
        // its body is read, so a stranger's large body is refused as the stranger's (not read
        // up to the route's limit first: memory an anonymous connection could hold).
        let unsigned = try await client.execute(uri: chainURI, method: .post, headers: [:], body: ByteBuffer(bytes: [UInt8](repeating: 32, count: 2 << 20)))
        #expect(unsigned.status == .unauthorized && errorCode(unsigned) == "unsigned_request", "\(unsigned.status)")
        let stranger = try await client.signed(TestDevice("stranger"), .post, chainURI, body: [UInt8](repeating: 32, count: 2 << 20))
        #expect(stranger.status == .unauthorized && errorCode(stranger) == "unknown_device", "\(stranger.status)")

        // Second review of the service, finding 2: a device name with a control character (NUL,
        // which PostgreSQL's text refuses: a 500 there, stored on SQLite) is refused alike on
        // both stores, wherever a device name comes in: a new account, an appended device.add,
        // a link request.
        let nul = TestDevice("a\u{0}b"), escape = TestDevice("tablet\u{1B}[2J")
        let genesis = nul.genesis()
        let create = CreateAccountRequest(genesis: genesis, boxes: [try nul.box(SymmetricKey(), generation: 1, for: nul, at: 0,
                                                                                     account: try ChainState(genesis: genesis).account)], recovery: nil)
        let created = try await client.execute(uri: "/v1/accounts", method: .post, headers: [.contentType: "application/json"], body: try jsonBody(create))
        #expect(created.status == .badRequest && errorCode(created) == "malformed_link", "\(created.status) \(String(buffer: created.body))")
        for device in [nul, escape] {
            var current = state
            let added = try await client.append(phone, &current, AppendRequest(link: phone.link(.deviceAdd, after: state, body: device.deviceFields)))
            #expect(added.status == .badRequest && errorCode(added) == "malformed_link", "\(added.status) \(String(buffer: added.body))")
            let request = LinkRequestCreate(device: device.id, name: device.name, signingKey: Hex.encode(device.signing.publicKey.rawRepresentation),
                                            boxKey: Hex.encode(device.boxKey.publicKey.rawRepresentation), commitment: String(repeating: "ab", count: 32))
            let asked = try await client.execute(uri: "/v1/accounts/\(state.account)/link-requests", method: .post,
                                                 headers: [.contentType: "application/json"], body: try jsonBody(request))
            #expect(asked.status == .badRequest && errorCode(asked) == "bad_request", "\(asked.status) \(String(buffer: asked.body))")
        }
    }
}

@Test(arguments: StoreBackend.all) func memberKeyWrapsAreStoredWithTheirLinkAndListedPerMember(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone")
        var state = try await client.createAccount(phone)
        let emma = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
        let noah = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
        let masterKey = SymmetricKey()
        func wrap(_ member: MemberID, _ generation: UInt32) throws -> MemberWrap {
            let context = try EnvelopeContext(purpose: "member-key", ["account": state.account.rawValue, "member": member.rawValue,
                                                                     "member-generation": String(generation), "master-generation": "1"])
            return MemberWrap(member: member, memberGeneration: generation, masterGeneration: 1,
                              envelope: try Envelope.seal(SymmetricKey(), under: masterKey, generation: 1, context: context).base64)
        }
        for member in [emma, noah] {
            let response = try await client.append(phone, &state, AppendRequest(
                link: phone.link(.memberAdd, after: state, body: ["member": member.rawValue, "memberGeneration": "1"]),
                wraps: [try wrap(member, 1)]))
            #expect(response.status == .created)
        }
        let rotated = try await client.append(phone, &state, AppendRequest(
            link: phone.link(.memberRotate, after: state, body: ["member": emma.rawValue, "memberGeneration": "2"]),
            wraps: [try wrap(emma, 2)]))
        #expect(rotated.status == .created)
        let all = try decode([String: [MemberWrap]].self, try await client.signed(phone, .get, "/v1/accounts/\(state.account)/wraps"))["wraps"] ?? []
        #expect(all.count == 3)
        let emmas = try decode([String: [MemberWrap]].self, try await client.signed(phone, .get, "/v1/accounts/\(state.account)/wraps?member=\(emma)"))["wraps"] ?? []
        #expect(emmas.map(\.memberGeneration) == [1, 2])
        // A wrap for a member the account does not have is refused with its link.
        let stranger = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
        let refused = try await client.append(phone, &state, AppendRequest(
            link: phone.link(.masterRotate, after: state, body: ["masterGeneration": "2"]), wraps: [try wrap(stranger, 1)]))
        #expect(refused.status == .badRequest)
        let bad = try await client.signed(phone, .get, "/v1/accounts/\(state.account)/wraps?member=EMMA")
        #expect(bad.status == .badRequest)
    }
}

@Test(arguments: StoreBackend.all) func unknownFieldsInSignedObjectsAreRefusedByName(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone")
        let state = try await client.createAccount(phone)
        let link = phone.link(.masterRotate, after: state, body: ["masterGeneration": "2"])
        let encoded = String(decoding: try JSONEncoder().encode(AppendRequest(link: link)), as: UTF8.self)
        for (body, field) in [
            (encoded.replacingOccurrences(of: #""boxes""#, with: #""boxs""#), "boxs"),
            (encoded.replacingOccurrences(of: #""signature""#, with: #""extra":1,"signature""#), "link.extra"),
        ] {
            let response = try await client.signed(phone, .post, "/v1/accounts/\(state.account)/chain", body: Array(body.utf8))
            #expect(response.status == .badRequest, "\(body)")
            #expect(String(buffer: response.body).contains("unknown field \(field)"), "\(String(buffer: response.body))")
        }
        // The same request without the extra field goes through.
        let ok = try await client.signed(phone, .post, "/v1/accounts/\(state.account)/chain", body: Array(encoded.utf8))
        #expect(ok.status == .created)
    }
}

@Test(arguments: StoreBackend.all) func extremeIntegersInHeadersAndQueriesAreRefusedNotFatal(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone")
        let state = try await client.createAccount(phone)
        let uri = "/v1/accounts/\(state.account)/chain"
        for timestamp in [Int64.min, Int64.max, -1] {
            let response = try await client.execute(uri: uri, method: .get, headers: phone.signedHeaders(.get, uri, body: [], timestamp: timestamp))
            #expect(response.status == .unauthorized && errorCode(response) == "stale_timestamp", "\(timestamp)")
        }
        for query in ["after=18446744073709551615", "after=9223372036854775808"] {
            let response = try await client.signed(phone, .get, "\(uri)?\(query)")
            #expect(response.status == .ok, "\(query)")
            #expect(try decode(ChainResponse.self, response).links.isEmpty)
        }
        let audit = try await client.signed(phone, .get, "/v1/accounts/\(state.account)/audit?after=18446744073709551615")
        #expect(audit.status == .ok)
    }
}

/// Every route the table marks as signed refuses a request without a signature,
/// before looking at anything else: no route can be added unauthenticated by mistake.
@Test(arguments: StoreBackend.all) func everySignedRouteRefusesAnUnsignedRequest(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let state = try await client.createAccount(TestDevice("phone"))
        let values = ["account": state.account.rawValue, "member": String(repeating: "a", count: 32),
                      "address": "ca1.1." + String(repeating: "0", count: 64), "code": "ABCDEFGH12",
                      "sharer": String(repeating: "b", count: 32), "request": String(repeating: "c", count: 32),
                      "upload": String(repeating: "d", count: 32), "index": "0"]
        let signed = try testRoutes().filter(\.signed)
        #expect(signed.count == 46)  // update with the route table
        for route in signed {
            var uri = route.path
            for (name, value) in values { uri = uri.replacingOccurrences(of: "{\(name)}", with: value) }
            let response = try await client.execute(uri: uri, method: route.method, body: ByteBuffer(string: "{}"))
            #expect(response.status == .unauthorized && errorCode(response) == "unsigned_request", "\(route.method) \(route.path)")
        }
    }
}

/// A device already in one account cannot be added to another: a precise 409
/// `device_exists`, never a 500 from the unique key, and nothing changes.
@Test(arguments: StoreBackend.all) func aDeviceOfAnotherAccountCannotBeAddedToThisOne(_ backend: StoreBackend) async throws {
    try await testApplication(backend).test(.router) { client in
        let phone = TestDevice("phone"), laptop = TestDevice("laptop")
        _ = try await client.createAccount(phone)
        var other = try await client.createAccount(laptop)
        let before = other.head
        let response = try await client.append(laptop, &other, AppendRequest(link: laptop.link(.deviceAdd, after: other, body: phone.deviceFields)))
        #expect(response.status == .conflict && errorCode(response) == "device_exists", "\(response.status) \(String(buffer: response.body))")
        #expect(other.head == before)
        let chain = try await client.signed(laptop, .get, "/v1/accounts/\(other.account)/chain")
        #expect(try decode(ChainResponse.self, chain).head == before)
    }
}
