import Foundation
import KeyVaultStore

/// Where a PostgreSQL database is: `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`, or on a
/// unix socket `postgres://USER[:PASSWORD]@/DB?host=/socket/dir` (port 5432 unless given).
/// `postgresql://` is accepted too. Parts are percent-decoded.
package struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    package enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        /// The directory holding the server's socket, and its port (the socket is `.s.PGSQL.<port>` there).
        case socket(directory: String, port: Int)
    }

    package var endpoint: Endpoint
    package var user: String
    package var password: String?
    package var database: String

    /// Whether `text` is meant as a PostgreSQL URL (rather than a SQLite path).
    package static func isURL(_ text: String) -> Bool {
        text.hasPrefix("postgres://") || text.hasPrefix("postgresql://")
    }

    /// - Throws: ``ConfigurationError`` (kind `setting`) saying which part is wrong (never quoting the password).
    package init(_ text: String) throws {
        guard Self.isURL(text) else { throw ConfigurationError("it does not start with postgres:// or postgresql://") }
        guard let components = URLComponents(string: text) else {
            throw ConfigurationError("it is not a URL of the form postgres://USER[:PASSWORD]@HOST[:PORT]/DB")
        }
        guard let user = components.user, !user.isEmpty else { throw ConfigurationError("it names no user (postgres://USER@…)") }
        let database = String(components.path.drop { $0 == "/" })
        guard !database.isEmpty, !database.contains("/") else { throw ConfigurationError("it names no database (…/DB at the end of the path)") }
        if let port = components.port, !(1...65535).contains(port) { throw ConfigurationError("port \(port) is not between 1 and 65535") }
        let port = components.port ?? 5432
        var socketDirectory: String?
        for item in components.queryItems ?? [] {
            guard item.name == "host", let value = item.value, value.hasPrefix("/") else {
                throw ConfigurationError("the only query parameter accepted is host=/socket/directory (an absolute path)")
            }
            socketDirectory = value
        }
        let host = components.host ?? ""
        switch (host.isEmpty, socketDirectory) {
        case (true, let directory?): endpoint = .socket(directory: directory, port: port)
        case (false, nil): endpoint = .tcp(host: host, port: port)
        case (true, nil): throw ConfigurationError("it names no host (postgres://USER@HOST/DB, or postgres://USER@/DB?host=/socket/dir)")
        case (false, _?): throw ConfigurationError("it names both a host and a socket directory")
        }
        self.user = user
        self.password = components.password
        self.database = database
    }

    /// The URL without its password, for logs and messages.
    package var description: String {
        let credentials = user + (password == nil ? "" : ":…")
        switch endpoint {
        case .tcp(let host, let port): return "postgres://\(credentials)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
        case .socket(let directory, let port): return "postgres://\(credentials)@/\(database)?host=\(directory) (port \(port))"
        }
    }
}


