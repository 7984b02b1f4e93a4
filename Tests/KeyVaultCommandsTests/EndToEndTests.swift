import Foundation
import Testing

/// The built `keyctl` next to the test bundle.
let keyctlBinary: URL = {
    var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
    if directory.lastPathComponent == "MacOS" {  // an .xctest bundle on macOS
        directory = directory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    }
    return directory.appendingPathComponent("keyctl")
}()

/// Runs `keyctl` as a real process; stdin from `input`.
func keyctl(_ arguments: [String], input: Data = Data()) throws -> (code: Int32, out: String, err: String) {
    let process = Process()
    process.executableURL = keyctlBinary
    process.arguments = arguments
    let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
    process.standardInput = stdin
    process.standardOutput = stdout
    process.standardError = stderr
    try process.run()
    stdin.fileHandleForWriting.write(input)
    try stdin.fileHandleForWriting.close()
    let out = stdout.fileHandleForReading.readDataToEndOfFile()
    let err = stderr.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    return (process.terminationStatus, String(decoding: out, as: UTF8.self), String(decoding: err, as: UTF8.self))
}

@Test(arguments: ["english", "japanese", "korean", "spanish", "chinese_simplified", "chinese_traditional",
                  "french", "italian", "czech", "portuguese"])
func realBinaryGenerateIntoVerifyRoundTrips(_ language: String) throws {
    #expect(FileManager.default.isExecutableFile(atPath: keyctlBinary.path), "build keyctl first")
    let generated = try keyctl(["recovery", "generate", "--language", language])
    #expect(generated.code == 0)
    #expect(generated.out.split(separator: "\n").count == 1, "a pipe gets the bare phrase")
    let verified = try keyctl(["recovery", "verify", "--json", "--language", language], input: Data(generated.out.utf8))
    #expect(verified.code == 0, "\(verified.err)")
    #expect(verified.out.contains(#""valid":true"#))
}

@Test func realBinaryExitsOneOnAnInvalidCodeAndNamesTheWord() throws {
    let result = try keyctl(["recovery", "verify"], input: Data("abandon abandon zebra".utf8))
    #expect(result.code == 1)
    #expect(result.err.hasPrefix("keyctl: error: "))
}

@Test func realBinaryIdentifiesItselfAsKeyVaultNotKeyutils() throws {
    let result = try keyctl(["--version"])
    #expect(result.code == 0)
    #expect(result.out.contains("KeyVault"))
}
