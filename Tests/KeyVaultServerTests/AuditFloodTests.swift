import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import Testing
@testable import KeyVaultServer

/// Item 5 of issue 8: a known device's refusals cannot grow the audit log without
/// bound; one row per device and event per minute carries the count. (The 200 requests
/// take well under a minute alone; beside the whole suite on two cores they have taken
/// over one, so the rows are counted against the minutes the flood lasted.)
@Test func aFloodOfBadSignaturesAddsOneAuditRowAMinute() async throws {
    try await testApplication().test(.router) { client in
        let phone = TestDevice("phone")
        let state = try await client.createAccount(phone)
        let uri = "/v1/accounts/\(state.account)/chain"
        let started = Date()
        for _ in 0..<200 {
            var headers = phone.signedHeaders(.get, uri, body: [])
            headers[HTTPField.Name(RequestSignature.signatureHeader)!] = base64Encode([UInt8](repeating: 1, count: 64))
            let response = try await client.execute(uri: uri, method: .get, headers: headers)
            #expect(errorCode(response) == "bad_signature")
        }
        // The log stamps whole seconds: the flood spans at most its length rounded up.
        let minutes = 1 + Int(Date().timeIntervalSince(started).rounded(.up)) / Int(RefusalLog.interval)
        let entries = try decode([String: [AuditEntry]].self, try await client.signed(phone, .get, "/v1/accounts/\(state.account)/audit"))["entries"] ?? []
        let refusals = entries.filter { $0.event == "refused.bad_signature" }
        #expect((1...minutes).contains(refusals.count), "\(refusals.count) rows for a flood of \(minutes) minute(s)")
    }
}
