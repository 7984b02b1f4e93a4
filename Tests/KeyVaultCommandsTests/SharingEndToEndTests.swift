import Foundation
import KeyVaultTestSupport
import Testing

/// Issue 12 with the real binaries: two accounts on one `keyctl serve`. The parent
/// and the grandmother verify each other by safety code, the parent shares a child
/// (read-only, then not), the grandmother reads and writes that child's attachments,
/// and after the unshare she is refused and blind to the next key generation.
@Test(.timeLimit(.minutes(10)))
func twoAccountsShareAMemberAndTakeItBackWithTheRealBinaries() async throws {
    let story = try await Story("sharing")
    let url = story.url
    func path(_ name: String) -> String { story.path(name) }
    func run(_ arguments: [String], _ device: String, expect: Int32 = 0,
             sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
        try await story.run(arguments, device, expect: expect, sourceLocation: sourceLocation)
    }
    let parent = try await #require(try run(["init", "--server", url, "--name", "laptop", "--recovery-file", path("code-parent"), "--yes"],
                                      "parent")["account"] as? String)
    let grandma = try await #require(try run(["init", "--server", url, "--name", "tablet", "--recovery-file", path("code-grandma"), "--yes"],
                                       "grandma")["account"] as? String)
    _ = try await run(["member", "add", "Alice"], "parent")
    try Data("vaccination record".utf8).write(to: URL(fileURLWithPath: path("record.txt")))
    let record = try await #require(try run(["attachment", "put", "--member", "Alice", path("record.txt")], "parent")["address"] as? String)

    // Not yet a contact: nothing can be shared.
    _ = try await run(["member", "share", "Alice", "--with", grandma], "parent", expect: 2)

    // Both run `contact add`; each types the code the other's screen shows.
    let asker = try BackgroundKeyctl(["contact", "add", grandma, "--poll", "0.1"] + story.home("parent"))
    #expect(try await asker.nextJSON()["request"] is String)
    let answerer = try BackgroundKeyctl(["contact", "add", parent, "--poll", "0.1"] + story.home("grandma"))
    #expect(try await answerer.nextJSON()["answered"] is String)
    let parentCode = try #require(try await asker.nextJSON()["safetyCode"] as? String)
    let grandmaCode = try #require(try await answerer.nextJSON()["safetyCode"] as? String)
    #expect(parentCode == grandmaCode && parentCode.count == 7)
    asker.type(grandmaCode)
    answerer.type(parentCode)
    let asked = await asker.finish(), answered = await answerer.finish()
    #expect(asked.code == 0 && answered.code == 0, "\(asked.err) \(answered.err)")
    #expect(try lastJSON(asked.out)["account"] as? String == grandma)
    let contacts = try await #require(try run(["contact", "list"], "parent")["contacts"] as? [[String: Any]])
    #expect(contacts.map { $0["account"] as? String } == [grandma])

    // Read-only: she reads, and cannot put.
    let grant = try await run(["member", "share", "Alice", "--with", grandma, "--read-only"], "parent")
    #expect(grant["readOnly"] as? Bool == true)
    let shared = try await #require(try run(["shared", "list"], "grandma")["shared"] as? [[String: Any]])
    #expect(shared.count == 1 && shared[0]["name"] as? String == "Alice" && shared[0]["sharer"] as? String == parent)
    #expect(shared[0]["readOnly"] as? Bool == true)
    _ = try await run(["attachment", "get", "--member", "Alice", record, "-o", path("grandma.txt")], "grandma")
    #expect(try String(contentsOfFile: path("grandma.txt"), encoding: .utf8) == "vaccination record")
    let listed = try await #require(try run(["attachment", "list", "--member", "Alice"], "grandma")["attachments"] as? [[String: Any]])
    #expect(listed.map { $0["address"] as? String } == [record])
    try Data("grandma's note".utf8).write(to: URL(fileURLWithPath: path("note.txt")))
    _ = try await run(["attachment", "put", "--member", "Alice", path("note.txt")], "grandma", expect: 2)

    // Shared again, writable: her attachment opens on the parent's side.
    _ = try await run(["member", "unshare", "Alice", "--with", grandma], "parent")
    _ = try await run(["member", "share", "Alice", "--with", grandma], "parent")
    let note = try await #require(try run(["attachment", "put", "--member", "Alice", path("note.txt")], "grandma")["address"] as? String)
    _ = try await run(["attachment", "get", "--member", "Alice", note, "-o", path("parent-note.txt")], "parent")
    #expect(try String(contentsOfFile: path("parent-note.txt"), encoding: .utf8) == "grandma's note")

    // Taken back: the key moves on without her, and she is refused.
    let unshared = try await run(["member", "unshare", "Alice", "--with", grandma], "parent")
    #expect(unshared["generation"] as? Int == 3)
    await #expect((try run(["shared", "list"], "grandma")["shared"] as? [[String: Any]])?.isEmpty == true)
    _ = try await run(["attachment", "get", "--member", "Alice", record, "-o", path("again.txt")], "grandma", expect: 2)
    let after = try await #require(try run(["attachment", "put", "--member", "Alice", path("note.txt")], "parent")["address"] as? String)
    #expect(after.hasPrefix("ca1.3."))
}

/// Issue 19, item 1, with the real binaries: a thief with the owner's unlocked phone
/// for a minute makes an account of its own, runs `contact add` on both sides (typing
/// both codes itself) and shares Emma with that account. The owner revokes the phone
/// from the laptop: `device revoke` names the pin and the share it ends, and from then
/// on the thief's account opens nothing the owner makes and writes nothing the owner
/// takes in; `audit` passes.
@Test(.timeLimit(.minutes(10)))
func aThiefsShareMadeOnAStolenPhoneEndsWithItsRevocationWithTheRealBinaries() async throws {
    let story = try await Story("thief-share")
    let url = story.url
    func path(_ name: String) -> String { story.path(name) }
    func run(_ arguments: [String], _ device: String, input: String = "", expect: Int32 = 0,
             sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
        try await story.run(arguments, device, input: input, expect: expect, sourceLocation: sourceLocation)
    }
    let owner = try await #require(try run(["init", "--server", url, "--name", "laptop", "--recovery-file", path("paper"), "--kdf", "interactive",
                                      "--yes"], "laptop")["account"] as? String)
    _ = try await run(["member", "add", "Emma"], "laptop")
    let paper = try String(contentsOfFile: path("paper"), encoding: .utf8)
    _ = try await run(["device", "enroll", "--server", url, "--account", owner, "--name", "phone"], "phone", input: paper)
    let thief = try await #require(try run(["init", "--server", url, "--name", "thief", "--recovery-file", path("thief-code"), "--kdf", "interactive",
                                      "--yes"], "thief")["account"] as? String)

    // On the stolen phone and its own device, the thief verifies both sides itself and shares Emma.
    let asker = try BackgroundKeyctl(["contact", "add", thief, "--poll", "0.1"] + story.home("phone"))
    #expect(try await asker.nextJSON()["request"] is String)
    let answerer = try BackgroundKeyctl(["contact", "add", owner, "--poll", "0.1"] + story.home("thief"))
    #expect(try await answerer.nextJSON()["answered"] is String)
    let phoneCode = try #require(try await asker.nextJSON()["safetyCode"] as? String)
    let thiefCode = try #require(try await answerer.nextJSON()["safetyCode"] as? String)
    asker.type(thiefCode)
    answerer.type(phoneCode)
    let asked = await asker.finish(), answered = await answerer.finish()
    #expect(asked.code == 0 && answered.code == 0)
    _ = try await run(["member", "share", "Emma", "--with", thief], "phone")
    await #expect((try run(["shared", "list"], "thief")["shared"] as? [[String: Any]])?.count == 1)

    // The owner revokes the phone from the laptop; what it signed for the thief ends with it.
    let revoked = try await run(["device", "revoke", "phone", "--yes"], "laptop")
    let ended = try #require(revoked["ended"] as? [[String: Any]])
    #expect(Set(ended.compactMap { $0["kind"] as? String }) == ["pin", "share"] && ended.allSatisfy { $0["account"] as? String == thief },
            "\(ended)")
    let text = try await keyctl(["audit", "--home", path("laptop")])
    #expect(text.code == 0, "\(text.out)\(text.err)")

    // After the revocation: the thief's account opens nothing new and writes nothing.
    try Data("after the theft".utf8).write(to: URL(fileURLWithPath: path("scan.txt")))
    let scan = try await #require(try run(["attachment", "put", "--member", "Emma", path("scan.txt")], "laptop")["address"] as? String)
    await #expect((try run(["shared", "list"], "thief")["shared"] as? [[String: Any]])?.isEmpty == true)
    _ = try await run(["attachment", "get", "--member", "Emma", scan, "-o", path("stolen.txt")], "thief", expect: 2)
    try Data("forged record".utf8).write(to: URL(fileURLWithPath: path("forged.txt")))
    _ = try await run(["attachment", "put", "--member", "Emma", path("forged.txt")], "thief", expect: 2)
    let listed = try await #require(try run(["attachment", "list", "--member", "Emma"], "laptop")["attachments"] as? [[String: Any]])
    #expect(listed.map { $0["address"] as? String } == [scan])
    await #expect(try run(["audit"], "laptop")["ok"] as? Bool == true)
    #expect(await story.server.stop() == 0)
}
