import Foundation

/// Runs every job it is given on one thread of its own, in order: for a test whose
/// tasks must not wait behind the rest of the suite on Swift's shared pool (a thread
/// per core, two here), or must not get more than one thread.
package final class OneThreadExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    private var jobs: [UnownedJob] = []

    package init() {
        // The thread holds the executor and waits for jobs until the test process ends.
        Thread { [self] in
            while true {
                condition.lock()
                while jobs.isEmpty { condition.wait() }
                let job = jobs.removeFirst()
                condition.unlock()
                job.runSynchronously(on: asUnownedTaskExecutor())
            }
        }.start()
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }
}
