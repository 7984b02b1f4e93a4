import Foundation
import KeyVaultCrypto
import KeyVaultTestSupport
import Testing

/// The last JSON line a command printed.
func lastJSON(_ output: String) throws -> [String: Any] {
    let line = try #require(output.split(separator: "\n").last, "no output")
    return try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "not JSON: \(line)")
}

/// A `keyctl` running in the background (`device link`, `device approve`, `contact add`,
/// `master rotate`): its standard output read a line at a time, its standard input
/// written on demand; driven by one task at a time.
final class BackgroundKeyctl: @unchecked Sendable {
    let process = Process()
    let stdout = Pipe(), stderr = Pipe(), stdin = Pipe()
    private var buffered = ""

    init(_ arguments: [String]) throws {
        process.executableURL = BuiltProducts.keyctl
        process.arguments = arguments
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = stdin
        try process.run()
    }

    /// The next JSON line of standard output, waited for at most 30 s on a thread of
    /// its own (none of the shared pool's, where the in-process tasks beside it run).
    func nextJSON() async throws -> [String: Any] {
        try lastJSON(await onThreadOfItsOwn { nextLine(from: self.stdout.fileHandleForReading, buffer: &self.buffered, within: 30) ?? "" })
    }

    /// Types a line, as a person would, and closes standard input.
    func type(_ line: String) {
        stdin.fileHandleForWriting.write(Data((line + "\n").utf8))
        try? stdin.fileHandleForWriting.close()
    }

    /// Closes standard input and waits for the exit and all the output (Process.outputAndExit).
    func finish() async -> (code: Int32, out: String, err: String) {
        try? stdin.fileHandleForWriting.close()
        let (out, err) = await process.outputAndExit(out: stdout.fileHandleForReading, err: stderr.fileHandleForReading)
        return (process.terminationStatus, buffered + String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
    }
}

/// The whole story of issue 4 with the real binaries: a real `keyctl serve` on a free
/// port, and device homes driven through init, members, attachments, enrollment by
/// recovery code and by link, revocation, rotations, audit and account deletion.
@Test(.timeLimit(.minutes(10)))
func realBinariesTellTheWholeStory() async throws {
    let story = try await Story("story")
    let server = story.server, url = story.url
    func home(_ name: String) -> [String] { story.home(name) }
    func path(_ name: String) -> String { story.path(name) }
    func run(_ arguments: [String], _ device: String, input: String = "", expect: Int32 = 0,
             sourceLocation: SourceLocation = #_sourceLocation) async throws -> [String: Any] {
        try await story.run(arguments, device, input: input, expect: expect, sourceLocation: sourceLocation)
    }

    // Init: the account and its first device; the code goes to a 0600 file.
    let created = try await run(["init", "--server", url, "--name", "laptop", "--recovery-file", path("code1"), "--yes"], "laptop")
    let account = try #require(created["account"] as? String)
    #expect(account.count == 32)
    let attributes = try FileManager.default.attributesOfItem(atPath: path("laptop"))
    #expect((attributes[.posixPermissions] as? Int) == 0o700)
    #expect((try FileManager.default.attributesOfItem(atPath: path("laptop") + "/device.json")[.posixPermissions] as? Int) == 0o600)
    #expect((try FileManager.default.attributesOfItem(atPath: path("code1"))[.posixPermissions] as? Int) == 0o600)
    let code1 = try String(contentsOfFile: path("code1"), encoding: .utf8)
    #expect(code1.split(separator: " ").count == 24)
    #expect(!(try String(contentsOfFile: path("laptop") + "/device.json", encoding: .utf8)).contains(code1.split(separator: " ")[0] + " "))

    // A member and an attachment, stored once.
    let member = try await run(["member", "add", "Alice"], "laptop")
    #expect(member["name"] as? String == "Alice" && member["generation"] as? Int == 1)
    let scan = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
    try scan.write(to: URL(fileURLWithPath: path("scan.pdf")))
    let put = try await run(["attachment", "put", "--member", "Alice", path("scan.pdf")], "laptop")
    let address = try #require(put["address"] as? String)
    #expect(address.hasPrefix("ca1.1.") && put["existed"] as? Bool == false)
    await #expect(try run(["attachment", "put", "--member", "Alice", path("scan.pdf")], "laptop")["existed"] as? Bool == true)
    await #expect(try run(["attachment", "address", "--member", "Alice", path("scan.pdf")], "laptop")["address"] as? String == address)

    // Enrollment by recovery code: the phone opens what was put before it joined.
    _ = try await run(["device", "enroll", "--server", url, "--account", account, "--name", "phone"], "phone", input: code1)
    _ = try await run(["attachment", "get", "--member", "Alice", address, "-o", path("phone.pdf")], "phone")
    #expect(try Data(contentsOf: URL(fileURLWithPath: path("phone.pdf"))) == scan)

    // Link: the approver types the digits the new device shows. Wrong digits refuse the
    // request and add nothing (both sides exit 1); the right ones add the tablet.
    func link(_ name: String, typing: (String) -> String) async throws -> (newDevice: BackgroundKeyctl, approver: BackgroundKeyctl) {
        let newDevice = try BackgroundKeyctl(["device", "link", "--server", url, "--account", account, "--name", "tablet", "--poll", "0.1"] + home(name))
        let code = try #require(try await newDevice.nextJSON()["code"] as? String)
        let approver = try BackgroundKeyctl(["device", "approve", code, "--poll", "0.1"] + home("laptop"))
        let sas = try #require(try await newDevice.nextJSON()["sas"] as? String)
        #expect(sas.count == 7)
        approver.type(typing(sas))
        return (newDevice, approver)
    }
    let impostor = try await link("impostor") { $0 == "000 000" ? "000 001" : "000 000" }
    let refusedApproval = await impostor.approver.finish()
    #expect(refusedApproval.code == 1 && refusedApproval.err.contains("does not match"), "\(refusedApproval.err)")
    #expect(await impostor.newDevice.finish().code == 1)
    let tablet = try await link("tablet") { $0 }
    let approval = await tablet.approver.finish()
    #expect(approval.code == 0, "\(approval.err)")
    #expect(try lastJSON(approval.out)["approved"] as? Bool == true)
    // Then the person types on the new device the code the approver shows (version 4).
    let confirmation = try #require(try lastJSON(approval.out)["confirmation"] as? String)
    #expect(try await tablet.newDevice.nextJSON()["confirm"] as? Int == 1)
    tablet.newDevice.type(confirmation)
    let linked = await tablet.newDevice.finish()
    #expect(linked.code == 0, "\(linked.err)")
    #expect(try lastJSON(linked.out)["status"] as? String == "approved")
    // It names the device that added it.
    #expect((try lastJSON(linked.out)["approvedBy"] as? [String: Any])?["name"] as? String == "laptop", "\(linked.out)")
    _ = try await run(["attachment", "get", "--member", "Alice", address, "-o", path("tablet.pdf")], "tablet")
    #expect(try Data(contentsOf: URL(fileURLWithPath: path("tablet.pdf"))) == scan)
    let devices = try await #require(try run(["device", "list"], "tablet")["devices"] as? [[String: Any]])
    #expect(devices.compactMap { $0["name"] as? String } == ["laptop", "phone", "tablet"])

    // Revoke the phone: its very next request is refused (exit 4), and every key moved on.
    let phoneID = try #require(devices.first { $0["name"] as? String == "phone" }?["id"] as? String)
    let revoked = try await run(["device", "revoke", phoneID, "--yes"], "laptop")
    #expect(revoked["masterGeneration"] as? Int == 2)
    #expect((revoked["members"] as? [[String: Any]])?.first?["generation"] as? Int == 2)
    let refused = try await keyctl(["attachment", "list", "--member", "Alice"] + home("phone"))
    #expect(refused.code == 4 && refused.err.contains("revoked"), "\(refused)")
    let phoneFile = try String(contentsOfFile: path("phone") + "/device.json", encoding: .utf8)
    #expect(phoneFile.contains(#""1" : "#) && !phoneFile.contains(#""2" : "#), "the phone never received generation 2")

    // Rotations: a member key, then re-wrapping its attachments (resumable: the second run has nothing to do).
    await #expect(try run(["member", "rotate", "Alice"], "tablet")["generation"] as? Int == 3)
    await #expect(try run(["attachment", "rewrap", "--member", "Alice"], "tablet")["rewrapped"] as? Int == 1)
    await #expect(try run(["attachment", "rewrap", "--member", "Alice"], "tablet")["rewrapped"] as? Int == 0)
    _ = try await run(["attachment", "get", "--member", "Alice", address, "-o", path("laptop2.pdf")], "laptop")
    #expect(try Data(contentsOf: URL(fileURLWithPath: path("laptop2.pdf"))) == scan)

    // Two devices rotating the master key at the same time both land, one after the other.
    let both = try await withThrowingTaskGroup(of: Int32.self) { group in
        for device in ["laptop", "tablet"] {
            group.addTask { try await keyctl(["master", "rotate"] + home(device)).code }
        }
        return try await group.reduce(into: [Int32]()) { $0.append($1) }
    }
    #expect(both == [0, 0])
    let status = try await run(["status"], "laptop")
    #expect(status["masterGeneration"] as? Int == 4)
    await #expect(try run(["status"], "tablet")["head"] as? String == status["head"] as? String)

    // Recovery rotation: the old code enrolls nothing, the new one does.
    _ = try await run(["recovery", "rotate", "--recovery-file", path("code2"), "--yes"], "tablet")
    let code2 = try String(contentsOfFile: path("code2"), encoding: .utf8)
    let old = try await keyctl(["device", "enroll", "--server", url, "--account", account, "--name", "old"] + home("old"), input: Data(code1.utf8))
    #expect(old.code == 1 && old.err.contains("does not open"), "\(old)")
    _ = try await run(["device", "enroll", "--server", url, "--account", account, "--name", "desktop"], "desktop", input: code2)
    _ = try await run(["attachment", "get", "--member", "Alice", address, "-o", path("desktop.pdf")], "desktop")
    #expect(try Data(contentsOf: URL(fileURLWithPath: path("desktop.pdf"))) == scan)

    // The audit checks out everywhere.
    for device in ["laptop", "tablet", "desktop"] {
        let audit = try await run(["audit"], device)
        #expect(audit["ok"] as? Bool == true, "\(audit)")
    }

    // Account deletion: everything goes; the other devices are refused.
    await #expect(try run(["account", "delete", "--yes"], "laptop")["deleted"] as? String == account)
    let gone = try await keyctl(["status"] + home("tablet"))
    #expect(gone.code == 3, "\(gone)")
    #expect(await server.stop() == 0)
}
