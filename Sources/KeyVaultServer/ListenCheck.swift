#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import KeyVaultStore

/// Whether the service can listen where it is told to, found before it creates a
/// database or a secret file: a host this machine does not have, or a port another
/// process holds, stops it at once with the usual one-line error.
enum ListenCheck {
    /// Binds `host:port` once (as the server will, with SO_REUSEADDR) and lets go.
    ///
    /// - Throws: ``ConfigurationError`` `setting` for a host that does not resolve or
    ///   is not this machine's; `listen` for a port in use or one that needs privileges.
    static func check(host: String, port: Int) throws {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var found: UnsafeMutablePointer<addrinfo>?
        let resolved = getaddrinfo(host, String(port), &hints, &found)
        guard resolved == 0, let address = found else {
            throw ConfigurationError("--host \(host) (KEYVAULT_HOST) is not an address or name of this machine: \(String(cString: gai_strerror(resolved)))")
        }
        defer { freeaddrinfo(found) }
        let fd = socket(address.pointee.ai_family, address.pointee.ai_socktype, address.pointee.ai_protocol)
        guard fd >= 0 else { return }  // no socket to try with: the server itself says why
        defer { close(fd) }
        var one: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(fd, address.pointee.ai_addr, address.pointee.ai_addrlen) != 0 else { return }
        let reason = errno
        switch reason {
        case EADDRINUSE:
            throw ConfigurationError("port \(port) on \(host) is in use (another KeyVault service, or another program)", kind: .listen)
        case EADDRNOTAVAIL:
            throw ConfigurationError("--host \(host) (KEYVAULT_HOST) is not an address of this machine")
        case EACCES:
            throw ConfigurationError("port \(port) needs privileges to listen on (it is below 1024)", kind: .listen)
        default:
            throw ConfigurationError("cannot listen on \(host):\(port): \(String(cString: strerror(reason)))", kind: .listen)
        }
    }
}
