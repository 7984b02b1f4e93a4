import Foundation
import Hummingbird
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore

/// Short-lived state of recovery enrollment: challenges, one-enrollment tokens, and
/// failure counts per account and per client address.
///
/// Nothing here grows with what strangers send, and nothing scans it all per call:
/// - a challenge is stateless: its expiry and a random part, authenticated with a
///   key of this process, so issuing one stores nothing (and a stranger cannot use
///   up the owner's); only a challenge answered by a valid proof is remembered,
///   until it expires, so that it is single use;
/// - tokens are issued only for valid proofs;
/// - failures are counted only until a key (account or address) reaches its limit,
///   and the total remembered is capped;
/// - everything expires through queues ordered by time, swept from the front.
///
/// A valid proof is never refused by a limit: limits count and slow failures only.
actor RecoveryGate {
    static let challengeLifetime: Int64 = 120
    static let tokenLifetime: Int64 = 300
    /// Failed proofs allowed per account, and per client address, in `failureWindow`.
    static let maxFailures = 5
    static let failureWindow: Int64 = 900
    /// Failures remembered across every account and address. Past it a failing proof
    /// is refused as rate limited without being counted; a valid one still passes.
    static let maxTrackedFailures = 100_000

    private let challengeKey = SymmetricKey()
    private var usedChallenges = ExpiringSet<String>()
    private var tokens = ExpiringSet<String>()
    private var tokenAccounts: [String: AccountID] = [:]
    private var failures: [String: [Int64]] = [:]
    private var failureQueue = ExpiryQueue<String>()

    static func now() -> Int64 { Int64(Date().timeIntervalSince1970) }

    /// A challenge for `account`: 8 bytes of expiry (big-endian seconds), 8 random
    /// bytes and the first 16 bytes of their HMAC with the account, in hex.
    func issueChallenge(for account: AccountID) throws -> RecoveryChallenge {
        let expires = Self.now() + Self.challengeLifetime
        let body = withUnsafeBytes(of: UInt64(expires).bigEndian, Array.init) + SystemRandom.bytes(count: 8)
        return RecoveryChallenge(challenge: Hex.encode(body + (try mac(body, account))), expires: expires)
    }

    private func mac(_ body: [UInt8], _ account: AccountID) throws -> [UInt8] {
        Array(try HMACSHA256.authenticationCode(for: Array("keyvault/v1/recovery-challenge".utf8) + [0] + Array(account.rawValue.utf8) + [0] + body,
                                                using: challengeKey).prefix(16))
    }

    /// Whether `challenge` is one this process issued for `account`, unexpired and
    /// not yet answered by a valid proof.
    func isOpen(challenge: String, for account: AccountID) -> Bool {
        let now = Self.now()
        sweep(now)
        guard let bytes = try? Hex.decode(challenge), bytes.count == 32, challenge == challenge.lowercased(),
              let expected = try? mac(Array(bytes[0..<16]), account), constantTimeEquals(expected, Array(bytes[16...]))
        else { return false }
        let expires = Int64(bitPattern: bytes[0..<8].reduce(0) { $0 << 8 | UInt64($1) })
        return expires >= now && !usedChallenges.contains(challenge)
    }

    /// Marks a challenge answered (single use); false if it already was.
    func close(challenge: String) -> Bool {
        guard !usedChallenges.contains(challenge) else { return false }
        usedChallenges.insert(challenge, expires: Self.now() + Self.challengeLifetime)
        return true
    }

    /// Seconds to wait, when `account` or `client` has failed too often recently.
    func retryAfter(account: AccountID, client: String) -> Int64? {
        let now = Self.now()
        sweep(now)
        if failureQueue.count >= Self.maxTrackedFailures { return Self.failureWindow }
        var wait: Int64?
        for key in ["account:\(account)", "client:\(client)"] {
            if let recent = failures[key], recent.count >= Self.maxFailures, let oldest = recent.first {
                wait = max(wait ?? 0, oldest + Self.failureWindow - now)
            }
        }
        return wait
    }

    func recordFailure(account: AccountID, client: String) {
        let now = Self.now()
        for key in ["account:\(account)", "client:\(client)"] {
            failures[key, default: []].append(now)
            failureQueue.append(key, at: now)
        }
    }

    func issueToken(for account: AccountID) -> (String, Int64) {
        let token = Hex.encode(SystemRandom.bytes(count: 32))
        let expires = Self.now() + Self.tokenLifetime
        tokens.insert(token, expires: expires)
        tokenAccounts[token] = account
        return (token, expires)
    }

    /// Takes an enrollment token (single use).
    func take(token: String, for account: AccountID) -> Bool {
        sweep(Self.now())
        guard tokens.remove(token), let owner = tokenAccounts.removeValue(forKey: token) else { return false }
        return owner == account
    }

    /// Drops what expired, from the fronts of the queues: each entry is dropped
    /// once, so the cost is amortised over the calls that added them.
    private func sweep(_ now: Int64) {
        usedChallenges.removeExpired(now)
        for token in tokens.removeExpired(now) { tokenAccounts[token] = nil }
        for key in failureQueue.popOlder(than: now - Self.failureWindow) {
            failures[key]?.removeFirst()
            if failures[key]?.isEmpty == true { failures[key] = nil }
        }
    }

    /// How much the gate remembers, for tests.
    var remembered: (challenges: Int, tokens: Int, failures: Int) { (usedChallenges.count, tokens.count, failureQueue.count) }
}

/// Keys in the order they were added, with their times: times grow along the
/// queue, so what expired is at the front.
struct ExpiryQueue<Key> {
    private var entries: [(key: Key, time: Int64)] = []
    private var head = 0

    var count: Int { entries.count - head }

    mutating func append(_ key: Key, at time: Int64) { entries.append((key, time)) }

    /// Removes and returns the keys added before `time`.
    mutating func popOlder(than time: Int64) -> [Key] {
        var popped = [Key]()
        while head < entries.count, entries[head].time < time {
            popped.append(entries[head].key)
            head += 1
        }
        // Compacts once the dead prefix is half the storage: amortised O(1) per entry.
        if head > 64, head * 2 > entries.count {
            entries.removeFirst(head)
            head = 0
        }
        return popped
    }
}

/// A set whose members expire; all of them live equally long, so they expire in the
/// order they were inserted.
struct ExpiringSet<Key: Hashable> {
    private var members: [Key: Int64] = [:]
    private var queue = ExpiryQueue<Key>()

    var count: Int { members.count }
    func contains(_ key: Key) -> Bool { members[key] != nil }

    mutating func insert(_ key: Key, expires: Int64) {
        members[key] = expires
        queue.append(key, at: expires)
    }

    /// false if `key` was not there.
    mutating func remove(_ key: Key) -> Bool { members.removeValue(forKey: key) != nil }

    /// Removes the members expired at `now`; returns them.
    @discardableResult
    mutating func removeExpired(_ now: Int64) -> [Key] {
        queue.popOlder(than: now).filter { members.removeValue(forKey: $0) != nil }
    }
}
