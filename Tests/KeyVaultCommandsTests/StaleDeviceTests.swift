import Foundation
import KeyVault
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCommands

// Issue 22, item 4: devices not seen for a while are shown with dates, warned about
// by `status`, and revoked together by `device prune`, listed first.

/// The real transport, saying a device was last seen `daysAgo` days ago (the server's
/// word is all keyctl has; this plays a server whose clock saw it then).
private struct AgingTransport: HTTPTransport {
    let inner: any HTTPTransport
    let device: String
    let daysAgo: Int
    func send(_ request: HTTPExchange) async throws -> HTTPReply {
        var reply = try await inner.send(request)
        guard request.method == "GET", request.target.split(separator: "?")[0].hasSuffix("/devices"), reply.status == 200,
              var object = try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any],
              var devices = object["devices"] as? [[String: Any]] else { return reply }
        for index in devices.indices where devices[index]["id"] as? String == device {
            devices[index]["lastSeen"] = Int(Date().timeIntervalSince1970) - daysAgo * 86_400
        }
        object["devices"] = devices
        reply.body = [UInt8](try JSONSerialization.data(withJSONObject: object))
        return reply
    }
}

@Test(.timeLimit(.minutes(10)))
func devicesUnseenForAWhileAreShownWarnedAboutAndPrunedTogether() async throws {
    let story = try await Story("stale")
    let created = try await story.run(["init", "--server", story.url, "--name", "laptop", "--recovery-file", story.path("code"), "--yes"], "laptop")
    let account = try #require(created["account"] as? String)
    let code = try String(contentsOfFile: story.path("code"), encoding: .utf8)
    _ = try await story.run(["device", "enroll", "--server", story.url, "--account", account, "--name", "old phone"], "phone", input: code)
    _ = try await story.run(["device", "enroll", "--server", story.url, "--account", account, "--name", "tablet"], "tablet", input: code)
    let devices = try await #require(try story.run(["device", "list"], "laptop")["devices"] as? [[String: Any]])
    let phone = try #require(devices.first { $0["name"] as? String == "old phone" }?["id"] as? String)
    // Added at a time the chain says, today.
    let addedAt = try #require(devices.first { $0["name"] as? String == "old phone" }?["addedAt"] as? Int)
    #expect(abs(addedAt - Int(Date().timeIntervalSince1970)) < 300)

    func laptop(_ arguments: [String], input: String = "") async -> (code: Int32, out: String, err: String) {
        await KeyctlMain.$transport.withValue({ server in
            AgingTransport(inner: keyctlTransport(server), device: phone, daysAgo: 120)
        }) { await runKeyctl(arguments + ["--home", story.path("laptop")], input: input) }
    }
    // `device list` shows dates; `status` warns and names the command.
    let listed = await laptop(["device", "list"])
    #expect(listed.out.contains("old phone  added \(StaleDevices.day(Date()))"), "\(listed.out)")
    let status = await laptop(["status"])
    #expect(status.code == 0 && status.out.contains("unseen for 90 days or more: old phone") && status.out.contains("keyctl device prune --unseen-for 90d"),
            "\(status.out)")
    #expect(!status.out.contains("tablet ("), "a device seen today was warned about")

    // Nothing unseen for 200 days; 90 days: the phone alone, listed, then revoked in one rotation.
    let none = await laptop(["device", "prune", "--unseen-for", "200d", "--yes"])
    #expect(none.code == 0 && none.out.contains("No device"), "\(none.out)")
    let refused = await laptop(["device", "prune", "--unseen-for", "90d"], input: "n\n")
    #expect(refused.code != 0)
    // With --yes the list is still printed: what goes on the server's word is on record.
    let pruned = await laptop(["device", "prune", "--unseen-for", "90d", "--yes"])
    #expect(pruned.code == 0, "\(pruned.err)")
    #expect(pruned.err.contains("Unseen for 90 days or more") && pruned.err.contains("old phone ("), "\(pruned.err)")
    #expect(pruned.out.contains("Revoked old phone"), "\(pruned.out)")
    let after = try await #require(try story.run(["device", "list"], "laptop")["devices"] as? [[String: Any]])
    #expect(after.first { $0["id"] as? String == phone }?["status"] as? String == "revoked")
    #expect(after.first { $0["name"] as? String == "tablet" }?["status"] as? String == "active")
    await #expect(try story.run(["status"], "laptop")["masterGeneration"] as? Int == 2)
}
