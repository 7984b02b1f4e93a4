import Foundation
import HTTPTypes
import KeyVault
import KeyVaultCrypto
import KeyVaultModel
import Testing

/// Answers the first chain append late: the server has applied it, the device
/// hears so only after `delay`, meanwhile another call on the same Vault runs.
final class SlowFirstAppend: HTTPTransport {
    let inner: any HTTPTransport
    let delay: Duration
    private let delayed = Locked(false)

    init(_ inner: any HTTPTransport, delay: Duration = .milliseconds(300)) {
        self.inner = inner
        self.delay = delay
    }

    func send(_ exchange: HTTPExchange) async throws -> HTTPReply {
        let reply = try await inner.send(exchange)
        let first = exchange.method == "POST" && exchange.target.hasSuffix("/chain")
            && delayed.withLock { done in defer { done = true }; return !done }
        if first { try await Task.sleep(for: delay) }
        return reply
    }
}

/// Two calls at once on one Vault (an app's tasks) both land, one after the other,
/// and the head this device keeps never goes back: a late answer to the first
/// must not undo the second (a dishonest server could then hide a revocation).
@Test func twoCallsAtOnceOnOneVaultBothLandAndTheHeadNeverGoesBack() async throws {
    try await Fixture.run { fixture, laptop in
        let before = try await laptop.chain.sequence
        laptop.home.unlock()
        let slow = SlowFirstAppend(fixture.transport)
        let vault = try await Vault.open(home: fixture.home("laptop"), transport: { _ in slow })
        async let member = vault.addMember(name: "Emma")
        try await Task.sleep(for: .milliseconds(60))
        async let rotated = vault.rotateMaster()
        _ = try await (member, rotated)

        let state = try await vault.chain
        let record = await vault.record
        let links = await vault.links
        #expect(state.sequence == before + 2, "both links are on the chain this device keeps")
        #expect(state.masterGeneration == 2 && state.members.count == 1)
        #expect(record.sequence == state.sequence && record.head == state.head)
        #expect(links.count == Int(state.sequence) + 1 && links.last?.hash == state.head)
        #expect(try fixture.home("laptop").load().sequence == state.sequence, "the saved head is the newest")
        try await vault.sync()
        #expect(try await vault.chain.head == state.head)
    }
}

/// Reads run while a long write waits: they see the state before or after it,
/// never a half-made one, and the write still lands.
@Test func manyCallsAtOnceAllLandInSomeOrder() async throws {
    try await Fixture.run { fixture, laptop in
        let before = try await laptop.chain.sequence
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<4 { group.addTask { _ = try await laptop.addMember(name: "member \(i)") } }
            group.addTask { _ = try await laptop.rotateMaster() }
            group.addTask { _ = try await laptop.members() }
            try await group.waitForAll()
        }
        let state = try await laptop.chain
        #expect(state.sequence == before + 5 && state.members.count == 4 && state.masterGeneration == 2)
        #expect(try await laptop.members().count == 4)
        let saved = try fixture.home("laptop").load()
        #expect(saved.sequence == state.sequence && saved.head == state.head)
    }
}

/// Runs `hook` once, just before the first chain append it sees is sent.
final class BeforeFirstAppend: HTTPTransport {
    let inner: any HTTPTransport
    private let hook = Locked<(@Sendable () async throws -> Void)?>(nil)

    init(_ inner: any HTTPTransport, _ hook: @escaping @Sendable () async throws -> Void) {
        self.inner = inner
        self.hook.withLock { $0 = hook }
    }

    func send(_ exchange: HTTPExchange) async throws -> HTTPReply {
        if exchange.method == "POST", exchange.target.hasSuffix("/chain"), let hook = hook.withLock({ h in defer { h = nil }; return h }) {
            try await hook()
        }
        return try await inner.send(exchange)
    }
}

/// A member added on one device while another revokes a third and its rotation is
/// lost: the add loses the race (`stale_chain`), and its retry must not wrap the new
/// member's key under the master key the revoked device holds: it finishes the
/// rotation first.
@Test func aMemberAddedWhileAnotherDeviceRevokesIsWrappedUnderTheRotatedKey() async throws {
    try await Fixture.run { fixture, laptop in
        let tablet = try await Vault.enrollWithRecoveryCode(home: fixture.home("tablet"), server: "test", transport: fixture.transport,
                                                            account: laptop.account, name: "tablet", code: fixture.code)
        let phoneHome = fixture.home("phone")
        _ = try await Vault.enrollWithRecoveryCode(home: phoneHome, server: "test", transport: fixture.transport,
                                                   account: laptop.account, name: "phone", code: fixture.code)
        phoneHome.unlock()
        let racing = BeforeFirstAppend(fixture.transport) {
            try await laptop.sync()
            await revokeLosingTheRotation(fixture, laptop, "tablet")
        }
        let phone = try await Vault.open(home: fixture.home("phone"), transport: { _ in racing })
        let emma = try await phone.addMember(name: "Emma")

        let state = try await phone.chain
        #expect(state.devices[tablet.device]?.isActive == false)
        let wraps = try await phone.api.wraps(member: emma.id)
        #expect(!wraps.isEmpty)
        #expect(wraps.allSatisfy { $0.masterGeneration == state.masterGeneration },
                "the new member's key is wrapped only under the master key made after the revocation")
        #expect(state.masterGeneration == 2)
    }
}

/// A member key rotated while a revocation's master rotation is still pending (the
/// revoking device was interrupted) must not be wrapped under the master key the
/// revoked device holds, nor count as that member's rotation: the master key is
/// rotated first.
@Test func aMemberRotatedWhileARevocationsRotationIsPendingIsNotWrappedUnderTheOldMasterKey() async throws {
    try await Fixture.run { fixture, laptop in
        let emma = try await laptop.addMember(name: "Emma")
        let phone = try await Vault.enrollWithRecoveryCode(home: fixture.home("phone"), server: "test", transport: fixture.transport,
                                                           account: laptop.account, name: "phone", code: fixture.code)
        phone.home.unlock()
        try await laptop.sync()
        await revokeLosingTheRotation(fixture, laptop, "phone")
        #expect(try await laptop.pendingRotation().master)

        let h = try await laptop.rotateMember(emma.id)
        let state = try await laptop.chain
        #expect(state.masterGeneration == 2, "the master key is rotated before the member key")
        let wraps = try await laptop.api.wraps(member: emma.id).filter { $0.memberGeneration == h }
        #expect(!wraps.isEmpty && wraps.allSatisfy { $0.masterGeneration == 2 })
        #expect(try await laptop.pendingRotation().isEmpty)
    }
}
