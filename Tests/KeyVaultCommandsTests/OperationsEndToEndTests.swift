import Foundation
import KeyVaultTestSupport
import Testing

/// A private CA made with Debian's openssl CLI, and a certificate it issued for
/// 127.0.0.1 and localhost: the key 0600, as `keyctl serve` wants it.
struct TestCertificates {
    let directory: TemporaryDirectory
    var ca: String { directory.url.appendingPathComponent("ca.pem").path }
    var certificate: String { directory.url.appendingPathComponent("server.pem").path }
    var key: String { directory.url.appendingPathComponent("server.key").path }

    init() async throws {
        directory = try TemporaryDirectory("kv-tls")
        let dir = directory.url.path
        let openssl = URL(fileURLWithPath: "/usr/bin/openssl")
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try await Self.run(openssl, ["req", "-x509"] + ec + ["-keyout", "\(dir)/ca.key", "-out", "\(dir)/ca.pem", "-days", "2",
                               "-subj", "/CN=KeyVault test CA", "-addext", "basicConstraints=critical,CA:TRUE",
                               "-addext", "keyUsage=critical,keyCertSign,cRLSign"])
        try await Self.run(openssl, ["req"] + ec + ["-keyout", "\(dir)/server.key", "-out", "\(dir)/server.csr", "-subj", "/CN=127.0.0.1"])
        try "subjectAltName=IP:127.0.0.1,DNS:localhost\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
            .write(toFile: "\(dir)/server.ext", atomically: true, encoding: .utf8)
        try await Self.run(openssl, ["x509", "-req", "-in", "\(dir)/server.csr", "-CA", "\(dir)/ca.pem", "-CAkey", "\(dir)/ca.key",
                               "-CAcreateserial", "-out", "\(dir)/server.pem", "-days", "2", "-extfile", "\(dir)/server.ext"])
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: "\(dir)/server.key")
    }

    private static func run(_ openssl: URL, _ arguments: [String]) async throws {
        let result = try await runProcess(openssl, arguments)
        guard result.code == 0 else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "openssl \(arguments[0]) failed: \(result.err)"])
        }
    }
}

/// `keyctl serve --tls-cert --tls-key` with a certificate from a private CA: a client
/// given the CA (--ca-cert, or KEYCTL_CA_CERT) creates an account and reads its status
/// over HTTPS; one without it is refused with a clear error and a hint, not a crash.
@Test(.timeLimit(.minutes(10)))
func httpsWorksEndToEndWithAPrivateCA() async throws {
    let tls = try await TestCertificates()
    let server = try await RunningServer(arguments: ["--tls-cert", tls.certificate, "--tls-key", tls.key])
    let url = "https://127.0.0.1:\(server.port)"
    let homes = try TemporaryDirectory("kv-tls-homes")
    let home = homes.url.appendingPathComponent("laptop").path
    let code = homes.url.appendingPathComponent("code").path

    let untrusted = try await keyctl(["init", "--server", url, "--name", "laptop", "--recovery-file", code, "--yes", "--home", home])
    #expect(untrusted.code == 2, "\(untrusted.err)")
    #expect(untrusted.err.contains("keyctl: error: cannot reach the server at \(url)"))
    #expect(untrusted.err.contains("certificate"))
    #expect(untrusted.err.contains("--ca-cert"))
    #expect(!FileManager.default.fileExists(atPath: code))

    let created = try await keyctl(["init", "--server", url, "--name", "laptop", "--recovery-file", code, "--yes", "--home", home,
                              "--json", "--ca-cert", tls.ca])
    #expect(created.code == 0, "\(created.err)")
    let account = try #require(try lastJSON(created.out)["account"] as? String)

    let status = try await keyctl(["status", "--home", home, "--json"], environment: ["KEYCTL_CA_CERT": tls.ca])
    #expect(status.code == 0, "\(status.err)")
    #expect(try lastJSON(status.out)["account"] as? String == account)

    let stranger = try await TestCertificates()
    let wrongCA = try await keyctl(["status", "--home", home, "--ca-cert", stranger.ca])
    #expect(wrongCA.code == 2 && wrongCA.err.contains("issued neither by the CA given with --ca-cert"), "\(wrongCA.err)")
    #expect(wrongCA.err.contains("keyctl: hint:") && !wrongCA.err.contains(".cc:"))

    let bad = try await keyctl(["status", "--home", home, "--ca-cert", tls.key])
    #expect(bad.code == 64 && bad.err.contains("--ca-cert (KEYCTL_CA_CERT)"), "\(bad.err)")
}

/// A wrong TLS setting stops the server at start, naming the setting; a key that
/// other users can read is refused.
@Test(.timeLimit(.minutes(10)))
func badTLSSettingsStopTheServerAtStart() async throws {
    let tls = try await TestCertificates()
    let database = tls.directory.url.appendingPathComponent("keyvault.sqlite").path
    func serve(_ arguments: [String]) async throws -> ProcessResult {
        try await keyctl(["serve", "--port", "0", "--database", database] + arguments)
    }
    let missing = try await serve(["--tls-cert", tls.directory.url.appendingPathComponent("nope.pem").path, "--tls-key", tls.key])
    #expect(missing.code == 64 && missing.err.contains("--tls-cert (KEYVAULT_TLS_CERT)") && missing.err.contains("does not exist"),
            "\(missing.err)")
    let alone = try await serve(["--tls-cert", tls.certificate])
    #expect(alone.code == 64 && alone.err.contains("without --tls-key"), "\(alone.err)")
    let swapped = try await serve(["--tls-cert", tls.key, "--tls-key", tls.key])
    #expect(swapped.code == 64 && swapped.err.contains("holds no PEM certificate"), "\(swapped.err)")

    try FileManager.default.setAttributes([.posixPermissions: 0o644], ofItemAtPath: tls.key)
    let open = try await serve(["--tls-cert", tls.certificate, "--tls-key", tls.key])
    #expect(open.code == 64 && open.err.contains("mode 644") && open.err.contains("chmod 600"), "\(open.err)")
    #expect(!open.err.contains("BEGIN"))
}

/// `keyctl serve backup` copies the database while a server runs on it; a server
/// started on the copy serves the same account to the same device.
@Test(.timeLimit(.minutes(10)))
func aBackupTakenWhileServingStartsAServerWithTheSameAccount() async throws {
    let server = try await RunningServer()
    let homes = try TemporaryDirectory("kv-backup")
    let home = homes.url.appendingPathComponent("laptop").path
    let created = try await keyctl(["init", "--server", server.url, "--name", "laptop", "--recovery-file",
                              homes.url.appendingPathComponent("code").path, "--yes", "--home", home, "--json"])
    #expect(created.code == 0, "\(created.err)")
    let account = try #require(try lastJSON(created.out)["account"] as? String)
    #expect(try await keyctl(["member", "add", "Emma", "--home", home]).code == 0)

    let copies = try TemporaryDirectory("kv-backup-copy")
    let copy = copies.url.appendingPathComponent("keyvault.sqlite").path
    let source = server.directory.appendingPathComponent("keyvault.sqlite").path
    let backup = try await keyctl(["serve", "backup", "--database", source, "--to", copy])
    #expect(backup.code == 0, "\(backup.err)")
    #expect((try FileManager.default.attributesOfItem(atPath: copy)[.posixPermissions] as? Int) == 0o600)
    let again = try await keyctl(["serve", "backup", "--database", source, "--to", copy])
    #expect(again.code == 2 && again.err.contains("already exists"), "\(again.err)")
    let postgres = try await keyctl(["serve", "backup", "--database", "postgres://keyvault@/keyvault?host=/tmp", "--to", copy + "2"])
    #expect(postgres.code == 64 && postgres.err.contains("pg_dump"), "\(postgres.err)")

    let port = server.port
    #expect(await server.stop() == 0)
    let restored = try await RunningServer(arguments: ["--port", "\(port)"], directory: copies.url)
    #expect(restored.port == port)
    let status = try await keyctl(["status", "--home", home, "--json"])
    #expect(status.code == 0, "\(status.err)")
    let result = try lastJSON(status.out)
    #expect(result["account"] as? String == account)
    #expect((result["members"] as? [[String: Any]])?.map { $0["name"] as? String } == ["Emma"])
    _ = await restored.stop()
}
