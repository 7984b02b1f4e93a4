import ArgumentParser
import Foundation
import KeyVaultStore
import KeyVaultServer
import KeyVaultCommands
import Logging

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the KeyVault service (HTTP or HTTPS, embedded SQLite or PostgreSQL).",
        usage: """
            keyctl serve [--host <host>] [--port <port>] [--database <path-or-url>] [--tls-cert <file> --tls-key <file>] [<options>]
              keyctl serve [--database <path>] backup --to <file>
            """,
        discussion: """
            The service stores each account's chain, key boxes, wrapped keys and
            encrypted attachments, and can open none of them. With no options it
            listens on 127.0.0.1:8080 and keeps its database in ./keyvault.sqlite.

            HTTPS: give --tls-cert and --tls-key (PEM files; the key readable by the
            service's user only, mode 0600, or 0640 for a group such as ssl-cert).
            GET /health/live answers while the process runs, GET /health/ready when
            the database answers too (else 503), GET /metrics in Prometheus' format.
            `keyctl serve backup --to FILE` copies a SQLite database while it serves.
            docs/operations.md: every setting, backups, systemd, nginx, replicas.

            Settings also come from the environment (options win):
            \(ServerConfiguration.environmentVariables.map { "  \($0.name): \($0.help)" }.joined(separator: "\n"))

            Once listening it prints one line, "keyctl: serving on http://HOST:PORT"
            (https:// with TLS).
            Ctrl-C (SIGINT) or SIGTERM stop it gracefully: requests in flight finish
            and the database is closed cleanly.
            """,
        subcommands: [Backup.self])

    @Option(help: "Address to listen on.")
    var host: String?

    @Option(help: "Port to listen on (0 picks a free one).")
    var port: Int?

    @Option(help: ArgumentHelp("SQLite database file, created if missing; or postgres://USER[:PASSWORD]@HOST[:PORT]/DB, or postgres://USER@/DB?host=/socket/dir.",
                               valueName: "path-or-url"))
    var database: String?

    @Option(help: ArgumentHelp("Largest attachment accepted, in bytes (up to 1 TiB; a PUT whole takes up to 64 MiB, larger ones come in chunks).", valueName: "bytes"))
    var maxAttachmentBytes: Int?

    @Option(help: "Log level: trace, debug, info, notice, warning, error, critical.")
    var logLevel: String?

    @Option(name: .customLong("trusted-proxy"),
            help: ArgumentHelp("A reverse proxy (CIDR, IPv4 or IPv6) whose X-Forwarded-For names the client; repeat or separate with commas.",
                               valueName: "cidr"))
    var trustedProxies: [String] = []

    @Option(help: ArgumentHelp("The secret every replica on one database shares (sessions, recovery challenges): 64 hex digits, mode 0600, made here on first start when missing. Give every replica the same file.",
                               valueName: "file"))
    var secretFile: String?

    @Option(name: .customLong("tls-cert"),
            help: ArgumentHelp("Serve HTTPS with this PEM certificate (then its intermediates); needs --tls-key.", valueName: "file"))
    var tlsCertificate: String?

    @Option(name: .customLong("tls-key"),
            help: ArgumentHelp("The certificate's PEM private key, unencrypted, not readable by other users (0600 or 0640).",
                               valueName: "file"))
    var tlsKey: String?

    func run() async throws {
        let console = KeyctlMain.console
        var configuration = ServerConfiguration()
        do {
            try configuration.apply(environment: ProcessInfo.processInfo.environment)
            if let host { configuration.host = host }
            if let port { configuration.port = port }
            if let database { configuration.databasePath = database }
            if let maxAttachmentBytes { configuration.maxAttachmentBytes = maxAttachmentBytes }
            if let logLevel { configuration.logLevel = logLevel }
            if let secretFile { configuration.secretFile = secretFile }
            if !trustedProxies.isEmpty {
                configuration.trustedProxies = try trustedProxies.flatMap { try IPNetwork.list($0, setting: "--trusted-proxy") }
            }
            if let tlsCertificate { configuration.tlsCertificatePath = tlsCertificate }
            if let tlsKey { configuration.tlsKeyPath = tlsKey }
            try configuration.validate()
        } catch let error as ConfigurationError {
            throw KeyctlError(error, configuration)
        }
        var logger = Logger(label: "keyvault") { JSONLogHandler(label: $0) }
        logger.logLevel = Logger.Level(rawValue: configuration.logLevel) ?? .info
        let host = configuration.host
        let scheme = configuration.servesTLS ? "https" : "http"
        let path = (try? configuration.databaseLocation().description) ?? ""  // never the password
        do {
            try await runServer(configuration, logger: logger) { port in
                console.write("keyctl: serving on \(scheme)://\(host):\(port) (database \(path))\n")
            }
        } catch let error as ConfigurationError {
            throw KeyctlError(error, configuration)
        }
    }
}

extension Serve {
    struct Backup: ParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Copy the service's SQLite database, consistently, while it serves.",
            usage: "keyctl serve [--database <path>] backup --to <file>",
            discussion: """
                SQLite's online backup copies one consistent snapshot of the database
                (every commit made before it began), whether or not a service is running
                on it. The copy is written beside FILE under another name (mode 0600),
                checked, then renamed to FILE, which must not exist yet. Start a service
                from it with `keyctl serve --database FILE`.

                The database is serve's --database (before or after `backup`), else
                KEYVAULT_DATABASE, else ./keyvault.sqlite. A PostgreSQL database is
                backed up with pg_dump: docs/operations.md.
                """)

        /// `--database` is serve's own option (given before or after `backup`).
        @ParentCommand var serve: Serve

        @Option(name: .customLong("to"), help: ArgumentHelp("Where to write the copy: a file that does not exist yet.", valueName: "file"))
        var destination: String

        func run() throws {
            var configuration = ServerConfiguration()
            if let value = ProcessInfo.processInfo.environment["KEYVAULT_DATABASE"] { configuration.databasePath = value }
            if let database = serve.database { configuration.databasePath = database }
            do {
                try backupDatabase(configuration, to: destination)
            } catch let error as ConfigurationError {
                throw KeyctlError(error, configuration, backingUpTo: destination)
            }
            KeyctlMain.console.write("keyctl: copied \(configuration.databasePath) to \(destination)\n")
        }
    }
}

extension KeyctlError {
    /// The one place a service-side configuration error becomes keyctl's: its message,
    /// hint and exit code by kind (a setting: usage; the database or a backup: I/O).
    init(_ error: ConfigurationError, _ configuration: ServerConfiguration, backingUpTo destination: String? = nil) {
        switch error.kind {
        case .setting:
            self.init(.invalidInput, "\(destination == nil ? "bad configuration" : "cannot back up"): \(error.message)",
                      hint: destination == nil ? "see `keyctl serve --help` for the settings and their ranges" : "see `keyctl serve backup --help`",
                      exitCode: .usage)
        case .database:
            let postgres = (try? configuration.databaseLocation())?.isPostgres == true
            self.init(.io, "cannot open the database \(error.database ?? "") (--database or KEYVAULT_DATABASE): \(error.message)",
                      hint: postgres ? "check that PostgreSQL runs there and that the user, its password and the database are right"
                                     : "check that the directory exists and is writable")
        case .backup:
            self.init(.io, "the backup failed: \(error.message)",
                      hint: "nothing was written at \(destination ?? "the destination"); check the paths and free space, then run it again")
        case .listen:
            self.init(.io, "cannot listen: \(error.message)",
                      hint: "stop what holds the port, or pick another with --port (KEYVAULT_PORT); nothing was created", exitCode: .unavailable)
        }
    }
}
