import Foundation

/// The binaries this package builds, beside the test bundle.
package enum BuiltProducts {
    /// The build's products folder (`.build/debug`).
    package static let directory: URL = {
        var directory = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        if directory.lastPathComponent == "MacOS" {  // an .xctest bundle on macOS
            directory = directory.deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        }
        return directory
    }()

    /// The built `keyctl` (KeyVault's, not keyutils').
    package static let keyctl = directory.appendingPathComponent("keyctl")

    /// The built example, Examples/FamilyRecords.
    package static let familyRecords = directory.appendingPathComponent("FamilyRecords")

    /// The compiled module interfaces, for type-checking code outside the package.
    package static let modules = directory.appendingPathComponent("Modules")
}

/// The repository root, for checks against files that are not bundled (wordlists/, docs/, Examples/).
package let repositoryRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
