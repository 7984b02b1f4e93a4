import Foundation
import Testing

/// Issue 8, item 2, with the real binaries: a thief holding the owner's unlocked
/// phone replaces the recovery code and enrolls devices of its own with it, then
/// waits. Revoking the phone from the laptop must take all of that with it.
@Test(.timeLimit(.minutes(5)))
func revokingAStolenDeviceRevokesTheCodeAndDevicesItMade() async throws {
    let story = try Story("thief")
    let url = story.url
    func path(_ name: String) -> String { story.path(name) }
    func run(_ arguments: [String], _ device: String, input: String = "", expect: Int32 = 0,
             sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
        try story.run(arguments, device, input: input, expect: expect, sourceLocation: sourceLocation)
    }
    func enroll(_ name: String, code: String, expect: Int32 = 0) throws -> [String: Any] {
        try run(["device", "enroll", "--server", url, "--account", account, "--name", name], name, input: code, expect: expect)
    }
    func code(_ file: String) throws -> String { try String(contentsOfFile: path(file), encoding: .utf8) }

    // The owner: a laptop with a member and an attachment, and a phone enrolled with the paper code.
    let created = try run(["init", "--server", url, "--name", "laptop", "--recovery-file", path("paper"), "--kdf", "interactive", "--yes"], "laptop")
    let account = try #require(created["account"] as? String)
    _ = try run(["member", "add", "Alice"], "laptop")
    let scan = Data((0..<5_000).map { UInt8(truncatingIfNeeded: $0 &* 13) })
    try scan.write(to: URL(fileURLWithPath: path("scan.pdf")))
    let address = try #require(try run(["attachment", "put", "--member", "Alice", path("scan.pdf")], "laptop")["address"] as? String)
    let phone = try #require(try enroll("phone", code: try code("paper"))["device"] as? String)

    // The thief, on the unlocked phone: a recovery code of its own, and two devices enrolled with it.
    _ = try run(["recovery", "rotate", "--recovery-file", path("thief-code"), "--kdf", "interactive", "--yes"], "phone")
    let extra = try #require(try enroll("extra", code: try code("thief-code"))["device"] as? String)
    let spare = try #require(try enroll("spare", code: try code("thief-code"))["device"] as? String)
    let before = try #require(try run(["status"], "laptop")["masterGeneration"] as? Int)

    // A --keep that names a device the phone did not add changes nothing.
    let laptop = try #require(created["device"] as? String)
    _ = try run(["device", "revoke", phone, "--keep", laptop, "--recovery-file", path("unused"), "--yes"], "laptop", expect: 64)
    #expect(!FileManager.default.fileExists(atPath: path("unused")))
    #expect(try run(["status"], "phone")["device"] as? String == phone, "nothing was revoked")

    // The owner revokes the phone from the laptop, keeping one of the devices (to show --keep).
    let revoked = try run(["device", "revoke", phone, "--keep", spare, "--recovery-file", path("new-code"), "--kdf", "interactive", "--yes"], "laptop")
    #expect(revoked["alsoRevoked"] as? [String] == [extra])
    #expect(revoked["kept"] as? [String] == [spare])
    #expect(revoked["newRecoveryCode"] as? Bool == true)
    let generation = try #require(revoked["masterGeneration"] as? Int)
    #expect(generation > before)

    // The phone and the device it enrolled are refused; the kept one stays.
    for device in ["phone", "extra"] {
        let refused = try keyctl(["status"] + story.home(device))
        #expect(refused.code == 4 && refused.err.contains("revoked"), "\(device): \(refused)")
        let file = try String(contentsOfFile: path(device) + "/device.json", encoding: .utf8)
        #expect(!file.contains("\"\(generation)\" : "), "\(device) never receives the new master key")
    }
    _ = try run(["attachment", "get", "--member", "Alice", address, "-o", path("spare.pdf")], "spare")

    // The thief's code enrolls nothing; the owner's new one does, and opens the attachment.
    let thief = try keyctl(["device", "enroll", "--server", url, "--account", account, "--name", "thief2"] + story.home("thief2"),
                           input: Data(try code("thief-code").utf8))
    #expect(thief.code != 0, "\(thief)")
    _ = try enroll("desktop", code: try code("new-code"))
    _ = try run(["attachment", "get", "--member", "Alice", address, "-o", path("desktop.pdf")], "desktop")
    #expect(try Data(contentsOf: URL(fileURLWithPath: path("desktop.pdf"))) == scan)

    // Nothing is left to finish, and the audit checks out.
    let status = try run(["status"], "laptop")
    #expect(status["warning"] == nil && status["recoveryCompromised"] == nil, "\(status)")
    #expect(try run(["audit"], "laptop")["ok"] as? Bool == true)
    #expect(story.server.stop() == 0)
}
