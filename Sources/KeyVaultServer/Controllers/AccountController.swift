import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

/// Accounts: created from a self-signed genesis, deleted by one of their devices.
struct AccountController: Sendable {
    let service: ServiceState

    func addRoutes(to routes: RouteBuilder) {
        routes.open(.post, "/v1/accounts", use: create)
        routes.open(.post, "/v1/invites/check", use: checkInvite)
        routes.open(.post, "/v1/accounts/import", use: importAccount)
        routes.signed(.delete, "/v1/accounts/{account}", acceptsSessions: false, use: delete)
    }

    /// Account creation's invite check alone, so that a client learns it before it
    /// shows a new recovery code: 204 when this server takes new accounts with what the
    /// request offers (no token needed, or the right one). It grants nothing, and
    /// revocation has nothing to end in it.
    @Sendable func checkInvite(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        try checkInvite(request)
        return Response(status: .noContent)
    }

    private func checkInvite(_ request: Request) throws {
        if let token = service.configuration.inviteToken {
            let offered = request.headers[Headers.invite] ?? ""
            guard constantTimeEquals(Array(offered.utf8), Array(token.utf8)) else {
                throw APIError(.inviteRequired, "account creation on this server needs a valid invite token (KeyVault-Invite header)")
            }
        }
    }

    @Sendable func create(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        try checkInvite(request)
        let create = try decodeBody(CreateAccountRequest.self, from: try await request.collectBody(limit: service.configuration.maxJSONBytes))
        let state = try ChainState(genesis: create.genesis)
        for box in create.boxes { try service.checkAppended(box, in: state) }
        guard create.recovery == nil else {
            throw APIError.badRequest("set the recovery code with a recovery.set link after creating the account")
        }
        let founding = try service.founding(state, genesis: create.genesis, boxes: create.boxes)
        try await service.database.createAccount(state.account, genesis: founding.genesis, device: founding.device,
                                                 boxes: founding.boxes, recovery: nil)
        await service.chains.store(state, replacing: true)
        context.logger.info("account created", metadata: ["account": .string(state.account.rawValue)])
        return try .json(CreateAccountResponse(account: state.account, head: state.head), status: .created)
    }

    /// An account another server held (``ServiceState/importAccount(_:signed:method:path:query:bodyHash:invite:)``):
    /// signed as any request, but by a device of the chain it brings, which this server
    /// may not know yet. Creating the account here takes the invite token as creation does.
    @Sendable func importAccount(_ request: Request, _ context: KeyVaultRequestContext) async throws -> Response {
        let claim = try RequestSignature.Claim(
            device: request.headers[Headers.device], timestamp: request.headers[Headers.timestamp],
            nonce: request.headers[Headers.nonce], signature: request.headers[Headers.signature])
        // Named for this service in the signed query, as a delete is: no other server replays it elsewhere.
        try namesThisServer(request, "an import")
        // On a server that takes accounts by invitation, a caller without the token is read
        // only when it names a device enrolled here (an account moved here before, brought
        // forward): a stranger's body of up to 16 MiB is not held to be refused after.
        do {
            try checkInvite(request)
        } catch {
            guard try await service.authenticator.device(claim.device) != nil else { throw error }
        }
        let body = try await request.collectBody(limit: ImportAccountRequest.maxBytes)
        let imported = try await service.importAccount(
            try decodeBody(ImportAccountRequest.self, from: body), signed: claim, method: request.method.rawValue,
            path: request.uri.path, query: request.uri.query ?? "", bodyHash: SHA256.hash(body), invite: { try checkInvite(request) })
        context.logger.info("account imported", metadata: ["account": .string(imported.account.rawValue),
                                                           "appended": .stringConvertible(imported.appended)])
        return try .json(imported, status: imported.appended > 0 ? .created : .ok)
    }

    /// Refuses `what` (a signed request) unless its query names this service's instance.
    private func namesThisServer(_ request: Request, _ what: String) throws {
        guard request.uri.queryParameters.get("instance") == service.instance else {
            throw APIError(.wrongServer, "\(what) names this server's instance (GET /v1/server) in its signed query: this one names another server, or none")
        }
    }

    /// Names this service's instance and the head the device saw, both signed in the
    /// query: a delete another server replays here (the signature names no server), or one
    /// that raced a change on this server, deletes nothing.
    @Sendable func delete(_ request: Request, _ context: SignedRequestContext) async throws -> Response {
        try namesThisServer(request, "a delete")
        guard let head = request.uri.queryParameters.get("head").map({ String($0) }) else {
            throw APIError.badRequest("a delete names the chain head the device saw (head=HASH)")
        }
        do {
            try await service.database.deleteAccount(context.account, expectedHead: head, by: context.device.id)
        } catch StoreError.staleChain {
            throw ProtocolError(.staleChain, "the account changed since that head: fetch the chain, then delete again")
        }
        await service.chains.forget(context.account)
        service.authenticator.devices.removeAccount(context.account)
        context.logger.info("account deleted", metadata: ["account": .string(context.account.rawValue)])
        return Response(status: .noContent)
    }
}
