import Foundation
import KeyVault
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCommands

// Issue 22, item 2: attachments a person can tell apart. `put` records the file's
// name, media type, time and size sealed under the member key (the server sees none
// of them); `list` shows them; `rename` changes them; `get` and `delete` take a name as
// well as an address.

@Test(.timeLimit(.minutes(10)))
func attachmentsAreListedGotAndDeletedByTheNameTheServerNeverSees() async throws {
    let story = try await Story("names")
    let created = try await story.run(["init", "--server", story.url, "--name", "laptop", "--recovery-file", story.path("code"), "--yes"], "laptop")
    let account = try #require(created["account"] as? String)
    _ = try await story.run(["member", "add", "Emma"], "laptop")
    let scan = story.path("Vaccination record 2026.pdf")
    let content = Data((0..<3000).map { UInt8($0 % 251) })
    try content.write(to: URL(fileURLWithPath: scan))
    let put = try await story.run(["attachment", "put", "--member", "Emma", scan], "laptop")
    let address = try #require(put["address"] as? String)

    // Another device reads the name, type, time and size: they travel with the attachment.
    let code = try String(contentsOfFile: story.path("code"), encoding: .utf8)
    _ = try await story.run(["device", "enroll", "--server", story.url, "--account", account, "--name", "phone"], "phone", input: code)
    let listed = try await #require(try story.run(["attachment", "list", "--member", "Emma"], "phone")["attachments"] as? [[String: Any]])
    #expect(listed.count == 1)
    let entry = try #require(listed.first)
    #expect(entry["name"] as? String == "Vaccination record 2026.pdf")
    #expect(entry["mediaType"] as? String == "application/pdf")
    #expect(entry["plainSize"] as? Int == 3000)
    let modified = try #require(try FileManager.default.attributesOfItem(atPath: scan)[.modificationDate] as? Date)
    #expect(entry["time"] as? Int == Int(modified.timeIntervalSince1970))
    let text = try await keyctl(["attachment", "list", "--member", "Emma", "--home", story.path("phone")])
    #expect(text.out.contains("Vaccination record 2026.pdf") && text.out.contains("3 KB"), "\(text.out)")

    // By name: got and checked, as by address.
    let out = story.path("copy.pdf")
    _ = try await story.run(["attachment", "get", "--member", "Emma", "Vaccination record 2026.pdf", "-o", out], "phone")
    #expect(try Data(contentsOf: URL(fileURLWithPath: out)) == content)
    let unknown = try await keyctl(["attachment", "get", "--member", "Emma", "report.pdf", "-o", out, "--home", story.path("phone")])
    #expect(unknown.code != 0 && unknown.err.contains("no attachment called report.pdf"), "\(unknown.err)")

    // The server holds no name: not in its database, not in its answers.
    _ = try await story.run(["status"], "laptop")
    for suffix in ["", "-wal"] {
        let file = story.server.directory.appendingPathComponent("keyvault.sqlite" + suffix)
        guard let database = try? Data(contentsOf: file) else { continue }
        #expect(database.range(of: Data("Vaccination".utf8)) == nil, "the server's database holds the file's name")
    }

    // Two of one name: by name is ambiguous, and the addresses are named.
    let other = story.root.appendingPathComponent("b").path
    try FileManager.default.createDirectory(atPath: other, withIntermediateDirectories: true)
    try Data("another".utf8).write(to: URL(fileURLWithPath: other + "/Vaccination record 2026.pdf"))
    let second = try await #require(try story.run(["attachment", "put", "--member", "Emma", other + "/Vaccination record 2026.pdf"], "laptop")["address"] as? String)
    let ambiguous = try await keyctl(["attachment", "get", "--member", "Emma", "Vaccination record 2026.pdf", "-o", out, "--home", story.path("laptop")])
    #expect(ambiguous.code != 0 && ambiguous.err.contains(String(second.prefix(14))), "\(ambiguous.err)")

    // Renamed by address (its time and size stay), the name is one attachment's again.
    let renamed = try await story.run(["attachment", "rename", "--member", "Emma", second, "Vaccination record 2025.txt"], "laptop")
    #expect(renamed["name"] as? String == "Vaccination record 2025.txt" && renamed["mediaType"] as? String == "text/plain")
    let both = try await #require(try story.run(["attachment", "list", "--member", "Emma"], "phone")["attachments"] as? [[String: Any]])
    #expect(Set(both.compactMap { $0["name"] as? String }) == ["Vaccination record 2026.pdf", "Vaccination record 2025.txt"])
    #expect(both.first { $0["address"] as? String == second }?["plainSize"] as? Int == 7)

    // Deleted by the new name, then by the old one.
    await #expect(try story.run(["attachment", "delete", "--member", "Emma", "Vaccination record 2025.txt", "--yes"], "laptop")["deleted"] as? String == second)
    await #expect(try story.run(["attachment", "delete", "--member", "Emma", "Vaccination record 2026.pdf", "--yes"], "phone")["deleted"] as? String == address)
    await #expect((try story.run(["attachment", "list", "--member", "Emma"], "laptop")["attachments"] as? [Any])?.isEmpty == true)
    let gone = try await keyctl(["attachment", "get", "--member", "Emma", address, "-o", out, "--home", story.path("laptop")])
    #expect(gone.code != 0)
}

/// The real transport, with the sealed names of the first two attachments a list
/// shows swapped: a server that moves a name to another attachment.
private struct SwappingTransport: HTTPTransport {
    let inner: any HTTPTransport
    func send(_ request: HTTPExchange) async throws -> HTTPReply {
        var reply = try await inner.send(request)
        guard request.method == "GET", request.target.hasSuffix("/attachments"), reply.status == 200,
              var object = try JSONSerialization.jsonObject(with: Data(reply.body)) as? [String: Any],
              var list = object["attachments"] as? [[String: Any]], list.count == 2 else { return reply }
        (list[0]["meta"], list[1]["meta"]) = (list[1]["meta"], list[0]["meta"])
        object["attachments"] = list
        reply.body = [UInt8](try JSONSerialization.data(withJSONObject: object))
        return reply
    }
}

@Test(.timeLimit(.minutes(10)))
func aNameTheServerMovesToAnotherAttachmentIsNotShownAsItsName() async throws {
    let story = try await Story("names-moved")
    _ = try await story.run(["init", "--server", story.url, "--name", "laptop", "--recovery-file", story.path("code"), "--yes"], "laptop")
    _ = try await story.run(["member", "add", "Emma"], "laptop")
    for name in ["x-ray.png", "allergy.txt"] {
        try Data(name.utf8).write(to: URL(fileURLWithPath: story.path(name)))
        _ = try await story.run(["attachment", "put", "--member", "Emma", story.path(name)], "laptop")
    }
    let result = await KeyctlMain.$transport.withValue({ server in SwappingTransport(inner: keyctlTransport(server)) }) {
        await runKeyctl(["attachment", "list", "--member", "Emma", "--home", story.path("laptop"), "--json"])
    }
    #expect(result.code == 0, "\(result.err)")
    let list = try #require(try lastJSON(result.out)["attachments"] as? [[String: Any]])
    #expect(list.count == 2)
    #expect(list.allSatisfy { $0["name"] == nil }, "a name the server moved was shown: \(list)")
    #expect(list.allSatisfy { $0["nameProblem"] as? String != nil }, "\(list)")
}

/// Issue 22, item 1: every attachment of a member decrypted into a folder under its
/// name, for a person leaving the app; two of one name both kept, nothing overwritten.
@Test(.timeLimit(.minutes(10)))
func aMembersAttachmentsAreExportedIntoAFolderUnderTheirNames() async throws {
    let story = try await Story("export")
    _ = try await story.run(["init", "--server", story.url, "--name", "laptop", "--recovery-file", story.path("code"), "--yes"], "laptop")
    _ = try await story.run(["member", "add", "Emma"], "laptop")
    let first = story.root.appendingPathComponent("one"), second = story.root.appendingPathComponent("two")
    for directory in [first, second] { try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true) }
    try Data("first scan".utf8).write(to: first.appendingPathComponent("scan.pdf"))
    try Data("second scan".utf8).write(to: second.appendingPathComponent("scan.pdf"))
    try Data("notes".utf8).write(to: first.appendingPathComponent("notes.txt"))
    for file in [first.appendingPathComponent("scan.pdf"), second.appendingPathComponent("scan.pdf"), first.appendingPathComponent("notes.txt")] {
        _ = try await story.run(["attachment", "put", "--member", "Emma", file.path], "laptop")
    }
    let out = story.root.appendingPathComponent("Emma's files")
    try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
    try Data("mine".utf8).write(to: out.appendingPathComponent("notes.txt"))  // already there: kept
    let result = try await story.run(["attachment", "export", "--member", "Emma", "--to", out.path], "laptop")
    let exported = try #require(result["exported"] as? [[String: Any]])
    #expect(exported.count == 3)
    let files = try FileManager.default.contentsOfDirectory(atPath: out.path).sorted()
    #expect(files.count == 4, "\(files)")
    let contents = Set(try files.map { try String(contentsOf: out.appendingPathComponent($0), encoding: .utf8) })
    #expect(contents == ["first scan", "second scan", "notes", "mine"])
    #expect(try String(contentsOf: out.appendingPathComponent("notes.txt"), encoding: .utf8) == "mine", "an existing file was overwritten")
    #expect(files.contains("scan.pdf") && files.contains { $0.hasPrefix("scan (") && $0.hasSuffix(").pdf") })
}
