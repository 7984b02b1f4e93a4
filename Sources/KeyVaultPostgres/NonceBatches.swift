import Foundation
import Logging
import PostgresNIO
import KeyVaultModel
import KeyVaultStore

/// The nonces of requests that arrive together, taken in one statement (``StatementBatches``):
/// the request path's busiest statement, which every signed or MACed request makes on a
/// replica.
///
/// Nothing a request is promised changes:
/// - **Single use.** The primary key of `request_nonces` still decides across replicas: a
///   nonce is fresh only when this statement inserted its row. Within a batch, a (device,
///   nonce) pair is sent once; a second request with it is answered "used" without being sent.
/// - **Revocation.** Each device is read in the statement's snapshot, taken after every
///   request of the batch arrived, so after every revocation committed before any of them.
/// - **Last seen.** The same statement sets the last-seen time of each active device that
///   took a fresh nonce, when it is more than a minute old (as `touch`): never for a replay
///   or a revoked device.
/// - **The head.** Each device comes with its account's head in that snapshot: the key under
///   which the request may read the replica's copy of its boxes (``BoxCopies``).
///
/// And it never waits for a lock it could deadlock on: the nonces are inserted in one order,
/// (device, nonce), on every replica, and a device row another transaction holds (a
/// revocation, a deletion) is not touched this time (`SKIP LOCKED`: the request's own touch
/// then goes as before, after it).
enum NonceBatches {
    typealias Answer = (fresh: Bool, device: StoredDevice?, head: HeadSeen?)

    struct Request: Sendable {
        /// `now`: when the request was let in, its device's last-seen time if it is touched.
        let device: String, nonce: String, time: Int64, now: Int64
    }

    /// A second request with a (device, nonce) pair in one batch is a replay.
    static func make(client: WatchedPool, logger: Logger) -> StatementBatches<Request, [String], Answer> {
        StatementBatches(key: { [$0.device, $0.nonce] }, repeated: { (false, $0.device, $0.head) },
                         send: { try await use($0, client: client, logger: logger) })
    }

    /// One batch: every nonce inserted (when new), every device read and touched, in one
    /// statement and so one snapshot. A request whose device does not exist is not fresh. A
    /// device touched is returned with its new last-seen time.
    private static func use(_ requests: [Request], client: WatchedPool, logger: Logger) async throws -> [Answer] {
        var answers = [Answer](repeating: (false, nil, nil), count: requests.count)
        for try await (position, fresh, id, account, name, signingKey, boxKey, added, revoked, lastSeen, sequence, head)
            in try await client.execute(NoncesReadingDevices(requests), logger: logger) {
            let index = try StatementBatches<Request, [String], Answer>.index(position, among: requests.count)
            if let id, let account, let name, let signingKey, let boxKey, let added {
                answers[index] = (fresh, PostgresKeyVaultDatabase.device((id, account, name, signingKey, boxKey, added, revoked, lastSeen)),
                                  HeadSeen(sequence, head))
            }
        }
        return answers
    }

    /// Prepared: PostgreSQL parses and plans it once per connection.
    private struct NoncesReadingDevices: PostgresPreparedStatement {
        static let name = "keyvault_nonces_reading_devices"
        static let sql = """
            WITH input AS (
                SELECT * FROM unnest($1::TEXT[], $2::TEXT[], $3::BIGINT[]) WITH ORDINALITY AS t(device, nonce, time, position)),
            used AS (
                INSERT INTO request_nonces (device, nonce, time) SELECT device, nonce, time FROM input ORDER BY device, nonce
                ON CONFLICT (device, nonce) DO NOTHING RETURNING device, nonce),
            touched AS (
                UPDATE devices SET last_seen = $4 WHERE id IN (
                    SELECT id FROM devices WHERE id IN (SELECT device FROM used) AND revoked IS NULL
                      AND (last_seen IS NULL OR last_seen < $4 - \(StoredDevice.seenInterval))
                    ORDER BY id FOR UPDATE SKIP LOCKED)
                RETURNING id)
            SELECT input.position, EXISTS (SELECT 1 FROM used WHERE used.device = input.device AND used.nonce = input.nonce),
                   d.id, d.account, d.name, d.signing_key, d.box_key, d.added, d.revoked,
                   CASE WHEN EXISTS (SELECT 1 FROM touched WHERE touched.id = d.id) THEN $4 ELSE d.last_seen END,
                   a.sequence, a.head
            FROM input LEFT JOIN devices d ON d.id = input.device LEFT JOIN accounts a ON a.id = d.account
            """
        typealias Row = (Int64, Bool, String?, String?, String?, Data?, Data?, Int64?, Int64?, Int64?, Int64?, String?)
        let requests: [Request]
        init(_ requests: [Request]) { self.requests = requests }

        func makeBindings() -> PostgresBindings {
            var bindings = PostgresBindings()
            bindings.append(requests.map(\.device))
            bindings.append(requests.map(\.nonce))
            bindings.append(requests.map(\.time))
            bindings.append(requests.map(\.now).max() ?? 0)
            return bindings
        }

        func decodeRow(_ row: PostgresRow) throws -> Row { try row.decode(Row.self) }
    }
}
