import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultVault

// Verifying another account's sharing identity with its person, and pinning it
// (docs/formats/member-sharing.md, "Verifying a contact: the safety code"). The
// server relays the exchange and is believed in nothing: each side commits before it
// sees the other's value, and only digits the person typed pin anything.

extension Vault {
    // MARK: Contacts

    /// Another account whose sharing identity this account verified and pinned.
    public struct Contact: Sendable, Equatable {
        public internal(set) var account: AccountID
        public internal(set) var identityGeneration: UInt32
        /// The `contact.pin` link.
        public internal(set) var pinned: UInt64
    }

    /// The pinned contacts, from the verified chain.
    public func contacts() throws -> [Contact] {
        try chain.contacts.map { Contact(account: $0.key, identityGeneration: $0.value.generation, pinned: $0.value.link) }
            .sorted { $0.account.rawValue < $1.account.rawValue }
    }

    /// What ``addContact(_:pollInterval:events:otherCode:)`` reports as it goes.
    public enum ContactEvent: Sendable, Equatable {
        /// This side asked first: the other person now runs the same on their side.
        case requested(id: String, expires: Int64)
        /// The other side asked first; this side answered it.
        case answered(id: String)
        /// The safety code this side computed: the people compare theirs.
        case safetyCode(String)
    }

    /// Verifies another account's sharing identity with its person and pins it.
    ///
    /// Appends `contact.pin` once the codes match; before the exchange, `identity.set` when
    /// the account has no sharing identity yet (with any work a revocation left undone
    /// before it).
    ///
    /// Both people run this, each naming the other's account. If the other side has
    /// asked already, this side answers; otherwise it asks and waits. Each side
    /// computes six digits over both identities and both random values (the one who
    /// asked committed to its value before seeing anything of the other's, so a
    /// server in the middle cannot grind a match). `events` shows this side's code;
    /// `otherCode` then returns the digits the other person read out (typed, never a
    /// yes/no: a glance at two screens is what an attacker counts on), compared here
    /// in constant time. Only when they are equal is the identity pinned on this
    /// account's chain (`contact.pin`). Pinning an account already pinned replaces its
    /// pin (a re-verification).
    ///
    /// - Throws: `invalid_input` for this account itself, `sas_mismatch` when the
    ///   codes differ or none was given (nothing pinned), `bad_reveal` when the other side's value does not
    ///   open its commitment, `contact_request_closed` when the request expired.
    @discardableResult
    public func addContact(_ other: AccountID, pollInterval: Duration = .seconds(1), events: (ContactEvent) -> Void = { _ in },
                           otherCode: () async throws -> String?) async throws -> Contact {
        guard other != account else {
            throw KeyVaultError(.invalidInput, "an account cannot be its own contact")
        }
        let mine = try await currentIdentity()
        let me = ContactIdentity(account: account, generation: mine.generation, signingKey: mine.signing.publicKey,
                                 boxKey: mine.boxKey.publicKey)
        let theirs: ContactIdentity, code: String
        if let request = try await openRequest(from: other) {
            (theirs, code) = try await answer(request, as: me, pollInterval: pollInterval, events: events)
        } else {
            (theirs, code) = try await ask(other, as: me, pollInterval: pollInterval, events: events)
        }
        events(.safetyCode(code))
        guard let typed = try await otherCode().flatMap(LinkSAS.digits), let expected = LinkSAS.digits(code),
              constantTimeEquals(Array(typed.utf8), Array(expected.utf8)) else {
            throw KeyVaultError(.sasMismatch, "the safety code given does not match this side's: \(other) was not added as a contact",
                                kind: .rejected)
        }
        // Only the pin holds the vault: the waits above (for the other side, for the person
        // to read the code out) let other calls go on.
        return try await exclusively {
            try await write("contact pin") { state in
                // This account's identity was renewed meanwhile (a revocation, here or on another
                // device): the other side verified one a revoked device may hold. Both run it again.
                guard state.identity?.generation == mine.generation else {
                    throw KeyVaultError(.contactChanged, "this account's sharing identity changed during the exchange (a revocation renewed it): \(other) was not added; both sides run it again",
                                        kind: .rejected)
                }
                return (AppendRequest(link: makeLink(.contactPin, Self.pinBody(theirs), after: state)), {})
            }
            let pinned = try chain.contacts[other]
            return Contact(account: other, identityGeneration: theirs.generation, pinned: pinned?.link ?? 0)
        }
    }

    /// The newest open request of `other` to this account that nobody answered yet.
    private func openRequest(from other: AccountID) async throws -> ContactRequestInfo? {
        let now = Int64(Date().timeIntervalSince1970)
        return try await api.contactRequests()
            .filter { $0.from == other && $0.to == account && $0.response == nil && $0.expires > now }
            .max { $0.expires < $1.expires }
    }

    /// What the initiator's wait ends with.
    private enum Asked {
        case answered(ContactResponse)
        /// Both sides asked at once: the one with the lower account id answers the other's request.
        case theyAsked(ContactRequestInfo)
    }

    /// The initiator's side: commit, wait for the answer, reveal.
    private func ask(_ other: AccountID, as me: ContactIdentity, pollInterval: Duration,
                     events: (ContactEvent) -> Void) async throws -> (ContactIdentity, String) {
        let nonce = SystemRandom.bytes(count: ContactCommitment.nonceByteCount)
        guard let commitment = ContactCommitment.compute(me, nonce: nonce) else {
            throw KeyVaultError(.internalError, "the commitment could not be computed")
        }
        let created = try await api.createContactRequest(ContactRequestCreate(to: other, identity: IdentityKeys(me),
                                                                              commitment: Hex.encode(commitment)))
        events(.requested(id: created.id, expires: created.expires))
        let asked: Asked = try await wait(for: created.id, every: pollInterval, { $0.response.map(Asked.answered) }, meanwhile: {
            guard account.rawValue < other.rawValue else { return nil }
            return try await openRequest(from: other).map(Asked.theyAsked)
        })
        let response: ContactResponse
        switch asked {
        case .theyAsked(let request): return try await answer(request, as: me, pollInterval: pollInterval, events: events)
        case .answered(let answer): response = answer
        }
        let theirs = try Self.identity(response.identity, of: other)
        guard let responderNonce = try? Hex.decode(response.nonce) else {
            throw KeyVaultError(.badResponse, "the other side's random value is not hex")
        }
        try await api.revealContactRequest(created.id, nonce: nonce)
        guard let code = ContactSafetyCode.compute(initiator: me, commitment: commitment, initiatorNonce: nonce,
                                                   responder: theirs, responderNonce: responderNonce) else {
            throw KeyVaultError(.badResponse, "the other side's random value has the wrong length")
        }
        return (theirs, code)
    }

    /// The responder's side: answer with this identity and a random value, wait for
    /// the reveal, check it opens the commitment made before the answer.
    private func answer(_ request: ContactRequestInfo, as me: ContactIdentity, pollInterval: Duration,
                        events: (ContactEvent) -> Void) async throws -> (ContactIdentity, String) {
        let theirs = try Self.identity(request.identity, of: request.from)
        guard let commitment = try? Hex.decode(request.commitment), commitment.count == 32 else {
            throw KeyVaultError(.badResponse, "the contact request's commitment is not 32 bytes of hex")
        }
        let nonce = SystemRandom.bytes(count: ContactCommitment.nonceByteCount)
        try await api.respondToContactRequest(request.id, ContactResponse(identity: IdentityKeys(me), nonce: Hex.encode(nonce)))
        events(.answered(id: request.id))
        let revealed = try await wait(for: request.id, every: pollInterval) { $0.reveal }
        guard let initiatorNonce = try? Hex.decode(revealed), ContactCommitment.opens(commitment, identity: theirs, nonce: initiatorNonce) else {
            throw KeyVaultError(.badReveal, "the other side's revealed value does not open the commitment it made first: someone changed the exchange; nothing was pinned", kind: .verification)
        }
        guard let code = ContactSafetyCode.compute(initiator: theirs, commitment: commitment, initiatorNonce: initiatorNonce,
                                                   responder: me, responderNonce: nonce) else {
            throw KeyVaultError(.badResponse, "the other side's random value has the wrong length")
        }
        return (theirs, code)
    }

    /// How long a side waits for the other, by its own clock (the server's expiry is
    /// not trusted to end the wait): a request's 10 minutes and a minute of skew.
    static let contactWait: Duration = .seconds(660)

    /// Reads the request until `field` has a value (or `meanwhile` finds one), or it
    /// expires, by the server's word or this device's clock.
    private func wait<T>(for id: String, every interval: Duration, _ field: (ContactRequestInfo) -> T?,
                         meanwhile: () async throws -> T? = { nil }) async throws -> T {
        let deadline = ContinuousClock.now + Self.contactWait
        while true {
            let info = try await api.contactRequest(id)
            if let value = field(info) { return value }
            if let value = try await meanwhile() { return value }
            guard info.expires > Int64(Date().timeIntervalSince1970), ContinuousClock.now < deadline else {
                throw KeyVaultError(.contactRequestClosed, "the contact request expired before the other side answered")
            }
            try await Task.sleep(for: interval)
        }
    }

    /// An identity the server relayed, as the other account's.
    static func identity(_ keys: IdentityKeys, of account: AccountID) throws -> ContactIdentity {
        guard let identity = ContactIdentity(keys, account: account) else {
            throw KeyVaultError(.badResponse, "the identity the server relayed for \(account) is malformed")
        }
        return identity
    }
}
