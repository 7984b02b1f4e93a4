import Foundation
import Logging
import Testing
@testable import KeyVaultServer

// `--database` / KEYVAULT_DATABASE takes a SQLite path or a PostgreSQL URL; a bad URL
// or a database that cannot be reached stops the server before it listens, with a
// message naming the setting and never the password.

@Test func aPostgresURLInTheEnvironmentIsTheDatabase() throws {
    var configuration = ServerConfiguration()
    try configuration.apply(environment: ["KEYVAULT_DATABASE": "postgres://kv:pw@/keyvault?host=/run/postgresql"])
    try configuration.validate()
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
    var configuration = ServerConfiguration()
    configuration.databasePath = url
    do {
        try await runServer(configuration, logger: Logger(label: "test")) { _ in Issue.record("it listened") }
        Issue.record("it started")
    } catch StartError.database(let database, let reason) {
        #expect(database.hasPrefix("postgres://kv:…@"))
        #expect(!database.contains("secretpw") && !reason.contains("secretpw"))
        #expect(!reason.isEmpty)
    }
}
