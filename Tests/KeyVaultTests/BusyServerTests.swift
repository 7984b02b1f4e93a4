import Foundation
import KeyVault
import KeyVaultCrypto
import KeyVaultTestSupport
import Testing

// A 503 `unavailable` with a short Retry-After (a write that lost a race for a lock: it was
// not made) is sent again, signed anew, up to twice; one with a long Retry-After (the
// server's database is down) is not waited for: the caller is told at once.

private func unavailable(after seconds: String) -> HTTPReply {
    HTTPReply(status: 503, headers: ["retry-after": seconds],
              body: Array(#"{"error":{"code":"unavailable","message":"other writes held what this request needed"}}"#.utf8))
}

@Test func aRequestRefusedBecauseTheDatabaseWasBusyIsSentAgainSignedAnew() async throws {
    try await Fixture.run { fixture, laptop in
        let emma = try await laptop.addMember(name: "Emma")
        let refusals = Locked(1), nonces = Locked<[String]>([])
        fixture.transport.answer { request in
            guard request.method == "PUT", request.target.contains("/attachments/") else { return nil }
            nonces.withLock { $0.append(request.headers.first { $0.0.lowercased() == "keyvault-nonce" }?.1 ?? "") }
            return refusals.withLock { left in
                guard left > 0 else { return nil }
                left -= 1
                return unavailable(after: "0")
            }
        }
        let put = try await laptop.put(Array("a note".utf8), member: emma)
        #expect(try await laptop.get(put.address, member: emma).unprotectedCopy() == Array("a note".utf8))
        #expect(nonces.withLock { Set($0).count == 2 && $0.count == 2 }, "sent twice, each with a nonce of its own")

        // Busy three times in a row: refused, after two more tries.
        refusals.withLock { $0 = 3 }
        nonces.withLock { $0 = [] }
        await expectRefusal("unavailable", kind: .network) { _ = try await laptop.put(Array("another".utf8), member: emma) }
        #expect(nonces.withLock { $0.count } == 3)

        // Down (Retry-After: 5): not waited for.
        fixture.transport.answer { request in
            guard request.method == "PUT", request.target.contains("/attachments/") else { return nil }
            nonces.withLock { $0.append("") }
            return unavailable(after: "5")
        }
        nonces.withLock { $0 = [] }
        await expectRefusal("unavailable", kind: .network) { _ = try await laptop.put(Array("a third".utf8), member: emma) }
        #expect(nonces.withLock { $0.count } == 1)
    }
}

/// A recovery enrollment refused as busy is sent again too: the server spends its token
/// only in the write that enrolls, so the write that lost left it as it was.
@Test func aRecoveryEnrollmentRefusedBecauseTheDatabaseWasBusyIsSentAgain() async throws {
    try await Fixture.run { fixture, laptop in
        let refusals = Locked(1), sent = Locked(0)
        fixture.transport.answer { request in
            guard request.method == "POST", request.target.hasSuffix("/recovery/enroll") else { return nil }
            sent.withLock { $0 += 1 }
            return refusals.withLock { left in
                guard left > 0 else { return nil }
                left -= 1
                return unavailable(after: "0")
            }
        }
        let phone = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                           account: laptop.account, name: "phone", code: fixture.code)
        #expect(sent.withLock { $0 } == 2)
        try await laptop.sync()
        #expect(try await laptop.devices().contains { $0.id == phone.device })
    }
}
