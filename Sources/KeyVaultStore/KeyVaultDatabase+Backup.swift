import Foundation
import GRDB

extension ConfigurationError {
    /// Why a backup could not be made.
    static func backup(_ message: String) -> ConfigurationError { ConfigurationError(message, kind: .backup) }
}

extension KeyVaultDatabase {
    /// Copies the SQLite database at `source` into a new file at `destination`, while a
    /// service may be writing to it: SQLite's online backup reads one consistent
    /// snapshot (the commits before it began, none after). The copy is written beside
    /// `destination` under another name (mode 0600), checked with `PRAGMA quick_check`,
    /// and only then renamed to `destination`, which is never overwritten; `keyctl serve
    /// --database` starts from it as it is.
    ///
    /// - Throws: ``ConfigurationError`` (kind `backup`) for a missing source, an existing destination, or the
    ///   database's error.
    package static func backup(from source: String, to destination: String) throws {
        guard FileManager.default.fileExists(atPath: source) else {
            throw ConfigurationError.backup("there is no database at \(source)")
        }
        guard !FileManager.default.fileExists(atPath: destination) else {
            throw ConfigurationError.backup("\(destination) already exists; a backup never overwrites a file")
        }
        let partial = destination + ".partial-\(UUID().uuidString.prefix(8))"
        guard FileManager.default.createFile(atPath: partial, contents: nil, attributes: [.posixPermissions: 0o600]) else {
            throw ConfigurationError.backup("cannot create \(partial): is the directory there and writable?")
        }
        var keep = false
        defer { if !keep { for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: partial + suffix) } } }
        do {
            var configuration = Configuration()
            configuration.busyMode = .timeout(10)
            let from = try DatabaseQueue(path: source, configuration: configuration)
            try from.read { db in
                guard try db.tableExists("grdb_migrations") else {
                    throw ConfigurationError.backup("\(source) is not a KeyVault database (it has no migrations table)")
                }
            }
            let copy = try DatabaseQueue(path: partial)
            try from.backup(to: copy)
            let check = try copy.read { db in try String.fetchAll(db, sql: "PRAGMA quick_check") }
            guard check == ["ok"] else {
                throw ConfigurationError.backup("the copy failed SQLite's quick_check: \(check.prefix(3).joined(separator: "; "))")
            }
            try copy.close()
            try from.close()
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError.backup("\(error)")
        }
        do {
            try FileManager.default.moveItem(atPath: partial, toPath: destination)
            keep = true
        } catch {
            throw ConfigurationError.backup("cannot rename the copy to \(destination): \(error.localizedDescription)")
        }
    }
}
