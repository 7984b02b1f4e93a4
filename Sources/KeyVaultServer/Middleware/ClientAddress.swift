import Foundation
import KeyVaultStore
import HTTPTypes
import Hummingbird
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IPv4 or IPv6 network: an address and a prefix length (`10.0.0.0/8`,
/// `2001:db8::/32`; a bare address is the one address).
package struct IPNetwork: Sendable, Equatable, CustomStringConvertible {
    /// 4 or 16 bytes, the bits past the prefix cleared.
    let bytes: [UInt8]
    let prefix: Int

    /// nil unless `text` is an address with an optional `/prefix` in range.
    package init?(_ text: String) {
        let parts = text.split(separator: "/", maxSplits: 1, omittingEmptySubsequences: false)
        guard let address = Self.parse(String(parts[0])) else { return nil }
        let bits = address.count * 8
        var prefix = bits
        if parts.count == 2 {
            guard !parts[1].isEmpty, parts[1].allSatisfy({ $0.isASCII && $0.isNumber }), let value = Int(parts[1]),
                  (0...bits).contains(value) else { return nil }
            prefix = value
        }
        self.prefix = prefix
        bytes = Self.masked(address, prefix)
    }

    package var description: String { "\(Self.format(bytes))/\(prefix)" }

    /// The key a client is counted under by rate limits: an IPv4 address (also one
    /// mapped into IPv6, as a server bound to `::` sees IPv4 peers), else the IPv6 /56
    /// (what an ISP commonly gives one customer: a host has a whole /64, a home many).
    /// Text that is no address ("local", "unparsed:…") is its own key.
    static func bucket(_ address: String) -> String {
        guard let bytes = parse(address) else { return address }
        return bytes.count == 4 ? format(bytes) : format(masked(bytes, 56)) + "/56"
    }

    /// Whether `address` (as ``parse(_:)`` gives it) is in this network.
    func contains(_ address: [UInt8]) -> Bool {
        address.count == bytes.count && Self.masked(address, prefix) == bytes
    }

    /// The address's bytes: 4 for IPv4 (also an IPv4-mapped IPv6 address), 16 for IPv6.
    static func parse(_ text: String) -> [UInt8]? {
        guard !text.isEmpty, text.utf8.count <= 64 else { return nil }
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 { return withUnsafeBytes(of: &v4) { Array($0) } }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xff, bytes[11] == 0xff { return Array(bytes[12...]) }
        return bytes
    }

    static func format(_ bytes: [UInt8]) -> String {
        var buffer = [CChar](repeating: 0, count: 64)
        var copy = bytes
        let family = bytes.count == 4 ? AF_INET : AF_INET6
        guard inet_ntop(family, &copy, &buffer, socklen_t(buffer.count)) != nil else { return "?" }
        return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private static func masked(_ address: [UInt8], _ prefix: Int) -> [UInt8] {
        address.enumerated().map { index, byte in
            let kept = max(0, min(8, prefix - index * 8))
            return kept == 8 ? byte : byte & UInt8(truncatingIfNeeded: 0xff << (8 - kept))
        }
    }

    /// A comma-separated list of networks.
    ///
    /// - Throws: `ConfigurationError` naming `setting` and the value it cannot read.
    package static func list(_ text: String, setting: String) throws -> [IPNetwork] {
        try text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }.map {
            guard let network = IPNetwork($0) else {
                throw ConfigurationError("\(setting): '\($0)' is not an IPv4 or IPv6 address with an optional /prefix (like 10.0.0.0/8 or fd00::/8)")
            }
            return network
        }
    }
}

/// The client's address for rate limits. Behind a reverse proxy every request comes
/// from the proxy, and a limit per peer address would then be one limit for all.
/// So when the peer is a trusted proxy, the client is the rightmost address of
/// `X-Forwarded-For` that is not itself a trusted proxy: entries to its left were
/// written by the client and prove nothing. From any other peer the header is
/// ignored, since anyone can send it.
enum ClientAddress {
    static let forwardedFor = HTTPField.Name("X-Forwarded-For")!

    static func resolve(peer: String?, forwardedFor values: [String], trusted: [IPNetwork]) -> String {
        guard let peer, let peerBytes = IPNetwork.parse(peer) else { return peer ?? "local" }
        func isTrusted(_ bytes: [UInt8]) -> Bool { trusted.contains { $0.contains(bytes) } }
        guard isTrusted(peerBytes) else { return peer }
        var client = peer
        for entry in values.flatMap({ $0.split(separator: ",") }).reversed() {
            let text = entry.trimmingCharacters(in: .whitespaces)
            // Some proxies append "IP:port" or "[v6]:port". Anything else that is not an
            // address is a client of its own (bounded text), never the proxy: falling back
            // to the proxy's address would put every client behind it in one bucket.
            guard let bytes = IPNetwork.parse(text) ?? IPNetwork.parse(Self.withoutPort(text)) else {
                return "unparsed:" + String(text.prefix(64))
            }
            client = IPNetwork.format(bytes)
            if !isTrusted(bytes) { return client }
        }
        return client
    }

    /// "192.0.2.1:443" → "192.0.2.1", "[2001:db8::1]:443" → "2001:db8::1"; else the text.
    static func withoutPort(_ text: String) -> String {
        if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
            return String(text[text.index(after: text.startIndex)..<close])
        }
        if text.filter({ $0 == ":" }).count == 1, let colon = text.firstIndex(of: ":") { return String(text[..<colon]) }
        return text
    }
}

/// Sets the context's client address from the trusted proxies' header (see ``ClientAddress``).
struct ClientAddressMiddleware: RouterMiddleware {
    typealias Context = KeyVaultRequestContext
    let trusted: [IPNetwork]

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        var context = context
        context.clientAddress = ClientAddress.resolve(peer: context.peerAddress, forwardedFor: request.headers[values: ClientAddress.forwardedFor],
                                                      trusted: trusted)
        return try await next(request, context)
    }
}
