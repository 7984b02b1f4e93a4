import Foundation
import PostgresNIO
import Synchronization

/// Requests that arrive together, sent to PostgreSQL in one statement: while a batch is on
/// its way, the requests that arrive wait for the next, which carries them all. A replica
/// under load then sends one statement for many requests instead of one each; a lone
/// request goes at once, alone. Used for the request path's two statements (``NonceBatches``
/// and a device's read of its boxes).
///
/// Requests with the same `key` are sent once per batch: the first gets the answer, any
/// other `repeated(answer)`. A batch PostgreSQL refused for what it carried goes again one
/// request at a time, so that one request's failure is never its neighbours'.
final class StatementBatches<Request: Sendable, Key: Hashable & Sendable, Answer: Sendable>: Sendable {
    /// At most this many requests in one statement; the rest wait for the next.
    static var maximumBatch: Int { 256 }
    /// Batches on their way at once, at most. A statement that waits (a connection that died
    /// unseen) holds up only the requests it carries, not every request of the replica. Two,
    /// not more: each more makes the batches smaller and the statements more, in CPU per
    /// request.
    static var maximumInFlight: Int { 2 }

    private struct Waiting {
        let request: Request
        let continuation: CheckedContinuation<Answer, any Error>
    }
    private struct State {
        var waiting: [Waiting] = []
        var sending = 0
    }
    private let state = Mutex(State())
    private let key: @Sendable (Request) -> Key
    private let repeated: @Sendable (Answer) -> Answer
    private let send: @Sendable ([Request]) async throws -> [Answer]

    /// `send` takes requests with distinct keys and answers each, in order.
    init(key: @escaping @Sendable (Request) -> Key, repeated: @escaping @Sendable (Answer) -> Answer,
         send: @escaping @Sendable ([Request]) async throws -> [Answer]) {
        self.key = key
        self.repeated = repeated
        self.send = send
    }

    /// The index of the request a row answers, from its `position` (`WITH ORDINALITY`, from 1).
    static func index(_ position: Int64, among count: Int) throws -> Int {
        guard let index = Int(exactly: position - 1), (0..<count).contains(index) else { throw StatementBatchError.answeredInPart }
        return index
    }

    /// Waits for the batch that carries `request`, and returns its answer.
    func use(_ request: Request) async throws -> Answer {
        try await withCheckedThrowingContinuation { continuation in
            let lead = state.withLock { state in
                state.waiting.append(Waiting(request: request, continuation: continuation))
                guard state.sending < Self.maximumInFlight else { return false }
                state.sending += 1
                return true
            }
            // Detached: the drain serves every request that arrives, not the first one's task.
            if lead { Task.detached { await self.drain() } }
        }
    }

    /// Sends batches until no request waits.
    private func drain() async {
        while true {
            let batch = state.withLock { state -> [Waiting] in
                let batch = Array(state.waiting.prefix(Self.maximumBatch))
                state.waiting.removeFirst(batch.count)
                if batch.isEmpty { state.sending -= 1 }
                return batch
            }
            if batch.isEmpty { return }
            var first: [Key: Int] = [:], unique: [Request] = []
            for waiting in batch where first[key(waiting.request)] == nil {
                first[key(waiting.request)] = unique.count
                unique.append(waiting.request)
            }
            let answers: [Result<Answer, any Error>]
            do {
                let all = try await send(unique)
                guard all.count == unique.count else { throw StatementBatchError.answeredInPart }
                answers = all.map { .success($0) }
            } catch where unique.count > 1 && Self.isOneRequests(error) {
                // A batch PostgreSQL refused (rolled back: nothing of it is stored) may be refused
                // for one request's sake: each goes again alone, and fails alone if it must.
                answers = await alone(unique)
            } catch {
                answers = [Result](repeating: .failure(error), count: unique.count)
            }
            var answered = Set<Key>()
            for waiting in batch {
                let key = key(waiting.request)
                switch answers[first[key]!] {
                case .success(let answer):
                    waiting.continuation.resume(returning: answered.insert(key).inserted ? answer : repeated(answer))
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

    private func alone(_ requests: [Request]) async -> [Result<Answer, any Error>] {
        let send = self.send
        return await withTaskGroup(of: (Int, Result<Answer, any Error>).self) { group in
            for (index, request) in requests.enumerated() {
                group.addTask {
                    do {
                        let answers = try await send([request])
                        guard answers.count == 1 else { throw StatementBatchError.answeredInPart }
                        return (index, .success(answers[0]))
                    } catch {
                        return (index, .failure(error))
                    }
                }
            }
            var results = [Result<Answer, any Error>](repeating: .failure(StatementBatchError.answeredInPart), count: requests.count)
            for await (index, result) in group { results[index] = result }
            return results
        }
    }
}

/// PostgreSQL answered a batch with rows that do not match what was sent (it never should).
enum StatementBatchError: Error {
    case answeredInPart
}
