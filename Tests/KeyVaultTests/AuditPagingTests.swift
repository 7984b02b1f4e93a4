import Foundation
import KeyVault
import KeyVaultCrypto
import KeyVaultModel
import Testing

/// Item 5 of issue 8: `audit` reads the whole log page by page. Here the log is
/// longer than one page (1000 entries, as the service pages it): the links logged
/// after the first page are found, so there is no false "missing" finding.
@Test func auditReadsEveryPageOfALongLogWithoutFalseFindings() async throws {
    try await Fixture.run { fixture, laptop in
        let real = Locked<[AuditEntry]?>(nil)
        let pageSize = 1000
        fixture.transport.tamper { request, reply in
            guard request.method == "GET", request.target.contains("/audit"), reply.status == 200 else { return }
            // The first read (no `after`) gives the account's real log, short here.
            let entries = try real.withLock { saved in
                if saved == nil { saved = try JSONDecoder().decode([String: [AuditEntry]].self, from: Data(reply.body))["entries"] ?? [] }
                return saved ?? []
            }
            // The long log: a page of older entries before the real ones.
            let older = (1...pageSize).map { AuditEntry(id: Int64($0), time: 1_700_000_000, event: "attachment.put", device: nil, detail: nil) }
            let log = older + entries.map { AuditEntry(id: $0.id + Int64(pageSize), time: $0.time, event: $0.event, device: $0.device, sequence: $0.sequence, detail: $0.detail) }
            let after = request.target.range(of: "after=").map { Int64(request.target[$0.upperBound...].prefix { $0.isNumber }) ?? 0 } ?? 0
            reply.body = Array(try JSONEncoder().encode(["entries": Array(log.filter { $0.id > after }.prefix(pageSize))]))
        }
        let report = try await laptop.audit()
        #expect(report.findings.isEmpty, "\(report.findings)")
        #expect(report.auditEntries > pageSize)
    }
}

/// A server from before the typed sequence (its rows say "sequence N" in `detail`)
/// audits clean; a log that records one link twice is a finding, as is a missing
/// genesis entry.
@Test func auditReadsOlderServersAndFlagsALinkLoggedTwiceOrAMissingGenesis() async throws {
    try await Fixture.run { fixture, laptop in
        _ = try await laptop.addMember(name: "Emma")
        let mode = Locked(0)
        fixture.transport.tamper { request, reply in
            guard request.method == "GET", request.target.contains("/audit"), !request.target.contains("after="), reply.status == 200 else { return }
            var entries = try JSONDecoder().decode([String: [AuditEntry]].self, from: Data(reply.body))["entries"] ?? []
            switch mode.withLock({ $0 }) {
            case 0:  // as an older server wrote them
                entries = entries.map { var e = $0; e.detail = e.sequence.map { "sequence \($0)" }; e.sequence = nil; return e }
            case 1:
                var again = entries.last!
                again.id += 1
                again.event = "link.master.rotate"
                entries.append(again)
            default:
                entries.removeAll { $0.event == "link.genesis" }
            }
            reply.body = Array(try JSONEncoder().encode(["entries": entries]))
        }
        #expect(try await laptop.audit().findings.isEmpty)
        mode.withLock { $0 = 1 }
        #expect(try await laptop.audit().findings.contains { $0.message.contains("twice") })
        mode.withLock { $0 = 2 }
        #expect(try await laptop.audit().findings.contains { $0.message.contains("link 0 (genesis) is missing") })
    }
}
