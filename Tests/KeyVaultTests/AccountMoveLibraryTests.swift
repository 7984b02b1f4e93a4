import Foundation
import HummingbirdTesting
import KeyVault
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore
import KeyVaultTestSupport
import Logging
import Testing
@testable import KeyVaultServer

/// A second in-process service to move an account to.
private func withTargetServer(_ body: @escaping @Sendable (any HTTPTransport) async throws -> Void) async throws {
    var configuration = ServerConfiguration()
    configuration.databasePath = "/unused"
    var logger = Logger(label: "move-target")
    logger.logLevel = .critical
    let app = try buildApplication(configuration, database: try KeyVaultDatabase.inMemory(), logger: logger)
    try await app.test(.router) { client in try await body(RouterTransport(client: client)) }
}

/// Rewrites one line of an export file.
private func rewriteLine(_ path: String, where matches: (String) -> Bool, _ change: (String) -> String) throws {
    let lines = try String(contentsOfFile: path, encoding: .utf8).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
    guard let index = lines.firstIndex(where: matches) else { throw CocoaError(.fileReadCorruptFile) }
    var changed = lines
    changed[index] = change(lines[index])
    try changed.joined(separator: "\n").write(toFile: path, atomically: true, encoding: .utf8)
}

/// Issue 22, item 1. An export is checked as it is read: a chunk the old server altered,
/// or a key wrap or box it withholds, fails it and writes no file. An import is checked again by the device that puts it on
/// the new server: a chunk altered in the file, or a name moved to another attachment,
/// is refused, and the new server is left no attachment that opens wrong (one whose
/// chunks did not all check is never completed there); so is a file of another account,
/// one whose end does not tally, and one without a key the devices need.
@Test func anExportAndAnImportRefuseWhatWasAlteredAndLeaveNothingThatOpensWrong() async throws {
    try await Fixture.run { fixture, laptop in
        let emma = try await laptop.addMember(name: "Emma")
        let scan = (0..<2_300_000).map { UInt8(truncatingIfNeeded: $0 &* 13 &+ 1) }
        let scanAddress = try await laptop.put(scan, member: emma, name: "scan.png").address
        _ = try await laptop.put(Array("note".utf8), member: emma, name: "note.txt")
        let file = fixture.root.appendingPathComponent("account.kvx").path

        // The old server alters chunk 1 of the scan: refused, no file.
        fixture.transport.tamper { request, reply in
            if request.target.hasSuffix("/chunks/1"), reply.status == 200, !reply.body.isEmpty { reply.body[reply.body.count / 2] ^= 1 }
        }
        await #expect(throws: KeyVaultError.self) { _ = try await laptop.exportAccount(toFileAt: file) }
        #expect(!FileManager.default.fileExists(atPath: file), "a refused export left a file")
        // The old server withholds the member key's wrap (a file that would leave every device
        // unable to open Emma where it moves), or the recovery code's box: refused, no file.
        fixture.transport.tamper(rewriting("/wraps", as: [String: [MemberWrap]].self) { $0["wraps"] = [] })
        await #expect(throws: KeyVaultError.self) { _ = try await laptop.exportAccount(toFileAt: file) }
        fixture.transport.tamper(rewriting("/boxes", as: [String: [KeyBox]].self) { $0["boxes"]?.removeAll { $0.recipient == "recovery" } })
        await #expect(throws: KeyVaultError.self) { _ = try await laptop.exportAccount(toFileAt: file) }
        #expect(!FileManager.default.fileExists(atPath: file), "a refused export left a file")
        fixture.transport.tamper(nil)
        let summary = try await laptop.exportAccount(toFileAt: file)
        #expect(summary.attachments == 2 && summary.namesLeftOut == 0)

        try await withTargetServer { target in
            // A chunk altered in the file: refused; the new server has no scan to open.
            let original = try String(contentsOfFile: file, encoding: .utf8)
            var seen = 0
            try rewriteLine(file, where: { line in
                guard line.hasPrefix("{\"chunk\"") else { return false }
                seen += 1
                return seen == 2
            }) { line in
                var sealed = base64Decode(String(line.dropFirst(10).dropLast(2)))!
                sealed[100] ^= 1
                return "{\"chunk\":\"\(base64Encode(sealed))\"}"
            }
            do {
                _ = try await laptop.importAccount(fromFileAt: file, to: URL(string: "http://target")!, transport: target)
                Issue.record("an altered chunk was imported")
            } catch let error as KeyVaultError {
                #expect(error.kind == .verification, "\(error)")
            }
            let there = ServerAPI(transport: target, account: laptop.account, keys: await laptop.record.keys)
            #expect(!(try await there.attachments(member: emma.id)).contains { $0.address == scanAddress },
                    "an attachment whose chunks did not all check was completed")
            // The new server (or anyone holding Emma's key) puts other bytes at the scan's address:
            // an import that meets "already there" opens it there first, and replaces it.
            let junk = AttachmentObject(
                key: try Envelope.seal(SymmetricKey(), under: SymmetricKey(), generation: 1, context: EnvelopeContext(purpose: "attachment-key")).bytes,
                content: try Envelope.seal(SystemRandom.bytes(count: 100), under: SymmetricKey(), generation: 1,
                                           context: EnvelopeContext(purpose: "attachment-content")).bytes)
            _ = try await there.putAttachment(member: emma.id, address: scanAddress, object: junk)

            // A file of another account, one whose end does not tally, one without the member key's
            // wrap (the new server would take it; no device could open Emma there): refused here.
            let alterations: [(String, (String) -> Bool, (String) -> String)] = [
                ("another account", { $0.hasPrefix("{\"header\"") }, { $0.replacingOccurrences(of: laptop.account.rawValue, with: String(repeating: "ab", count: 16)) }),
                ("an end that does not tally", { $0.hasPrefix("{\"end\"") }, { $0.replacingOccurrences(of: "\"attachments\":2", with: "\"attachments\":3") }),
                ("no member key wrap", { $0.hasPrefix("{\"state\"") }, { line in
                    line.replacingOccurrences(of: #""wraps":\[[^\]]*\]"#, with: #""wraps":[]"#, options: .regularExpression) }),
            ]
            for (what, matches, change) in alterations {
                try original.write(toFile: file, atomically: true, encoding: .utf8)
                try rewriteLine(file, where: matches, change)
                #expect(try String(contentsOfFile: file, encoding: .utf8) != original, "\(what): the file was not altered")
                await #expect(throws: KeyVaultError.self, "\(what)") {
                    _ = try await laptop.importAccount(fromFileAt: file, to: URL(string: "http://target")!, transport: target)
                }
            }

            // A name moved from one attachment to the other: refused.
            try original.write(toFile: file, atomically: true, encoding: .utf8)
            let lines = original.split(separator: "\n").map(String.init)
            let metas = lines.filter { $0.hasPrefix("{\"attachment\"") }.compactMap { line -> String? in
                guard let range = line.range(of: #""meta":"[^"]+""#, options: .regularExpression) else { return nil }
                return String(line[range])
            }
            try #require(metas.count == 2)
            try rewriteLine(file, where: { $0.contains(metas[1]) }) { $0.replacingOccurrences(of: metas[1], with: metas[0]) }
            do {
                _ = try await laptop.importAccount(fromFileAt: file, to: URL(string: "http://target")!, transport: target)
                Issue.record("a name moved to another attachment was imported")
            } catch let error as KeyVaultError {
                #expect(error.kind == .verification, "\(error)")
            }
            // The file as it was, onto the server the account is on (under another name): refused,
            // and nothing is deleted there.
            try original.write(toFile: file, atomically: true, encoding: .utf8)
            await #expect(throws: KeyVaultError.self) {
                _ = try await laptop.importAccount(fromFileAt: file, to: URL(string: "http://alias")!, transport: fixture.transport)
            }
            #expect(try await fixture.transport.send(HTTPExchange(method: "GET", target: "/v1/accounts/\(laptop.account)/recovery")).status == 200)
            // Onto the new server: the import goes on, every attachment there with its name.
            let imported = try await laptop.importAccount(fromFileAt: file, to: URL(string: "http://target")!, transport: target)
            #expect(imported.attachments == 2 && imported.linksAppended == 0)
            // The move closed: this device uses the new server, and the old copy is gone.
            #expect(imported.moved && imported.oldCopyProblem == nil && laptop.server == "test")
            #expect(try fixture.home("laptop").load().server == "http://target")
            let gone = try await fixture.transport.send(HTTPExchange(method: "GET", target: "/v1/accounts/\(laptop.account)/recovery"))
            #expect(gone.status == 404, "the old server still holds the account")
            let listed = try await there.attachments(member: emma.id)
            #expect(listed.count == 2 && listed.allSatisfy { $0.sealedMeta != nil })
            #expect(try await there.chunkList(member: emma.id, address: scanAddress) != nil, "the bytes planted at the scan's address were kept")
        }
    }
}

/// A request signature names no server: a delete is signed for the instance this device
/// first saw its server name (`GET /v1/server`), and refused when the server names
/// another later (one that holds the account too, where it would replay the delete).
@Test func anAccountDeleteIsSignedOnlyForTheServiceTheDeviceFirstSaw() async throws {
    try await Fixture.run { fixture, laptop in
        try await laptop.sync()
        #expect(try fixture.home("laptop").load().instance?.count == 16)
        fixture.transport.tamper(rewriting("/v1/server", as: [String: String].self) { $0["instance"] = "0123456789abcdef" })
        let deletes = Locked(0)
        fixture.transport.answer { request in
            if request.method == "DELETE" { deletes.withLock { $0 += 1 } }
            return nil
        }
        await #expect(throws: KeyVaultError.self) { try await laptop.deleteAccount() }
        #expect(deletes.withLock { $0 } == 0, "a delete was signed for the instance the server named now")
        fixture.transport.tamper(nil)
        fixture.transport.answer(nil)
        let kept = try await fixture.transport.send(HTTPExchange(method: "GET", target: "/v1/accounts/\(laptop.account)/recovery"))
        #expect(kept.status != 404, "the account was deleted")
    }
}
