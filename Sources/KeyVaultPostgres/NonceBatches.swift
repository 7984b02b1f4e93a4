import Foundation
import PostgresNIO
import Synchronization
import KeyVaultModel
import KeyVaultStore

/// The nonces of requests that arrive together, taken in one statement: while one batch is
/// on its way to PostgreSQL, the requests that arrive wait for the next, which carries them
/// all. A replica under load then sends one statement for many requests' nonces and devices
/// instead of one each (the request path's busiest statement: every signed or MACed request
/// makes it); a lone request goes at once, alone.
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
///
/// And it never waits for a lock it could deadlock on: the nonces are inserted in one order,
/// (device, nonce), on every replica, and a device row another transaction holds (a
/// revocation, a deletion) is not touched this time (`SKIP LOCKED`: the request's own touch
/// then goes as before, after it). A batch that fails all the same goes again one request
/// at a time, so one request's failure is never its neighbours'.
final class NonceBatches: Sendable {
    typealias Answer = (fresh: Bool, device: StoredDevice?)
    /// At most this many requests in one statement; the rest wait for the next.
    static let maximumBatch = 256

    struct Request: Sendable {
        /// `now`: when the request was let in, its device's last-seen time if it is touched.
        let device: String, nonce: String, time: Int64, now: Int64
        var key: String { device + " " + nonce }
    }
    private struct Waiting {
        let request: Request
        let continuation: CheckedContinuation<Answer, any Error>
    }
    private struct State {
        var waiting: [Waiting] = []
        /// Batches on their way: a statement that waits (a connection that died unseen) holds up
        /// only the requests it carries, not every request of the replica. Two, not more: each
        /// more makes the batches smaller and the statements more, in CPU per request.
        var sending = 0
    }
    /// Batches on their way at once, at most.
    static let maximumInFlight = 2
    private let state = Mutex(State())

    /// Waits for the batch that carries `request`, and returns its answer. `send` takes requests
    /// with distinct (device, nonce) pairs and answers each, in order.
    func use(_ request: Request, send: @escaping @Sendable ([Request]) async throws -> [Answer]) async throws -> Answer {
        try await withCheckedThrowingContinuation { continuation in
            let lead = state.withLock { state in
                state.waiting.append(Waiting(request: request, continuation: continuation))
                guard state.sending < Self.maximumInFlight else { return false }
                state.sending += 1
                return true
            }
            if lead { Task { await self.drain(send) } }
        }
    }

    /// Sends batches until no request waits.
    private func drain(_ send: @escaping @Sendable ([Request]) async throws -> [Answer]) async {
        while true {
            let batch = state.withLock { state -> [Waiting] in
                let batch = Array(state.waiting.prefix(Self.maximumBatch))
                state.waiting.removeFirst(batch.count)
                if batch.isEmpty { state.sending -= 1 }
                return batch
            }
            if batch.isEmpty { return }
            // The first request with a (device, nonce) pair is sent; any other with it is a replay.
            var first: [String: Int] = [:], unique: [Request] = []
            for waiting in batch where first[waiting.request.key] == nil {
                first[waiting.request.key] = unique.count
                unique.append(waiting.request)
            }
            let answers: [Result<Answer, any Error>]
            do {
                let all = try await send(unique)
                guard all.count == unique.count else { throw NonceBatchError.answeredInPart }
                answers = all.map { .success($0) }
            } catch where unique.count > 1 && Self.isOneRequests(error) {
                // A batch PostgreSQL refused (rolled back: nothing of it is stored) may be refused
                // for one request's sake: each goes again alone, and fails alone if it must.
                answers = await Self.alone(unique, send)
            } catch {
                answers = [.failure(error)]
            }
            var answered = Set<String>()
            for waiting in batch {
                switch answers[first[waiting.request.key]!] {
                case .success(let answer):
                    let isFirst = answered.insert(waiting.request.key).inserted
                    waiting.continuation.resume(returning: isFirst ? answer : (false, answer.device))
                case .failure(let error):
                    waiting.continuation.resume(throwing: error)
                }
            }
        }
    }

    /// Whether PostgreSQL itself refused the statement for what it carried, rather than for the
    /// connection, the server's resources or a timeout (SQLSTATE classes 08, 53, 57): only then
    /// could one request have failed the others. A batch whose answer was lost (it may have
    /// committed) is never sent again: its nonces would read as replays.
    private static func isOneRequests(_ error: any Error) -> Bool {
        guard let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] else { return false }
        return !["08", "53", "57"].contains(String(state.prefix(2)))
    }

    private static func alone(_ requests: [Request], _ send: @escaping @Sendable ([Request]) async throws -> [Answer]) async
        -> [Result<Answer, any Error>] {
        await withTaskGroup(of: (Int, Result<Answer, any Error>).self) { group in
            for (index, request) in requests.enumerated() {
                group.addTask {
                    do {
                        let answers = try await send([request])
                        guard answers.count == 1 else { throw NonceBatchError.answeredInPart }
                        return (index, .success(answers[0]))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var results = [Result<Answer, any Error>](repeating: .failure(NonceBatchError.answeredInPart), count: requests.count)
            for await (index, result) in group { results[index] = result }
            return results
        }
    }
}

/// PostgreSQL answered a batch with rows that do not match what was sent (it never should).
private enum NonceBatchError: Error {
    case answeredInPart
}

extension PostgresKeyVaultDatabase {
    /// One batch of ``NonceBatches``: every nonce inserted (when new), every device read and
    /// touched, in one statement and so one snapshot. A request whose device does not exist
    /// is not fresh. A device touched is returned with its new last-seen time.
    func useNonces(_ requests: [NonceBatches.Request]) async throws -> [NonceBatches.Answer] {
        var answers = [NonceBatches.Answer](repeating: (false, nil), count: requests.count)
        for try await (position, fresh, id, account, name, signingKey, boxKey, added, revoked, lastSeen)
            in try await client.execute(NoncesReadingDevices(requests), logger: logger) {
            guard let index = Int(exactly: position - 1), answers.indices.contains(index) else {
                throw NonceBatchError.answeredInPart
            }
            if let id, let account, let name, let signingKey, let boxKey, let added {
                answers[index] = (fresh, Self.device((id, account, name, signingKey, boxKey, added, revoked, lastSeen)))
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
                      AND (last_seen IS NULL OR last_seen < $4 - 60)
                    ORDER BY id FOR UPDATE SKIP LOCKED)
                RETURNING id)
            SELECT input.position, EXISTS (SELECT 1 FROM used WHERE used.device = input.device AND used.nonce = input.nonce),
                   d.id, d.account, d.name, d.signing_key, d.box_key, d.added, d.revoked,
                   CASE WHEN EXISTS (SELECT 1 FROM touched WHERE touched.id = d.id) THEN $4 ELSE d.last_seen END
            FROM input LEFT JOIN devices d ON d.id = input.device
            """
        typealias Row = (Int64, Bool, String?, String?, String?, Data?, Data?, Int64?, Int64?, Int64?)
        let requests: [NonceBatches.Request]
        init(_ requests: [NonceBatches.Request]) { self.requests = requests }

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
