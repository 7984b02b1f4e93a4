import Foundation

/// A fresh directory under the system's temporary folder, removed with everything in
/// it when the last reference goes. Keep the value for as long as the files are used.
package final class TemporaryDirectory: Sendable {
    package let url: URL

    /// Creates `PREFIX-UUID` (the prefix says which test left it, should one be left).
    package init(_ prefix: String = "kv") throws {
        url = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    }

    package var path: String { url.path }

    /// `name` inside the directory; nothing is created.
    package func url(_ name: String) -> URL { url.appendingPathComponent(name) }

    /// The path of `name` inside the directory; nothing is created.
    package func path(_ name: String) -> String { url(name).path }

    /// Writes `bytes` to `name` inside the directory; returns its path.
    package func file(_ name: String, holding bytes: [UInt8]) throws -> String {
        try Data(bytes).write(to: url(name))
        return path(name)
    }

    deinit { try? FileManager.default.removeItem(at: url) }
}
