import Foundation
import HTTPTypes
import KeyVaultModel
import Testing
@testable import KeyVaultServer

/// The one status table has exactly the wire codes.
@Test func everyWireCodeHasAnHTTPStatusInTheTable() {
    #expect(Set(ErrorCode.httpStatuses.keys) == Set(ErrorCode.wireCodes))
}

/// docs/api.md's error table and the server's agree, code by code.
@Test func theStatusOfEveryCodeIsTheOneDocsAPIGivesIt() throws {
    let docs = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("docs/api.md")
    var documented: [ErrorCode: Int] = [:]
    for line in try String(contentsOf: docs, encoding: .utf8).split(separator: "\n") {
        let cells = line.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
        guard cells.count >= 2, let status = Int(cells[0]), (400...599).contains(status) else { continue }
        for code in cells[1].split(separator: ",") {
            documented[ErrorCode(rawValue: code.trimmingCharacters(in: CharacterSet(charactersIn: " `")))] = status
        }
    }
    #expect(Set(documented.keys) == Set(ErrorCode.wireCodes), "docs/api.md lists \(documented.keys.map(\.rawValue).sorted())")
    for code in ErrorCode.wireCodes {
        #expect(documented[code] == code.httpStatus.code, "\(code): docs \(documented[code] ?? 0), server \(code.httpStatus.code)")
    }
}
