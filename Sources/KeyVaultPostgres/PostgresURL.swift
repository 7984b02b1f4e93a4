import Foundation
import KeyVaultStore

/// Where a PostgreSQL database is: `postgres://USER[:PASSWORD]@HOST[:PORT]/DB`, or on a
/// unix socket `postgres://USER[:PASSWORD]@/DB?host=/socket/dir` (port 5432 unless given).
/// `postgresql://` is accepted too. Parts are percent-decoded.
///
/// Over TCP, `sslmode` says whether the connection is encrypted, with libpq's names:
/// `disable`, `require` (encrypted, the server's certificate not checked),
/// `verify-ca` (checked against the CA) or `verify-full` (and its name against the
/// host); `sslrootcert=/path/ca.pem` names the CA (else the system's). `prefer` and
/// `allow` are refused: anyone on the path could make them fall back to cleartext.
/// Without `sslmode`, TCP to this machine is unencrypted and TCP to another host is
/// refused, so that no connection crosses a network in the clear unless the URL says
/// `sslmode=disable`. A unix socket has no TLS.
package struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    package enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        /// The directory holding the server's socket, and its port (the socket is `.s.PGSQL.<port>` there).
        case socket(directory: String, port: Int)
    }

    /// TLS to the server (`sslmode`).
    package enum TLSMode: String, Sendable, Equatable {
        case disable
        case require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    package var endpoint: Endpoint
    package var user: String
    package var password: String?
    package var database: String
    package var tls: TLSMode
    /// The CA certificate file (PEM) that `verify-ca` and `verify-full` check against; nil: the system's.
    package var rootCertificate: String?

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
        var socketDirectory: String?, mode: String?, rootCertificate: String?
        for item in components.queryItems ?? [] {
            switch (item.name, item.value) {
            case ("host", let value?) where value.hasPrefix("/"): socketDirectory = value
            case ("sslmode", let value?): mode = value
            case ("sslrootcert", let value?) where value.hasPrefix("/"): rootCertificate = value
            default:
                throw ConfigurationError("the query parameters accepted are host=/socket/directory, sslmode=MODE and sslrootcert=/path/ca.pem (absolute paths)")
            }
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
        self.rootCertificate = rootCertificate
        tls = try Self.tlsMode(mode, endpoint: endpoint, rootCertificate: rootCertificate)
    }

    private static func tlsMode(_ mode: String?, endpoint: Endpoint, rootCertificate: String?) throws -> TLSMode {
        let tls: TLSMode
        switch (mode, endpoint) {
        case (nil, .socket): tls = .disable
        case (nil, .tcp(let host, _)):
            guard isLoopback(host) else {
                throw ConfigurationError("it gives no sslmode: over TCP to \(host) the connection would not be encrypted; add sslmode=verify-full (with sslrootcert=/path/ca.pem for a private CA), or sslmode=disable to accept that")
            }
            tls = .disable
        case ("prefer"?, _), ("allow"?, _):
            throw ConfigurationError("sslmode=\(mode!) is refused: whoever is on the path could make it fall back to an unencrypted connection; use require, verify-ca or verify-full (or disable)")
        case (let text?, _):
            guard let known = TLSMode(rawValue: text) else {
                throw ConfigurationError("sslmode is disable, require, verify-ca or verify-full")
            }
            tls = known
        }
        if case .socket = endpoint, tls != .disable {
            throw ConfigurationError("sslmode=\(tls.rawValue) names TLS, which PostgreSQL has no use for on a unix socket: leave sslmode out")
        }
        if rootCertificate != nil, tls != .verifyCA, tls != .verifyFull {
            throw ConfigurationError("sslrootcert is the CA that sslmode=verify-ca or verify-full checks the server against: give one of those")
        }
        return tls
    }

    /// This machine: 127.0.0.0/8, ::1 or localhost.
    static func isLoopback(_ host: String) -> Bool {
        let parts = host.split(separator: ".", omittingEmptySubsequences: false)
        return host == "localhost" || host == "::1" || host == "[::1]"
            || (parts.count == 4 && parts.allSatisfy { UInt8($0) != nil } && parts[0] == "127")
    }

    /// The URL without its password, for logs and messages.
    package var description: String {
        let credentials = user + (password == nil ? "" : ":…")
        switch endpoint {
        case .tcp(let host, let port):
            return "postgres://\(credentials)@\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)" + (tls == .disable ? "" : "?sslmode=\(tls.rawValue)")
        case .socket(let directory, let port): return "postgres://\(credentials)@/\(database)?host=\(directory) (port \(port))"
        }
    }
}


