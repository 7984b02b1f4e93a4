import Foundation
import KeyVault
import KeyVaultCrypto
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultProtocol
import Testing

// Issue 19, item 3: a server that freezes what one account sees of another (the
// chain and the head statements as they stood before a revocation, served again and
// again: not a rollback, so nothing else notices) is believed only within
// ChainFreshness.window (docs/formats/head-statement.md).

/// Records the answers to GETs whose path contains one of `paths`, then serves
/// those recorded answers instead of the real ones (a frozen view).
final class FrozenView: Sendable {
    private let replies = Locked<[String: HTTPReply]>([:])
    let paths: [String]

    init(_ paths: [String]) { self.paths = paths }

    func record(_ request: HTTPExchange, _ reply: HTTPReply) {
        guard request.method == "GET", reply.status == 200, let path = paths.first(where: { request.target.contains($0) }) else { return }
        replies.withLock { $0[path] = reply }
    }

    func answer(_ request: HTTPExchange) -> HTTPReply? {
        guard request.method == "GET", let path = paths.first(where: { request.target.contains($0) }) else { return nil }
        return replies.withLock { $0[path] }
    }

    var recorded: Int { replies.withLock { $0.count } }
}

private let afterTheWindow = ChainFreshness.window + 3600

@Test func aFrozenViewOfTheGranteesChainIsBelievedOnlyWithinTheWindow() async throws {
    try await Fixture.run { fixture, parent in
        let sent = SentBoxes()
        let (grandma, stolen) = try await grandparentWithAPhone(fixture)
        let alice = try await parent.addMember(name: "Alice")
        let bob = try await parent.addMember(name: "Bob")
        _ = await verifyContacts(parent, grandma)
        try await parent.share(alice, with: grandma.account, readOnly: false)

        // The server records what it shows the parent of grandma's account, and shows only that from now on.
        let view = FrozenView(["/contacts/\(grandma.account)/chain", "/contacts/\(grandma.account)/head-statements"])
        fixture.transport.tamper { request, reply in
            sent.record(request)
            view.record(request, reply)
        }
        try await parent.share(bob, with: grandma.account, readOnly: false)
        #expect(view.recorded == 2)
        fixture.transport.answer { view.answer($0) }

        // Grandma's phone is stolen and revoked: her identity is renewed, which the parent is not shown.
        try await grandma.revoke(try await grandma.device(matching: "grandma-phone"))
        _ = stolen

        // Within the window the frozen view is believed: the documented limit.
        #expect(try await parent.rotateMember(alice.id) == 2)
        #expect(sent.all.contains { $0.memberGeneration == 2 && $0.member == alice.id && $0.grantee == grandma.account })

        // Past it, the parent seals nothing more to grandma: the share ends, and a new one is refused.
        let now = Int64(Date().timeIntervalSince1970)
        await parent.setClock { now + afterTheWindow }
        let before = sent.all.count
        #expect(try await parent.rotateMember(alice.id) == 3)
        #expect(sent.all.count == before, "the frozen grantee was sealed generation 3: \(sent.all.dropFirst(before).map(\.memberGeneration))")
        #expect(try await parent.grants().map(\.member) == [bob.id])
        let carol = try await parent.addMember(name: "Carol")
        let refused = await Result(catching: { try await parent.share(carol, with: grandma.account, readOnly: false) })
        #expect(code(refused.failure) == .contactStale, "\(String(describing: refused.failure))")
        #expect((refused.failure as? KeyVaultError)?.message.contains("grandma") == true)
    }
}

@Test func aFrozenViewOfTheSharersChainIsBelievedOnlyWithinTheWindow() async throws {
    try await Fixture.run { fixture, parent in
        let grandma = try await grandparent(fixture)
        let alice = try await parent.addMember(name: "Alice")
        let phone = try await fixture.enroll("phone", in: parent.account)
        _ = await verifyContacts(parent, grandma)
        try await parent.share(alice, with: grandma.account, readOnly: true)

        // The server records what it shows grandma of the parent's account (chain, statements, boxes) and freezes it.
        let view = FrozenView(["/contacts/\(parent.account)/chain", "/contacts/\(parent.account)/head-statements",
                               "/accounts/\(grandma.account)/shared"])
        fixture.transport.tamper { request, reply in view.record(request, reply) }
        #expect(try await grandma.sharedMembers().members.map(\.id) == [alice.id])
        #expect(view.recorded == 3)
        fixture.transport.tamper(nil)
        fixture.transport.answer { view.answer($0) }

        // The parent's phone, which holds the sharing identity, is revoked; grandma is not shown it.
        try await parent.revoke(try await parent.device(matching: "phone"))
        _ = phone

        // Within the window: believed (the documented limit). Past it: refused, with why.
        #expect(try await grandma.sharedMembers().members.map(\.id) == [alice.id])
        let now = Int64(Date().timeIntervalSince1970)
        await grandma.setClock { now + afterTheWindow }
        let late = try await grandma.sharedMembers()
        #expect(late.members.isEmpty, "grandma still trusts a frozen view of the parent's chain past the window")
        #expect(late.refused.first?.reason.contains("has not been seen lately") == true, "\(late.refused)")
    }
}

/// A statement that names a head the chain shown does not have (a device saw more)
/// refuses the view at once, whatever the window says.
@Test func aStatementOfALaterHeadThanTheChainShownRefusesTheViewAtOnce() async throws {
    try await Fixture.run { fixture, parent in
        let grandma = try await grandparent(fixture)
        let alice = try await parent.addMember(name: "Alice")
        _ = await verifyContacts(parent, grandma)
        try await parent.share(alice, with: grandma.account, readOnly: true)
        let view = FrozenView(["/contacts/\(parent.account)/chain"])
        fixture.transport.tamper { request, reply in view.record(request, reply) }
        #expect(try await grandma.sharedMembers().members.count == 1)
        fixture.transport.tamper(nil)
        fixture.transport.answer { view.answer($0) }
        // The parent moves on and states its new head; the server passes the statement on but not the chain.
        _ = try await parent.addMember(name: "Bob")
        try await parent.sync()
        let refused = try await grandma.sharedMembers()
        #expect(refused.members.isEmpty && refused.refused.first?.reason.contains("held back") == true, "\(refused.refused)")
    }
}
