#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCrypto

/// `onThreadOfItsOwn` runs its work once and gives back what it returned or threw, on a
/// thread of its own, or on the caller's when the system starts none.
@Suite struct OwnThreadTests {
    struct Refused: Error {}

    /// Five works that each wait until all five have started: only on threads of their
    /// own can they (Swift's shared pool has one thread per core, two here). Each gives
    /// up after 5 s, so that work on the pool fails the test instead of hanging it.
    @Test(.timeLimit(.minutes(1)))
    func worksRunOnThreadsOfTheirOwnAndTheirErrorsComeBack() async throws {
        let started = Locked(0)
        let count = 5
        let allMet = await withTaskGroup(of: Bool.self) { group in
            for _ in 0..<count {
                group.addTask {
                    await onThreadOfItsOwn { () -> Bool in
                        started.withLock { $0 += 1 }
                        for _ in 0..<500 {
                            if started.withLock({ $0 }) == count { return true }
                            usleep(10_000)
                        }
                        return false
                    }
                }
            }
            return await group.reduce(true) { $0 && $1 }
        }
        #expect(allMet, "the works did not all run at once")
        await #expect(throws: Refused.self) { try await onThreadOfItsOwn { () throws -> Int in throw Refused() } }
    }

    /// A process at its limit of threads: the work runs where the caller is, once, and the
    /// caller gets its answer (before, it waited for ever: `within` fails that, and leaves
    /// the stuck task behind rather than hang the run).
    @Test func whenNoThreadStartsTheWorkRunsOnTheCallersThreadOnce() async throws {
        let runs = Locked(0)
        let refusing: ThreadStarter = { _, _ in false }
        let answer = await within(seconds: 20) {
            await onThreadOfItsOwn(starting: refusing) { () -> Int in runs.withLock { $0 += 1 }; return 42 }
        }
        #expect(answer == 42)
        #expect(runs.withLock { $0 } == 1)
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
