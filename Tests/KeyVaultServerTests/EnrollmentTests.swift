import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore
import Testing
@testable import KeyVaultServer

/// An account with a recovery code set: the recovery keys and the master key.
struct RecoveryFixture {
    let authKey = Ed25519.PrivateKey()
    let boxKey = X25519.PrivateKey()
    let masterKey = SymmetricKey()

    var slot: RecoverySlot {
        RecoverySlot(salt: Hex.encode(SystemRandom.bytes(count: 16)), iterations: 3, memoryKiB: 65536,
                     authKey: Hex.encode(authKey.publicKey.rawRepresentation), boxKey: Hex.encode(boxKey.publicKey.rawRepresentation),
                     anchor: base64Encode(SystemRandom.bytes(count: 80)))
    }

    func setUp(_ client: some TestClientProtocol, _ phone: TestDevice) async throws -> ChainState {
        var state = try await client.createAccount(phone, masterKey: masterKey)
        try await set(client, phone, &state, generation: 1)
        return state
    }

    /// `phone` sets this code as the account's recovery code of `generation`.
    func set(_ client: some TestClientProtocol, _ phone: TestDevice, _ state: inout ChainState, generation: UInt32) async throws {
        var box = KeyBox(generation: 1, sequence: state.sequence + 1, recipient: ChainLink.recoverySigner,
                         box: base64Encode(try boxKey.publicKey.sealedBox(for: masterKey)), signer: phone.id.rawValue, signature: "")
        box.sign(with: phone.signing, account: state.account)
        let link = phone.link(.recoverySet, after: state, body: [
            "authKey": Hex.encode(authKey.publicKey.rawRepresentation), "boxKey": Hex.encode(boxKey.publicKey.rawRepresentation),
            "recoveryGeneration": String(generation)])
        let response = try await client.append(phone, &state, AppendRequest(link: link, boxes: [box], recovery: slot))
        #expect(response.status == .created, "\(String(buffer: response.body))")
    }

    func proof(_ challenge: String, account: AccountID) -> RecoveryProof {
        RecoveryProof(challenge: challenge, signature: base64Encode(authKey.signature(
            for: RecoveryProofFormat.signedBytes(account: account, challenge: challenge))))
    }

    /// A challenge answered with this code: the recovery session (its token, the chain).
    func prove(_ client: some TestClientProtocol, account: AccountID) async throws -> RecoverySession {
        let base = "/v1/accounts/\(account)/recovery"
        let challenge = try decode(RecoveryChallenge.self, try await client.execute(uri: base + "/challenge", method: .post))
        let proven = try await client.execute(uri: base + "/proof", method: .post, body: jsonBody(proof(challenge.challenge, account: account)))
        #expect(proven.status == .ok, "\(String(buffer: proven.body))")
        return try decode(RecoverySession.self, proven)
    }

    /// The enrollment of `device` after `state` with this code's token `token`: its
    /// device.add link signed with the recovery key, and its box of the master key.
    func enrollment(of device: TestDevice, after state: ChainState, token: String) throws -> RecoveryEnrollRequest {
        var link = ChainLink(sequence: state.sequence + 1, previous: state.head, type: .deviceAdd, signer: ChainLink.recoverySigner,
                             time: 1_700_000_200, body: device.deviceFields)
        link.sign(with: authKey)
        var box = KeyBox(generation: 1, sequence: link.sequence, recipient: device.id.rawValue,
                         box: base64Encode(try device.boxKey.publicKey.sealedBox(for: masterKey)),
                         signer: ChainLink.recoverySigner, signature: "")
        box.sign(with: authKey, account: state.account)
        return RecoveryEnrollRequest(token: token, link: link, boxes: [box])
    }
}

@Test func aNewDeviceEnrolsWithTheRecoveryCode() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone"), laptop = TestDevice("laptop")
        let fixture = RecoveryFixture()
        let state = try await fixture.setUp(client, phone)
        let base = "/v1/accounts/\(state.account)/recovery"

        let slot = try decode(RecoverySlot.self, try await client.execute(uri: base, method: .get))
        #expect(slot.authKey == Hex.encode(fixture.authKey.publicKey.rawRepresentation))

        let challenge = try decode(RecoveryChallenge.self, try await client.execute(uri: base + "/challenge", method: .post))
        let proven = try await client.execute(uri: base + "/proof", method: .post, body: jsonBody(fixture.proof(challenge.challenge, account: state.account)))
        #expect(proven.status == .ok)
        let session = try decode(RecoverySession.self, proven)
        // The new device verifies the chain and opens the master key sealed to the recovery key.
        var chain = try ChainState(links: session.chain.links)
        #expect(chain.account == state.account && chain.head == state.head)
        let box = try #require(session.boxes.first { $0.recipient == ChainLink.recoverySigner })
        try box.verify(in: chain)
        let masterKey = try SymmetricKey(fixture.boxKey.openSealedBox(try #require(base64Decode(box.box))))
        #expect(masterKey == fixture.masterKey)

        // It adds itself with a link signed by the recovery key, and seals the master key to itself.
        var link = ChainLink(sequence: chain.sequence + 1, previous: chain.head, type: .deviceAdd, signer: ChainLink.recoverySigner,
                             time: 1_700_000_200, body: laptop.deviceFields)
        link.sign(with: fixture.authKey)
        var ownBox = KeyBox(generation: 1, sequence: link.sequence, recipient: laptop.id.rawValue, box: base64Encode(try laptop.boxKey.publicKey.sealedBox(for: masterKey)),
                            signer: ChainLink.recoverySigner, signature: "")
        ownBox.sign(with: fixture.authKey, account: state.account)
        // Issue 19, item 5: without its own box the device would join and open nothing.
        let empty = try await client.execute(uri: base + "/enroll", method: .post,
                                             body: jsonBody(RecoveryEnrollRequest(token: session.token, link: link, boxes: [])))
        #expect(empty.status == .badRequest && errorCode(empty) == "malformed_link" && String(buffer: empty.body).contains("box of the current master key"))
        let enroll = RecoveryEnrollRequest(token: session.token, link: link, boxes: [ownBox])
        let enrolled = try await client.execute(uri: base + "/enroll", method: .post, body: jsonBody(enroll))
        #expect(enrolled.status == .created, "\(String(buffer: enrolled.body))")
        try chain.apply(link)
        // Now it signs requests like any device, and its box is there.
        let boxes = try decode([String: [KeyBox]].self, try await client.signed(laptop, .get, "/v1/accounts/\(state.account)/boxes"))["boxes"]
        #expect(boxes?.map(\.recipient) == [laptop.id.rawValue])
        // The token and the challenge were single use: the same request again is behind
        // the chain, and another device's enrollment after the new head has no token.
        let again = try await client.execute(uri: base + "/enroll", method: .post, body: jsonBody(enroll))
        #expect(again.status == .conflict && errorCode(again) == "stale_chain")
        let another = try await client.execute(uri: base + "/enroll", method: .post,
                                                body: jsonBody(try fixture.enrollment(of: TestDevice("tablet"), after: chain, token: session.token)))
        #expect(another.status == .unauthorized && errorCode(another) == "bad_recovery_token", "\(String(buffer: another.body))")
        let replay = try await client.execute(uri: base + "/proof", method: .post, body: jsonBody(fixture.proof(challenge.challenge, account: state.account)))
        #expect(replay.status == .unauthorized && errorCode(replay) == "bad_recovery_proof")
    }
}

/// The token is spent by the write that enrolls, in its transaction: an enrollment the
/// store refuses (here its device is already another account's) leaves the token as it
/// was, and the same token then enrolls a device once.
@Test func aRecoveryTokenIsSpentOnlyByTheEnrollmentThatIsStored() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone"), laptop = TestDevice("laptop"), elsewhere = TestDevice("elsewhere")
        _ = try await client.createAccount(elsewhere)
        let fixture = RecoveryFixture()
        let state = try await fixture.setUp(client, phone)
        let enroll = "/v1/accounts/\(state.account)/recovery/enroll"
        let session = try await fixture.prove(client, account: state.account)

        let taken = try await client.execute(uri: enroll, method: .post,
                                             body: jsonBody(try fixture.enrollment(of: elsewhere, after: state, token: session.token)))
        #expect(taken.status == .conflict && errorCode(taken) == "device_exists", "\(String(buffer: taken.body))")
        let request = try fixture.enrollment(of: laptop, after: state, token: session.token)
        let enrolled = try await client.execute(uri: enroll, method: .post, body: jsonBody(request))
        #expect(enrolled.status == .created, "\(String(buffer: enrolled.body))")
        var after = state
        try after.apply(request.link)
        let again = try await client.execute(uri: enroll, method: .post,
                                             body: jsonBody(try fixture.enrollment(of: TestDevice("tablet"), after: after, token: session.token)))
        #expect(again.status == .unauthorized && errorCode(again) == "bad_recovery_token", "\(String(buffer: again.body))")
    }
}

@Test func wrongRecoveryProofsAreRateLimitedWithRetryAfter() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone")
        let state = try await RecoveryFixture().setUp(client, phone)
        let base = "/v1/accounts/\(state.account)/recovery"
        let wrongCode = RecoveryFixture()  // another recovery code
        for _ in 0..<RecoveryGate.maxFailures {
            let challenge = try decode(RecoveryChallenge.self, try await client.execute(uri: base + "/challenge", method: .post))
            let response = try await client.execute(uri: base + "/proof", method: .post,
                                                    body: jsonBody(wrongCode.proof(challenge.challenge, account: state.account)))
            #expect(response.status == .unauthorized && errorCode(response) == "bad_recovery_proof")
        }
        // The next failure is refused without being checked further; challenges are still issued.
        let challenge = try decode(RecoveryChallenge.self, try await client.execute(uri: base + "/challenge", method: .post))
        let limited = try await client.execute(uri: base + "/proof", method: .post,
                                               body: jsonBody(wrongCode.proof(challenge.challenge, account: state.account)))
        #expect(limited.status == .tooManyRequests && errorCode(limited) == "rate_limited")
        let retryAfter = try #require(limited.headers[.retryAfter].flatMap(Int.init))
        #expect((1...RecoveryGate.failureWindow).contains(Int64(retryAfter)))
        let audit = try decode([String: [AuditEntry]].self, try await client.signed(phone, .get, "/v1/accounts/\(state.account)/audit"))
        #expect(audit["entries"]?.filter { $0.event == "refused.recovery_proof" }.count == RecoveryGate.maxFailures)
    }
}

@Test func anAccountWithoutARecoveryCodeOffersNoRecovery() async throws {
    try await testApplication().test(.router) { client in
        let state = try await client.createAccount(TestDevice("phone"))
        #expect(try await client.execute(uri: "/v1/accounts/\(state.account)/recovery", method: .get).status == .notFound)
        #expect(try await client.execute(uri: "/v1/accounts/\(state.account)/recovery/challenge", method: .post).status == .notFound)
    }
}

extension TestDevice {
    /// A version 2 link request, with the commitment to `nonce`.
    func linkRequest(account: AccountID, nonce: [UInt8] = linkNonce) -> LinkRequestCreate {
        let commitment = LinkCommitment.compute(account: account, device: id, signingKey: signing.publicKey.rawRepresentation,
                                                boxKey: boxKey.publicKey.rawRepresentation, name: name, nonce: nonce)
        return LinkRequestCreate(device: id, name: name, signingKey: Hex.encode(signing.publicKey.rawRepresentation),
                                 boxKey: Hex.encode(boxKey.publicKey.rawRepresentation), commitment: Hex.encode(commitment))
    }
}

let linkNonce = [UInt8](repeating: 7, count: 32)

@Test func aDeviceLinkGoesCommitAnswerRevealApproveOnceAndThenCloses() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone"), tablet = TestDevice("tablet")
        let masterKey = SymmetricKey()
        var state = try await client.createAccount(phone, masterKey: masterKey)
        let base = "/v1/accounts/\(state.account)/link-requests"

        let created = try await client.execute(uri: base, method: .post, body: jsonBody(tablet.linkRequest(account: state.account)))
        #expect(created.status == .created)
        let info = try decode(LinkRequestInfo.self, created)
        #expect(info.code.count == 10 && info.status == .pending && info.approverNonce == nil)

        let pending = try decode([String: [LinkRequestInfo]].self, try await client.signed(phone, .get, base))["requests"] ?? []
        #expect(pending.map(\.request.device) == [tablet.id])

        let approval = AppendRequest(link: phone.link(.deviceAdd, after: state, body: tablet.deviceFields),
                                     boxes: [try phone.box(masterKey, generation: 1, for: tablet, at: state.sequence + 1, account: state.account)])
        // Out of turn: no reveal before an answer, no approval before the reveal.
        let reveal = LinkNonce(nonce: Hex.encode(linkNonce))
        var response = try await client.execute(uri: "\(base)/\(info.code)/reveal", method: .post, body: jsonBody(reveal))
        #expect(response.status == .conflict && errorCode(response) == "link_request_out_of_turn")
        response = try await client.signedJSON(phone, .post, "\(base)/\(info.code)/approve", approval)
        #expect(response.status == .conflict && errorCode(response) == "link_request_out_of_turn")

        // The approver answers once; a second answer (from anyone) is refused.
        let answer = LinkNonce(nonce: String(repeating: "ab", count: 32))
        #expect(try await client.signedJSON(phone, .post, "\(base)/\(info.code)/respond", answer).status == .noContent)
        response = try await client.signedJSON(phone, .post, "\(base)/\(info.code)/respond", answer)
        #expect(response.status == .conflict && errorCode(response) == "link_request_out_of_turn")

        // A reveal that does not open the commitment changes nothing.
        response = try await client.execute(uri: "\(base)/\(info.code)/reveal", method: .post,
                                            body: jsonBody(LinkNonce(nonce: String(repeating: "00", count: 32))))
        #expect(response.status == .badRequest && errorCode(response) == "bad_reveal")
        #expect(try decode(LinkRequestInfo.self, try await client.execute(uri: "\(base)/\(info.code)", method: .get)).deviceNonce == nil)
        #expect(try await client.execute(uri: "\(base)/\(info.code)/reveal", method: .post, body: jsonBody(reveal)).status == .noContent)
        let revealed = try decode(LinkRequestInfo.self, try await client.execute(uri: "\(base)/\(info.code)", method: .get))
        #expect(revealed.deviceNonce == reveal.nonce && revealed.approverNonce == answer.nonce)

        // Approving a different device than the one that asked is refused.
        let impostor = TestDevice("impostor")
        response = try await client.signedJSON(phone, .post, "\(base)/\(info.code)/approve",
                                               AppendRequest(link: phone.link(.deviceAdd, after: state, body: impostor.deviceFields)))
        #expect(response.status == .badRequest)
        // Issue 19, item 5: an approval without the new device's master key box would add a device that opens nothing.
        response = try await client.signedJSON(phone, .post, "\(base)/\(info.code)/approve", AppendRequest(link: approval.link))
        #expect(response.status == .badRequest && String(buffer: response.body).contains("box of the current master key"))

        response = try await client.signedJSON(phone, .post, "\(base)/\(info.code)/approve", approval)
        #expect(response.status == .created, "\(String(buffer: response.body))")
        try state.apply(approval.link)

        let status = try decode(LinkRequestInfo.self, try await client.execute(uri: "\(base)/\(info.code)", method: .get))
        #expect(status.status == .approved && status.approver == phone.id)
        #expect(try await client.signed(tablet, .get, "/v1/accounts/\(state.account)/chain").status == .ok)

        // Single use.
        response = try await client.signedJSON(phone, .post, "\(base)/\(info.code)/approve", approval)
        #expect(response.status == .conflict && errorCode(response) == "link_request_closed")
    }
}

@Test func aRefusedLinkCannotBeApprovedAndMalformedRequestsAreRefused() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone")
        let state = try await client.createAccount(phone)
        let base = "/v1/accounts/\(state.account)/link-requests"
        let asking = TestDevice("asking")
        let info = try decode(LinkRequestInfo.self, try await client.execute(uri: base, method: .post,
                                                                             body: jsonBody(asking.linkRequest(account: state.account))))
        #expect(try await client.signed(phone, .post, "\(base)/\(info.code)/refuse").status == .noContent)
        let response = try await client.signedJSON(phone, .post, "\(base)/\(info.code)/approve",
                                                   AppendRequest(link: phone.link(.deviceAdd, after: state, body: asking.deviceFields)))
        #expect(response.status == .conflict && errorCode(response) == "link_request_closed")
        #expect(try decode(LinkRequestInfo.self, try await client.execute(uri: "\(base)/\(info.code)", method: .get)).status == .refused)
        let late = try await client.signedJSON(phone, .post, "\(base)/\(info.code)/respond", LinkNonce(nonce: String(repeating: "ab", count: 32)))
        #expect(late.status == .conflict && errorCode(late) == "link_request_closed")

        var bad = TestDevice("bad").linkRequest(account: state.account)
        bad.device = TestDevice("other").id  // not derived from its key
        #expect(try await client.execute(uri: base, method: .post, body: jsonBody(bad)).status == .badRequest)
        var short = TestDevice("short").linkRequest(account: state.account)
        short.commitment = "abcd"
        #expect(try await client.execute(uri: base, method: .post, body: jsonBody(short)).status == .badRequest)
        #expect(try await client.execute(uri: "\(base)/lowercase12", method: .get).status == .badRequest)
        #expect(try await client.execute(uri: "\(base)/ABCDEFGH12", method: .get).status == .notFound)
        let badNonce = try await client.execute(uri: "\(base)/\(info.code)/reveal", method: .post, body: jsonBody(LinkNonce(nonce: "xyz")))
        #expect(badNonce.status == .badRequest)
    }
}

/// Item 5 of the security review: one address flooding an account's link requests
/// used to fill its five pending slots and stop the owner's own `device link`. The
/// limit is now per client address (an IPv6 /56), with a cap on the whole server
/// past which an account that is not itself flooded still gets a few.
@Test func aStrangerFloodingLinkRequestsCannotStopTheOwnersNewDevice() async throws {
    let database = try KeyVaultDatabase.inMemory()
    try await testApplication(database: database).test(.router) { client in
        let state = try await client.createAccount(TestDevice("phone"))
        let base = "/v1/accounts/\(state.account)/link-requests"
        // In process every request comes from one address: the stranger's.
        for i in 0..<LinkRequestController.maxPendingPerClient {
            let r = try await client.execute(uri: base, method: .post, body: jsonBody(TestDevice("spam \(i)").linkRequest(account: state.account)))
            #expect(r.status == .created)
        }
        let limited = try await client.execute(uri: base, method: .post, body: jsonBody(TestDevice("one too many").linkRequest(account: state.account)))
        #expect(limited.status == .tooManyRequests && errorCode(limited) == "too_many_link_requests")

        // The owner's new device, from its own address, still gets a request.
        let now = Int64(Date().timeIntervalSince1970)
        func ask(_ account: AccountID, _ code: String, from client: String, total: Int = LinkRequestController.maxPending) async throws {
            try await database.createLinkRequest(account, code: code, expires: now + 600,
                                                 request: TestDevice(code).linkRequest(account: account), client: client,
                                                 perClient: LinkRequestController.maxPendingPerClient, total: total,
                                                 perAccountOverTotal: LinkRequestController.maxPendingPerAccountOverTotal)
        }
        try await ask(state.account, "ABCDE00001", from: "203.0.113.9")
        #expect(try await client.execute(uri: "\(base)/ABCDE00001", method: .get).status == .ok)
        #expect(try await database.audit(state.account, after: 0).allSatisfy { !$0.event.hasPrefix("link_request") },
                "a stranger's request must not grow the account's audit log")

        // The security review's flood (SEC-2): many addresses fill the server's share with
        // requests to their own account. An account the flood does not target still gets
        // requests; only the flooded account is refused, and the rows stay bounded.
        let spammer = try await client.createAccount(TestDevice("stranger"))
        let total = 6 + 12  // the six above, and twelve more from the flood
        for i in 0..<12 {
            try await ask(spammer.account, String(format: "SPAM%06d", i), from: "198.51.100.\(i / 5)", total: total)
        }
        await #expect(throws: StoreError.tooManyLinkRequests) {
            try await ask(spammer.account, "SPAM999999", from: "192.0.2.77", total: total)
        }
        let victim = try await client.createAccount(TestDevice("victim"))
        for i in 0..<LinkRequestController.maxPendingPerAccountOverTotal {
            try await ask(victim.account, "VCTM00000\(i)", from: "192.0.2.\(i)", total: total)
        }
        await #expect(throws: StoreError.tooManyLinkRequests) {
            try await ask(victim.account, "VCTM000009", from: "192.0.2.9", total: total)
        }
    }
    #expect(IPNetwork.bucket("2001:db8:1:2:3:4:5:6") == IPNetwork.bucket("2001:db8:1:ff:ffff::1"))
    #expect(IPNetwork.bucket("2001:db8:1:300::1") != IPNetwork.bucket("2001:db8:1:200::1"))
    #expect(IPNetwork.bucket("192.0.2.1") == "192.0.2.1")
    // A server bound to :: sees IPv4 peers as IPv4-mapped IPv6 addresses: each is its own
    // IPv4 client, not one /56 of zeros shared by every IPv4 client (review finding).
    #expect(IPNetwork.bucket("::ffff:192.0.2.1") == "192.0.2.1")
    #expect(IPNetwork.bucket("::ffff:192.0.2.1") != IPNetwork.bucket("::ffff:198.51.100.7"))
}

/// A recovery slot is refused below the floor (`weak_kdf`) and above the ceiling no
/// client would spend (`kdf_above_ceiling`), and nothing is stored either way.
@Test(arguments: [(UInt32(1), UInt32(65536), "weak_kdf"), (UInt32(11), UInt32(65536), "kdf_above_ceiling"),
                  (UInt32(3), UInt32(2 * 1024 * 1024), "kdf_above_ceiling")])
func aRecoverySlotOutsideTheArgon2idBoundsIsRefused(iterations: UInt32, memoryKiB: UInt32, code: String) async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone")
        let fixture = RecoveryFixture()
        var state = try await client.createAccount(phone, masterKey: fixture.masterKey)
        var slot = fixture.slot
        slot.iterations = iterations
        slot.memoryKiB = memoryKiB
        let link = phone.link(.recoverySet, after: state, body: [
            "authKey": Hex.encode(fixture.authKey.publicKey.rawRepresentation), "boxKey": Hex.encode(fixture.boxKey.publicKey.rawRepresentation),
            "recoveryGeneration": "1"])
        let response = try await client.append(phone, &state, AppendRequest(link: link, recovery: slot))
        #expect(response.status == .badRequest && errorCode(response) == code, "\(String(buffer: response.body))")
        #expect(try await client.execute(uri: "/v1/accounts/\(state.account)/recovery", method: .get).status == .notFound)
    }
}
