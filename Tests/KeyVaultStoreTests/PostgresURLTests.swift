import KeyVaultPostgres
import KeyVaultStore
import Testing

@Test func aPostgresURLNamesHostPortUserPasswordAndDatabase() throws {
    let url = try PostgresURL("postgres://kv:s%40cret@db.example.org:6543/keyvault")
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
    ("postgres://kv@/keyvault?sslmode=require", "only query parameter"),
    ("postgres://kv@/keyvault?host=relative", "only query parameter"),
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
    let url = try PostgresURL("postgres://kv:hunter2hunter2@db.example.org/keyvault")
    #expect(!url.description.contains("hunter2"))
    #expect(url.description.contains("kv:…@db.example.org:5432/keyvault"))
}
