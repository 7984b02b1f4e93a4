import Foundation
import KeyVaultPostgres
import KeyVaultStore
import Testing

@Test func aPostgresURLNamesHostPortUserPasswordAndDatabase() throws {
    let url = try PostgresURL("postgres://kv:s%40cret@db.example.org:6543/keyvault?sslmode=verify-full")
    #expect(url.endpoint == .tcp(host: "db.example.org", port: 6543))
    #expect(url.user == "kv" && url.password == "s@cret" && url.database == "keyvault")
    #expect(try PostgresURL("postgresql://kv@localhost/keyvault").endpoint == .tcp(host: "localhost", port: 5432))
}

@Test func aPostgresURLCanNameAUnixSocketDirectory() throws {
    let url = try PostgresURL("postgres://kv@/keyvault?host=/run/postgresql")
    #expect(url.endpoint == .socket(directory: "/run/postgresql", port: 5432))
    #expect(url.password == nil)
    #expect(try PostgresURL("postgres://kv@:5433/keyvault?host=/tmp/pg").endpoint == .socket(directory: "/tmp/pg", port: 5433))
}

@Test(arguments: [
    ("postgres://db.example.org/keyvault", "no user"),
    ("postgres://kv@db.example.org", "no database"),
    ("postgres://kv@db.example.org/", "no database"),
    ("postgres://kv@/keyvault", "no host"),
    ("postgres://kv@db.example.org/keyvault?host=/tmp", "both a host and a socket"),
    ("postgres://kv@/keyvault?sslkey=/etc/key.pem", "query parameters accepted"),
    ("postgres://kv@/keyvault?host=relative", "query parameters accepted"),
    ("postgres://kv@db.example.org:0/keyvault", "port 0"),
    ("mysql://kv@db/keyvault", "postgres://"),
])
func aBadPostgresURLSaysWhichPartIsWrong(_ text: String, _ says: String) {
    #expect {
        try PostgresURL(text)
    } throws: { error in
        (error as? ConfigurationError).map { $0.kind == .setting && $0.message.contains(says) } == true
    }
}

/// Messages and logs show the URL without its password.
@Test func aPostgresURLPrintsWithoutItsPassword() throws {
    let url = try PostgresURL("postgres://kv:hunter2hunter2@db.example.org/keyvault?sslmode=require")
    #expect(!url.description.contains("hunter2"))
    #expect(url.description.contains("kv:…@db.example.org:5432/keyvault"))
}

// Issue 21 item 6: TLS to PostgreSQL, said in the URL as libpq says it.

@Test func aPostgresURLSaysWhetherAndHowTheConnectionIsEncrypted() throws {
    #expect(try PostgresURL("postgres://kv@db.example.org/keyvault?sslmode=verify-full").tls == .verifyFull)
    let pinned = try PostgresURL("postgres://kv@db.example.org/keyvault?sslmode=verify-ca&sslrootcert=/etc/kv/ca.pem")
    #expect(pinned.tls == .verifyCA && pinned.rootCertificate == "/etc/kv/ca.pem")
    #expect(try PostgresURL("postgres://kv@db.example.org/keyvault?sslmode=require").tls == .require)
    // Cleartext only where it crosses no network, or where the URL says so.
    #expect(try PostgresURL("postgres://kv@db.example.org/keyvault?sslmode=disable").tls == .disable)
    #expect(try PostgresURL("postgres://kv@127.0.0.1:5433/keyvault").tls == .disable)
    #expect(try PostgresURL("postgres://kv@localhost/keyvault").tls == .disable)
    #expect(try PostgresURL("postgres://kv@/keyvault?host=/run/postgresql").tls == .disable)
    #expect(try PostgresURL("postgres://kv:pw@db.example.org/keyvault?sslmode=verify-full").description
            == "postgres://kv:…@db.example.org:5432/keyvault?sslmode=verify-full")
}

@Test(arguments: [
    ("postgres://kv@db.example.org/keyvault", "no sslmode"),
    ("postgres://kv@127.example.org/keyvault", "no sslmode"),
    ("postgres://kv@10.0.0.5/keyvault", "no sslmode"),
    ("postgres://kv@db.example.org/keyvault?sslmode=prefer", "fall back"),
    ("postgres://kv@db.example.org/keyvault?sslmode=allow", "fall back"),
    ("postgres://kv@db.example.org/keyvault?sslmode=on", "disable, require, verify-ca or verify-full"),
    ("postgres://kv@/keyvault?host=/run/postgresql&sslmode=require", "unix socket"),
    ("postgres://kv@db.example.org/keyvault?sslmode=require&sslrootcert=/etc/ca.pem", "verify-ca or verify-full"),
    ("postgres://kv@db.example.org/keyvault?sslmode=verify-full&sslrootcert=ca.pem", "absolute"),
])
func aPostgresURLThatWouldCrossANetworkInTheClearIsRefused(_ text: String, _ says: String) {
    #expect {
        try PostgresURL(text)
    } throws: { error in
        (error as? ConfigurationError).map { $0.kind == .setting && $0.message.contains(says) } == true
    }
}

private let tlsURL = ProcessInfo.processInfo.environment["KEYVAULT_TEST_DATABASE_TLS_URL"].flatMap { $0.isEmpty ? nil : $0 }

@Test(.enabled(if: tlsURL != nil, "needs KEYVAULT_TEST_DATABASE_TLS_URL (bash Scripts/with-postgres.sh swift test, with openssl)"))
func aConnectionWithSSLModeVerifyFullIsEncryptedAndChecksTheServer() async throws {
    let url = try PostgresURL(try #require(tlsURL))
    #expect(url.tls == .verifyFull)
    try await PostgresKeyVaultDatabase.migrate(url)
    #expect(try await PostgresKeyVaultDatabase.sessionUsesTLS(url))
    // By name as well as by address: the certificate names both.
    var byName = url
    byName.endpoint = { if case .tcp(_, let port) = url.endpoint { .tcp(host: "localhost", port: port) } else { url.endpoint } }()
    #expect(try await PostgresKeyVaultDatabase.sessionUsesTLS(byName))

    // A server whose certificate the given CA did not sign is refused, with the reason.
    var otherCA = url
    let otherCAFile = try #require(ProcessInfo.processInfo.environment["KEYVAULT_TEST_OTHER_CA"])
    otherCA.rootCertificate = otherCAFile
    await #expect {
        try await PostgresKeyVaultDatabase.migrate(otherCA)
    } throws: { error in
        (error as? ConfigurationError)?.kind == .database
    }
    // `require` encrypts and checks nothing (libpq's meaning): the same server passes.
    var unchecked = otherCA
    unchecked.tls = .require
    unchecked.rootCertificate = nil
    #expect(try await PostgresKeyVaultDatabase.sessionUsesTLS(unchecked))
    // A CA file that is not there is named, before any connection.
    var missing = url
    missing.rootCertificate = "/nonexistent/ca.pem"
    await #expect {
        try await PostgresKeyVaultDatabase.migrate(missing)
    } throws: { error in
        (error as? ConfigurationError).map { $0.kind == .database && $0.message.contains("/nonexistent/ca.pem") } == true
    }
}
