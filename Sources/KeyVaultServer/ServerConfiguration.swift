import Foundation
import KeyVaultStore
import KeyVaultPostgres

/// How `keyctl serve` runs. Built from options and `KEYVAULT_*` environment
/// variables, and validated before the server starts: a bad value stops it with a
/// message that names the setting.
package struct ServerConfiguration: Sendable {
    package var host = "127.0.0.1"
    package var port = 8080
    /// SQLite database file (WAL), created if missing; or a PostgreSQL URL,
    /// `postgres://USER[:PASSWORD]@HOST[:PORT]/DB` or `postgres://USER@/DB?host=/socket/dir`.
    package var databasePath = "keyvault.sqlite"
    /// A file holding the PostgreSQL password (one trailing newline is ignored), so that
    /// it need not stand in the URL, where `ps` shows it.
    package var databasePasswordFile: String?
    /// Largest attachment accepted, in bytes.
    package var maxAttachmentBytes = 10 * 1024 * 1024
    /// Largest JSON body accepted, in bytes.
    package var maxJSONBytes = 1024 * 1024
    /// Accepted clock difference for signed requests, in seconds.
    package var signatureWindowSeconds: Int64 = 300
    /// How long a connection may send nothing (before a request, in the middle of its
    /// body, or between requests) before it is closed. Answers being written are not cut.
    package var idleTimeoutSeconds = 60
    /// When set, creating an account needs `KeyVault-Invite: <token>`.
    package var inviteToken: String?
    /// A bearer token that opens GET /metrics to clients off this machine
    /// (`KEYVAULT_METRICS_TOKEN`, at least 16 characters). Without it, /metrics answers
    /// loopback clients only (as seen through trusted proxies).
    package var metricsToken: String?
    /// swift-log level: trace, debug, info, notice, warning, error, critical.
    package var logLevel = "info"
    /// Reverse proxies whose `X-Forwarded-For` names the client (for rate limits);
    /// from any other peer the header is ignored.
    package var trustedProxies: [IPNetwork] = []
    /// The secret replicas share (``ServerSecret``): 64 hex digits, mode 0600, made on
    /// first start when missing. Unset: one of this process alone.
    package var secretFile: String?
    /// HTTPS: a PEM file with the server's certificate (then its intermediates), and a
    /// PEM file with its private key. Both or neither; neither serves plain HTTP.
    package var tlsCertificatePath: String?
    package var tlsKeyPath: String?

    package init() {}

    /// The environment variables read, with what they set.
    package static let environmentVariables: [(name: String, help: String)] = [
        ("KEYVAULT_HOST", "address to listen on (default 127.0.0.1)"),
        ("KEYVAULT_PORT", "port, 0-65535 (default 8080; 0 picks a free one)"),
        ("KEYVAULT_DATABASE", "SQLite file (default ./keyvault.sqlite), or postgres://USER[:PASSWORD]@HOST[:PORT]/DB or postgres://USER@/DB?host=/socket/dir"),
        ("KEYVAULT_DATABASE_PASSWORD_FILE", "file holding the PostgreSQL password (instead of putting it in the URL)"),
        ("KEYVAULT_MAX_ATTACHMENT_BYTES", "largest attachment (default 10485760)"),
        ("KEYVAULT_SIGNATURE_WINDOW", "accepted clock difference in seconds (default 300)"),
        ("KEYVAULT_IDLE_TIMEOUT", "seconds a connection may send nothing, mid-request or between requests, before it is closed (default 60)"),
        ("KEYVAULT_INVITE_TOKEN", "if set, account creation needs this token (KeyVault-Invite header)"),
        ("KEYVAULT_METRICS_TOKEN", "if set, GET /metrics also answers clients off this machine that send it as a bearer token"),
        ("KEYVAULT_LOG_LEVEL", "trace, debug, info, notice, warning, error or critical (default info)"),
        ("KEYVAULT_TRUSTED_PROXIES", "comma-separated CIDRs of reverse proxies whose X-Forwarded-For is believed (default none)"),
        ("KEYVAULT_SECRET_FILE", "the secret every replica shares (64 hex digits, mode 0600; made on first start when missing). Unset: sessions end with the process"),
        ("KEYVAULT_TLS_CERT", "PEM certificate chain for HTTPS (with KEYVAULT_TLS_KEY; default none: plain HTTP)"),
        ("KEYVAULT_TLS_KEY", "PEM private key for HTTPS, readable by the service's user only (mode 0600 or 0640)"),
    ]

    /// Applies `KEYVAULT_*` variables from `environment`.
    ///
    /// - Throws: `ConfigurationError` naming the variable and what it accepts.
    package mutating func apply(environment: [String: String]) throws {
        if let value = environment["KEYVAULT_HOST"] { host = value }
        if let value = environment["KEYVAULT_PORT"] { port = try Self.integer(value, "KEYVAULT_PORT", 0...65535) }
        if let value = environment["KEYVAULT_DATABASE"] { databasePath = value }
        if let value = environment["KEYVAULT_DATABASE_PASSWORD_FILE"] { databasePasswordFile = value }
        if let value = environment["KEYVAULT_MAX_ATTACHMENT_BYTES"] {
            maxAttachmentBytes = try Self.integer(value, "KEYVAULT_MAX_ATTACHMENT_BYTES", Self.attachmentLimits)
        }
        if let value = environment["KEYVAULT_SIGNATURE_WINDOW"] {
            signatureWindowSeconds = Int64(try Self.integer(value, "KEYVAULT_SIGNATURE_WINDOW", 10...3600))
        }
        if let value = environment["KEYVAULT_IDLE_TIMEOUT"] {
            idleTimeoutSeconds = try Self.integer(value, "KEYVAULT_IDLE_TIMEOUT", 1...3600)
        }
        if let value = environment["KEYVAULT_INVITE_TOKEN"] { inviteToken = value }
        if let value = environment["KEYVAULT_METRICS_TOKEN"] { metricsToken = value }
        if let value = environment["KEYVAULT_LOG_LEVEL"] { logLevel = value }
        if let value = environment["KEYVAULT_TRUSTED_PROXIES"] {
            trustedProxies = try IPNetwork.list(value, setting: "KEYVAULT_TRUSTED_PROXIES")
        }
        if let value = environment["KEYVAULT_SECRET_FILE"] { secretFile = value }
        if let value = environment["KEYVAULT_TLS_CERT"] { tlsCertificatePath = value }
        if let value = environment["KEYVAULT_TLS_KEY"] { tlsKeyPath = value }
    }

    /// The secret of ``secretFile`` (read, or made there), or one of this process alone.
    ///
    /// - Throws: `ConfigurationError` naming the file.
    package func secret() throws -> ServerSecret {
        guard let secretFile else { return .ephemeral() }
        guard !secretFile.isEmpty else { throw ConfigurationError("the secret file path (--secret-file or KEYVAULT_SECRET_FILE) is empty") }
        do {
            return try ServerSecret.load(orCreateAt: secretFile)
        } catch let error as ConfigurationError {
            throw ConfigurationError("--secret-file / KEYVAULT_SECRET_FILE: \(error.message)")
        }
    }

    /// - Throws: `ConfigurationError` for any value out of range.
    /// What `--max-attachment-bytes` may be: up to 1 TiB, since attachments pass in
    /// chunks (an upload in chunks holds one chunk at a time on either side).
    package static let attachmentLimits = 1...(1 << 40)

    /// The largest object a single PUT takes whole (then it is in memory at once):
    /// larger ones go in chunks (docs/api.md, "Attachments in chunks").
    package var maxWholeAttachmentBytes: Int { min(maxAttachmentBytes, 64 << 20) }

    package func validate() throws {
        guard !host.isEmpty else { throw ConfigurationError("the host is empty") }
        guard (0...65535).contains(port) else { throw ConfigurationError("port \(port) is not between 0 and 65535") }
        guard !databasePath.isEmpty else { throw ConfigurationError("the database path is empty") }
        guard Self.attachmentLimits.contains(maxAttachmentBytes) else {
            throw ConfigurationError("the attachment limit must be between 1 byte and 1 TiB")
        }
        guard ["trace", "debug", "info", "notice", "warning", "error", "critical"].contains(logLevel) else {
            throw ConfigurationError("log level '\(logLevel)' is not one of trace, debug, info, notice, warning, error, critical")
        }
        if let inviteToken, inviteToken.utf8.count < 16 {
            throw ConfigurationError("KEYVAULT_INVITE_TOKEN must be at least 16 characters")
        }
        if let metricsToken, metricsToken.utf8.count < 16 {
            throw ConfigurationError("KEYVAULT_METRICS_TOKEN must be at least 16 characters")
        }
        // Replicas that drew secrets of their own would refuse each other's sessions and
        // challenges (and count the owner's proofs as failures): one file for all of them.
        let location = try databaseLocation()
        if location.isPostgres, secretFile == nil {
            throw ConfigurationError("a PostgreSQL database is for replicas, which share one secret: give each the same --secret-file (KEYVAULT_SECRET_FILE); it is made on the first start when missing")
        }
        if case .sqlite(let path) = location {
            let directory = URL(fileURLWithPath: path).deletingLastPathComponent().path
            var isDirectory: ObjCBool = false
            guard FileManager.default.fileExists(atPath: directory, isDirectory: &isDirectory), isDirectory.boolValue else {
                throw ConfigurationError("the database directory \(directory) does not exist")
            }
        }
        try validateTLSFiles()
    }

    /// The database the setting names: a PostgreSQL URL, else a SQLite file.
    ///
    /// - Throws: `ConfigurationError` naming the setting for a PostgreSQL URL that does not parse.
    package func databaseLocation() throws -> DatabaseLocation {
        guard PostgresURL.isURL(databasePath) else {
            // A mistyped URL is not a file name to quote back: it may hold a password.
            if databasePath.lowercased().hasPrefix("postgres") || databasePath.contains("://") {
                throw ConfigurationError("the database setting (--database or KEYVAULT_DATABASE) looks like a URL but does not start with postgres:// or postgresql://; it is not quoted here, since it may hold a password")
            }
            guard databasePasswordFile == nil else {
                throw ConfigurationError("KEYVAULT_DATABASE_PASSWORD_FILE is set, but the database is a SQLite file, which has no password")
            }
            return .sqlite(path: databasePath)
        }
        var url: PostgresURL
        do {
            url = try PostgresURL(databasePath)
        } catch let error as ConfigurationError {
            throw ConfigurationError("the database URL (--database or KEYVAULT_DATABASE) is not usable: \(error.message)")
        }
        if let databasePasswordFile {
            guard url.password == nil else {
                throw ConfigurationError("the database URL has a password and KEYVAULT_DATABASE_PASSWORD_FILE is set: give it once")
            }
            guard var password = try? String(contentsOfFile: databasePasswordFile, encoding: .utf8) else {
                throw ConfigurationError("KEYVAULT_DATABASE_PASSWORD_FILE: cannot read \(databasePasswordFile) as UTF-8 text")
            }
            if password.hasSuffix("\n") { password.removeLast() }
            guard !password.isEmpty else { throw ConfigurationError("KEYVAULT_DATABASE_PASSWORD_FILE: \(databasePasswordFile) is empty") }
            url.password = password
        }
        return .postgres(url)
    }

    private static func integer(_ text: String, _ name: String, _ range: ClosedRange<Int>) throws -> Int {
        guard let value = Int(text), range.contains(value) else {
            throw ConfigurationError("\(name)=\(text) is not a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return value
    }
}

/// Where the service keeps its data.
package enum DatabaseLocation: Sendable, Equatable {
    case sqlite(path: String)
    case postgres(PostgresURL)

    package var isPostgres: Bool {
        if case .postgres = self { true } else { false }
    }

    /// For messages and logs: never the password.
    package var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let url): url.description
        }
    }
}
