import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import Testing
@testable import KeyVaultServer

@Test func sessionRequestsAreMACedAndRefusedPrecisely() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone")
        let state = try await client.createAccount(phone)
        let session = try await client.openSession(phone, account: state.account)
        let uri = "/v1/accounts/\(state.account)/boxes"
        #expect(try await client.macRequest(session, .get, uri).status == .ok)

        var response = try await client.macRequest((session.0, SymmetricKey()), .get, uri)
        #expect(response.status == .unauthorized && errorCode(response) == "bad_signature")
        response = try await client.macRequest((Hex.encode(SystemRandom.bytes(count: 16)), session.1), .get, uri)
        #expect(response.status == .unauthorized && errorCode(response) == "unknown_session")
        response = try await client.macRequest(session, .get, uri) { $0[HTTPField.Name(RequestSignature.nonceHeader)!] = "00" }
        #expect(response.status == .unauthorized && errorCode(response) == "malformed_signature")
        // MACed for one path, sent to another.
        response = try await client.macRequest(session, .get, uri) { _ in }
        #expect(response.status == .ok)
        var headers = HTTPFields()
        for (name, value) in try RequestMAC.headers(method: "GET", path: "/v1/accounts/\(state.account)/chain", query: "", body: [],
                                                     session: session.0, key: session.1, timestamp: Int64(Date().timeIntervalSince1970)) {
            headers[HTTPField.Name(name)!] = value
        }
        response = try await client.execute(uri: uri, method: .get, headers: headers)
        #expect(errorCode(response) == "bad_signature")
        response = try await client.execute(uri: "/v1/accounts/\(state.account)/chain", method: .get, headers: headers)
        #expect(response.status == .ok)
        response = try await client.execute(uri: "/v1/accounts/\(state.account)/chain", method: .get, headers: headers)
        #expect(errorCode(response) == "replayed_nonce")

        // A session cannot open another session.
        response = try await client.macRequest(session, .post, "/v1/accounts/\(state.account)/sessions")
        #expect(response.status == .forbidden && errorCode(response) == "signature_required")
    }
}

@Test func aRevokedDevicesSessionIsRefusedOnItsNextRequest() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone"), tablet = TestDevice("tablet")
        var state = try await client.createAccount(phone)
        try await client.append(phone, &state, AppendRequest(link: phone.link(.deviceAdd, after: state, body: tablet.deviceFields)))
        let session = try await client.openSession(tablet, account: state.account)
        #expect(try await client.macRequest(session, .get, "/v1/accounts/\(state.account)/chain").status == .ok)
        try await client.append(phone, &state, AppendRequest(link: phone.link(.deviceRevoke, after: state, body: ["device": tablet.id.rawValue])))
        let response = try await client.macRequest(session, .get, "/v1/accounts/\(state.account)/chain")
        #expect(response.status == .forbidden && errorCode(response) == "device_revoked")
    }
}

/// Whoever holds the server's secret file can make sessions (docs/formats/request-signature.md),
/// so a session does only what a thief of that file may: deleting the account and
/// answering or refusing a device link take a device's own signature.
@Test func deletingTheAccountAndAnsweringALinkTakeASignatureNotASession() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone")
        let state = try await client.createAccount(phone)
        let session = try await client.openSession(phone, account: state.account)
        let code = String(repeating: "1", count: 8)
        for (method, path) in [(HTTPRequest.Method.delete, "/v1/accounts/\(state.account)"),
                               (.post, "/v1/accounts/\(state.account)/link-requests/\(code)/respond"),
                               (.post, "/v1/accounts/\(state.account)/link-requests/\(code)/refuse")] {
            let response = try await client.macRequest(session, method, path, body: Array("{}".utf8))
            #expect(response.status == .forbidden && errorCode(response) == "signature_required", "\(method) \(path): \(response.status)")
        }
        #expect(try await client.signed(phone, .get, "/v1/accounts/\(state.account)/chain").status == .ok)
    }
}
