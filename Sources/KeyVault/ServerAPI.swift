import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol

/// The device keys that sign requests.
package struct DeviceKeys: Sendable {
    package let signing: Ed25519.PrivateKey
    package let boxKey: X25519.PrivateKey
    package var id: DeviceID { deviceID(for: signing.publicKey) }

    package init(signing: Ed25519.PrivateKey = Ed25519.PrivateKey(), boxKey: X25519.PrivateKey = X25519.PrivateKey()) {
        self.signing = signing
        self.boxKey = boxKey
    }

    /// The fields that introduce this device in a genesis or device.add link.
    package func fields(name: String) -> [String: String] {
        ChainLink.deviceFields(signingKey: signing.publicKey, boxKey: boxKey.publicKey, name: name)
    }
}

/// The HTTP API of docs/api.md, typed. Signed routes use `keys`.
package struct ServerAPI: Sendable {
    package let transport: any HTTPTransport
    package let account: AccountID?
    package let keys: DeviceKeys?

    package init(transport: any HTTPTransport, account: AccountID? = nil, keys: DeviceKeys? = nil) {
        self.transport = transport
        self.account = account
        self.keys = keys
    }

    /// The largest answers taken from a server (anything larger is refused unread,
    /// `response_too_large`): a JSON answer (a device list, key boxes, wraps, one
    /// audit page of at most 1000 entries) 8 MiB; the whole chain, which grows with
    /// every key event, 64 MiB; an attachment, the service's largest configurable
    /// attachment (1 GiB) and its envelope.
    package static let maxJSONReplyBytes = HTTPExchange.defaultMaxReplyBytes
    package static let maxChainReplyBytes = 64 << 20
    package static let maxAttachmentReplyBytes = (1 << 30) + (64 << 10)
    /// The largest attachment an export or import takes: the service's largest configurable limit.
    package static let maxExportedAttachmentBytes = 1 << 47

    var accountPath: String { "/v1/accounts/\(account?.rawValue ?? "")" }

    // MARK: Exchange

    /// Sends a request (signed when `signed`) and returns the body of a 2xx answer.
    ///
    /// - Throws: `KeyVaultError` with the server's code for a refusal, `device_revoked`
    ///   (kind `.revoked`) when this device was revoked.
    ///   `response_too_large` for an answer beyond `maxReply` bytes.
    func call(_ method: String, _ path: String, query: String = "", body: [UInt8] = [], signed: Bool = true,
              contentType: String = "application/json", maxReply: Int = maxJSONReplyBytes,
              extraHeaders: [(String, String)] = []) async throws -> (status: Int, body: [UInt8]) {
        for attempt in 0... {
            var headers: [(String, String)] = extraHeaders
            if !body.isEmpty { headers.append(("Content-Type", contentType)) }
            if signed {
                guard let keys else { throw KeyVaultError(.notInitialized, "this request needs an enrolled device") }
                headers += RequestSignature.headers(method: method, path: path, query: query, body: body, device: keys.id,
                                                    key: keys.signing, timestamp: Int64(Date().timeIntervalSince1970))
            }
            let reply = try await transport.send(HTTPExchange(method: method, target: query.isEmpty ? path : path + "?" + query,
                                                              headers: headers, body: body, maxReplyBytes: maxReply))
            // Also here, for a transport that does not bound what it reads.
            guard reply.body.count <= maxReply else { throw KeyVaultError.tooLarge(maxReply, "\(method) \(path)") }
            if attempt < Self.busyRetries, let wait = Self.busyWait(reply) {
                try await Task.sleep(for: .seconds(wait))
                continue  // signed anew: a new nonce
            }
            guard (200..<300).contains(reply.status) else { throw Self.refusal(reply) }
            return (reply.status, reply.body)
        }
        preconditionFailure("unreachable")
    }

    /// A 503 `unavailable` with a Retry-After shorter than ``RetryAfter/down`` is a write
    /// that lost a race for a lock on the server and was not made (docs/api.md, "Errors"):
    /// sent again after that wait, signed anew, up to ``busyRetries`` times. A longer wait
    /// (its database is down) is the caller's to hear at once. (A server that says busy
    /// every time costs at most 8 seconds.) A recovery enrollment too: the server spends its
    /// token in the enrollment's own write, so a write that lost left it unspent.
    static let busyRetries = 2

    static func busyWait(_ reply: HTTPReply) -> Int? {
        guard reply.status == 503, let text = reply.headers["retry-after"], let seconds = Int(text), (0..<RetryAfter.down).contains(seconds),
              (try? JSONDecoder().decode(ErrorBody.self, from: Data(reply.body)))?.error.code == ErrorCode.unavailable.rawValue
        else { return nil }
        return seconds
    }

    static func refusal(_ reply: HTTPReply) -> KeyVaultError {
        guard let error = try? JSONDecoder().decode(ErrorBody.self, from: Data(reply.body)) else {
            return KeyVaultError(.badResponse, "the server answered HTTP \(reply.status) without a KeyVault error body")
        }
        let text = error.error.code.printableWithoutDigits, message = error.error.message.printableWithoutDigits
        // Only the service's own codes: a server naming one of the client's (`home_damaged`,
        // `wrong_passphrase`, …) would borrow its kind and its advice. The default case quotes the text.
        let wire = ErrorCode(rawValue: text)
        let code = ErrorCode.wireCodes.contains(wire) ? KeyVaultError.Code(wire) : .unrecognized
        switch code {
        case .deviceRevoked:
            return KeyVaultError(.deviceRevoked, "this device was revoked from the account; the server refuses it",
                                 status: reply.status)
        case .staleTimestamp:
            return KeyVaultError(code, "the server refused the request time: \(message)", status: reply.status)
        case .unknownDevice:
            return KeyVaultError(code, "the server does not know this device: \(message)", status: reply.status)
        case .rateLimited, .tooManyLinkRequests, .tooManyContactRequests, .unavailable:
            // A number the server chose, so at most four digits of it: never a code.
            let wait = reply.headers["retry-after"].flatMap { Int($0) }.map { (0...3600).contains($0) ? " (try again in \($0) seconds)" : " (try again later)" } ?? ""
            return KeyVaultError(code, "the server refused: \(message)\(wait)", status: reply.status)
        default:
            return KeyVaultError(code, "the server refused: \(message) (\(text), HTTP \(reply.status))",
                                 status: reply.status)
        }
    }

    func json<T: Decodable>(_ type: T.Type, _ bytes: [UInt8], _ what: String) throws -> T {
        do {
            return try JSONDecoder().decode(T.self, from: Data(bytes))
        } catch {
            throw KeyVaultError(.badResponse, "the server's \(what) is not what the protocol says: \(String(describing: error).printableWithoutDigits)")
        }
    }

    func encode(_ value: some Encodable) throws -> [UInt8] { Array(try Self.encoder.encode(value)) }

    /// JSON as this client writes it: sorted keys, slashes unescaped (also an export's lines).
    static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    // MARK: Routes

    package func health() async throws {
        _ = try await call("GET", "/health", signed: false)
    }

    /// The largest attachment object the service takes, the largest it takes whole in
    /// one PUT, and the largest a grantee puts through a sharer's relay in chunks
    /// (`GET /v1/limits`): `shared` is nil from a service whose relay takes a grantee's
    /// whole only, and the whole is nil from a service too old to say (which takes no
    /// upload in chunks either).
    package func attachmentLimits() async throws -> (any: Int, whole: Int, shared: Int?)? {
        do {
            let reply = try await call("GET", "/v1/limits", signed: false)
            let limits = try json([String: Int].self, reply.body, "limits")
            guard let any = limits["maxAttachmentBytes"] else { return nil }
            return (any, limits["maxWholeAttachmentBytes"] ?? any, limits["maxSharedAttachmentBytes"])
        } catch let error as KeyVaultError where error.status == 404 {
            return nil
        }
    }

    package func createAccount(_ request: CreateAccountRequest, invite: String?) async throws -> CreateAccountResponse {
        try json(CreateAccountResponse.self, try await call("POST", "/v1/accounts", body: encode(request), signed: false,
                                                            extraHeaders: Self.inviteHeader(invite)).body, "answer")
    }

    /// Whether the server takes a new account with `invite` (or without one): throws
    /// `invite_required` when not. A server too old to say (404) is not asked again.
    package func checkInvite(_ invite: String?) async throws {
        do {
            _ = try await call("POST", "/v1/invites/check", signed: false, extraHeaders: Self.inviteHeader(invite))
        } catch let error as KeyVaultError where error.status == 404 {
            return
        }
    }

    static func inviteHeader(_ invite: String?) -> [(String, String)] {
        invite.map { [("KeyVault-Invite", $0)] } ?? []
    }

    /// Brings the account to this server (docs/api.md, "Moving an account"), signed by this device.
    package func importAccount(_ request: ImportAccountRequest, instance: String, invite: String?) async throws -> ImportAccountResponse {
        try json(ImportAccountResponse.self, try await call("POST", "/v1/accounts/import", query: "instance=\(instance)", body: encode(request),
                                                            extraHeaders: Self.inviteHeader(invite)).body, "answer")
    }

    /// Deletes the account here, if this server is `instance` (``instance()``) and its
    /// head is still `head`: the signed query binds the delete to both, so another server
    /// cannot replay it, and a change made since is not deleted unseen.
    package func deleteAccount(instance: String, head: String) async throws {
        _ = try await call("DELETE", accountPath, query: "instance=\(instance)&head=\(head)")
    }

    /// Which service this is (`GET /v1/server`): the same for the replicas of one service,
    /// another for any other. The server's word: a device compares two servers' with it.
    package func instance() async throws -> String {
        let reply = try json([String: String].self, try await call("GET", "/v1/server", signed: false).body, "server name")
        guard let id = reply["instance"], Hex.isLowercase(id, byteCount: 8) else {
            throw KeyVaultError(.badResponse, "the server's instance is not 16 hex digits")
        }
        return id
    }

    package func chain() async throws -> ChainResponse {
        try json(ChainResponse.self, try await call("GET", accountPath + "/chain", maxReply: Self.maxChainReplyBytes).body, "chain")
    }

    package func append(_ request: AppendRequest) async throws {
        _ = try await call("POST", accountPath + "/chain", body: encode(request))
    }

    package func devices() async throws -> [DeviceInfo] {
        try json([String: [DeviceInfo]].self, try await call("GET", accountPath + "/devices").body, "device list")["devices"] ?? []
    }

    package func boxes(generation: UInt32? = nil, all: Bool = false) async throws -> [KeyBox] {
        var query = [String]()
        if let generation { query.append("generation=\(generation)") }
        if all { query.append("recipient=all") }
        return try json([String: [KeyBox]].self, try await call("GET", accountPath + "/boxes", query: query.joined(separator: "&")).body,
                        "key boxes")["boxes"] ?? []
    }

    package func wraps(member: MemberID) async throws -> [MemberWrap] {
        try json([String: [MemberWrap]].self, try await call("GET", accountPath + "/wraps", query: "member=\(member)").body,
                 "member key wraps")["wraps"] ?? []
    }

    /// Pages of the audit log read at most: 10 million entries at the service's 1000 a page.
    static let maxAuditPages = 10_000

    /// The whole audit log: the service answers a page at a time (oldest first), so
    /// this reads on after the last id until a page comes back empty.
    ///
    /// - Throws: `bad_response` when ids do not increase (a server that pages in a
    ///   circle would otherwise be read forever) or the log passes `maxAuditPages`.
    package func audit() async throws -> [AuditEntry] {
        var entries = [AuditEntry]()
        var after: Int64 = 0
        for _ in 0..<Self.maxAuditPages {
            let page = try json([String: [AuditEntry]].self, try await call("GET", accountPath + "/audit", query: after > 0 ? "after=\(after)" : "").body,
                                "audit log")["entries"] ?? []
            guard let last = page.last else { return entries }
            var previous = after
            for entry in page {
                guard entry.id > previous else {
                    throw KeyVaultError(.badResponse, "the server's audit log goes back (entry \(entry.id) after \(previous))")
                }
                previous = entry.id
            }
            entries += page
            after = last.id
        }
        throw KeyVaultError(.badResponse, "the server's audit log is longer than \(Self.maxAuditPages) pages")
    }

    // Recovery (unsigned until enrolled)

    package func recoverySlot() async throws -> RecoverySlot {
        try json(RecoverySlot.self, try await call("GET", accountPath + "/recovery", signed: false).body, "recovery slot")
    }

    package func recoveryChallenge() async throws -> RecoveryChallenge {
        try json(RecoveryChallenge.self, try await call("POST", accountPath + "/recovery/challenge", signed: false).body, "challenge")
    }

    package func recoveryProof(_ proof: RecoveryProof) async throws -> RecoverySession {
        try json(RecoverySession.self, try await call("POST", accountPath + "/recovery/proof", body: encode(proof), signed: false).body,
                 "recovery session")
    }

    package func recoveryEnroll(_ request: RecoveryEnrollRequest) async throws {
        _ = try await call("POST", accountPath + "/recovery/enroll", body: encode(request), signed: false)
    }

    // Device links

    package func createLinkRequest(_ request: LinkRequestCreate) async throws -> LinkRequestInfo {
        try json(LinkRequestInfo.self, try await call("POST", accountPath + "/link-requests", body: encode(request), signed: false).body,
                 "link request")
    }

    package func linkRequest(_ code: String) async throws -> LinkRequestInfo {
        try json(LinkRequestInfo.self, try await call("GET", accountPath + "/link-requests/\(code)", signed: false).body, "link request")
    }

    package func respondToLinkRequest(_ code: String, nonce: [UInt8]) async throws {
        _ = try await call("POST", accountPath + "/link-requests/\(code)/respond", body: encode(LinkNonce(nonce: Hex.encode(nonce))))
    }

    package func revealLinkRequest(_ code: String, nonce: [UInt8]) async throws {
        _ = try await call("POST", accountPath + "/link-requests/\(code)/reveal", body: encode(LinkNonce(nonce: Hex.encode(nonce))),
                           signed: false)
    }

    package func pendingLinkRequests() async throws -> [LinkRequestInfo] {
        let requests = try json([String: [LinkRequestInfo]].self, try await call("GET", accountPath + "/link-requests").body,
                                "link requests")["requests"] ?? []
        // Codes are printed as they are: anything but a code is not taken.
        guard requests.allSatisfy({ LinkCode.isValid($0.code) }) else {
            throw KeyVaultError(.badResponse, "the server's list of link requests holds a malformed code")
        }
        return requests
    }

    package func approveLinkRequest(_ code: String, _ request: AppendRequest) async throws {
        _ = try await call("POST", accountPath + "/link-requests/\(code)/approve", body: encode(request))
    }

    package func refuseLinkRequest(_ code: String) async throws {
        _ = try await call("POST", accountPath + "/link-requests/\(code)/refuse")
    }

    // Sharing (docs/formats/member-sharing.md, "The relay: routes")

    package func identityWraps() async throws -> [IdentityWrap] {
        try json([String: [IdentityWrap]].self, try await call("GET", accountPath + "/identity-wraps").body, "identity wraps")["wraps"] ?? []
    }

    package func createContactRequest(_ request: ContactRequestCreate) async throws -> ContactRequestInfo {
        try json(ContactRequestInfo.self, try await call("POST", accountPath + "/contact-requests", body: encode(request)).body, "contact request")
    }

    package func contactRequests() async throws -> [ContactRequestInfo] {
        try json([String: [ContactRequestInfo]].self, try await call("GET", accountPath + "/contact-requests").body,
                 "contact requests")["requests"] ?? []
    }

    package func contactRequest(_ id: String) async throws -> ContactRequestInfo {
        try json(ContactRequestInfo.self, try await call("GET", accountPath + "/contact-requests/\(try Self.pathSegment(id))").body, "contact request")
    }

    package func respondToContactRequest(_ id: String, _ response: ContactResponse) async throws {
        _ = try await call("POST", accountPath + "/contact-requests/\(try Self.pathSegment(id))/respond", body: encode(response))
    }

    package func revealContactRequest(_ id: String, nonce: [UInt8]) async throws {
        _ = try await call("POST", accountPath + "/contact-requests/\(try Self.pathSegment(id))/reveal", body: encode(LinkNonce(nonce: Hex.encode(nonce))))
    }

    package func shared() async throws -> [SharedWithAccount] {
        try json([String: [SharedWithAccount]].self, try await call("GET", accountPath + "/shared").body, "shared members")["shared"] ?? []
    }

    /// This device's statement of its account's head (docs/formats/head-statement.md).
    package func putHeadStatement(_ statement: HeadStatement) async throws {
        _ = try await call("POST", accountPath + "/head-statements", body: encode(statement))
    }

    /// A contact's devices' head statements: served while that account's chain pins this one.
    package func contactHeadStatements(_ contact: AccountID) async throws -> [HeadStatement] {
        try json([String: [HeadStatement]].self, try await call("GET", accountPath + "/contacts/\(contact)/head-statements").body,
                 "contact's head statements")["statements"] ?? []
    }

    /// A contact's chain: served while that account's chain pins this one.
    package func contactChain(_ contact: AccountID) async throws -> ChainResponse {
        try json(ChainResponse.self, try await call("GET", accountPath + "/contacts/\(contact)/chain", maxReply: Self.maxChainReplyBytes).body,
                 "contact's chain")
    }

    /// A contact request id from the server, checked before it goes into a path.
    static func pathSegment(_ id: String) throws -> String {
        guard Hex.isLowercase(id, byteCount: 16) else { throw KeyVaultError(.badResponse, "the server sent a malformed contact request id") }
        return id
    }

    // Attachments (of this account's member, or of a member another account shares with it)

    func attachmentPath(_ member: MemberID, _ address: ContentAddress? = nil, sharer: AccountID? = nil) -> String {
        accountPath + (sharer.map { "/shared/\($0)" } ?? "") + "/members/\(member)/attachments" + (address.map { "/\($0)" } ?? "")
    }

    package func putAttachment(member: MemberID, address: ContentAddress, object: AttachmentObject,
                               sharer: AccountID? = nil, replace: Bool = false) async throws -> AttachmentInfo {
        try json(AttachmentInfo.self, try await call("PUT", attachmentPath(member, address, sharer: sharer), query: replace ? "replace=true" : "",
                                                     body: object.bytes,
                                                     contentType: "application/octet-stream").body, "answer")
    }

    /// Begins an upload in chunks (of this account's own member, or through `sharer`'s
    /// relay): the upload to put the chunks under, or that the address is already there.
    package func beginUpload(member: MemberID, address: ContentAddress, key: [UInt8], chunkShift: UInt8, size: Int,
                             sharer: AccountID? = nil, replace: Bool) async throws -> UploadStarted {
        let request = BeginUploadRequest(key: base64Encode(key), chunkShift: Int(chunkShift), size: size)
        let started = try json(UploadStarted.self, try await call("POST", attachmentPath(member, address, sharer: sharer) + "/uploads",
                                                                  query: replace ? "replace=true" : "", body: encode(request)).body, "answer")
        guard started.existed || started.upload.map({ $0.count == 32 && $0.allSatisfy(\.isHexDigit) }) == true else {
            throw KeyVaultError(.badResponse, "the server's upload id is not 32 hex digits")
        }
        return started
    }

    package func putUploadChunk(member: MemberID, address: ContentAddress, sharer: AccountID? = nil, upload: String, index: Int,
                                chunk: [UInt8]) async throws {
        _ = try await call("PUT", attachmentPath(member, address, sharer: sharer) + "/uploads/\(upload)/chunks/\(index)", body: chunk,
                           contentType: "application/octet-stream")
    }

    /// Where an unfinished upload stands; nil when the server has no such upload (it
    /// completed, was dropped after a day, or the server is another one).
    package func uploadStatus(member: MemberID, address: ContentAddress, sharer: AccountID? = nil, upload: String) async throws -> UploadStatus? {
        do {
            return try json(UploadStatus.self, try await call("GET", attachmentPath(member, address, sharer: sharer) + "/uploads/\(upload)").body, "upload status")
        } catch let error as KeyVaultError where error.status == 404 {
            return nil
        }
    }

    package func completeUpload(member: MemberID, address: ContentAddress, sharer: AccountID? = nil, upload: String,
                                replace: Bool) async throws -> AttachmentInfo {
        try json(AttachmentInfo.self, try await call("POST", attachmentPath(member, address, sharer: sharer) + "/uploads/\(upload)/complete",
                                                     query: replace ? "replace=true" : "").body, "answer")
    }

    /// How an attachment uploaded in chunks lies in them; nil when it was put whole (or
    /// the server is too old to keep chunks).
    package func chunkList(member: MemberID, address: ContentAddress, sharer: AccountID? = nil) async throws -> ChunkList? {
        do {
            return try json(ChunkList.self, try await call("GET", attachmentPath(member, address, sharer: sharer) + "/chunks").body, "chunk list")
        } catch let error as KeyVaultError where error.code == .badRequest || error.status == 404 {
            return nil
        }
    }

    /// Sealed chunk `index` of an attachment (at most the largest chunk a reader takes).
    package func attachmentChunk(member: MemberID, address: ContentAddress, sharer: AccountID? = nil, index: Int) async throws -> [UInt8] {
        try await call("GET", attachmentPath(member, address, sharer: sharer) + "/chunks/\(index)",
                       maxReply: ChunkLayout.maximumSealedChunkBytes).body
    }

    /// An attachment whole: at most `limit` bytes (the largest the server says it takes,
    /// when it says: an object put whole before there were chunks may be that large),
    /// and never more than ``maxAttachmentReplyBytes`` whatever it says (a server saying
    /// `Int.max` once made the sum overflow and stop the process).
    package func attachment(member: MemberID, address: ContentAddress, sharer: AccountID? = nil,
                            limit: Int? = nil) async throws -> [UInt8] {
        try await call("GET", attachmentPath(member, address, sharer: sharer),
                       maxReply: limit.map { min($0, Self.maxAttachmentReplyBytes - (64 << 10)) + (64 << 10) } ?? Self.maxAttachmentReplyBytes).body
    }

    package func attachments(member: MemberID, sharer: AccountID? = nil) async throws -> [Vault.Attachment] {
        let list = try json([String: [AttachmentInfo]].self, try await call("GET", attachmentPath(member, sharer: sharer)).body,
                            "attachment list")["attachments"] ?? []
        // Addresses are printed as they are: anything but an address is not taken.
        return try list.map { info in
            guard let address = ContentAddress(info.address) else {
                throw KeyVaultError(.badResponse, "the server's attachment list holds a malformed address")
            }
            var attachment = Vault.Attachment(address: address, size: info.size, stored: Date(timeIntervalSince1970: TimeInterval(info.created)))
            if let meta = info.meta {
                guard let bytes = base64Decode(meta) else { throw KeyVaultError(.badResponse, "the server's attachment list holds a sealed name that is not base64") }
                attachment.sealedMeta = bytes
            }
            return attachment
        }
    }

    /// Stores an attachment's sealed name and details: of this account's own member, or
    /// (`sharer`) of a member shared with it, where it names only one that has no name.
    package func putAttachmentMeta(member: MemberID, address: ContentAddress, meta: [UInt8], sharer: AccountID? = nil) async throws {
        _ = try await call("PUT", attachmentPath(member, address, sharer: sharer) + "/meta", body: meta, contentType: "application/octet-stream")
    }

    package func deleteAttachment(member: MemberID, address: ContentAddress) async throws {
        _ = try await call("DELETE", attachmentPath(member, address))
    }

    package func attachmentKey(member: MemberID, address: ContentAddress, sharer: AccountID? = nil) async throws -> [UInt8] {
        try await call("GET", attachmentPath(member, address, sharer: sharer) + "/key").body
    }

    package func replaceAttachmentKey(member: MemberID, address: ContentAddress, key: [UInt8]) async throws {
        _ = try await call("PUT", attachmentPath(member, address) + "/key", body: key, contentType: "application/octet-stream")
    }
}
