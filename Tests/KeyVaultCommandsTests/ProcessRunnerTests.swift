import Foundation
import KeyVaultTestSupport
import Testing

/// More real processes at once than Swift's shared pool has threads (one per core), each
/// waiting for a file that an async task writes only once every process has started: a
/// runner that held a pool thread while its process ran would leave no thread for the
/// other processes' starts or for that task, and every process would give up after 10 s.
/// (The full suite met it as in-process network tests timing out beside real-binary ones.)
@Test(.timeLimit(.minutes(2)))
func waitingForARealBinaryLeavesSwiftsSharedThreadsFree() async throws {
    let directory = try TemporaryDirectory("kv-runner")
    let count = ProcessInfo.processInfo.activeProcessorCount + 2
    let go = directory.path("go")
    let codes = try await withThrowingTaskGroup(of: Int32.self) { group in
        for index in 0..<count {
            let started = directory.path("started-\(index)")
            group.addTask {
                try await runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", """
                    touch "$1"; i=0
                    while [ ! -e "$2" ]; do i=$((i + 1)); [ $i -gt 1000 ] && exit 1; sleep 0.01; done
                    """, "sh", started, go]).code
            }
        }
        group.addTask {
            let all = (0..<count).map { directory.path("started-\($0)") }
            while !all.allSatisfy(FileManager.default.fileExists) { try await Task.sleep(for: .milliseconds(10)) }
            FileManager.default.createFile(atPath: go, contents: nil)
            return 0
        }
        return try await group.reduce(into: [Int32]()) { $0.append($1) }
    }
    #expect(codes == Array(repeating: 0, count: count + 1), "a process gave up waiting: the runner held the shared threads")
}
