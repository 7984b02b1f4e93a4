import Foundation
import KeyVaultTestSupport
import Testing

// Issue 22, item 2: `member rename OLD NEW` and `member remove NAME`, written to the
// chain: every device sees the new name; a removed member's attachments and keys are
// gone from the server, and the audit still passes.

@Test(.timeLimit(.minutes(10)))
func aMemberIsRenamedAndRemovedForEveryDeviceWithItsAttachments() async throws {
    let story = try await Story("members")
    _ = try await story.laptopAndPhone()
    _ = try await story.run(["member", "add", "Emma"], "laptop")
    _ = try await story.run(["member", "add", "Noah"], "laptop")
    try Data("x-ray".utf8).write(to: URL(fileURLWithPath: story.path("x-ray.png")))
    let address = try await #require(try story.run(["attachment", "put", "--member", "Emma", story.path("x-ray.png")], "laptop")["address"] as? String)
    func names(_ device: String) async throws -> [String] {
        await (try story.run(["member", "list"], device)["members"] as? [[String: Any]] ?? []).compactMap { $0["name"] as? String }.sorted()
    }

    // Renamed: every device reads the new name, and the attachment is the member's still.
    await #expect(try story.run(["member", "rename", "Emma", "Emilia"], "laptop")["name"] as? String == "Emilia")
    await #expect(try names("phone") == ["Emilia", "Noah"])
    await #expect((try story.run(["attachment", "list", "--member", "Emilia"], "phone")["attachments"] as? [[String: Any]])?.count == 1)
    // Not to a name another member has, nor a member that is not there.
    #expect(try await keyctl(["member", "rename", "Emilia", "Noah"] + story.home("laptop")).code != 0)
    #expect(try await keyctl(["member", "rename", "Lena", "Lea"] + story.home("laptop")).code != 0)

    // Removed (asked first): gone for every device, its attachment with it.
    #expect(try await keyctl(["member", "remove", "Emilia", "--home", story.path("laptop")], input: Data("n\n".utf8)).code != 0)
    await #expect(try story.run(["member", "remove", "Emilia", "--yes"], "laptop")["removed"] as? String != nil)
    await #expect(try names("phone") == ["Noah"])
    await #expect(try names("laptop") == ["Noah"])
    let gone = try await keyctl(["attachment", "get", "--member", "Emilia", address, "-o", story.path("out")] + story.home("phone"))
    #expect(gone.code != 0)
    // In words in the account's log; the chain and what the server holds still agree.
    let told = try await keyctl(["audit", "log", "--home", story.path("phone")])
    #expect(told.out.contains("member Emma was renamed Emilia by laptop"), "\(told.out)")
    #expect(told.out.contains("member Emilia was removed"), "\(told.out)")
    await #expect(try story.run(["audit"], "phone")["ok"] as? Bool == true)
    await #expect(try story.run(["audit"], "laptop")["ok"] as? Bool == true)
    // A name freed by a removal can be given again: a new member, with a new key.
    _ = try await story.run(["member", "add", "Emilia"], "laptop")
    await #expect(try names("phone") == ["Emilia", "Noah"])
}
