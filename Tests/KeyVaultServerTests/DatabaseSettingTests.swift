import Foundation
import KeyVaultTestSupport
import Logging
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
    } catch StartError.configuration(let message) {
        #expect(message.contains("KEYVAULT_DATABASE") && message.contains("--database") && message.contains("no database"))
        #expect(!message.contains("secretpw"))
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
    } catch StartError.database(let database, let reason) {
        #expect(database.hasPrefix("postgres://kv:…@"))
        #expect(!database.contains("secretpw") && !reason.contains("secretpw"))
        #expect(!reason.isEmpty)
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
    } catch StartError.configuration(let message) {
        #expect(message.contains("--secret-file") && message.contains("KEYVAULT_SECRET_FILE"))
    }
}
