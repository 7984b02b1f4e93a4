import Foundation
import KeyVault
import KeyVaultModel
import Testing

// Issue 8 item 7: server-supplied text is made safe everywhere it reaches a terminal.

private let hostile = "\u{1B}]0;pwned\u{07}\u{1B}[2J\u{1B}[1A\r\u{9B}31m\u{7F}\u{202E}"

private func hasControlCharacters(_ text: String) -> Bool {
    text.unicodeScalars.contains { $0.properties.generalCategory == .control || $0.properties.isBidiControl }
}

@Test func auditFindingsFromHostileServerTextCarryNoControlCharacters() async throws {
    try await Fixture.run { fixture, laptop in
        #expect(try await laptop.audit().findings.isEmpty)
        let stranger = DeviceKeys().id
        fixture.transport.tamper { request, reply in
            guard request.method == "GET", reply.status == 200 else { return }
            if request.target.contains("/devices") {
                var answer = try JSONDecoder().decode([String: [DeviceInfo]].self, from: Data(reply.body))
                answer["devices"]!.append(DeviceInfo(id: stranger, name: "evil" + hostile, status: .active, added: 1))
                reply.body = Array(try JSONEncoder().encode(answer))
            } else if request.target.contains("/audit"), !request.target.contains("after=") {
                var answer = try JSONDecoder().decode([String: [AuditEntry]].self, from: Data(reply.body))
                let last = answer["entries"]!.last!
                answer["entries"]!.append(AuditEntry(id: last.id + 1, time: last.time, event: "link.x" + hostile, device: nil,
                                                     sequence: 99, detail: nil))
                reply.body = Array(try JSONEncoder().encode(answer))
            }
        }
        let report = try await laptop.audit()
        #expect(report.findings.contains { $0.message.contains("evil") }, "\(report.findings)")
        #expect(report.findings.contains { $0.message.contains("link 99") }, "\(report.findings)")
        for finding in report.findings {
            #expect(!hasControlCharacters(finding.message) && !hasControlCharacters(finding.area), "\(finding.message.debugDescription)")
        }
    }
}

@Test func printableRemovesEveryTerminalControl() {
    let cleaned = ("a" + hostile + "b").printable
    #expect(!hasControlCharacters(cleaned), "\(cleaned.debugDescription)")
    #expect(cleaned.hasPrefix("a") && cleaned.hasSuffix("b"))
    // Bidirectional overrides can make text read differently from what it is.
    #expect(!"abc\u{202E}fed".printable.unicodeScalars.contains("\u{202E}"))
}
