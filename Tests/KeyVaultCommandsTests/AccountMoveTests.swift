import Foundation
import KeyVaultPostgres
import KeyVaultTestSupport
import Testing

/// Issue 22, item 1: an account moved between two real servers, one on SQLite and one
/// on PostgreSQL. A server without the account, or behind the head a device saw, is
/// refused by `server move` and nothing changes; an export older than what the
/// importing device saw is refused; run again, an import brings the new server
/// forward; the old copy is not deleted while it holds a link the new server lacks; an
/// import without --keep-old-copy moves the importing device and deletes the old copy,
/// after which another device's next command there names `server move`. After all
/// moved, `audit` passes on each and every attachment opens on each by its name.
@Test(.enabled(if: postgres != nil, "needs KEYVAULT_TEST_DATABASE_URL (bash Scripts/with-postgres.sh swift test)"),
      .timeLimit(.minutes(10)))
func anAccountMovesFromSQLiteToPostgreSQLAndEveryAttachmentOpensOnEveryDevice() async throws {
    let base = try #require(postgres)
    try await PostgresKeyVaultDatabase.withEmptyDatabase(try PostgresURL(base)) { name in
        let story = try await Story("move")
        let target = try await RunningServer(arguments: ["--secret-file", story.path("server-secret")], database: try databaseURL(base, named: name))
        let account = try await story.laptopAndPhone()
        _ = try await story.run(["device", "enroll", "--server", story.url, "--account", account, "--name", "tablet"], "tablet",
                          input: try String(contentsOfFile: story.path("code"), encoding: .utf8))
        _ = try await story.run(["member", "add", "Emma"], "laptop")
        // Three chunks, and a small file.
        let scan = Data((0..<(2_500_000)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }), note = Data("allergies: none".utf8)
        try scan.write(to: URL(fileURLWithPath: story.path("x-ray.png")))
        try note.write(to: URL(fileURLWithPath: story.path("note.txt")))
        for file in ["x-ray.png", "note.txt"] { _ = try await story.run(["attachment", "put", "--member", "Emma", story.path(file)], "laptop") }
        func server(_ device: String) async throws -> String? { try await story.run(["status"], device)["server"] as? String }

        // Not there yet: refused, and the phone stays where it was.
        let early = try await keyctl(["server", "move", target.url] + story.home("phone"))
        #expect(early.code != 0, "\(early)")
        await #expect(try server("phone") == story.url)

        let export = story.path("account.kvx")
        let exported = try await story.run(["account", "export", "--to", export], "laptop")
        #expect(exported["attachments"] as? Int == 2 && exported["namesLeftOut"] as? Int == 0, "\(exported)")
        #expect(try await keyctl(["account", "export", "--to", export] + story.home("laptop")).code == 64, "an export overwrote a file")
        // Kept: the phone stays on the old server, as does the old copy.
        let imported = try await story.run(["account", "import", export, "--server", target.url, "--keep-old-copy"], "phone")
        #expect(imported["attachments"] as? Int == 2 && imported["linksAppended"] as? Int == imported["links"] as? Int, "\(imported)")
        #expect(imported["moved"] as? Bool == false)
        await #expect(try server("phone") == story.url)

        // The laptop changes the account on the old server: the new one is behind it now.
        _ = try await story.run(["member", "add", "Noah"], "laptop")
        let behind = try await keyctl(["server", "move", target.url] + story.home("phone"))
        #expect(behind.code == 5 && behind.err.contains("rolled back"), "\(behind)")
        await #expect(try server("phone") == story.url)
        let stale = try await keyctl(["account", "import", export, "--server", target.url] + story.home("phone"))
        #expect(stale.code == 5, "an export older than the chain the phone saw was taken: \(stale)")
        // Exported and imported again (the old copy kept): brought forward, the attachments kept.
        try FileManager.default.removeItem(atPath: export)
        _ = try await story.run(["account", "export", "--to", export], "laptop")
        let again = try await story.run(["account", "import", export, "--server", target.url, "--keep-old-copy"], "laptop")
        #expect(again["linksAppended"] as? Int == 1 && again["attachmentsAlreadyThere"] as? Int == 2, "\(again)")
        await #expect(try story.run(["server", "move", target.url], "laptop")["server"] as? String == target.url)
        // The phone, still on the old server, changes the account there: the old copy is not
        // deleted while it holds a link the new server lacks.
        _ = try await story.run(["member", "add", "Mia"], "phone")
        let kept = try await keyctl(["account", "delete", "--old-server", story.url, "--yes"] + story.home("laptop"))
        #expect(kept.code != 0 && kept.err.contains("changes the new one lacks"), "\(kept)")
        // The phone exports and imports: the new server is brought forward, the phone moves,
        // and the old copy is gone, so nothing more can land there.
        try FileManager.default.removeItem(atPath: export)
        _ = try await story.run(["account", "export", "--to", export], "phone")
        let closing = try await story.run(["account", "import", export, "--server", target.url], "phone")
        #expect(closing["linksAppended"] as? Int == 1 && closing["moved"] as? Bool == true && closing["oldCopyProblem"] == nil, "\(closing)")
        await #expect(try server("phone") == target.url)
        #expect(try await story.server.request("GET", "/v1/accounts/\(account)/recovery").0 == 404)
        // The tablet's next command there fails, naming the way over; `server move` takes it,
        // judged against the chain it kept.
        let stranded = try await keyctl(["status"] + story.home("tablet"))
        #expect(stranded.code != 0 && stranded.err.contains("server move"), "\(stranded)")
        await #expect(try story.run(["server", "move", target.url], "tablet")["server"] as? String == target.url)
        _ = try await story.run(["member", "add", "Lena"], "phone")
        for device in ["laptop", "phone", "tablet"] {
            await #expect(try story.run(["audit"], device)["ok"] as? Bool == true, "\(device)")
            for (file, content) in [("x-ray.png", scan), ("note.txt", note)] {
                let out = story.path("\(device)-\(file)")
                _ = try await story.run(["attachment", "get", "--member", "Emma", file, "-o", out], device)
                #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == content, "\(device): \(file)")
            }
        }

        // Only a server this device moved from, and not once its copy is gone: never the one in use.
        let inUse = try await keyctl(["account", "delete", "--old-server", target.url + "/", "--yes"] + story.home("phone"))
        #expect(inUse.code != 0 && inUse.err.contains("nothing was deleted"), "\(inUse)")
        await #expect(try story.run(["audit"], "phone")["ok"] as? Bool == true)
    }
}
