import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVault
import KeyVaultCrypto
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultTestSupport
import Logging
import NIOCore
@testable import KeyVaultServer
import KeyVaultStore

/// Sends the client's requests to a real service, in process.
struct RouterTransport: HTTPTransport {
    let client: any TestClientProtocol

    func send(_ request: HTTPExchange) async throws -> HTTPReply {
        var fields = HTTPFields()
        for (name, value) in request.headers { fields[HTTPField.Name(name)!] = value }
        let response = try await client.executeRequest(uri: request.target, method: HTTPRequest.Method(request.method)!,
                                                       headers: fields, body: ByteBuffer(bytes: request.body))
        var headers = [String: String]()
        for field in response.headers { headers[field.name.canonicalName] = field.value }
        return HTTPReply(status: Int(response.status.code), headers: headers, body: [UInt8](buffer: response.body))
    }
}

/// A dishonest server: the real service, with answers rewritten by `rule`.
final class TamperingTransport: HTTPTransport {
    typealias Rule = @Sendable (HTTPExchange, inout HTTPReply) throws -> Void
    let inner: RouterTransport
    private let rule = Locked<Rule?>(nil)
    private let answer = Locked<(@Sendable (HTTPExchange) -> HTTPReply?)?>(nil)

    init(_ inner: RouterTransport) { self.inner = inner }

    /// Rewrites answers from now on (nil: honest again).
    func tamper(_ rule: Rule?) { self.rule.withLock { $0 = rule } }

    /// Answers some requests itself, without passing them on (nil: pass on).
    func answer(_ answer: (@Sendable (HTTPExchange) -> HTTPReply?)?) { self.answer.withLock { $0 = answer } }

    func send(_ request: HTTPExchange) async throws -> HTTPReply {
        if let own = answer.withLock({ $0 })?(request) { return own }
        var reply = try await inner.send(request)
        if let rule = rule.withLock({ $0 }) { try rule(request, &reply) }
        return reply
    }
}

/// Rewrites a JSON answer when the request path contains `path`, its method is `method`
/// and the answer's status `status`.
func rewriting<T: Codable>(_ path: String, method: String = "GET", status: Int = 200, as type: T.Type,
                           _ change: @escaping @Sendable (inout T) throws -> Void) -> TamperingTransport.Rule {
    { request, reply in
        guard request.method == method, request.target.contains(path), reply.status == status else { return }
        var value = try JSONDecoder().decode(T.self, from: Data(reply.body))
        try change(&value)
        reply.body = Array(try JSONEncoder().encode(value))
    }
}

/// An account on a fresh in-process service: the laptop's vault, its recovery code,
/// and the tampering transport between them.
struct Fixture {
    let transport: TamperingTransport
    let code: Mnemonic
    let root: URL

    func home(_ name: String) -> DeviceHome { DeviceHome(directory: root.appendingPathComponent(name).path) }

    /// Opens a device home again (fresh from disk), optionally forgetting its cached keys.
    func open(_ name: String, forgetKeys: Bool = false) async throws -> Vault {
        let home = home(name)
        if forgetKeys {
            var record = try home.load()
            record.masterKeys = [:]
            record.memberKeys = [:]
            try home.save(record)
        }
        return try await Vault.open(home: home, transport: { _ in transport })
    }

    static func run(_ body: @Sendable (Fixture, Vault) async throws -> Void) async throws {
        var configuration = ServerConfiguration()
        configuration.databasePath = "/unused"
        var logger = Logger(label: "client-tests")
        logger.logLevel = .critical
        let app = try buildApplication(configuration, database: try KeyVaultDatabase.inMemory(), logger: logger)
        let root = try TemporaryDirectory("kv-client")
        try await app.test(.router) { client in
            let transport = TamperingTransport(RouterTransport(client: client))
            let code = try Mnemonic.generate(wordCount: 24, language: .english)
            let fixture = Fixture(transport: transport, code: code, root: root.url)
            let laptop = try await Vault.createAccount(home: fixture.home("laptop"), server: "test", transport: transport, name: "laptop",
                                                       code: code, parameters: .interactive)
            try await body(fixture, laptop)
        }
    }
}
