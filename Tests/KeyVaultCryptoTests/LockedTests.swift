import Foundation
import Testing
@testable import KeyVaultCrypto

/// `Locked` serialises access (here), and ThreadSanitizer sees it do so: under
/// `swift test --sanitize=thread` (CI) a lock it could not see would be reported here
/// as a race, as Synchronization's Mutex was (its futex lives in a library built
/// without ThreadSanitizer).
@Suite struct LockedTests {
    @Test func threadsChangingOneValueAtOnceLoseNoUpdate() async {
        let counter = Locked(0)
        let log = Locked([Int]())
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<8 {
                group.addTask {
                    for i in 0..<2_000 {
                        counter.withLock { $0 += 1 }
                        if i % 100 == 0 { log.withLock { $0.append(worker) } }
                    }
                }
            }
        }
        #expect(counter.withLock { $0 } == 16_000)
        #expect(log.withLock { $0.count } == 160)
    }

    @Test(.timeLimit(.minutes(10)))
    func anErrorThrownInsideReleasesTheLock() {
        struct Refused: Error {}
        let value = Locked(1)
        #expect(throws: Refused.self) { try value.withLock { (_: inout Int) throws(Refused) in throw Refused() } }
        #expect(value.withLock { $0 } == 1)  // hangs (and the time limit fails it) if the lock were still held
    }
}
