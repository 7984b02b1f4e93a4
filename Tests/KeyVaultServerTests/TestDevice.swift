import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import Logging
import Testing
@testable import KeyVaultServer
import KeyVaultStore
import KeyVaultPostgres

/// A device as a client would be: its keys, and helpers that build signed links,
/// boxes and requests exactly as the formats say.
struct TestDevice {
    let signing = Ed25519.PrivateKey()
    let boxKey = X25519.PrivateKey()
    let name: String
    var id: DeviceID { deviceID(for: signing.publicKey) }

    init(_ name: String) { self.name = name }

    var deviceFields: [String: String] {
        ChainLink.deviceFields(signingKey: signing.publicKey, boxKey: boxKey.publicKey, name: name)
    }

    func genesis(time: Int64 = 1_700_000_000) -> ChainLink {
        ChainLink.genesis(signingKey: signing, boxKey: boxKey.publicKey, name: name, time: time)
    }

    func link(_ type: LinkType, after state: ChainState, body: [String: String]) -> ChainLink {
        var link = ChainLink(sequence: state.sequence + 1, previous: state.head, type: type, signer: id.rawValue,
                             time: 1_700_000_100, body: body)
        link.sign(with: signing)
        return link
    }

    /// A master key box for `recipient`, signed by this device, made at link `sequence`.
    func box(_ masterKey: SymmetricKey, generation: UInt32, for recipient: TestDevice, at sequence: UInt64, account: AccountID) throws -> KeyBox {
        let sealed = try recipient.boxKey.publicKey.sealedBox(for: masterKey)
        var box = KeyBox(generation: generation, sequence: sequence, recipient: recipient.id.rawValue, box: base64Encode(sealed),
                         signer: id.rawValue, signature: "")
        box.sign(with: signing, account: account)
        return box
    }

    func signedHeaders(_ method: HTTPRequest.Method, _ uri: String, body: [UInt8], timestamp: Int64? = nil,
                       nonce: String? = nil) -> HTTPFields {
        let parts = uri.split(separator: "?", maxSplits: 1)
        var fields = HTTPFields()
        let time = timestamp ?? Int64(Date().timeIntervalSince1970)
        let headers = nonce.map {
            RequestSignature.headers(method: method.rawValue, path: String(parts[0]), query: parts.count > 1 ? String(parts[1]) : "",
                                     body: body, device: id, key: signing, timestamp: time, nonce: $0)
        } ?? RequestSignature.headers(method: method.rawValue, path: String(parts[0]), query: parts.count > 1 ? String(parts[1]) : "",
                                      body: body, device: id, key: signing, timestamp: time)
        for (name, value) in headers { fields[HTTPField.Name(name)!] = value }
        return fields
    }
}

/// A fresh service on `database`, by default a new in-memory one. Two services on one
/// store are two replicas: each has its own memory, only the store is shared.
func testApplication(database: (any KeyVaultRepository)? = nil, secret: ServerSecret? = nil,
                     _ configure: (inout ServerConfiguration) -> Void = { _ in }) throws -> some ApplicationProtocol {
    let store: any KeyVaultRepository = if let database { database } else { try KeyVaultDatabase.inMemory() }
    return try buildApplication(testConfiguration(configure), database: store, logger: testLogger, secret: secret)
}

/// A fresh service on a fresh store of `backend`: the router tests run on SQLite, and
/// on PostgreSQL too when the run has one (`bash Scripts/with-postgres.sh swift test`).
func testApplication(_ backend: StoreBackend, _ configure: @escaping (inout ServerConfiguration) -> Void = { _ in }) -> BackendTestApplication {
    BackendTestApplication(backend: backend, configuration: testConfiguration(configure))
}

struct BackendTestApplication {
    let backend: StoreBackend
    let configuration: ServerConfiguration

    func test<Value: Sendable>(_ setup: TestingSetup, _ test: @Sendable (any TestClientProtocol) async throws -> Value) async throws -> Value {
        try await backend.withStore { store in
            try await buildApplication(configuration, database: store, logger: testLogger).test(setup, test)
        }
    }
}

func testConfiguration(_ configure: (inout ServerConfiguration) -> Void) -> ServerConfiguration {
    var configuration = ServerConfiguration()
    configuration.databasePath = "/unused"
    configure(&configuration)
    return configuration
}

let testLogger: Logger = {
    var logger = Logger(label: "test")
    logger.logLevel = .warning
    return logger
}()

/// A service built by the test (to set its test hooks), on the router.
func testApplication(_ service: ServiceState) -> some ApplicationProtocol {
    Application(router: buildRouter(service))
}

/// The route table of a fresh service.
func testRoutes() throws -> [APIRoute] {
    var configuration = ServerConfiguration()
    configuration.databasePath = "/unused"
    return buildRoutes(try ServiceState(configuration: configuration, database: try KeyVaultDatabase.inMemory())).routes
}

/// A service on a database file (a restart is a second application on the same file).
func testApplication(onFile path: String) throws -> some ApplicationProtocol {
    try buildApplication(testConfiguration { $0.databasePath = path }, logger: testLogger)
}

func jsonBody(_ value: some Encodable) throws -> ByteBuffer { ByteBuffer(bytes: try JSONEncoder().encode(value)) }

func decode<T: Decodable>(_ type: T.Type, _ response: TestResponse) throws -> T {
    try JSONDecoder().decode(T.self, from: Data(buffer: response.body))
}

func errorCode(_ response: TestResponse) -> String? {
    (try? JSONDecoder().decode(ErrorBody.self, from: Data(buffer: response.body)))?.error.code
}

extension TestClientProtocol {
    /// A request signed by `device`.
    func signed(_ device: TestDevice, _ method: HTTPRequest.Method, _ uri: String, body: [UInt8] = [],
                headers extra: HTTPFields = [:]) async throws -> TestResponse {
        var headers = device.signedHeaders(method, uri, body: body)
        headers.append(contentsOf: extra)
        return try await execute(uri: uri, method: method, headers: headers, body: ByteBuffer(bytes: body))
    }

    func signedJSON(_ device: TestDevice, _ method: HTTPRequest.Method, _ uri: String, _ value: some Encodable) async throws -> TestResponse {
        try await signed(device, method, uri, body: Array(try JSONEncoder().encode(value)), headers: [.contentType: "application/json"])
    }

    /// Creates an account for `device` with a master key box; returns the state.
    func createAccount(_ device: TestDevice, masterKey: SymmetricKey = SymmetricKey()) async throws -> ChainState {
        let genesis = device.genesis()
        let state = try ChainState(genesis: genesis)
        let request = CreateAccountRequest(genesis: genesis, boxes: [try device.box(masterKey, generation: 1, for: device, at: 0, account: state.account)],
                                           recovery: nil)
        let response = try await execute(uri: "/v1/accounts", method: .post, headers: [.contentType: "application/json"], body: try jsonBody(request))
        #expect(response.status == .created, "\(String(buffer: response.body))")
        return state
    }

    /// Appends a link (already signed) and applies it to `state` when accepted.
    @discardableResult
    func append(_ device: TestDevice, _ state: inout ChainState, _ request: AppendRequest) async throws -> TestResponse {
        let response = try await signedJSON(device, .post, "/v1/accounts/\(state.account)/chain", request)
        if response.status == .created { try state.apply(request.link) }
        return response
    }

    /// Adds a new member (generation 1) to the account of `state`, by `device`.
    func addMember(_ device: TestDevice, _ state: inout ChainState) async throws -> MemberID {
        let member = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))
        let response = try await append(device, &state, AppendRequest(link: device.link(.memberAdd, after: state,
                                                                                         body: ["member": member.rawValue, "memberGeneration": "1"])))
        #expect(response.status == .created, "\(String(buffer: response.body))")
        return member
    }

    /// The attachments listed at `base` (`…/members/{member}/attachments`), asked by `device`.
    func attachmentList(_ device: TestDevice, _ base: String) async throws -> [AttachmentInfo] {
        try decode([String: [AttachmentInfo]].self, try await signed(device, .get, base))["attachments"] ?? []
    }
}

/// An attachment object (generation 1 of a fresh member key) and its address.
func sealedAttachment() throws -> (address: String, bytes: [UInt8]) {
    let memberKey = SymmetricKey(), dataKey = SymmetricKey()
    let content = SystemRandom.bytes(count: 200)
    let address = try ContentAddressKey(memberKey: memberKey, generation: 1).address(of: content)
    let key = try Envelope.seal(dataKey, under: memberKey, generation: 1, context: EnvelopeContext(purpose: "attachment-key")).bytes
    let sealed = try Envelope.seal(content, under: dataKey, generation: 1,
                                   context: EnvelopeContext(purpose: "attachment-content", ["object": address.description])).bytes
    return (address.description, AttachmentObject(key: key, content: sealed).bytes)
}

extension TestClientProtocol {
    /// Opens a session for `device`; returns its id and key.
    func openSession(_ device: TestDevice, account: AccountID) async throws -> (String, SymmetricKey) {
        let response = try await signed(device, .post, "/v1/accounts/\(account)/sessions")
        #expect(response.status == .created, "\(String(buffer: response.body))")
        let grant = try decode(SessionGrant.self, response)
        return (grant.session, try grant.key(using: device.boxKey))
    }

    /// A request authenticated by a session MAC.
    func macRequest(_ session: (String, SymmetricKey), _ method: HTTPRequest.Method, _ uri: String, body: [UInt8] = [],
                    mutate: (inout HTTPFields) -> Void = { _ in }) async throws -> TestResponse {
        let parts = uri.split(separator: "?", maxSplits: 1)
        var headers = HTTPFields()
        for (name, value) in try RequestMAC.headers(method: method.rawValue, path: String(parts[0]),
                                                     query: parts.count > 1 ? String(parts[1]) : "", body: body,
                                                     session: session.0, key: session.1, timestamp: Int64(Date().timeIntervalSince1970)) {
            headers[HTTPField.Name(name)!] = value
        }
        mutate(&headers)
        return try await execute(uri: uri, method: method, headers: headers, body: ByteBuffer(bytes: body))
    }
}
