import Foundation
import KeyVaultTestSupport
import Logging
import KeyVaultStore
import Testing
@testable import KeyVaultServer

// `--database` / KEYVAULT_DATABASE takes a SQLite path or a PostgreSQL URL; a bad URL
// or a database that cannot be reached stops the server before it listens, with a
// message naming the setting and never the password.

@Test func aPostgresURLInTheEnvironmentIsTheDatabase() throws {
    var configuration = ServerConfiguration()
    try configuration.apply(environment: ["KEYVAULT_DATABASE": "postgres://kv:pw@/keyvault?host=/run/postgresql",
                                          "KEYVAULT_SECRET_FILE": "/etc/keyvault/secret"])
    try configuration.validate()
    #expect(configuration.secretFile == "/etc/keyvault/secret")
    #expect(try configuration.databaseLocation().isPostgres)
    #expect(try !configuration.databaseLocation().description.contains("pw"))
}

@Test func aBadPostgresURLStopsTheServerNamingTheSetting() async throws {
    var configuration = ServerConfiguration()
    configuration.databasePath = "postgres://kv:secretpw@db.example.org/"
    do {
        try await runServer(configuration, logger: Logger(label: "test")) { _ in Issue.record("it listened") }
        Issue.record("it started")
    } catch let error as ConfigurationError {
        #expect(error.kind == .setting)
        #expect(error.message.contains("KEYVAULT_DATABASE") && error.message.contains("--database") && error.message.contains("no database"))
        #expect(!error.message.contains("secretpw"))
    }
}

@Test(arguments: ["postgres://kv:secretpw@/keyvault?host=/nonexistent-keyvault-socket-dir", "postgres://kv:secretpw@127.0.0.1:1/keyvault"])
func anUnreachablePostgresStopsTheServerBeforeItListens(_ url: String) async throws {
    let directory = try TemporaryDirectory("kv-secret")
    var configuration = ServerConfiguration()
    configuration.databasePath = url
    configuration.secretFile = directory.path("secret")
    do {
        try await runServer(configuration, logger: Logger(label: "test")) { _ in Issue.record("it listened") }
        Issue.record("it started")
    } catch let error as ConfigurationError {
        #expect(error.kind == .database)
        let database = try #require(error.database)
        #expect(database.hasPrefix("postgres://kv:…@"))
        #expect(!database.contains("secretpw") && !error.message.contains("secretpw"))
        #expect(!error.message.isEmpty)
    }
}

/// The password can come from a file, so that it is not in the URL (argv, `ps`).
@Test func thePostgresPasswordCanComeFromAFile() throws {
    let temporary = try TemporaryDirectory("kv-server")
    defer { withExtendedLifetime(temporary) {} }
    let directory = temporary.url
    let file = temporary.path("password")
    try "pw from a file\n".write(toFile: file, atomically: true, encoding: .utf8)
    var configuration = ServerConfiguration()
    try configuration.apply(environment: ["KEYVAULT_DATABASE": "postgres://kv@/keyvault?host=/run/postgresql",
                                          "KEYVAULT_DATABASE_PASSWORD_FILE": file])
    guard case .postgres(let url) = try configuration.databaseLocation() else { Issue.record("not PostgreSQL"); return }
    #expect(url.password == "pw from a file")
    #expect(!url.description.contains("pw from a file"))

    for (database, passwordFile, says) in [
        ("postgres://kv@/keyvault?host=/run/postgresql", directory.appendingPathComponent("missing").path, "cannot read"),
        ("postgres://kv:inline@/keyvault?host=/run/postgresql", file, "give it once"),
        (directory.appendingPathComponent("kv.sqlite").path, file, "SQLite"),
    ] {
        configuration.databasePath = database
        configuration.databasePasswordFile = passwordFile
        #expect {
            try configuration.validate()
        } throws: { error in
            let message = (error as? ConfigurationError)?.message ?? ""
            return message.contains(says) && message.contains("KEYVAULT_DATABASE_PASSWORD_FILE")
        }
    }
}

/// Replicas on PostgreSQL must share one secret: without a secret file the server does
/// not start, and says which setting is missing.
@Test func aPostgresDatabaseWithoutASecretFileStopsTheServerNamingTheSetting() async throws {
    var configuration = ServerConfiguration()
    configuration.databasePath = "postgres://kv@/keyvault?host=/run/postgresql"
    do {
        try await runServer(configuration, logger: Logger(label: "test")) { _ in Issue.record("it listened") }
        Issue.record("it started")
    } catch let error as ConfigurationError {
        #expect(error.kind == .setting)
        #expect(error.message.contains("--secret-file") && error.message.contains("KEYVAULT_SECRET_FILE"))
    }
}

/// A backup's refusals are the same one error: a setting it cannot use (PostgreSQL is
/// pg_dump's), and a copy that could not be made (kind `backup`, nothing left behind).
@Test func aBackupRefusesWithTheOneConfigurationError() throws {
    let directory = try TemporaryDirectory("kv-backup")
    var configuration = ServerConfiguration()
    configuration.databasePath = "postgres://kv:secretpw@/keyvault?host=/run/postgresql"
    #expect { try backupDatabase(configuration, to: directory.path("copy")) } throws: { error in
        guard let error = error as? ConfigurationError else { return false }
        return error.kind == .setting && error.message.contains("pg_dump") && !error.message.contains("secretpw")
    }
    configuration.databasePath = directory.path("missing.sqlite")
    #expect { try backupDatabase(configuration, to: directory.path("copy")) } throws: { error in
        (error as? ConfigurationError).map { $0.kind == .backup && $0.message.contains("no database") } == true
    }
    #expect(!FileManager.default.fileExists(atPath: directory.path("copy")))
}

/// A mistyped PostgreSQL URL is not taken for a SQLite file name, and no message
/// quotes it (it may hold a password).
@Test(arguments: ["postgres:/kv:secretpw@db/keyvault", "postgresql:kv:secretpw@db/keyvault", "mysql://kv:secretpw@db/keyvault"])
func aMistypedDatabaseURLIsRefusedWithoutQuotingIt(_ text: String) throws {
    var configuration = ServerConfiguration()
    configuration.databasePath = text
    #expect { try configuration.validate() } throws: { error in
        guard let error = error as? ConfigurationError else { return false }
        return error.kind == .setting && error.message.contains("postgres://") && !error.message.contains("secretpw")
    }
}
