import AsyncHTTPClient
import Foundation
import KeyVault
import NIOCore
import NIOHTTP1
import NIOSSL

/// keyctl's transport when `--ca-cert` (or `KEYCTL_CA_CERT`) names a certificate
/// authority to trust beside the system's, such as a private CA's root.
///
/// URLSession cannot do that on Linux: swift-corelibs-foundation hands libcurl the
/// system bundle and reads `URLSessionCertificateAuthorityInfoFile` on Android only
/// (EasyHandle.swift, `setCARootBundlePath`), and it passes no server-trust challenge
/// to a delegate. So this transport is AsyncHTTPClient on swift-nio-ssl, whose
/// `additionalTrustRoots` adds the CA to the system's roots. It keeps the duties of
/// ``URLSessionTransport``: plain HTTP only to loopback unless allowed, no redirects
/// followed, and an answer read only up to the exchange's `maxReplyBytes`.
struct TrustingTransport: HTTPTransport {
    let baseURL: URL
    let allowInsecureHTTP: Bool
    private let trusted: [NIOSSLCertificate]
    private let timeout: TimeAmount = .seconds(30)

    /// - Throws: `invalid_input` (exit 64) when `certificateAuthority` holds no PEM certificate.
    init(baseURL: URL, certificateAuthority path: String, allowInsecureHTTP: Bool) throws {
        guard let certificates = try? NIOSSLCertificate.fromPEMFile(path), !certificates.isEmpty else {
            throw KeyctlError(.invalidInput, "--ca-cert (KEYCTL_CA_CERT): \(path) is not a readable PEM certificate file",
                              hint: "give the CA's certificate in PEM form (-----BEGIN CERTIFICATE-----), e.g. the ca.pem your server's certificate was issued from",
                              exitCode: .usage)
        }
        self.baseURL = baseURL
        self.allowInsecureHTTP = allowInsecureHTTP
        trusted = certificates
    }

    func send(_ exchange: HTTPExchange) async throws -> HTTPReply {
        try URLSessionTransport.checkCleartext(baseURL, allowInsecureHTTP: allowInsecureHTTP)
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.additionalTrustRoots = [.certificates(trusted)]
        tls.minimumTLSVersion = .tlsv12
        // A client per exchange, as URLSessionTransport has a session per exchange: a
        // command makes few, and nothing is left running when it ends.
        var configuration = HTTPClient.Configuration(tlsConfiguration: tls, redirectConfiguration: .disallow,
                                                     timeout: .init(connect: timeout, read: timeout))
        // Fail at the first refused connection or handshake, as URLSession does: by
        // default AsyncHTTPClient retries until the connect timeout (30 s of waiting for
        // a certificate that will not verify).
        configuration.connectionPool.retryConnectionEstablishment = false
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: configuration)
        do {
            let reply = try await send(exchange, with: client)
            try? await client.shutdown()
            return reply
        } catch {
            try? await client.shutdown()
            throw error
        }
    }

    private func send(_ exchange: HTTPExchange, with client: HTTPClient) async throws -> HTTPReply {
        let base = baseURL.absoluteString
        var request = HTTPClientRequest(url: (base.hasSuffix("/") ? String(base.dropLast()) : base) + exchange.target)
        request.method = HTTPMethod(rawValue: exchange.method)
        for (name, value) in exchange.headers { request.headers.add(name: name, value: value) }
        if !exchange.body.isEmpty { request.body = .bytes(ByteBuffer(bytes: exchange.body)) }
        let response: HTTPClientResponse
        do {
            response = try await client.execute(request, timeout: timeout)
        } catch {
            throw KeyVaultError(.network, "cannot reach the server at \(baseURL.absoluteString): \(Self.describe(error))")
        }
        if (300..<400).contains(Int(response.status.code)), response.headers.contains(name: "location") {
            throw KeyVaultError(.badResponse, "the server at \(baseURL.absoluteString) answered with a redirect, which KeyVault never sends")
        }
        let limit = max(0, exchange.maxReplyBytes)
        var body = [UInt8]()
        do {
            for try await chunk in response.body {
                guard body.count + chunk.readableBytes <= limit else {
                    throw KeyVaultError.tooLarge(limit, "\(exchange.method) \(exchange.target.prefix { $0 != "?" })")
                }
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
