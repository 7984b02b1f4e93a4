import Foundation
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

/// The request context: Hummingbird's core storage, with this service's limits.
public struct KeyVaultRequestContext: RequestContext {
    public var coreContext: CoreRequestContextStorage
    /// The TCP peer's IP address (nil in in-process tests).
    public let peerAddress: String?
    /// The client's IP address, for rate limits: the peer's, or behind a trusted
    /// proxy the one its `X-Forwarded-For` names (``ClientAddressMiddleware``).
    public internal(set) var clientAddress: String
    public init(source: Source) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress?.ipAddress
        clientAddress = peerAddress ?? "local"
    }
    /// Bodies are collected explicitly with per-route limits; this is the ceiling.
    public var maxUploadSize: Int { 1 << 30 }
}

/// The HTTP API's handlers. Everything a handler needs is here; the routes are
/// in ``APIRoutes``.
struct KeyService: Sendable {
    let configuration: ServerConfiguration
    let database: KeyVaultDatabase
    let chains = ChainCache()
    var authenticator: Authenticator
    let recoveryGate = RecoveryGate()

    init(configuration: ServerConfiguration, database: KeyVaultDatabase) {
        self.configuration = configuration
        self.database = database
        authenticator = Authenticator(database: database, nonces: NonceLedger(window: configuration.signatureWindowSeconds),
                                      window: configuration.signatureWindowSeconds)
    }

    typealias Context = KeyVaultRequestContext

    // MARK: Helpers

    /// Reads the body as it streams in, refusing (413) as soon as it passes `limit`:
    /// at once when Content-Length already says so, else when the bytes do.
    func body(_ request: Request, limit: Int) async throws -> [UInt8] {
        let tooLarge = APIError(.payloadTooLarge, "the request body is larger than the \(limit) bytes this endpoint accepts")
        if let declared = request.headers[.contentLength].flatMap(Int.init), declared > limit { throw tooLarge }
        var bytes = [UInt8]()
        for try await var chunk in request.body {
            guard bytes.count + chunk.readableBytes <= limit else { throw tooLarge }
            bytes += chunk.readBytes(length: chunk.readableBytes) ?? []
        }
        return bytes
    }

    func decode<T: Decodable>(_ type: T.Type, from bytes: [UInt8]) throws -> T {
        guard !bytes.isEmpty else { throw APIError.badRequest("this request needs a JSON body") }
        if let schema = KnownFields.schema(for: T.self) {
            guard let object = try? JSONSerialization.jsonObject(with: Data(bytes), options: [.fragmentsAllowed]) else {
                throw APIError.badRequest("the body is not valid JSON")
            }
            try KnownFields.check(object, against: schema, path: "")
        }
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch let error as DecodingError {
            throw APIError.badRequest("the JSON body is not valid here: \(Self.describe(error))")
        }
    }

    static func describe(_ error: DecodingError) -> String {
        func path(_ context: DecodingError.Context) -> String {
            let p = context.codingPath.map { $0.intValue.map(String.init) ?? $0.stringValue }.joined(separator: ".")
            return p.isEmpty ? "the body" : p
        }
        switch error {
        case .keyNotFound(let key, let context): return "\(path(context)).\(key.stringValue) is missing".replacingOccurrences(of: "the body.", with: "")
        case .typeMismatch(_, let context), .valueNotFound(_, let context): return "\(path(context)) has the wrong type"
        case .dataCorrupted(let context): return "\(path(context)): \(context.debugDescription)"
        @unknown default: return "unreadable"
        }
    }

    func json<T: Encodable>(_ value: T, status: HTTPResponse.Status = .ok) throws -> Response {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        let data = try encoder.encode(value)
        return Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: data)))
    }

    /// An optional query parameter of type `T`, refused with a 400 that names it.
    func query<T: LosslessStringConvertible>(_ request: Request, _ name: String, as type: T.Type, _ what: String) throws -> T? {
        guard let text = request.uri.queryParameters.get(name) else { return nil }
        guard let value = T(text) else { throw APIError.badRequest("\(name) is \(what)") }
        return value
    }

    func accountParameter(_ context: Context) throws -> AccountID {
        guard let text = context.parameters.get("account"), let id = AccountID(rawValue: text) else {
            throw APIError.badRequest("the account id in the path is 32 lowercase hex digits")
        }
        return id
    }

    func memberParameter(_ context: Context) throws -> MemberID {
        guard let text = context.parameters.get("member"), let id = MemberID(rawValue: text) else {
            throw APIError.badRequest("the member id in the path is 32 lowercase hex digits")
        }
        return id
    }

    func state(_ account: AccountID) async throws -> ChainState {
        guard let state = try await chains.state(account, load: {
            guard let stored = try await database.links(account) else { return nil }
            return try ChainState(links: stored.links.map { try JSONDecoder().decode(ChainLink.self, from: $0.json) })
        }) else { throw APIError.notFound("account") }
        return state
    }

    /// Reads the body, then checks the request signature against it.
    func authenticated(_ request: Request, _ context: Context, limit: Int? = nil) async throws -> (AccountID, StoredDevice, [UInt8]) {
        let account = try accountParameter(context)
        let bytes = try await body(request, limit: limit ?? configuration.maxJSONBytes)
        let device = try await authenticator.authenticate(request, body: bytes, account: account)
        return (account, device, bytes)
    }

    // MARK: Health

    func health(_ request: Request, _ context: Context) async throws -> Response {
        try json(["status": "ok"])
    }

    /// Compiled into the binary: a resource bundle would be missing beside an installed
    /// keyctl, and `Bundle.module` traps when it is.
    func openAPI(_ request: Request, _ context: Context) async throws -> Response {
        Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(string: OpenAPIDocument.json)))
    }

    // MARK: Accounts

    func createAccount(_ request: Request, _ context: Context) async throws -> Response {
        if let token = configuration.inviteToken {
            let offered = request.headers[Headers.invite] ?? ""
            guard constantTimeEquals(Array(offered.utf8), Array(token.utf8)) else {
                throw APIError(.inviteRequired, "account creation on this server needs a valid invite token (KeyVault-Invite header)")
            }
        }
        let create = try decode(CreateAccountRequest.self, from: try await body(request, limit: configuration.maxJSONBytes))
        let state = try ChainState(genesis: create.genesis)
        for box in create.boxes { try checkAppended(box, in: state) }
        guard create.recovery == nil else {
            throw APIError.badRequest("set the recovery code with a recovery.set link after creating the account")
        }
        let device = state.devices.values.first!
        try await database.createAccount(
            state.account, genesis: try stored(create.genesis),
            device: StoredDevice(id: device.id, account: state.account, name: device.name,
                                 signingKey: device.signingKey.rawRepresentation, boxKey: device.boxKey.rawRepresentation, added: 0),
            boxes: create.boxes, recovery: nil)
        await chains.store(state, replacing: true)
        context.logger.info("account created", metadata: ["account": .string(state.account.rawValue)])
        return try json(CreateAccountResponse(account: state.account, head: state.head), status: .created)
    }

    func deleteAccount(_ request: Request, _ context: Context) async throws -> Response {
        let (account, _, _) = try await authenticated(request, context)
        try await database.deleteAccount(account)
        await chains.forget(account)
        authenticator.devices.removeAccount(account)
        context.logger.info("account deleted", metadata: ["account": .string(account.rawValue)])
        return Response(status: .noContent)
    }

    // MARK: Chain

    func chain(_ request: Request, _ context: Context) async throws -> Response {
        let (account, _, _) = try await authenticated(request, context)
        let after = try query(request, "after", as: UInt64.self, "a link sequence number")
        guard let stored = try await database.links(account, after: after) else { throw APIError.notFound("account") }
        let links = try stored.links.map { try JSONDecoder().decode(ChainLink.self, from: $0.json) }
        return try json(ChainResponse(account: account, links: links, head: stored.head))
    }

    func append(_ request: Request, _ context: Context) async throws -> Response {
        let (account, device, bytes) = try await authenticated(request, context)
        return try await appendVerified(account, try decode(AppendRequest.self, from: bytes), by: device, context)
    }

    /// Checks a link (and its boxes and wraps) against the chain and stores it in one
    /// transaction, if the head has not moved. `device` is the authenticated sender
    /// (nil for recovery enrolment, where the recovery key signed the link).
    func appendVerified(_ account: AccountID, _ append: AppendRequest, by device: StoredDevice?, _ context: Context,
                        approving code: String? = nil) async throws -> Response {
        var before = try await state(account)
        var after = before
        do {
            try after.apply(append.link)
        } catch {
            // Refused against the cached state: if that state is behind the database,
            // forget it and judge the link against the stored chain instead.
            guard let newer = try await database.links(account, after: before.sequence), !newer.links.isEmpty else { throw error }
            await chains.forget(account)
            before = try await state(account)
            after = before
            try after.apply(append.link)
        }
        if let device, append.link.signer != device.id.rawValue {
            throw APIError(.wrongSigner, "a device may only append links it signed itself")
        }
        for box in append.boxes { try checkAppended(box, in: after) }
        // The recovery slot travels only with the recovery.set link that authorises its keys.
        if append.link.type == .recoverySet {
            guard let slot = append.recovery, let recovery = after.recovery,
                  slot.authKey == Hex.encode(recovery.authKey.rawRepresentation), slot.boxKey == Hex.encode(recovery.boxKey.rawRepresentation)
            else { throw APIError.badRequest("a recovery.set link comes with the recovery slot whose keys it names") }
        } else if append.recovery != nil {
            throw APIError.badRequest("a recovery slot comes only with a recovery.set link")
        }
        for wrap in append.wraps {
            guard after.members[wrap.member] != nil, base64Decode(wrap.envelope).map({ (62...4096).contains($0.count) }) == true else {
                throw APIError.badRequest("a member wrap names a member of the account and carries a base64 envelope")
            }
        }
        let actor = device?.id.rawValue ?? ChainLink.recoverySigner
        var write = ChainWrite(link: try stored(append.link), expectedHead: before.head,
                               audit: ("link.\(append.link.type.rawValue)", actor, "sequence \(append.link.sequence)"))
        write.boxes = append.boxes
        write.wraps = append.wraps
        write.recovery = try append.recovery.map(checked)
        if let code, let device { write.approvesLinkRequest = (code, device.id) }
        for (id, added) in after.devices where before.devices[id] == nil {
            write.newDevices.append(StoredDevice(id: id, account: account, name: added.name,
                                                 signingKey: added.signingKey.rawRepresentation,
                                                 boxKey: added.boxKey.rawRepresentation, added: added.added))
        }
        write.revokedDevices = after.devices.values.filter { !$0.isActive && before.devices[$0.id]?.isActive == true }.map(\.id)
        do {
            try await database.append(account, write)
        } catch StoreError.staleChain {
            await chains.forget(account)
            throw ProtocolError(.staleChain, "another device changed the account first; fetch the chain and try again")
        } catch StoreError.linkRequestClosed {
            throw APIError(.linkRequestClosed, "this link request is no longer pending")
        }
        // The device cache first, before anything that suspends: a request of a revoked
        // device that starts once the write committed must meet the revocation.
        for id in write.revokedDevices { authenticator.devices.revoke(id, of: account, at: append.link.sequence) }
        for device in write.newDevices { authenticator.devices.put(device) }
        await chains.store(after)
        return try json(["head": after.head, "sequence": String(after.sequence)], status: .created)
    }

    /// A box stored with a link must name that link (so that it is judged by the
    /// chain as it stands there, where nothing later has happened yet) and verify.
    func checkAppended(_ box: KeyBox, in state: ChainState) throws {
        guard box.sequence == state.sequence else {
            throw ProtocolError(.boxPosition, "a key box names the link it is stored with (\(state.sequence)), not \(box.sequence)")
        }
        try box.verify(in: state)
    }

    /// Opens a session for MAC-authenticated requests. Only an Ed25519-signed request
    /// may open one (not a session request), and the key is sealed to the device.
    func openSession(_ request: Request, _ context: Context) async throws -> Response {
        guard request.headers[Headers.session] == nil else {
            throw APIError(.signatureRequired, "open a session with an Ed25519-signed request, not from another session")
        }
        let (_, device, _) = try await authenticated(request, context)
        let (id, key, expires) = authenticator.sessions.open(for: device.id, now: Int64(Date().timeIntervalSince1970))
        let sealed = try X25519.PublicKey(rawRepresentation: device.boxKey).sealedBox(for: key)
        return try json(SessionGrant(session: id, key: base64Encode(sealed), expires: expires), status: .created)
    }

    func devices(_ request: Request, _ context: Context) async throws -> Response {
        let (account, _, _) = try await authenticated(request, context)
        let devices = try await database.devices(account).map {
            DeviceInfo(id: $0.id, name: $0.name, status: $0.revoked == nil ? .active : .revoked, added: $0.added,
                       revoked: $0.revoked, lastSeen: $0.lastSeen)
        }
        return try json(["devices": devices])
    }

    // MARK: Keys

    func boxes(_ request: Request, _ context: Context) async throws -> Response {
        let (account, device, _) = try await authenticated(request, context)
        let generation = try query(request, "generation", as: UInt32.self, "a positive number")
        // A device reads the boxes sealed to it; `recipient=all` lists every box (for audit).
        let all = request.uri.queryParameters.get("recipient") == "all"
        let boxes = try database.boxesJSON(account, recipient: all ? nil : device.id.rawValue, generation: generation)
        var body = Data(#"{"boxes":["#.utf8)
        for (i, box) in boxes.enumerated() {
            if i > 0 { body.append(UInt8(ascii: ",")) }
            body.append(box)
        }
        body.append(contentsOf: Array("]}".utf8))
        return Response(status: .ok, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    func wraps(_ request: Request, _ context: Context) async throws -> Response {
        let (account, _, _) = try await authenticated(request, context)
        let member = try query(request, "member", as: MemberID.self, "32 lowercase hex digits")
        return try json(["wraps": try await database.wraps(account, member: member)])
    }

    func recovery(_ request: Request, _ context: Context) async throws -> Response {
        let account = try accountParameter(context)
        guard let slot = try await database.recoverySlot(account) else { throw APIError.notFound("recovery slot") }
        return try json(slot)
    }

    func audit(_ request: Request, _ context: Context) async throws -> Response {
        let (account, _, _) = try await authenticated(request, context)
        let after = Int64(clamping: try query(request, "after", as: UInt64.self, "an audit entry id") ?? 0)
        return try json(["entries": try await database.audit(account, after: after)])
    }

    // MARK: Attachments

    /// What every attachment route starts from: the signed request and the member and address in its path.
    struct AttachmentTarget {
        let account: AccountID
        let device: StoredDevice
        let body: [UInt8]
        let member: MemberID
        let address: String
    }

    func attachmentTarget(_ request: Request, _ context: Context, limit: Int? = nil) async throws -> AttachmentTarget {
        let (account, device, body) = try await authenticated(request, context, limit: limit)
        return AttachmentTarget(account: account, device: device, body: body, member: try memberParameter(context),
                                address: try addressParameter(context).description)
    }

    func octetStream(_ bytes: some Sequence<UInt8>) -> Response {
        Response(status: .ok, headers: [.contentType: "application/octet-stream"], body: .init(byteBuffer: ByteBuffer(bytes: bytes)))
    }

    func putAttachment(_ request: Request, _ context: Context) async throws -> Response {
        let target = try await attachmentTarget(request, context, limit: configuration.maxAttachmentBytes)
        guard try await state(target.account).members[target.member] != nil else { throw APIError.notFound("member") }
        let object = try AttachmentObject(bytes: target.body)
        let info = try await database.putAttachment(target.account, member: target.member, address: target.address, key: Data(object.key),
                                                    data: Data(object.content), device: target.device.id)
        return try json(info, status: info.existed == true ? .ok : .created)
    }

    func getAttachment(_ request: Request, _ context: Context) async throws -> Response {
        let target = try await attachmentTarget(request, context)
        guard let stored = try await database.attachment(target.account, member: target.member, address: target.address) else {
            throw APIError.notFound("attachment")
        }
        return octetStream(AttachmentObject(key: [UInt8](stored.key), content: [UInt8](stored.data)).bytes)
    }

    func getAttachmentKey(_ request: Request, _ context: Context) async throws -> Response {
        let target = try await attachmentTarget(request, context)
        guard let key = try await database.attachmentKey(target.account, member: target.member, address: target.address) else {
            throw APIError.notFound("attachment")
        }
        return octetStream(key)
    }

    /// Re-wrapping: replaces an attachment's wrapped data key, never its content.
    func putAttachmentKey(_ request: Request, _ context: Context) async throws -> Response {
        let target = try await attachmentTarget(request, context, limit: AttachmentObject.maximumKeyBytes)
        try AttachmentObject.checkKey(target.body)
        guard try await database.replaceAttachmentKey(target.account, member: target.member, address: target.address,
                                                      key: Data(target.body), device: target.device.id) else {
            throw APIError.notFound("attachment")
        }
        return Response(status: .noContent)
    }

    func listAttachments(_ request: Request, _ context: Context) async throws -> Response {
        let (account, _, _) = try await authenticated(request, context)
        let member = try memberParameter(context)
        return try json(["attachments": try await database.attachments(account, member: member)])
    }

    func addressParameter(_ context: Context) throws -> ContentAddress {
        guard let text = context.parameters.get("address"), let address = ContentAddress(text) else {
            throw APIError.badRequest("the address in the path is ca1.<generation>.<64 lowercase hex digits>")
        }
        return address
    }

    // MARK: Conversions

    func stored(_ link: ChainLink) throws -> StoredLink {
        StoredLink(sequence: link.sequence, hash: link.hash, json: try JSONEncoder().encode(link))
    }

    func checked(_ slot: RecoverySlot) throws -> RecoverySlot {
        guard (try? Hex.decode(slot.salt))?.count == 16, (try? Hex.decode(slot.authKey))?.count == 32,
              (try? Hex.decode(slot.boxKey))?.count == 32, base64Decode(slot.anchor).map({ $0.count >= 62 }) == true
        else { throw APIError.badRequest("a recovery slot has a 16-byte hex salt, 32-byte hex keys and a base64 envelope") }
        do {
            _ = try Argon2id.Parameters(iterations: slot.iterations, memoryKiB: slot.memoryKiB)
        } catch let error as CryptoError {
            // Above the ceiling no client would use the slot: refused as such, not as weak.
            throw APIError(error.code == .parametersAboveCeiling ? .kdfAboveCeiling : .weakKDF, error.message)
        }
        return slot
    }
}

/// The fields each request body may have. Unknown fields are refused where they
/// matter: in the signed and keyed objects, a field the server would silently drop
/// (a misspelt "boxes", a newer format) would leave the client believing it was stored.
enum KnownFields {
    indirect enum Schema: Sendable {
        case object([String: Schema?])  // nil: any value (checked by the decoder)
        case array(Schema)
    }

    static let link: Schema = .object(["version": nil, "sequence": nil, "previous": nil, "type": nil, "signer": nil,
                                       "time": nil, "body": nil, "signature": nil])
    static let box: Schema = .object(["generation": nil, "sequence": nil, "recipient": nil, "box": nil, "signer": nil, "signature": nil])
    static let wrap: Schema = .object(["member": nil, "memberGeneration": nil, "masterGeneration": nil, "envelope": nil])
    static let slot: Schema = .object(["salt": nil, "iterations": nil, "memoryKiB": nil, "authKey": nil, "boxKey": nil, "anchor": nil])

    static func schema<T>(for type: T.Type) -> Schema? {
        switch type {
        case is CreateAccountRequest.Type: .object(["genesis": link, "boxes": .array(box), "recovery": slot])
        case is AppendRequest.Type: .object(["link": link, "boxes": .array(box), "wraps": .array(wrap), "recovery": slot])
        case is RecoveryEnrollRequest.Type: .object(["token": nil, "link": link, "boxes": .array(box)])
        case is RecoveryProof.Type: .object(["challenge": nil, "signature": nil])
        case is LinkRequestCreate.Type: .object(["device": nil, "name": nil, "signingKey": nil, "boxKey": nil, "commitment": nil])
        case is LinkNonce.Type: .object(["nonce": nil])
        default: nil
        }
    }

    static func check(_ value: Any, against schema: Schema, path: String) throws {
        switch schema {
        case .object(let fields):
            guard let object = value as? [String: Any] else { return }  // the decoder reports the type
            for (key, child) in object {
                guard let entry = fields[key] else {
                    throw APIError.badRequest("unknown field \(path.isEmpty ? key : path + "." + key)")
                }
                if let entry { try check(child, against: entry, path: path.isEmpty ? key : path + "." + key) }
            }
        case .array(let element):
            guard let array = value as? [Any] else { return }
            for (i, item) in array.enumerated() { try check(item, against: element, path: "\(path)[\(i)]") }
        }
    }
}

