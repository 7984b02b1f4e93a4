import KeyVaultStore

/// A consistent copy of the service's SQLite database at `destination`, taken while a
/// service may be serving from it (``KeyVaultDatabase/backup(from:to:)``).
///
/// - Throws: ``ConfigurationError``: kind `setting` for a database setting a backup
///   cannot use (a PostgreSQL URL: pg_dump backs that up), kind `backup` when the copy
///   could not be made (nothing is left at `destination`).
package func backupDatabase(_ configuration: ServerConfiguration, to destination: String) throws {
    let location = try configuration.databaseLocation()
    guard case .sqlite(let path) = location else {
        throw ConfigurationError("the database is PostgreSQL (\(location.description)): back it up with pg_dump (docs/operations.md)")
    }
    try KeyVaultDatabase.backup(from: path, to: destination)
}
