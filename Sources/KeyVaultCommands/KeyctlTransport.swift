import AsyncHTTPClient
import Foundation
import KeyVault
import NIOCore
import NIOHTTP1
import NIOSSL

/// keyctl's transport: AsyncHTTPClient on swift-nio (and swift-nio-ssl for HTTPS),
/// one client per process (per CA trusted), so that connections are kept open and
/// used again.
///
/// Not URLSession, for two reasons. On Linux, swift-corelibs-foundation's URLSession
/// moves a request body through libcurl in small pieces with a thread hop each: a
/// 1 MiB attachment chunk cost keyctl more CPU in the kernel than in its own work
/// (BENCHMARKS.md, "Attachments of 1 GiB"). And it cannot trust a CA beside the
/// system's (`--ca-cert`, `KEYCTL_CA_CERT`): it hands libcurl the system bundle and
/// reads `URLSessionCertificateAuthorityInfoFile` on Android only (EasyHandle.swift,
/// `setCARootBundlePath`), and passes no server-trust challenge to a delegate;
/// swift-nio-ssl's `additionalTrustRoots` adds the CA to the system's roots. It keeps
/// the duties of ``URLSessionTransport``: plain HTTP only to loopback unless allowed,
/// no redirects followed, and an answer read only up to the exchange's `maxReplyBytes`.
struct KeyctlTransport: HTTPTransport {
    let baseURL: URL
    let allowInsecureHTTP: Bool
    private let client: HTTPClient
    private static let timeout: TimeAmount = .seconds(30)

    /// - Parameter certificateAuthority: a PEM file of a CA to trust beside the system's.
    /// - Throws: `invalid_input` (exit 64) when `certificateAuthority` holds no PEM certificate.
    init(baseURL: URL, certificateAuthority path: String?, allowInsecureHTTP: Bool) throws {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.minimumTLSVersion = .tlsv12
        if let path {
            guard let certificates = try? NIOSSLCertificate.fromPEMFile(path), !certificates.isEmpty else {
                throw KeyctlError(.invalidInput, "--ca-cert (KEYCTL_CA_CERT): \(path) is not a readable PEM certificate file",
                                  hint: "give the CA's certificate in PEM form (-----BEGIN CERTIFICATE-----), e.g. the ca.pem your server's certificate was issued from",
                                  exitCode: .usage)
            }
            tls.additionalTrustRoots = [.certificates(certificates)]
        }
        self.baseURL = baseURL
        self.allowInsecureHTTP = allowInsecureHTTP
        // Read timeout: 30 s without a byte (as URLSession's request timeout), not 30 s for
        // a whole answer, which a large one on a slow network may take.
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow,
                                                     timeout: .init(connect: Self.timeout, read: Self.timeout))
        // Fail at the first refused connection or handshake, as URLSession does: by
        // default AsyncHTTPClient retries until the connect timeout (30 s of waiting for
        // a certificate that will not verify).
        configuration.connectionPool.retryConnectionEstablishment = false
        client = Self.client(trusting: path, configuration)
    }

    func send(_ exchange: HTTPExchange) async throws -> HTTPReply {
        try URLSessionTransport.checkCleartext(baseURL, allowInsecureHTTP: allowInsecureHTTP)
        return try await send(exchange, with: client)
    }

    private func send(_ exchange: HTTPExchange, with client: HTTPClient) async throws -> HTTPReply {
        let base = baseURL.absoluteString
        var request = HTTPClientRequest(url: (base.hasSuffix("/") ? String(base.dropLast()) : base) + exchange.target)
        request.method = HTTPMethod(rawValue: exchange.method)
        for (name, value) in exchange.headers { request.headers.add(name: name, value: value) }
        if !exchange.body.isEmpty { request.body = .bytes(ByteBuffer(bytes: exchange.body)) }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, deadline: .distantFuture)
        } catch {
            throw KeyVaultError(.network, "cannot reach the server at \(baseURL.absoluteString): \(Self.describe(error))")
        }
        if (300..<400).contains(Int(response.status.code)), response.headers.contains(name: "location") {
            throw KeyVaultError(.badResponse, "the server at \(baseURL.absoluteString) answered with a redirect, which KeyVault never sends")
        }
        let limit = max(0, exchange.maxReplyBytes)
        let tooLarge = KeyVaultError.tooLarge(limit, "\(exchange.method) \(exchange.target.prefix { $0 != "?" })")
        var body = [UInt8]()
        if let declared = response.headers.first(name: "content-length").flatMap(Int.init), declared > 0 {
            // A length over the limit is refused from the headers alone, as URLSessionTransport does.
            guard declared <= limit else { throw tooLarge }
            // Room for the declared length, up to 16 MiB (past that the bytes must arrive first):
            // a 1 MiB chunk grown by doubling moved into fresh pages each time, which were
            // nearly all of a download's page faults (BENCHMARKS.md).
            body.reserveCapacity(min(declared, 16 << 20))
        }
        do {
            for try await chunk in response.body {
                guard body.count + chunk.readableBytes <= limit else { throw tooLarge }
                body += chunk.readableBytesView
            }
        } catch let error as KeyVaultError {
            throw error
        } catch {
            throw KeyVaultError(.network, "the answer from \(baseURL.absoluteString) broke off: \(String(describing: error))")
        }
        var headers = [String: String]()
        for header in response.headers { headers[header.name.lowercased()] = header.value }
        return HTTPReply(status: Int(response.status.code), headers: headers, body: body)
    }

    /// BoringSSL's errors name a source file of the build; a failed verification is said plainly.
    private static func describe(_ error: any Error) -> String {
        let text = String(describing: error)
        if text.contains("CERTIFICATE_VERIFY_FAILED") {
            return "TLS certificate problem: the server's certificate was issued neither by the CA given with --ca-cert nor by one this computer trusts"
        }
        return text
    }
}

extension KeyctlTransport {
    /// One client per CA file (or none) for the whole process, never shut down, as
    /// AsyncHTTPClient's own shared client: a command's connections are kept open
    /// for its next requests, and no shutdown races the process's exit.
    private static let clients = ClientCache()

    private static func client(trusting path: String?, _ configuration: HTTPClient.Configuration) -> HTTPClient {
        // Keyed by the CA file's content too: the same path may hold another CA later.
        let key = path.map { $0 + "|" + ((try? Data(contentsOf: URL(fileURLWithPath: $0)))?.base64EncodedString() ?? "") } ?? ""
        return clients.client(for: key) { HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration) }
    }
}

private final class ClientCache: @unchecked Sendable {
    // Behind `lock`.
    private let lock = NSLock()
    private var clients: [String: HTTPClient] = [:]

    func client(for key: String, make: () -> HTTPClient) -> HTTPClient {
        lock.withLock {
            if let client = clients[key] { return client }
            let client = make()
            clients[key] = client
            return client
        }
    }
}
