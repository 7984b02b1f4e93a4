import Foundation
import KeyVaultTestSupport
import Testing

// Issue 22, item 5: what another device changed reaches this one. Every command first
// says, once, what changed since this device last looked (by which device, when, and
// what to run if it was not expected); `audit log` shows the account's key events in
// plain words; `device passphrase` changes this device's passphrase.

@Test(.timeLimit(.minutes(10)))
func whatAnotherDeviceChangedIsToldOnceOnTheNextCommandAndTheLogShowsItAll() async throws {
    let story = try await Story("notices")
    _ = try await story.laptopAndPhone()

    /// keyctl as a person runs it on `device`: text, not JSON.
    func person(_ arguments: [String], _ device: String, environment: [String: String] = [:]) async throws -> ProcessResult {
        try await keyctl(arguments + ["--home", story.path(device)], environment: environment)
    }
    // The laptop saw its own changes made; the phone's own enrollment is not news to it.
    await #expect(try !person(["status"], "phone").err.contains("Since this device last looked"))
    _ = try await story.run(["member", "add", "Alice"], "laptop")
    _ = try await story.run(["recovery", "rotate", "--recovery-file", story.path("code2"), "--yes"], "laptop")

    let first = try await person(["status"], "phone")
    #expect(first.code == 0, "\(first.err)")
    #expect(first.err.contains("Since this device last looked"), "\(first.err)")
    #expect(first.err.contains("member Alice was added by laptop"), "\(first.err)")
    #expect(first.err.contains("the recovery code was replaced by laptop"), "\(first.err)")
    // With the command to run when it was not expected, and when it happened.
    #expect(first.err.contains("keyctl recovery rotate"), "\(first.err)")
    // Dated (today, or yesterday when the test ran across midnight UTC).
    let days = [Date(), Date().addingTimeInterval(-600)].map {
        ISO8601DateFormatter.string(from: $0, timeZone: TimeZone(identifier: "UTC")!, formatOptions: [.withFullDate])
    }
    #expect(days.contains { first.err.contains($0) }, "\(first.err)")
    // Once: the next command says nothing of it.
    await #expect(try !person(["status"], "phone").err.contains("Since this device last looked"))
    // The device that made the changes is not told of them.
    await #expect(try !person(["status"], "laptop").err.contains("Since this device last looked"))

    // For scripts, one JSON line before the result, with the events' kinds.
    _ = try await story.run(["member", "add", "Bob"], "laptop")
    let scripted = try await keyctl(["member", "list"] + story.home("phone"))
    let lines = scripted.out.split(separator: "\n")
    #expect(lines.count == 2, "\(scripted.out)")
    let changes = try #require(try lastJSON(String(lines[0]))["changes"] as? [[String: Any]])
    #expect(changes.map { $0["kind"] as? String } == ["member.added"])
    #expect(changes.first?["by"] as? String == "laptop" && changes.first?["subject"] as? String == "Bob")
    #expect(try lastJSON(scripted.out)["members"] != nil)

    // `audit log`: every key event of the account, in order, in plain words.
    let log = try await person(["audit", "log"], "phone")
    #expect(log.code == 0, "\(log.err)")
    let expected = ["the account was created by laptop", "a recovery code was set by laptop", "device phone was added with the recovery code",
                    "member Alice was added by laptop", "the recovery code was replaced by laptop", "member Bob was added by laptop"]
    var rest = Substring(log.out)
    for line in expected {
        let found = try #require(rest.range(of: line), "\(line) missing or out of order in:\n\(log.out)")
        rest = rest[found.upperBound...]
    }
    let events = try await #require(try story.run(["audit", "log"], "phone")["events"] as? [[String: Any]])
    #expect(events.map { $0["kind"] as? String } == ["account.created", "recovery.set", "device.added", "member.added", "recovery.replaced", "keys.renewed", "member.renewed", "member.added"])
    // `audit` alone still checks everything.
    await #expect(try story.run(["audit"], "phone")["ok"] as? Bool == true)
}

@Test(.timeLimit(.minutes(10)))
func devicePassphraseSealsChangesAndRemovesThisDevicesPassphrase() async throws {
    let story = try await Story("passphrase")
    _ = try await story.run(["init", "--server", story.url, "--name", "laptop", "--recovery-file", story.path("code"), "--yes"], "laptop")
    let first = story.path("first"), second = story.path("second")
    try "correct horse battery\n".write(toFile: first, atomically: true, encoding: .utf8)
    try "staple and another one\n".write(toFile: second, atomically: true, encoding: .utf8)

    func run(_ arguments: [String], passphrase: String? = nil) async throws -> ProcessResult {
        try await keyctl(arguments + story.home("laptop"), environment: passphrase.map { ["KEYCTL_PASSPHRASE_FILE": $0] } ?? [:])
    }
    // Unsealed home: a new passphrase seals it.
    let sealed = try await run(["device", "passphrase", "--new-passphrase-file", first])
    #expect(sealed.code == 0, "\(sealed.err)")
    #expect(try lastJSON(sealed.out)["sealed"] as? Bool == true)
    #expect(try !String(contentsOfFile: story.path("laptop") + "/device.json", encoding: .utf8).contains("\"secrets\""))
    await #expect(try run(["status"]).code != 0, "a sealed home opened without its passphrase")
    await #expect(try run(["status"], passphrase: first).code == 0)

    // Changed: the old passphrase opens nothing, the new one does.
    let changed = try await run(["device", "passphrase", "--new-passphrase-file", second], passphrase: first)
    #expect(changed.code == 0, "\(changed.err)")
    await #expect(try run(["status"], passphrase: first).code != 0, "the old passphrase still opens the keys")
    await #expect(try run(["status"], passphrase: second).code == 0)
    // A wrong current passphrase changes nothing.
    await #expect(try run(["device", "passphrase", "--new-passphrase-file", first], passphrase: story.path("code")).code != 0)
    await #expect(try run(["status"], passphrase: second).code == 0)

    // Removed (asked for by name): the keys are stored unsealed again.
    let removed = try await run(["device", "passphrase", "--remove", "--yes"], passphrase: second)
    #expect(removed.code == 0, "\(removed.err)")
    await #expect(try run(["status"]).code == 0)
    // A too-short passphrase is refused and changes nothing.
    try "short\n".write(toFile: first, atomically: true, encoding: .utf8)
    await #expect(try run(["device", "passphrase", "--new-passphrase-file", first]).code != 0)
    await #expect(try run(["status"]).code == 0)
}

@Test(.timeLimit(.minutes(10)))
func aNewDeviceIsToldWhatChangedBetweenItsEnrollmentAndItsFirstCommand() async throws {
    let story = try await Story("notices-new")
    _ = try await story.laptopAndPhone()
    // The laptop did not add the phone (the code did): it is told on its next command.
    let laptop = try await keyctl(["status", "--home", story.path("laptop")])
    #expect(laptop.err.contains("device phone was added with the recovery code"), "\(laptop.err)")
    _ = try await story.run(["member", "add", "Alice"], "laptop")
    let first = try await keyctl(["status", "--home", story.path("phone")])
    #expect(first.err.contains("member Alice was added by laptop"), "\(first.err)")
}

/// A link signed with this device's key that this device did not append (its home was
/// copied) is told, flagged; what this device appended itself is not.
@Test(.timeLimit(.minutes(10)))
func aLinkSignedWithThisDevicesKeyFromACopyOfItsHomeIsTold() async throws {
    let story = try await Story("notices-copy")
    _ = try await story.laptopAndPhone()
    _ = try await story.run(["status"], "laptop")  // the laptop has looked: its record of its own links starts
    try FileManager.default.copyItem(atPath: story.path("laptop"), toPath: story.path("copy"))
    _ = try await story.run(["member", "add", "Own"], "laptop")
    _ = try await story.run(["member", "add", "Thief"], "copy")
    let told = try await keyctl(["status", "--home", story.path("laptop")])
    #expect(told.err.contains("member Thief was added by laptop"), "\(told.err)")
    #expect(told.err.contains("signed with THIS device's key"), "\(told.err)")
    #expect(!told.err.contains("member Own was added"), "\(told.err)")
}
