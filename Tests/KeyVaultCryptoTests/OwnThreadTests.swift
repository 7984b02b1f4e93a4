#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Testing
@testable import KeyVaultCrypto

/// `onThreadOfItsOwn` runs its work once and gives back what it returned or threw, on a
/// thread of its own, or on the caller's when the system starts none.
@Suite struct OwnThreadTests {
    struct Refused: Error {}

    /// The thread the work ran on, as a number to compare.
    static func currentThread() -> UInt { UInt(bitPattern: Int(bitPattern: unsafeBitCast(pthread_self(), to: UInt.self))) }

    @Test(.timeLimit(.minutes(1)))
    func workRunsOnAThreadOfItsOwnAndItsErrorComesBack() async throws {
        let caller = Self.currentThread()
        let ranOn = try await onThreadOfItsOwn { Self.currentThread() }
        #expect(ranOn != caller)
        await #expect(throws: Refused.self) { try await onThreadOfItsOwn { () throws -> Int in throw Refused() } }
    }

    /// A process at its limit of threads: the work runs where the caller is, once, and the
    /// caller gets its answer (before, it waited for ever: `within` fails that, and leaves
    /// the stuck task behind rather than hang the run).
    @Test func whenNoThreadStartsTheWorkRunsOnTheCallersThreadOnce() async throws {
        let runs = Locked(0)
        let refusing: ThreadStarter = { _, _ in false }
        let answer = await Self.within(seconds: 20) {
            try await onThreadOfItsOwn(starting: refusing) { () throws -> Int in runs.withLock { $0 += 1 }; return 42 }
        }
        #expect(try answer?.get() == 42)
        let refused = await Self.within(seconds: 20) {
            try await onThreadOfItsOwn(starting: refusing) { () throws -> Int in throw Refused() }
        }
        #expect(throws: Refused.self) { try refused?.get() }
        let text = await Self.within(seconds: 20) { await onThreadOfItsOwn(starting: refusing) { () -> String in runs.withLock { $0 += 1 }; return "done" } }
        #expect(try text?.get() == "done")
        #expect(runs.withLock { $0 } == 2)
    }

    /// What `body` returned or threw, or nil (a recorded issue) when it has not done so
    /// within `seconds`; a body that never ends is left running.
    static func within<T: Sendable>(seconds: Int, _ body: @escaping @Sendable () async throws -> T) async -> Result<T, any Error>? {
        let outcome = Locked<Result<T, any Error>?>(nil)
        Task {
            let result: Result<T, any Error>
            do { result = .success(try await body()) } catch { result = .failure(error) }
            outcome.withLock { $0 = result }
        }
        for _ in 0..<(seconds * 100) {
            if let done = outcome.withLock({ $0 }) { return done }
            try? await Task.sleep(for: .milliseconds(10))
        }
        Issue.record("no answer within \(seconds) s")
        return nil
    }

    /// The starter is told the calling task's priority (Darwin turns it into the thread's
    /// quality of service).
    @Test func theStarterIsGivenTheCallersPriority() async {
        let seen = Locked<TaskPriority?>(nil)
        let recording: ThreadStarter = { priority, body in seen.withLock { $0 = priority }; body(); return true }
        // High: the highest a task asks for, so waiting for it escalates nothing.
        await Task(priority: .high) { await onThreadOfItsOwn(starting: recording) {} }.value
        #expect(seen.withLock { $0 } == .high)
    }
}
