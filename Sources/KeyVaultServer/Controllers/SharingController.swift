import Foundation
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

/// The sharing relay (docs/formats/member-sharing.md, "The relay: routes"): identity
/// wraps, the contact exchange between two accounts, and a grantee's reads (and
/// writes) of what a sharer shares with it. Every route is signed by a device of the
/// account in the path; a grantee reaches a sharer's data only under its own path,
/// and only while a grant in force on the sharer's chain, as this server replays it,
/// names it. Nothing here is trusted by the clients: they check every answer against
/// the chains they replay.
struct SharingController: Sendable {
    /// How long a contact request stays open (as a device-link request).
    static let lifetime: Int64 = 600
    /// Unexpired contact requests one account may have made.
    static let maxOpenPerAccount = 10

    let service: ServiceState
    private var attachments: AttachmentController { AttachmentController(service: service) }
    private var chains: ChainController { ChainController(service: service) }

    func addRoutes(to routes: RouteBuilder) {
        let requests = "/v1/accounts/{account}/contact-requests"
        let shared = "/v1/accounts/{account}/shared/{sharer}"
        routes.signed(.get, "/v1/accounts/{account}/identity-wraps", use: identityWraps)
        routes.signed(.post, requests, bodyLimit: 4096, use: createContactRequest)
        routes.signed(.get, requests, use: contactRequests)
        routes.signed(.get, requests + "/{request}", use: contactRequest)
        routes.signed(.post, requests + "/{request}/respond", bodyLimit: 4096, use: respond)
        routes.signed(.post, requests + "/{request}/reveal", bodyLimit: 4096, use: reveal)
        routes.signed(.get, "/v1/accounts/{account}/shared", use: sharedWithAccount)
        routes.signed(.get, "/v1/accounts/{account}/contacts/{contact}/chain", use: contactChain)
        routes.signed(.get, "/v1/accounts/{account}/contacts/{contact}/head-statements", use: contactHeadStatements)
        routes.signed(.get, shared + "/members/{member}/attachments", use: sharedAttachments)
        routes.signed(.get, shared + "/members/{member}/attachments/{address}", use: sharedAttachment)
        routes.signed(.put, shared + "/members/{member}/attachments/{address}", bodyLimit: service.configuration.maxWholeAttachmentBytes,
                      use: putSharedAttachment)
        // In chunks, as the sharer's own (AttachmentController): any size through a bounded amount of memory.
        let attachment = shared + "/members/{member}/attachments/{address}"
        routes.signed(.get, attachment + "/key", use: sharedAttachmentKey)
        routes.signed(.put, attachment + "/meta", bodyLimit: AttachmentObject.maximumMetaBytes, use: nameSharedAttachment)
        routes.signed(.get, attachment + "/chunks", use: sharedChunks)
        routes.signed(.get, attachment + "/chunks/{index}", use: sharedChunk)
        routes.signed(.post, attachment + "/uploads", bodyLimit: AttachmentController.beginBodyLimit, use: beginSharedUpload)
        routes.signed(.put, attachment + "/uploads/{upload}/chunks/{index}", bodyLimit: ChunkLayout.maximumSealedChunkBytes,
                      use: putSharedChunk)
        routes.signed(.get, attachment + "/uploads/{upload}", use: sharedUploadStatus)
        routes.signed(.post, attachment + "/uploads/{upload}/complete", use: completeSharedUpload)
    }

    @Sendable func identityWraps(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        try .json(["wraps": try await service.database.identityWraps(context.account)])
    }

    // MARK: Contact requests

    @Sendable func createContactRequest(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let create = try decodeBody(ContactRequestCreate.self, from: context.body)
        guard create.to != context.account else { throw APIError.badRequest("a contact request goes to another account than this one") }
        try await checkCurrentIdentity(create.identity, of: context.account)
        guard Hex.isLowercase(create.commitment, byteCount: 32) else {
            throw APIError.badRequest("commitment is 32 bytes as 64 lowercase hex digits")
        }
        let info = ContactRequestInfo(id: Hex.encode(SystemRandom.bytes(count: 16)), from: context.account, to: create.to,
                                      expires: RecoveryGate.now() + Self.lifetime, identity: create.identity, commitment: create.commitment)
        do {
            try await service.database.createContactRequest(info, maxOpenPerAccount: Self.maxOpenPerAccount)
        } catch StoreError.tooManyLinkRequests {
            throw APIError(.tooManyContactRequests, "this account has \(Self.maxOpenPerAccount) open contact requests; wait for one to expire (they last \(Self.lifetime / 60) minutes)")
        }
        return try .json(info, status: .created)
    }

    @Sendable func contactRequests(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        try .json(["requests": try await service.database.contactRequests(of: context.account)])
    }

    @Sendable func contactRequest(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        guard let info = try await service.database.contactRequest(id: try context.parameters.contactRequest()),
              info.from == context.account || info.to == context.account else { throw APIError.notFound("contact request") }
        return try .json(info)
    }

    /// The responder's identity and random value r_B, once, by the account the request is to.
    @Sendable func respond(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let id = try context.parameters.contactRequest()
        let response = try decodeBody(ContactResponse.self, from: context.body)
        try await checkCurrentIdentity(response.identity, of: context.account)
        guard Hex.isLowercase(response.nonce, byteCount: ContactCommitment.nonceByteCount) else {
            throw APIError.badRequest("nonce is 32 bytes as 64 lowercase hex digits")
        }
        try await step { try await service.database.respondToContactRequest(id: id, to: context.account, response: response) }
        return Response(status: .noContent)
    }

    /// The initiator's r_A. Refused unless it opens the request's commitment, so that
    /// only the initiator can finish the exchange (the responder checks it again).
    @Sendable func reveal(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let id = try context.parameters.contactRequest()
        // LinkNonce takes hex of either case (as a link request's reveal does); stored lowercase.
        let nonce = try decodeBody(LinkNonce.self, from: context.body).nonce.lowercased()
        guard Hex.isLowercase(nonce, byteCount: ContactCommitment.nonceByteCount) else {
            throw APIError.badRequest("nonce is 32 bytes as 64 lowercase hex digits")
        }
        guard let info = try await service.database.contactRequest(id: id), info.from == context.account else {
            throw APIError.notFound("contact request")
        }
        // Checked well formed when the request was made: it decodes.
        guard let identity = ContactIdentity(info.identity, account: info.from),
              ContactCommitment.opens(try Hex.decode(info.commitment), identity: identity, nonce: try Hex.decode(nonce)) else {
            throw APIError(.badReveal, "the value does not open the request's commitment")
        }
        try await step { try await service.database.revealContactRequest(id: id, from: context.account, nonce: nonce) }
        return Response(status: .noContent)
    }

    /// Runs a step of a contact request, its store refusals said of a contact request.
    private func step(_ body: () async throws -> Void) async throws {
        do {
            try await body()
        } catch StoreError.notFound {
            throw APIError.notFound("contact request")
        } catch StoreError.linkRequestClosed {
            throw APIError(.contactRequestClosed, "this contact request was answered (or revealed) already, or it expired")
        } catch StoreError.linkRequestOutOfTurn {
            throw APIError(.contactRequestOutOfTurn, "reveal after the other account has answered the contact request")
        }
    }

    /// An identity sent in the exchange must be the account's current one on its chain
    /// (the other side checks the same against the chain it replays).
    private func checkCurrentIdentity(_ keys: IdentityKeys, of account: AccountID) async throws {
        guard keys.generation >= 1, Hex.isLowercase(keys.signingKey, byteCount: 32), Hex.isLowercase(keys.boxKey, byteCount: 32) else {
            throw APIError.badRequest("an identity has a generation of 1 or more and two keys of 64 lowercase hex digits")
        }
        guard let current = try await service.chainState(account).identity, current.generation == keys.generation,
              Hex.encode(current.signingKey.rawRepresentation) == keys.signingKey, Hex.encode(current.boxKey.rawRepresentation) == keys.boxKey
        else {
            throw APIError(.wrongGeneration, "the identity is not this account's current sharing identity on its chain (identity.set): another generation or other keys")
        }
    }


    // MARK: The grantee's side

    /// Per sharer, the share boxes naming this account whose grant is in force now on
    /// the sharer's chain (a box of a revoked grant is kept, but no longer listed).
    @Sendable func sharedWithAccount(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        // Only sharers this account pinned, each read on its own: anyone may pin and grant to
        // any account, and a stranger's boxes must not crowd out (or slow down) the ones it
        // verified, nor be read at all.
        let pinned = try await service.chainState(context.account).contacts
        var shared: [SharedWithAccount] = []
        for sharer in pinned.keys.sorted(by: { $0.rawValue < $1.rawValue }) {
            let stored = try await service.database.shareBoxes(grantee: context.account, from: sharer)
            guard !stored.isEmpty else { continue }
            let chain: ChainState
            do {
                chain = try await service.chainState(sharer)
            } catch let error as APIError where error.code == .notFound {
                continue
            }
            let boxes = stored.filter {
                chain.grants[ChainState.GrantKey(member: $0.member, grantee: context.account)]?.granted == $0.grant
            }
            if !boxes.isEmpty { shared.append(SharedWithAccount(sharer: sharer, boxes: boxes)) }
        }
        return try .json(["shared": shared])
    }

    /// Another account's chain, while that chain pins this account (`contact.pin`):
    /// a grantee replays its sharer's to judge grants and boxes, a sharer its
    /// grantee's to see that the identity it seals to is still the verified one. The
    /// account chose to be this one's contact; nobody else reads its chain.
    @Sendable func contactChain(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        try await chains.chain(of: try await pinningContact(context), request)
    }

    /// The contact's devices' head statements, under the same rule as its chain.
    @Sendable func contactHeadStatements(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        try .json(["statements": try await service.database.headStatements(try await pinningContact(context))])
    }

    /// The contact in the path, when its chain pins the caller's account; else 404, as for no account.
    private func pinningContact(_ context: SignedRequestContext) async throws -> AccountID {
        let contact = try context.parameters.contact()
        let state: ChainState
        do {
            state = try await service.chainState(contact)
        } catch let error as APIError where error.code == .notFound {
            throw Self.noGrant
        }
        guard state.contacts[context.account] != nil else { throw Self.noGrant }
        return contact
    }

    @Sendable func sharedAttachments(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (sharer, member, _) = try await grant(context)
        return try await attachments.list(sharer, member: member)
    }

    @Sendable func sharedAttachment(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (sharer, member, address) = try await sharedAttachment(context)
        return try await attachments.get(sharer, member: member, address: address)
    }

    /// Stored under the sharer's account and member; its audit log names the grantee's
    /// device. A grantee never replaces: what is at the address stays (its sharer's
    /// devices check it and replace it when it does not open).
    @Sendable func putSharedAttachment(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (sharer, member, address) = try await sharedAttachment(context, writing: true)
        return try await attachments.put(sharer, member: member, address: address, body: context.body, by: context.device.id)
    }

    @Sendable func sharedAttachmentKey(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (sharer, member, address) = try await sharedAttachment(context)
        return try await attachments.getKey(sharer, member: member, address: address)
    }

    @Sendable func sharedChunks(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (sharer, member, address) = try await sharedAttachment(context)
        return try await attachments.listChunks(sharer, member: member, address: address)
    }

    @Sendable func sharedChunk(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (sharer, member, address) = try await sharedAttachment(context)
        return try await attachments.getChunk(sharer, member: member, address: address, index: try context.parameters.chunkIndex())
    }

    // An upload in chunks under a grant that writes: each step checks the grant again,
    // so one begun before a revocation goes no further than the requests already past
    // that check (and the revoking link deletes it). The grantee is its starter: it finds
    // only its own uploads, has its own allowance of unfinished ones in the sharer's
    // account (never the sharer's), and cancels none of the sharer's. Completing one is
    // logged with the grantee's device.

    @Sendable func beginSharedUpload(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (sharer, member, address) = try await sharedAttachment(context, writing: true)
        return try await attachments.beginUpload(sharer, member: member, address: address, startedBy: context.account, body: context.body)
    }

    @Sendable func putSharedChunk(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (sharer, member, address) = try await sharedAttachment(context, writing: true)
        return try await attachments.putChunk(sharer, member: member, address: address, upload: try context.parameters.upload(),
                                              startedBy: context.account, index: try context.parameters.chunkIndex(), body: context.body)
    }

    @Sendable func sharedUploadStatus(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (sharer, member, address) = try await sharedAttachment(context, writing: true)
        return try await attachments.uploadStatus(sharer, member: member, address: address, upload: try context.parameters.upload(),
                                                  startedBy: context.account)
    }

    @Sendable func completeSharedUpload(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (sharer, member, address) = try await sharedAttachment(context, writing: true)
        return try await attachments.completeUpload(sharer, member: member, address: address, upload: try context.parameters.upload(),
                                                    startedBy: context.account, by: context.device.id)
    }

    /// A name for an attachment of the shared member that has none, under a grant that is not
    /// read-only: sealed under the member's key, which the grantee holds (the server reads
    /// nothing). Never a rename: what the sharer named stays as named.
    @Sendable func nameSharedAttachment(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let (sharer, member, address) = try await sharedAttachment(context, writing: true)
        return try await attachments.putMeta(sharer, member: member, address: address, body: context.body, grantee: context.device.id)
    }

    /// The sharer, member and address in the path, while a grant of the member to this
    /// account is in force (and, `writing`, lets it add attachments: 403 `read_only_grant` otherwise).
    private func sharedAttachment(_ context: SignedRequestContext, writing: Bool = false) async throws
        -> (sharer: AccountID, member: MemberID, address: String) {
        let (sharer, member, grant) = try await grant(context)
        guard !writing || !grant.readOnly else {
            throw APIError(.readOnlyGrant, "this member is shared with this account read-only: it may read the attachments, not add any")
        }
        return (sharer, member, try context.parameters.address().description)
    }

    /// The grant in force of the member in the path to this account, on the sharer's chain.
    private func grant(_ context: SignedRequestContext) async throws -> (sharer: AccountID, member: MemberID, grant: ChainState.Grant) {
        let sharer = try context.parameters.sharer()
        let member = try context.parameters.member()
        guard let grant = try await service.chainState(sharer).grants[ChainState.GrantKey(member: member, grantee: context.account)] else {
            throw Self.noGrant
        }
        return (sharer, member, grant)
    }

    /// No grant (or no pin): the answer of a missing account, so that a stranger learns nothing of who shares.
    private static let noGrant = APIError.notFound("account")
}
