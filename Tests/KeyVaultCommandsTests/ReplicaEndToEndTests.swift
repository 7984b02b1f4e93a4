import Foundation
import KeyVaultPostgres
import KeyVaultTestSupport
import Testing

/// The PostgreSQL of this run (`bash Scripts/with-postgres.sh swift test`), if any.
private let postgres: String? = {
    guard let text = ProcessInfo.processInfo.environment["KEYVAULT_TEST_DATABASE_URL"], !text.isEmpty else { return nil }
    return text
}()

/// `url` with its database replaced by `name`.
private func databaseURL(_ url: String, named name: String) throws -> String {
    var components = try #require(URLComponents(string: url))
    components.path = "/" + name
    return try #require(components.string)
}

/// Issue 10: three `keyctl serve` processes on one PostgreSQL, given one secret file,
/// with devices spread across them: the story of the client end-to-end test, master
/// rotations from devices on different replicas at once ending on one chain, a device
/// revoked through one replica refused by another, and a replica killed with SIGKILL
/// in the middle of a rotation leaving the account consistent (`keyctl audit` exit 0
/// on every device, every attachment opening).
@Test(.enabled(if: postgres != nil, "needs KEYVAULT_TEST_DATABASE_URL (bash Scripts/with-postgres.sh swift test)"),
      .timeLimit(.minutes(5)))
func threeReplicasOnOnePostgreSQLServeOneAccountConsistently() async throws {
    let base = try #require(postgres)
    try await PostgresKeyVaultDatabase.withEmptyDatabase(try PostgresURL(base)) { name in
        let database = try databaseURL(base, named: name)
        let homes = try TemporaryDirectory("kv-replicas")
        let secret = ["--secret-file", homes.path("server-secret")]
        var replicas = try (0..<3).map { _ in try RunningServer(arguments: secret, database: database) }
        func path(_ name: String) -> String { homes.path(name) }
        func home(_ device: String) -> [String] { ["--home", path(device), "--json"] }
        func run(_ arguments: [String], _ device: String, input: String = "", sourceLocation: SourceLocation = #_sourceLocation) throws -> [String: Any] {
            let result = try keyctl(arguments + home(device), input: Data(input.utf8))
            #expect(result.code == 0, "keyctl \(arguments.joined(separator: " ")) as \(device): \(result.err)", sourceLocation: sourceLocation)
            return result.code == 0 ? try lastJSON(result.out) : [:]
        }

        // The laptop talks to replica 0, the phone to 1, the tablet to 2.
        let account = try #require(try run(["init", "--server", replicas[0].url, "--name", "laptop", "--recovery-file", path("code"), "--yes"],
                                             "laptop")["account"] as? String)
        let code = try String(contentsOfFile: path("code"), encoding: .utf8)
        _ = try run(["member", "add", "Alice"], "laptop")
        let scan = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 3) })
        try scan.write(to: URL(fileURLWithPath: path("scan.pdf")))
        let address = try #require(try run(["attachment", "put", "--member", "Alice", path("scan.pdf")], "laptop")["address"] as? String)
        for (device, replica) in [("phone", 1), ("tablet", 2)] {
            _ = try run(["device", "enroll", "--server", replicas[replica].url, "--account", account, "--name", device], device, input: code)
            _ = try run(["attachment", "get", "--member", "Alice", address, "-o", path("\(device).pdf")], device)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path("\(device).pdf"))) == scan)
        }

        // Master rotations from all three replicas at once: each lands, on one chain.
        let codes = try await withThrowingTaskGroup(of: Int32.self) { group in
            for device in ["laptop", "phone", "tablet"] {
                group.addTask { try keyctl(["master", "rotate"] + home(device)).code }
            }
            return try await group.reduce(into: [Int32]()) { $0.append($1) }
        }
        #expect(codes == [0, 0, 0])
        let heads = try ["laptop", "phone", "tablet"].map { try run(["status"], $0)["head"] as? String }
        #expect(Set(heads).count == 1 && heads[0] != nil)
        #expect(try run(["status"], "tablet")["masterGeneration"] as? Int == 4)

        // The tablet, revoked through replica 0, is refused by replica 2 on its next request.
        let devices = try #require(try run(["device", "list"], "laptop")["devices"] as? [[String: Any]])
        let tabletID = try #require(devices.first { $0["name"] as? String == "tablet" }?["id"] as? String)
        _ = try run(["device", "revoke", tabletID, "--yes"], "laptop")
        let refused = try keyctl(["attachment", "list", "--member", "Alice"] + home("tablet"))
        #expect(refused.code == 4 && refused.err.contains("revoked"), "\(refused)")

        // Replica 1 is killed while the phone rotates through it, then restarted on its port.
        for round in 0..<3 {
            let rotation = try BackgroundKeyctl(["master", "rotate"] + home("phone"))
            try await Task.sleep(for: .milliseconds(Int.random(in: 20...400)))
            #expect(replicas[1].stop(SIGKILL) == SIGKILL, "round \(round)")
            _ = rotation.finish()  // it may have landed or not; either way nothing is half done
            replicas[1] = try RunningServer(arguments: secret, database: database, port: replicas[1].port)
            for device in ["laptop", "phone"] {
                let audit = try keyctl(["audit"] + home(device))
                #expect(audit.code == 0, "round \(round), \(device): \(audit.out) \(audit.err)")
            }
        }
        _ = try run(["master", "rotate"], "phone")
        for device in ["laptop", "phone"] {
            #expect(try run(["audit"], device)["ok"] as? Bool == true)
            _ = try run(["attachment", "get", "--member", "Alice", address, "-o", path("\(device)-after.pdf")], device)
            #expect(try Data(contentsOf: URL(fileURLWithPath: path("\(device)-after.pdf"))) == scan)
        }
        #expect(try run(["status"], "laptop")["head"] as? String == (try run(["status"], "phone")["head"] as? String))
        for replica in replicas { #expect(replica.stop() == 0) }
    }
}
