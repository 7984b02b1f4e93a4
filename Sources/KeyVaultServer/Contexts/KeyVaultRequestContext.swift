import Hummingbird
import KeyVaultModel
import KeyVaultStore

/// The request context: Hummingbird's core storage, with this service's limits.
package struct KeyVaultRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    /// The TCP peer's IP address (nil in in-process tests).
    package let peerAddress: String?
    /// The client's IP address, for rate limits: the peer's, or behind a trusted
    /// proxy the one its `X-Forwarded-For` names (``ClientAddressMiddleware``).
    package internal(set) var clientAddress: String
    /// Who signed the request, once ``SignatureMiddleware`` has checked it; what
    /// ``SignedRequestContext`` is made from.
    var caller: SignedCaller?

    package init(source: Source) {
        coreContext = .init(source: source)
        peerAddress = source.channel.remoteAddress?.ipAddress
        clientAddress = peerAddress ?? "local"
    }
    /// Bodies are collected explicitly with per-route limits; this is the ceiling.
    package var maxUploadSize: Int { 1 << 30 }

    /// The key rate limits count this client under (``IPNetwork/bucket(_:)``).
    var clientBucket: String { IPNetwork.bucket(clientAddress) }
}

/// A request whose signature (or session MAC) verified: the account in its path, the
/// device that signed it, and the body bytes the signature covers.
struct SignedCaller: Sendable {
    let account: AccountID
    let device: StoredDevice
    /// The account's head as the request's nonce statement saw it (a store shared by replicas).
    let head: HeadSeen?
    let body: [UInt8]
}
