import Foundation
import KeyVaultTestSupport
import Testing

/// Rounds of the crash test: 10 in the suite, more with KEYVAULT_CRASH_ROUNDS (the long
/// mode, `KEYVAULT_CRASH_ROUNDS=100 swift test --filter aServerKilledAtRandom`).
private let rounds = ProcessInfo.processInfo.environment["KEYVAULT_CRASH_ROUNDS"].flatMap(Int.init) ?? 10

/// Issue 11: real devices (`keyctl` processes) rotate, upload, enroll and revoke against
/// a real `keyctl serve` on SQLite, which is killed with SIGKILL at a random moment of
/// each round and restarted on the same database and port. After every round each
/// active device's audit passes (exit 0) and the newest attachment opens on every one
/// of them; at the end every attachment opens on every active device.
@Test(.timeLimit(.minutes(20)))
func aServerKilledAtRandomUnderLoadLeavesEveryAccountConsistent() async throws {
    let homes = try DeviceHomes("kv-crash")
    let first = try await RunningServer()
    let port = first.port, url = first.url
    var server = first
    let account = try await #require(try homes.run(["init", "--server", url, "--name", "laptop", "--recovery-file", homes.path("code"), "--yes"],
                                         "laptop")["account"] as? String)
    let code = try String(contentsOfFile: homes.path("code"), encoding: .utf8)
    _ = try await homes.run(["member", "add", "Alice"], "laptop")
    for device in ["phone", "tablet"] {
        _ = try await homes.run(["device", "enroll", "--server", url, "--account", account, "--name", device], device, input: code)
    }
    var active = ["laptop", "phone", "tablet"]
    var extra: String?  // a device enrolled in one round and revoked in a later one
    var killedWhileBusy = 0

    for round in 0..<rounds {
        let file = homes.path("scan-\(round)")
        try Data((0..<20_000).map { UInt8(truncatingIfNeeded: $0 &* (round + 7)) }).write(to: URL(fileURLWithPath: file))
        var work = [BackgroundKeyctl]()
        work.append(try BackgroundKeyctl(["master", "rotate"] + homes.home("laptop")))
        work.append(try BackgroundKeyctl(["attachment", "put", "--member", "Alice", file] + homes.home("phone")))
        work.append(try BackgroundKeyctl(["member", "rotate", "Alice"] + homes.home("tablet")))
        let newcomer = "extra-\(round)"
        if round % 3 == 0 {
            let enroll = try BackgroundKeyctl(["device", "enroll", "--server", url, "--account", account, "--name", newcomer] + homes.home(newcomer))
            enroll.type(code)
            work.append(enroll)
        }
        try await Task.sleep(for: .milliseconds(Int.random(in: 30...600)))
        if work.contains(where: { $0.process.isRunning }) { killedWhileBusy += 1 }
        #expect(await server.stop(SIGKILL) == SIGKILL)
        for process in work { _ = await process.finish() }
        server = try await RunningServer(directory: first.directory, port: port)

        // An enrollment cut off by the kill is run again: it finishes with the device it added, or adds it now.
        if round % 3 == 0 {
            if try await keyctl(["status"] + homes.home(newcomer)).code != 0 {
                _ = try await homes.run(["device", "enroll", "--server", url, "--account", account, "--name", newcomer], newcomer, input: code)
            }
            if let previous = extra {
                let devices = try await #require(try homes.run(["device", "list"], "laptop")["devices"] as? [[String: Any]])
                let id = try #require(devices.first { $0["name"] as? String == previous }?["id"] as? String)
                _ = try await homes.run(["device", "revoke", id, "--yes"], "laptop")
                active.removeAll { $0 == previous }
                let refused = try await keyctl(["status"] + homes.home(previous))
                #expect(refused.code == 4, "round \(round): the revoked \(previous) was not refused: \(refused.err)")
            }
            extra = newcomer
            active.append(newcomer)
        }
        for device in active {
            let audit = try await keyctl(["audit"] + homes.home(device))
            #expect(audit.code == 0, "round \(round), \(device): \(audit.out) \(audit.err)")
        }
        let listed = try await #require(try homes.run(["attachment", "list", "--member", "Alice"], "laptop")["attachments"] as? [[String: Any]])
        let byTime = listed.sorted { ($0["created"] as? Int ?? 0) < ($1["created"] as? Int ?? 0) }
        if let newest = byTime.last?["address"] as? String {
            for device in active {
                _ = try await homes.run(["attachment", "get", "--member", "Alice", newest, "-o", homes.path("out-\(device)")], device)
            }
        }
    }
    let listed = try await #require(try homes.run(["attachment", "list", "--member", "Alice"], "laptop")["attachments"] as? [[String: Any]])
    for address in listed.compactMap({ $0["address"] as? String }) {
        for device in active {
            _ = try await homes.run(["attachment", "get", "--member", "Alice", address, "-o", homes.path("out-\(device)")], device)
        }
    }
    // The figures of this run (docs/evidence.md has the long mode's).
    print("crash test: \(rounds) rounds, killed while busy \(killedWhileBusy) times, \(listed.count) attachments, \(active.count) active devices")
    #expect(await server.stop() == 0)
}
