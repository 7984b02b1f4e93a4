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
