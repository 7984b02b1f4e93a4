import Foundation

/// A test target's `Vectors` folder of JSON vector files. Each target keeps its own
/// files as resources and names its bundle: `let vectors = Vectors(in: .module)`.
package struct Vectors: Sendable {
    package let directory: URL

    /// The `Vectors` folder of `bundle` (a test target's `Bundle.module`).
    package init(in bundle: Bundle, subdirectory: String = "Vectors") {
        directory = bundle.url(forResource: subdirectory, withExtension: nil)
            ?? (bundle.resourceURL ?? bundle.bundleURL).appendingPathComponent(subdirectory)
    }

    /// Vector files in `directory`, wherever they are.
    package init(directory: URL) { self.directory = directory }

    /// Decodes `NAME.json`; throws when the file is not there or does not decode as `type`.
    package func load<T: Decodable>(_ name: String, as type: T.Type = T.self) throws -> T {
        let url = directory.appendingPathComponent(name + ".json")
        guard FileManager.default.fileExists(atPath: url.path) else { throw MissingVectorFile(name: name, directory: directory) }
        return try JSONDecoder().decode(T.self, from: Data(contentsOf: url))
    }
}

package struct MissingVectorFile: Error, CustomStringConvertible {
    package let name: String, directory: URL
    package var description: String { "vector file \(name).json is not in \(directory.path)" }
}
