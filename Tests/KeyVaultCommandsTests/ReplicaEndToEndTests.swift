import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultPostgres
import KeyVaultProtocol
import KeyVaultTestSupport
import Testing

/// Sends `method path` with `headers` to a replica; returns the status and body.
private func send(_ replica: RunningServer, _ method: String, _ path: String, headers: [(String, String)],
                  body: [UInt8] = []) async throws -> (Int, Data) {
    var request = URLRequest(url: URL(string: replica.url + path)!)
    request.httpMethod = method
    request.httpBody = body.isEmpty ? nil : Data(body)
    for (name, value) in headers { request.setValue(value, forHTTPHeaderField: name) }
    let (data, response) = try await URLSession.shared.data(for: request)
    return ((response as! HTTPURLResponse).statusCode, data)
}

/// The PostgreSQL of this run (`bash Scripts/with-postgres.sh swift test`), if any.
let postgres: String? = {
    guard let text = ProcessInfo.processInfo.environment["KEYVAULT_TEST_DATABASE_URL"], !text.isEmpty else { return nil }
    return text
}()

/// `url` with its database replaced by `name`.
func databaseURL(_ url: String, named name: String) throws -> String {
    var components = try #require(URLComponents(string: url))
    components.path = "/" + name
    return try #require(components.string)
}

/// Issue 10: three `keyctl serve` processes on one PostgreSQL, given one secret file,
/// with devices spread across them: a signed request replayed to another replica and a
/// session opened on one and used on another, the story of the client end-to-end test, master
/// rotations from devices on different replicas at once ending on one chain, a device
/// revoked through one replica refused by another, and a replica killed with SIGKILL
/// in the middle of a rotation leaving the account consistent (`keyctl audit` exit 0
/// on every device, every attachment opening).
@Test(.enabled(if: postgres != nil, "needs KEYVAULT_TEST_DATABASE_URL (bash Scripts/with-postgres.sh swift test)"),
      .timeLimit(.minutes(10)))
func threeReplicasOnOnePostgreSQLServeOneAccountConsistently() async throws {
    let base = try #require(postgres)
    try await PostgresKeyVaultDatabase.withEmptyDatabase(try PostgresURL(base)) { name in
        let database = try databaseURL(base, named: name)
        let homes = try DeviceHomes("kv-replicas")
        let secret = ["--secret-file", homes.path("server-secret")]
        var replicas = [RunningServer]()
        for _ in 0..<3 { replicas.append(try await RunningServer(arguments: secret, database: database)) }

        // A device of another account, by hand: a request signed for one replica and
        // replayed to another is refused; a session opened on one is honoured by another.
        let signing = Ed25519.PrivateKey(), boxKey = X25519.PrivateKey()
        let genesis = ChainLink.genesis(signingKey: signing, boxKey: boxKey.publicKey, name: "probe", time: 1_700_000_000)
        let probe = deviceID(for: signing.publicKey), chain = "/v1/accounts/\(genesis.accountID)/chain"
        #expect(try await send(replicas[0], "POST", "/v1/accounts", headers: [("Content-Type", "application/json")],
                               body: Array(JSONEncoder().encode(CreateAccountRequest(genesis: genesis, boxes: [], recovery: nil)))).0 == 201)
        let signed = RequestSignature.headers(method: "GET", path: chain, query: "", body: [], device: probe, key: signing,
                                              timestamp: Int64(Date().timeIntervalSince1970))
        #expect(try await send(replicas[1], "GET", chain, headers: signed).0 == 200)
        let replayed = try await send(replicas[2], "GET", chain, headers: signed)
        #expect(replayed.0 == 401 && String(decoding: replayed.1, as: UTF8.self).contains("replayed_nonce"))
        let sessions = "/v1/accounts/\(genesis.accountID)/sessions"
        let opened = try await send(replicas[0], "POST", sessions, headers: RequestSignature.headers(
            method: "POST", path: sessions, query: "", body: [], device: probe, key: signing, timestamp: Int64(Date().timeIntervalSince1970)))
        let grant = try JSONDecoder().decode(SessionGrant.self, from: opened.1)
        let macHeaders = try RequestMAC.headers(method: "GET", path: chain, query: "", body: [], session: grant.session,
                                                key: try grant.key(using: boxKey), timestamp: Int64(Date().timeIntervalSince1970))
        #expect(try await send(replicas[2], "GET", chain, headers: macHeaders).0 == 200)
        #expect(try await send(replicas[1], "GET", chain, headers: macHeaders).0 == 401)  // and once only

        // The laptop talks to replica 0, the phone to 1, the tablet to 2.
        let account = try await #require(try homes.run(["init", "--server", replicas[0].url, "--name", "laptop", "--recovery-file", homes.path("code"), "--yes"],
                                             "laptop")["account"] as? String)
        let code = try String(contentsOfFile: homes.path("code"), encoding: .utf8)
        _ = try await homes.run(["member", "add", "Alice"], "laptop")
        let scan = Data((0..<50_000).map { UInt8(truncatingIfNeeded: $0 &* 29 &+ 3) })
        try scan.write(to: URL(fileURLWithPath: homes.path("scan.pdf")))
        let address = try await #require(try homes.run(["attachment", "put", "--member", "Alice", homes.path("scan.pdf")], "laptop")["address"] as? String)
        for (device, replica) in [("phone", 1), ("tablet", 2)] {
            _ = try await homes.run(["device", "enroll", "--server", replicas[replica].url, "--account", account, "--name", device], device, input: code)
            _ = try await homes.run(["attachment", "get", "--member", "Alice", address, "-o", homes.path("\(device).pdf")], device)
            #expect(try Data(contentsOf: URL(fileURLWithPath: homes.path("\(device).pdf"))) == scan)
        }

        // Master rotations from all three replicas at once: each lands, on one chain.
        let codes = try await withThrowingTaskGroup(of: Int32.self) { group in
            for device in ["laptop", "phone", "tablet"] {
                group.addTask { try await keyctl(["master", "rotate"] + homes.home(device)).code }
            }
            return try await group.reduce(into: [Int32]()) { $0.append($1) }
        }
        #expect(codes == [0, 0, 0])
        var heads = [String?]()
        for device in ["laptop", "phone", "tablet"] { heads.append(try await homes.run(["status"], device)["head"] as? String) }
        #expect(Set(heads).count == 1 && heads[0] != nil)
        await #expect(try homes.run(["status"], "tablet")["masterGeneration"] as? Int == 4)

        // The tablet, revoked through replica 0, is refused by replica 2 on its next request.
        let devices = try await #require(try homes.run(["device", "list"], "laptop")["devices"] as? [[String: Any]])
        let tabletID = try #require(devices.first { $0["name"] as? String == "tablet" }?["id"] as? String)
        _ = try await homes.run(["device", "revoke", tabletID, "--yes"], "laptop")
        let refused = try await keyctl(["attachment", "list", "--member", "Alice"] + homes.home("tablet"))
        #expect(refused.code == 4 && refused.err.contains("revoked"), "\(refused)")

        // Replica 1 is killed while the phone rotates through it, then restarted on its port.
        for round in 0..<3 {
            let rotation = try BackgroundKeyctl(["master", "rotate"] + homes.home("phone"))
            try await Task.sleep(for: .milliseconds(Int.random(in: 20...400)))
            #expect(await replicas[1].stop(SIGKILL) == SIGKILL, "round \(round)")
            _ = await rotation.finish()  // it may have landed or not; either way nothing is half done
            replicas[1] = try await RunningServer(arguments: secret, database: database, port: replicas[1].port)
            for device in ["laptop", "phone"] {
                let audit = try await keyctl(["audit"] + homes.home(device))
                #expect(audit.code == 0, "round \(round), \(device): \(audit.out) \(audit.err)")
            }
        }
        _ = try await homes.run(["master", "rotate"], "phone")
        for device in ["laptop", "phone"] {
            await #expect(try homes.run(["audit"], device)["ok"] as? Bool == true)
            _ = try await homes.run(["attachment", "get", "--member", "Alice", address, "-o", homes.path("\(device)-after.pdf")], device)
            #expect(try Data(contentsOf: URL(fileURLWithPath: homes.path("\(device)-after.pdf"))) == scan)
        }
        await #expect(try homes.run(["status"], "laptop")["head"] as? String == (try homes.run(["status"], "phone")["head"] as? String))
        for replica in replicas { #expect(await replica.stop() == 0) }
    }
}
