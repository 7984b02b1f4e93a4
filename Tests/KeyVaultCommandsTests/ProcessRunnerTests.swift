import Foundation
import KeyVaultTestSupport
import Testing

/// Two real processes, each waiting for a file that an async task writes only once
/// both have started, all on an executor of one thread: a runner that held its thread
/// while its process ran would leave none for the second process's start or for that
/// task, and the first process would give up after 30 s. On one thread of its own the
/// test does not depend on how many threads Swift's shared pool has or what the tests
/// beside it hold. (The full suite met the blocking runner as in-process network tests
/// timing out beside real-binary ones: the shared pool has a thread per core, two here.)
@Test(.timeLimit(.minutes(2)))
func waitingForARealBinaryLeavesTheThreadFree() async throws {
    let directory = try TemporaryDirectory("kv-runner")
    let go = directory.path("go")
    let codes = try await withTaskExecutorPreference(OneThreadExecutor()) {
        try await withThrowingTaskGroup(of: Int32.self) { group in
            for index in 0..<2 {
                let started = directory.path("started-\(index)")
                group.addTask {
                    try await runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", """
                        touch "$1"; i=0
                        while [ ! -e "$2" ]; do i=$((i + 1)); [ $i -gt 3000 ] && exit 1; sleep 0.01; done
                        """, "sh", started, go]).code
                }
            }
            group.addTask {
                let all = (0..<2).map { directory.path("started-\($0)") }
                while !all.allSatisfy(FileManager.default.fileExists) { try await Task.sleep(for: .milliseconds(10)) }
                FileManager.default.createFile(atPath: go, contents: nil)
                return 0
            }
            return try await group.reduce(into: [Int32]()) { $0.append($1) }
        }
    }
    #expect(codes == [0, 0, 0], "a process gave up waiting: the runner held the one thread")
}

/// A test cancelled while it waits for a real binary (its time limit passed) kills the
/// binary: a hung process cannot hold the run once its test has failed. The cancel
/// comes while the runner waits, once the process has said it started.
@Test(.timeLimit(.minutes(1)))
func cancellingTheWaitForARealBinaryKillsIt() async throws {
    let scratch = try TemporaryDirectory("kv-runner")
    let started = scratch.url("started")
    let waiting = Task {
        try await runProcess(URL(fileURLWithPath: "/bin/sh"), ["-c", #"touch "$1"; exec sleep 30"#, "sh", started.path])
    }
    while !FileManager.default.fileExists(atPath: started.path) { try await Task.sleep(for: .milliseconds(20)) }
    waiting.cancel()
    #expect(try await waiting.value.code == SIGKILL, "the process ran to its end")
}
