import Foundation
import Testing
@testable import KeyVaultCommands

/// A big family: `status` names members and devices instead of listing ids, shows
/// the first few of a long list and how many more, and `--json` still has them all.
@Test(.timeLimit(.minutes(10)))
func statusOfAFamilyOfThirtyStaysReadable() async throws {
    let story = try await Story("status")
    let laptop = story.path("laptop")
    let created = try await story.run(["init", "--server", story.url, "--name", "laptop", "--recovery-file", story.path("paper"),
                                 "--kdf", "interactive", "--yes"], "laptop")
    let account = try #require(created["account"] as? String)
    let code = try String(contentsOfFile: story.path("paper"), encoding: .utf8)
    let names = (1...30).map { "Child \($0 < 10 ? "0" : "")\($0)" }
    for name in names.shuffled() {
        let added = await runKeyctl(["member", "add", name, "--home", laptop])
        #expect(added.0 == 0, "\(added.2)")
    }
    for device in 1...11 {
        let enrolled = await runKeyctl(["device", "enroll", "--server", story.url, "--account", account, "--name", "tablet \(device)",
                                        "--home", story.path("tablet\(device)")], input: code)
        #expect(enrolled.0 == 0, "\(enrolled.2)")
    }

    let (exit, text, err) = await runKeyctl(["status", "--home", laptop])
    #expect(exit == 0, "\(err)")
    let lines = text.split(separator: "\n")
    let members = try #require(lines.first { $0.hasPrefix("members") })
    #expect(members.hasSuffix("30: Child 01, Child 02, Child 03, Child 04, Child 05 … and 25 more (`keyctl member list`)"), "\(members)")
    let devices = try #require(lines.first { $0.hasPrefix("devices") })
    #expect(devices.hasSuffix("12 active: laptop (this device), tablet 1, tablet 2, tablet 3, tablet 4 … and 7 more (`keyctl device list`)"),
            "\(devices)")
    #expect(lines.allSatisfy { $0.count < 160 }, "\(text)")

    let json = try lastJSON(await runKeyctl(["status", "--home", laptop, "--json"]).1)
    let listed = try #require(json["members"] as? [[String: Any]])
    #expect(Set(listed.compactMap { $0["name"] as? String }) == Set(names))
    #expect(listed.allSatisfy { ($0["id"] as? String)?.isEmpty == false })
    let active = try #require(json["activeDevices"] as? [[String: Any]])
    #expect(active.count == 12 && json["devices"] as? Int == 12)
    #expect(Set(active.compactMap { $0["name"] as? String }) == Set(["laptop"] + (1...11).map { "tablet \($0)" }))
    #expect(await story.server.stop() == 0)
}

@Test func aShortListIsShownWholeAndALongOneCounted() {
    #expect(StatusSummary.list(["Emma", "Noah"], more: "x") == "Emma, Noah")
    let ten = (1...10).map(String.init)
    #expect(StatusSummary.list(ten, more: "x") == ten.joined(separator: ", "))
    #expect(StatusSummary.list(ten + ["11"], more: "see x") == "1, 2, 3, 4, 5 … and 6 more (see x)")
}
