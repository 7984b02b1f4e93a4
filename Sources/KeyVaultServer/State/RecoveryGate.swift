import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultStore

/// Short-lived state of recovery enrollment: challenges, one-enrollment tokens, and
/// failure counts per account and per client address. Replicas share all of it: the
/// challenges and tokens are authenticated with keys derived from the server secret,
/// and what must be remembered is in the store.
///
/// Nothing grows with what strangers send:
/// - a challenge is stateless: its expiry and a random part, authenticated for its
///   account, so issuing one stores nothing (and a stranger cannot use up the
///   owner's); only a challenge answered by a valid proof is remembered (used once,
///   until it expires);
/// - a token is the same, issued only for a valid proof, remembered once taken;
/// - only proofs that answer a challenge issued here (for the account, unexpired)
///   are counted as failures, only until a key (account or address) reaches its
///   limit, and the total counted is capped; they are forgotten after the window.
///
/// A valid proof is never refused by a limit: limits count and slow failures only.
struct RecoveryGate: Sendable {
    static let challengeLifetime: Int64 = 120
    static let tokenLifetime: Int64 = 300
    /// Failed proofs allowed per account, and per client address, in `failureWindow`.
    static let maxFailures = 5
    static let failureWindow: Int64 = 900
    /// Failure rows (two per failed proof: its account's and its address's) kept across
    /// every account and address. Past it a failing proof is refused as rate limited
    /// without being counted; a valid one still passes.
    static let maxTrackedFailures = 100_000

    private let database: any KeyVaultRepository
    private let challenges: Ticket
    private let tokens: Ticket

    init(database: any KeyVaultRepository, secret: ServerSecret) throws {
        self.database = database
        challenges = Ticket(kind: "recovery-challenge", key: try secret.key(for: "recovery-challenge"), lifetime: Self.challengeLifetime)
        tokens = Ticket(kind: "recovery-token", key: try secret.key(for: "recovery-token"), lifetime: Self.tokenLifetime)
    }

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    func issueChallenge(for account: AccountID) throws -> RecoveryChallenge {
        let (challenge, expires) = try challenges.issue(for: account)
        return RecoveryChallenge(challenge: challenge, expires: expires)
    }

    /// Whether `challenge` was issued for `account` with this secret and is unexpired
    /// (whether it was answered already, ``close(challenge:for:)`` says).
    func wasIssued(challenge: String, for account: AccountID) -> Bool {
        challenges.expiry(of: challenge, for: account, now: Self.now()) != nil
    }

    /// Marks a challenge answered (single use, across replicas); false if it already was.
    func close(challenge: String, for account: AccountID) async throws -> Bool {
        try await challenges.use(challenge, for: account, in: database)
    }

    /// Counts a failed proof against `account` and `client`, unless one of them has
    /// failed too often recently: then the seconds to wait, and nothing is counted.
    func countFailure(account: AccountID, client: String) async throws -> Int64? {
        let now = Self.now()
        let (counted, before) = try await database.recordFailure(Self.keys(account, client), at: now, since: now - Self.failureWindow,
                                                                 limit: Self.maxFailures, cap: Self.maxTrackedFailures)
        guard !counted else { return nil }
        let limited = before.byKey.values.filter { $0.count >= Self.maxFailures }
        return limited.map { max(1, $0.oldest + Self.failureWindow - now) }.max() ?? Self.failureWindow
    }

    private static func keys(_ account: AccountID, _ client: String) -> [String] { ["account:\(account)", "client:\(client)"] }

    func issueToken(for account: AccountID) throws -> (String, Int64) {
        try tokens.issue(for: account)
    }

    /// An enrollment token of `account`, if it is one (issued here, unexpired), as the
    /// enrollment's write spends it (single use, across replicas): nil otherwise. Its
    /// expiry is judged here, when the request arrives; the write may spend it seconds
    /// later (a transaction run again, a busy wait), which the ``Ticket/clockMargin`` a
    /// used one is remembered past its expiry covers.
    func validToken(_ token: String, for account: AccountID) -> SingleUse? {
        tokens.singleUse(token, for: account)
    }
}

/// A value that costs the server nothing to issue and proves itself: 8 bytes of expiry
/// (big-endian seconds), 8 random bytes, and the first 16 bytes of their HMAC with its
/// kind and account, in lowercase hex (64 digits).
struct Ticket: Sendable {
    /// How long a used one is remembered past its expiry: replicas' clocks differ, and
    /// one ahead must not forget a ticket another still takes for unexpired.
    static let clockMargin: Int64 = 300
    let kind: String
    let key: SymmetricKey
    let lifetime: Int64

    /// - Parameter random: the random part (8 bytes; given only by the vector test).
    func issue(for account: AccountID, now: Int64 = RecoveryGate.now(),
               random: [UInt8] = SystemRandom.bytes(count: 8)) throws -> (String, Int64) {
        let expires = now + lifetime
        let body = withUnsafeBytes(of: UInt64(expires).bigEndian, Array.init) + random
        return (Hex.encode(body + (try mac(body, account))), expires)
    }

    /// Its expiry, if `text` is one of these for `account`, unexpired at `now` (and
    /// not expiring later than one issued now would: made with this key, but not here).
    func expiry(of text: String, for account: AccountID, now: Int64) -> Int64? {
        guard text.utf8.count == 64, text == text.lowercased(), let bytes = try? Hex.decode(text),
              let expected = try? mac(Array(bytes[0..<16]), account), constantTimeEquals(expected, Array(bytes[16...]))
        else { return nil }
        let expires = Int64(bitPattern: bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) })
        return expires >= now && expires <= now + lifetime ? expires : nil
    }

    /// Uses it up: false if it is not valid for `account` or was used before.
    func use(_ text: String, for account: AccountID, in database: any KeyVaultRepository) async throws -> Bool {
        guard let use = singleUse(text, for: account) else { return false }
        return try await database.useOnce(use.value, kind: use.kind, expires: use.expires, forgetBefore: RecoveryGate.now() - Self.clockMargin)
    }

    /// What using it up records, if it is valid for `account`.
    func singleUse(_ text: String, for account: AccountID) -> SingleUse? {
        let now = RecoveryGate.now()
        guard let expires = expiry(of: text, for: account, now: now) else { return nil }
        return SingleUse(kind: kind, value: text, expires: expires)
    }

    private func mac(_ body: [UInt8], _ account: AccountID) throws -> [UInt8] {
        Array(try HMACSHA256.authenticationCode(for: Array("keyvault/v1/\(kind)".utf8) + [0] + Array(account.rawValue.utf8) + [0] + body,
                                                using: key).prefix(16))
    }
}
