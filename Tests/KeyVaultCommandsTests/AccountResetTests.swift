import Foundation
import KeyVault
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCommands

// Issue 22, item 3: `keyctl account reset` wipes the account's members, keys and
// attachments on the server in one link, makes a new master key and recovery code,
// and keeps this device; every other device and the old code open nothing
// afterwards, and are told so.

@Test(.timeLimit(.minutes(10)))
func aResetKeepsThisDeviceAloneWithANewCodeAndNothingElseOpens() async throws {
    let story = try await Story("reset")
    let account = try await story.laptopAndPhone()
    let oldCode = try String(contentsOfFile: story.path("code"), encoding: .utf8)
    _ = try await story.run(["member", "add", "Emma"], "laptop")
    try Data("x-ray".utf8).write(to: URL(fileURLWithPath: story.path("x-ray.png")))
    _ = try await story.run(["attachment", "put", "--member", "Emma", story.path("x-ray.png")], "laptop")
    let before = try await #require(try story.run(["status"], "laptop")["masterGeneration"] as? Int)

    // Asked first; refused, nothing changes.
    let refused = try await keyctl(["account", "reset", "--recovery-file", story.path("new-code"), "--home", story.path("laptop")], input: Data("n\n".utf8))
    #expect(refused.code != 0 && !FileManager.default.fileExists(atPath: story.path("new-code")))
    await #expect(try story.run(["status"], "phone")["masterGeneration"] as? Int == before)

    let reset = try await story.run(["account", "reset", "--recovery-file", story.path("new-code"), "--yes"], "laptop")
    #expect(reset["account"] as? String == account)
    #expect(reset["revokedDevices"] as? Int == 1 && reset["removedMembers"] as? Int == 1)
    #expect((reset["masterGeneration"] as? Int ?? 0) > before)
    let newCode = try String(contentsOfFile: story.path("new-code"), encoding: .utf8)
    #expect(newCode != oldCode)

    // This device goes on, alone, with nothing in it.
    let status = try await story.run(["status"], "laptop")
    #expect((status["activeDevices"] as? [[String: Any]])?.count == 1 && (status["members"] as? [Any])?.isEmpty == true)
    await #expect(try story.run(["audit"], "laptop")["ok"] as? Bool == true)
    // The other device is refused, and told why and what to do.
    let phone = try await keyctl(["status", "--home", story.path("phone")])
    #expect(phone.code == 4, "\(phone.err)")
    #expect(phone.err.contains("revoked") && phone.err.contains("reset"), "\(phone.err)")
    // The old code enrolls nothing; the new one does, and that device sees the reset account.
    let old = try await keyctl(["device", "enroll", "--server", story.url, "--account", account, "--name", "old"] + story.home("old"), input: Data(oldCode.utf8))
    #expect(old.code != 0, "the old code still enrolls")
    _ = try await story.run(["device", "enroll", "--server", story.url, "--account", account, "--name", "tablet"], "tablet", input: newCode)
    await #expect(try story.run(["audit"], "tablet")["ok"] as? Bool == true)
    let log = try await keyctl(["audit", "log", "--home", story.path("tablet")])
    #expect(log.out.contains("the account was reset by laptop"), "\(log.out)")
    // And the account works as a new one: a member, an attachment, on both devices.
    _ = try await story.run(["member", "add", "Noah"], "tablet")
    _ = try await story.run(["attachment", "put", "--member", "Noah", story.path("x-ray.png")], "laptop")
    _ = try await story.run(["attachment", "get", "--member", "Noah", "x-ray.png", "-o", story.path("copy.png")], "tablet")
    #expect(try Data(contentsOf: URL(fileURLWithPath: story.path("copy.png"))) == Data("x-ray".utf8))
}

/// The real transport, failing the append of an `account.reset`: before the server
/// sees it (`afterServer` false), or after it took it, the answer lost on the way.
private struct LosingResetTransport: HTTPTransport {
    let inner: any HTTPTransport
    let afterServer: Bool
    func send(_ request: HTTPExchange) async throws -> HTTPReply {
        guard request.method == "POST", request.target.hasSuffix("/chain"), String(decoding: request.body, as: UTF8.self).contains("account.reset") else {
            return try await inner.send(request)
        }
        if afterServer { _ = try await inner.send(request) }
        throw KeyVaultError(.network, "the connection was cut")
    }
}

@Test(.timeLimit(.minutes(10)))
func aResetWhoseAnswerIsLostSaysWhetherItHappenedAndKeepsOnlyACodeThatWasSet() async throws {
    let story = try await Story("reset-lost")
    _ = try await story.laptopAndPhone()
    func reset(afterServer: Bool, file: String) async -> (code: Int32, out: String, err: String) {
        await KeyctlMain.$transport.withValue({ server in
            LosingResetTransport(inner: keyctlTransport(server), afterServer: afterServer)
        }) { await runKeyctl(["account", "reset", "--recovery-file", story.path(file), "--yes", "--home", story.path("laptop")]) }
    }
    // Cut before the server saw it: not reset, the code file gone, and said so.
    let failed = await reset(afterServer: false, file: "never-set")
    #expect(failed.code != 0 && failed.err.contains("was not reset") && failed.err.contains("never set"), "\(failed.err)")
    #expect(!FileManager.default.fileExists(atPath: story.path("never-set")))
    await #expect(try story.run(["status"], "phone")["account"] != nil, "the phone was revoked by a reset that did not happen")
    // Taken, its answer lost: reset, and the code kept.
    let lost = await reset(afterServer: true, file: "set")
    #expect(lost.code == 0 && lost.out.contains("was reset"), "\(lost.err)")
    #expect(FileManager.default.fileExists(atPath: story.path("set")))
    #expect(try await keyctl(["status", "--home", story.path("phone")]).code == 4)
    // The reset this device made is its own: no alarm of a copy of its keys on its next command.
    let next = try await keyctl(["status", "--home", story.path("laptop")])
    #expect(next.code == 0 && !next.err.contains("THIS device's key"), "\(next.err)")
}
