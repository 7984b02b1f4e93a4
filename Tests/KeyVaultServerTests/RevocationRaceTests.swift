import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import Testing
@testable import KeyVaultServer
import KeyVaultStore

/// Counts the requests that reached the last-seen update, so the test revokes only
/// once some of them are suspended there.
final class TouchGate: Sendable {
    private let entered = Locked(0)
    var count: Int { entered.withLock { $0 } }
    func enter() { entered.withLock { $0 += 1 } }
}

/// Item 3 of issue 8: a request of device D that suspends while recording last-seen
/// used to write its copy of D (read before the revocation) back into the cache,
/// clearing `revoked` until the next restart.
@Test func aRevokedDeviceStaysRevokedWhileItsSlowRequestsFinish() async throws {
    var configuration = ServerConfiguration()
    configuration.databasePath = "/unused"
    var service = try ServiceState(configuration: configuration, database: try KeyVaultDatabase.inMemory())
    let gate = TouchGate()
    service.authenticator.beforeTouch = {
        gate.enter()
        try? await Task.sleep(for: .milliseconds(30))
    }
    try await testApplication(service).test(.router) { client in
        let phone = TestDevice("phone")
        var state = try await client.createAccount(phone)
        _ = try await client.signed(phone, .get, "/v1/accounts/\(state.account)/chain")  // the phone's own last-seen, out of the way
        for round in 0..<12 {
            let tablet = TestDevice("tablet \(round)")
            let added = try await client.append(phone, &state, AppendRequest(link: phone.link(.deviceAdd, after: state, body: tablet.deviceFields)))
            #expect(added.status == .created)
            let uri = "/v1/accounts/\(state.account)/devices"
            let before = gate.count
            try await withThrowingTaskGroup(of: Void.self) { group in
                // Slow requests of the tablet, each suspended in its last-seen update...
                for _ in 0..<6 { group.addTask { _ = try await client.signed(tablet, .get, uri) } }
                while gate.count == before { try await Task.sleep(for: .milliseconds(1)) }
                // ...while the phone revokes it.
                let revoke = phone.link(.deviceRevoke, after: state, body: ["device": tablet.id.rawValue])
                let revoked = try await client.append(phone, &state, AppendRequest(link: revoke))
                #expect(revoked.status == .created)
                // Every request that starts after the revocation committed is refused,
                // while the slow ones finish and after they have.
                for _ in 0..<3 {
                    let response = try await client.signed(tablet, .get, uri)
                    #expect(response.status == .forbidden && errorCode(response) == "device_revoked", "round \(round)")
                    try await Task.sleep(for: .milliseconds(15))
                }
                try await group.waitForAll()
            }
            let late = try await client.signed(tablet, .get, uri)
            #expect(late.status == .forbidden && errorCode(late) == "device_revoked", "round \(round), after the slow requests")
        }
    }
}

/// The cache itself never lets a copy read before a revocation undo it: `put` keeps a
/// revocation already known, also one of a device that was not cached when it was
/// revoked (a request may read the database just before the revocation commits and
/// cache its copy just after), and `touch` changes only the last-seen time.
@Test func theDeviceCacheNeverForgetsARevocation() {
    let account = AccountID(rawValue: String(repeating: "a", count: 32))!
    let stale = StoredDevice(id: DeviceID(rawValue: String(repeating: "b", count: 32))!, account: account, name: "phone",
                             signingKey: [UInt8](repeating: 1, count: 32), boxKey: [UInt8](repeating: 2, count: 32), added: 1)
    let cache = DeviceCache()
    cache.put(stale)
    cache.revoke(stale.id, of: account, at: 7)
    cache.put(stale)  // the copy a suspended request read before the revocation
    #expect(cache.get(stale.id)?.revoked == 7)
    cache.touch(stale.id, at: 1_000)
    #expect(cache.get(stale.id)?.revoked == 7 && cache.get(stale.id)?.lastSeen == 1_000)

    let uncached = DeviceCache()
    uncached.revoke(stale.id, of: account, at: 9)  // revoked while nothing had it cached
    uncached.put(stale)
    #expect(uncached.get(stale.id)?.revoked == 9)
    uncached.removeAccount(account)  // a deleted account may be founded again by the same genesis
    uncached.put(stale)
    #expect(uncached.get(stale.id)?.revoked == nil)
}
