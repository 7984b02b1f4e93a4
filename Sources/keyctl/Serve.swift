import ArgumentParser
import Foundation
import KeyVaultServer
import KeyVaultCommands
import Logging

struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the KeyVault service (HTTP, embedded SQLite or PostgreSQL).",
        discussion: """
            The service stores each account's chain, key boxes, wrapped keys and
            encrypted attachments, and can open none of them. With no options it
            listens on 127.0.0.1:8080 and keeps its database in ./keyvault.sqlite.

            Settings also come from the environment (options win):
            \(ServerConfiguration.environmentVariables.map { "  \($0.name): \($0.help)" }.joined(separator: "\n"))

            Once listening it prints one line, "keyctl: serving on http://HOST:PORT".
            Ctrl-C (SIGINT) or SIGTERM stop it gracefully: requests in flight finish
            and the database is closed cleanly.
            """)

    @Option(help: "Address to listen on.")
    var host: String?

    @Option(help: "Port to listen on (0 picks a free one).")
    var port: Int?

    @Option(help: ArgumentHelp("SQLite database file, created if missing; or postgres://USER[:PASSWORD]@HOST[:PORT]/DB, or postgres://USER@/DB?host=/socket/dir.",
                               valueName: "path-or-url"))
    var database: String?

    @Option(help: ArgumentHelp("Largest attachment accepted, in bytes.", valueName: "bytes"))
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
            try configuration.validate()
        } catch let error as ConfigurationError {
            throw KeyctlError(.invalidInput, "bad configuration: \(error.message)",
                              hint: "see `keyctl serve --help` for the settings and their ranges", exitCode: .usage)
        }
        var logger = Logger(label: "keyvault") { JSONLogHandler(label: $0) }
        logger.logLevel = Logger.Level(rawValue: configuration.logLevel) ?? .info
        let host = configuration.host
        let path = (try? configuration.databaseLocation().description) ?? ""  // never the password
        do {
            try await runServer(configuration, logger: logger) { port in
                console.write("keyctl: serving on http://\(host):\(port) (database \(path))\n")
            }
        } catch StartError.configuration(let message) {
            throw KeyctlError(.invalidInput, "bad configuration: \(message)",
                              hint: "see `keyctl serve --help` for the settings and their ranges", exitCode: .usage)
        } catch StartError.database(let path, let reason) {
            let postgres = (try? configuration.databaseLocation())?.isPostgres == true
            throw KeyctlError(.io, "cannot open the database \(path) (--database or KEYVAULT_DATABASE): \(reason)",
                              hint: postgres ? "check that PostgreSQL runs there and that the user, its password and the database are right"
                                             : "check that the directory exists and is writable")
        }
    }
}
