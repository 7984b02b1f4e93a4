import Foundation
import Testing

/// SECURITY.md and docs/security-tests.md name the test behind each claim: every
/// name must be a test that exists, or the claim has lost its evidence.
@Test(arguments: ["SECURITY.md", "docs/security-tests.md"])
func everyTestTheSecurityDocsNameExists(_ document: String) throws {
    let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    let text = try String(contentsOf: repository.appendingPathComponent(document), encoding: .utf8)
    // Test names are long lowerCamelCase identifiers in backticks (`aChainThatForksIsRefused`).
    let names = Set(text.matches(of: /`([a-z][a-zA-Z0-9]{24,})`/).map { String($0.1) })
    #expect(names.count > 10, "\(document) names no tests any more?")

    var sources = ""
    let tests = repository.appendingPathComponent("Tests")
    for case let file as URL in FileManager.default.enumerator(at: tests, includingPropertiesForKeys: nil)!
    where file.pathExtension == "swift" {
        sources += try String(contentsOf: file, encoding: .utf8)
    }
    let missing = names.filter { !sources.contains("func \($0)(") }.sorted()
    #expect(missing.isEmpty, "\(document) names tests that do not exist: \(missing)")
}
