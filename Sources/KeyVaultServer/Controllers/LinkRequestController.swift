import Foundation
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

/// Linking a new device (docs/formats/device-link.md): the new device asks (unsigned:
/// it is not enrolled yet, the code is the capability), an enrolled device answers,
/// the new device reveals, and the enrolled device approves with a device.add link.
struct LinkRequestController: Sendable {
    static let lifetime: Int64 = 600
    /// Pending link requests one client address (an IPv6 /56) may have, on all accounts together.
    static let maxPendingPerClient = 5
    /// Pending link requests on the whole server before the per-account floor below applies.
    static let maxPending = 100_000
    /// Past that, an account with fewer pending requests than this still gets one: a
    /// flood over many addresses stops no account that it does not itself target.
    static let maxPendingPerAccountOverTotal = 3

    let service: ServiceState

    func addRoutes(to routes: RouteBuilder) {
        let request = "/v1/accounts/{account}/link-requests/{code}"
        routes.open(.post, "/v1/accounts/{account}/link-requests", use: create)
        routes.signed(.get, "/v1/accounts/{account}/link-requests", use: pending)
        routes.open(.get, request, use: status)
        routes.signed(.post, request + "/respond", bodyLimit: 4096, acceptsSessions: false, use: respond)
        routes.open(.post, request + "/reveal", use: reveal)
        routes.signed(.post, request + "/approve", use: approve)
        routes.signed(.post, request + "/refuse", acceptsSessions: false, use: refuse)
    }

    @Sendable func create(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        let account = try context.parameters.account()
        let create = try decodeBody(LinkRequestCreate.self, from: try await request.collectBody(limit: 4096))
        guard create.isWellFormed else {
            throw APIError.badRequest("a link request has hex public keys, the device id derived from the signing key, a 1-100 character name without control characters and a 32-byte hex commitment")
        }
        guard try await service.chainState(account).devices[create.device] == nil else {
            throw APIError(.deviceExists, "that device is already part of this account")
        }
        let code = LinkCode.random()
        let expires = RecoveryGate.now() + Self.lifetime
        // Limits per client address, not per account: a stranger flooding one account's
        // requests must not stop the owner's new device from asking.
        try await service.database.createLinkRequest(account, code: code, expires: expires, request: create,
                                                     client: context.clientBucket,
                                                     perClient: Self.maxPendingPerClient, total: Self.maxPending,
                                                     perAccountOverTotal: Self.maxPendingPerAccountOverTotal)
        return try .json(LinkRequestInfo(code: code, status: .pending, expires: expires, request: create), status: .created)
    }

    /// Both devices poll this, unsigned (the new device is not enrolled yet): the code is
    /// the capability. The approver trusts none of it beyond what the commitment and the
    /// SAS check (docs/formats/device-link.md).
    @Sendable func status(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        let account = try context.parameters.account()
        guard let info = try await service.database.linkRequest(account, code: try context.parameters.linkCode()) else {
            throw APIError.notFound("link request")
        }
        return try .json(info)
    }

    @Sendable func pending(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        try .json(["requests": try await service.database.pendingLinkRequests(context.account)])
    }

    /// The approver's random value r_A, posted after it fetched the request (and so its commitment).
    @Sendable func respond(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let code = try context.parameters.linkCode()
        let nonce = try linkNonce(context.body)
        try await service.database.respondToLinkRequest(context.account, code: code, nonce: nonce, by: context.device.id)
        return Response(status: .noContent)
    }

    /// The new device's r_N. Refused unless it opens the request's commitment, so that
    /// nobody but the new device can move the request on (or end it).
    @Sendable func reveal(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        let account = try context.parameters.account()
        let code = try context.parameters.linkCode()
        let nonce = try linkNonce(try await request.collectBody(limit: 4096))
        guard let info = try await service.database.linkRequest(account, code: code) else { throw APIError.notFound("link request") }
        guard LinkCommitment.opens(account: account, request: info.request, nonce: try Hex.decode(nonce)) else {
            throw APIError(.badReveal, "the value does not open the request's commitment")
        }
        try await service.database.revealLinkRequest(account, code: code, nonce: nonce)
        return Response(status: .noContent)
    }

    private func linkNonce(_ bytes: [UInt8]) throws -> String {
        let body = try decodeBody(LinkNonce.self, from: bytes)
        guard body.nonce.utf8.count == 64, (try? Hex.decode(body.nonce)) != nil else {
            throw APIError.badRequest("nonce is 32 bytes as 64 hex digits")
        }
        return body.nonce.lowercased()
    }

    @Sendable func approve(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        let code = try context.parameters.linkCode()
        guard let info = try await service.database.linkRequest(context.account, code: code) else { throw APIError.notFound("link request") }
        guard info.status == .pending else {
            throw APIError(.linkRequestClosed, "this link request is \(info.status.rawValue)")
        }
        guard info.deviceNonce != nil, info.approver == context.device.id else {
            throw APIError(.linkRequestOutOfTurn, "approve a link request after answering it and seeing the new device's reveal")
        }
        let append = try decodeBody(AppendRequest.self, from: context.body)
        guard append.link.type == .deviceAdd, append.link.body["device"] == info.request.device.rawValue,
              append.link.body["signingKey"] == info.request.signingKey, append.link.body["boxKey"] == info.request.boxKey
        else { throw APIError.badRequest("the approval must add exactly the device that asked (same id and keys)") }
        return try await service.appendVerified(context.account, append, by: context.device, approving: code)
    }

    @Sendable func refuse(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        do {
            try await service.database.refuseLinkRequest(context.account, code: try context.parameters.linkCode(), by: context.device.id)
        } catch StoreError.linkRequestClosed {
            throw APIError(.linkRequestClosed, "this link request is no longer pending")
        }
        return Response(status: .noContent)
    }
}
