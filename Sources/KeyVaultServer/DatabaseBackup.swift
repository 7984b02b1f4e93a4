import KeyVaultStore

/// Why `keyctl serve backup` made no copy.
public enum BackupRefusal: Error, Sendable {
    /// The setting is wrong for a backup (a PostgreSQL URL: pg_dump backs that up).
    case configuration(String)
    /// The copy could not be made; nothing was left at the destination.
    case failed(String)
}

/// A consistent copy of the service's SQLite database at `destination`, taken while a
/// service may be serving from it (``KeyVaultDatabase/backup(from:to:)``).
///
/// - Throws: ``BackupRefusal``.
public func backupDatabase(_ configuration: ServerConfiguration, to destination: String) throws {
    let location: DatabaseLocation
    do {
        location = try configuration.databaseLocation()
    } catch let error as ConfigurationError {
        throw BackupRefusal.configuration(error.message)
    }
    guard case .sqlite(let path) = location else {
        throw BackupRefusal.configuration("the database is PostgreSQL (\(location.description)): back it up with pg_dump (docs/operations.md)")
    }
    do {
        try KeyVaultDatabase.backup(from: path, to: destination)
    } catch let error as BackupError {
        throw BackupRefusal.failed(error.message)
    }
}
