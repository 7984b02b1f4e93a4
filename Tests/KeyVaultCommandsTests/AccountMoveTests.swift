import Foundation
import KeyVaultPostgres
import KeyVaultTestSupport
import Testing

/// Issue 22, item 1: an account moved between two real servers, one on SQLite and one
/// on PostgreSQL. A server without the account, or behind the head a device saw, is
/// refused by `server move` and nothing changes; an export older than what the
/// importing device saw is refused; run again, an import brings the new server
/// forward, moves the importing device and deletes the old copy, after which the other
/// device's next command there names `server move`. After both moved, `audit` passes on
/// each and every attachment opens on each by its name.
@Test(.enabled(if: postgres != nil, "needs KEYVAULT_TEST_DATABASE_URL (bash Scripts/with-postgres.sh swift test)"),
      .timeLimit(.minutes(10)))
func anAccountMovesFromSQLiteToPostgreSQLAndEveryAttachmentOpensOnEveryDevice() async throws {
    let base = try #require(postgres)
    try await PostgresKeyVaultDatabase.withEmptyDatabase(try PostgresURL(base)) { name in
        let story = try Story("move")
        let target = try RunningServer(arguments: ["--secret-file", story.path("server-secret")], database: try databaseURL(base, named: name))
        let account = try story.laptopAndPhone()
        _ = try story.run(["member", "add", "Emma"], "laptop")
        // Three chunks, and a small file.
        let scan = Data((0..<(2_500_000)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }), note = Data("allergies: none".utf8)
        try scan.write(to: URL(fileURLWithPath: story.path("x-ray.png")))
        try note.write(to: URL(fileURLWithPath: story.path("note.txt")))
        for file in ["x-ray.png", "note.txt"] { _ = try story.run(["attachment", "put", "--member", "Emma", story.path(file)], "laptop") }
        func server(_ device: String) throws -> String? { try story.run(["status"], device)["server"] as? String }

        // Not there yet: refused, and the phone stays where it was.
        let early = try keyctl(["server", "move", target.url] + story.home("phone"))
        #expect(early.code != 0, "\(early)")
        #expect(try server("phone") == story.url)

        let export = story.path("account.kvx")
        let exported = try story.run(["account", "export", "--to", export], "laptop")
        #expect(exported["attachments"] as? Int == 2 && exported["namesLeftOut"] as? Int == 0, "\(exported)")
        #expect(try keyctl(["account", "export", "--to", export] + story.home("laptop")).code == 64, "an export overwrote a file")
        // Kept: the phone stays on the old server, as does the old copy.
        let imported = try story.run(["account", "import", export, "--server", target.url, "--keep-old-copy"], "phone")
        #expect(imported["attachments"] as? Int == 2 && imported["linksAppended"] as? Int == imported["links"] as? Int, "\(imported)")
        #expect(try imported["moved"] as? Bool == false && server("phone") == story.url)

        // The laptop changes the account on the old server: the new one is behind it now.
        _ = try story.run(["member", "add", "Noah"], "laptop")
        let behind = try keyctl(["server", "move", target.url] + story.home("phone"))
        #expect(behind.code == 5 && behind.err.contains("rolled back"), "\(behind)")
        #expect(try server("phone") == story.url)
        let stale = try keyctl(["account", "import", export, "--server", target.url] + story.home("phone"))
        #expect(stale.code == 5, "an export older than the chain the phone saw was taken: \(stale)")
        // Exported and imported again: brought forward, the attachments kept; the laptop moves,
        // and the old copy is gone, so nothing more can land there.
        try FileManager.default.removeItem(atPath: export)
        _ = try story.run(["account", "export", "--to", export], "laptop")
        let again = try story.run(["account", "import", export, "--server", target.url], "laptop")
        #expect(again["linksAppended"] as? Int == 1 && again["attachmentsAlreadyThere"] as? Int == 2, "\(again)")
        #expect(again["moved"] as? Bool == true && again["oldCopyProblem"] == nil, "\(again)")
        #expect(try server("laptop") == target.url)
        #expect(try await story.server.request("GET", "/v1/accounts/\(account)/recovery").0 == 404)
        // The phone's next command there fails, naming the way over; `server move` takes it.
        let stranded = try keyctl(["status"] + story.home("phone"))
        #expect(stranded.code != 0 && stranded.err.contains("server move"), "\(stranded)")
        #expect(try story.run(["server", "move", target.url], "phone")["server"] as? String == target.url)
        _ = try story.run(["member", "add", "Lena"], "phone")
        for device in ["laptop", "phone"] {
            #expect(try story.run(["audit"], device)["ok"] as? Bool == true, "\(device)")
            for (file, content) in [("x-ray.png", scan), ("note.txt", note)] {
                let out = story.path("\(device)-\(file)")
                _ = try story.run(["attachment", "get", "--member", "Emma", file, "-o", out], device)
                #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == content, "\(device): \(file)")
            }
        }

        // Not the server in use, however it is written.
        #expect(try keyctl(["account", "delete", "--old-server", target.url + "/", "--yes"] + story.home("laptop")).code == 64)
    }
}
