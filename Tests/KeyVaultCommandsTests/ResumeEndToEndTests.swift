import Foundation
import KeyVaultCrypto
import KeyVaultTestSupport
import Testing

// Issue 21, item 4, with the real binaries: `keyctl attachment put` killed (SIGKILL)
// part way goes on when run again; `attachment get` cut off by the server's own crash
// and restart goes on too. Neither leaves anything that opens or blocks the whole.

/// Waits until `ready` holds (checked every 5 ms), at most `seconds`, and then does
/// `act` at once, on a thread of its own: the checks and the act keep their pace
/// however busy the shared threads are (a kill made after the test's task was
/// scheduled again came after the transfer it was to cut had finished).
private func wait(seconds: Double = 60, until ready: @escaping @Sendable () -> Bool,
                  then act: @escaping @Sendable () -> Void) async -> Bool {
    await onThreadOfItsOwn {
        let deadline = Date().addingTimeInterval(seconds)
        while Date() < deadline {
            if ready() {
                act()
                return true
            }
            usleep(5_000)
        }
        return false
    }
}

private func size(_ path: String) -> Int { (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0 }

@Test(.timeLimit(.minutes(10)))
func aKilledPutAndAGetCutByAServerRestartGoOnWhenRunAgainWithTheRealBinaries() async throws {
    let first = try await RunningServer(arguments: ["--max-attachment-bytes", String(256 << 20)])
    let homes = try DeviceHomes("kv-resume-e2e")
    _ = try await homes.run(["init", "--server", first.url, "--name", "laptop", "--recovery-file", homes.path("code"),
                       "--kdf", "interactive", "--yes"], "laptop")
    _ = try await homes.run(["member", "add", "Emma"], "laptop")
    let file = homes.path("video.mp4")
    let block = Data((0..<(1 << 20)).map { _ in UInt8.random(in: 0...255) })
    var content = Data()
    for i in 0..<160 { content.append(block); content[content.count - 1] = UInt8(truncatingIfNeeded: i) }
    try content.write(to: URL(fileURLWithPath: file))

    // The put, killed once its journal holds 8 chunks' records.
    let put = Process()
    put.executableURL = BuiltProducts.keyctl
    put.arguments = ["attachment", "put", "--member", "Emma", file] + homes.home("laptop")
    put.standardOutput = FileHandle.nullDevice
    put.standardError = FileHandle.nullDevice
    try put.run()
    let transfers = homes.path("laptop") + "/transfers"
    @Sendable func journal() -> String? {
        (try? FileManager.default.contentsOfDirectory(atPath: transfers))?.first.map { transfers + "/" + $0 }
    }
    let putID = put.processIdentifier
    let started = await wait(until: { journal().map { size($0) > 200 + 8 * 32 } ?? false }, then: { kill(putID, SIGKILL) })
    if !started { kill(putID, SIGKILL) }  // killed above when it started
    await put.exited()
    #expect(started, "the put never journaled 8 chunks")
    #expect(put.terminationReason == .uncaughtSignal, "the put finished before it was killed")

    let resumed = try await homes.run(["attachment", "put", "--member", "Emma", file], "laptop")
    let chunks = resumed["resumedChunks"] as? Int ?? 0
    #expect((1..<160).contains(chunks), "the second put sent every chunk again: \(resumed)")
    #expect(journal() == nil, "the journal outlived the upload")
    let address = try #require(resumed["address"] as? String)

    // The get, cut off by the server's crash once 8 MiB arrived; the server restarts on its database.
    let out = homes.path("copy.mp4")
    let get = Process()
    get.executableURL = BuiltProducts.keyctl
    get.arguments = ["attachment", "get", "--member", "Emma", address, "-o", out] + homes.home("laptop")
    get.standardOutput = FileHandle.nullDevice
    get.standardError = FileHandle.nullDevice
    try get.run()
    let directory = URL(fileURLWithPath: homes.path("."))
    @Sendable func partial() -> String? {
        (try? FileManager.default.contentsOfDirectory(atPath: directory.path))?.first { $0.hasPrefix(".copy.mp4.") }
            .map { directory.appendingPathComponent($0).path }
    }
    let serverID = first.process.processIdentifier
    let arrived = await wait(until: { partial().map { size($0) >= 8 << 20 } ?? false }, then: { kill(serverID, SIGKILL) })
    #expect(arrived, "the get never wrote 8 MiB")
    _ = await first.stop(SIGKILL)
    await get.exited()
    #expect(get.terminationStatus != 0, "the get finished before the server went")
    let kept = partial().map(size) ?? 0
    #expect(kept >= 8 << 20, "the cut get kept nothing to go on from")
    let second = try await RunningServer(arguments: ["--max-attachment-bytes", String(256 << 20)], directory: first.directory, port: first.port)
    _ = try await homes.run(["attachment", "get", "--member", "Emma", address, "-o", out], "laptop")
    #expect(FileManager.default.contents(atPath: out) == content)
    #expect(partial() == nil)
    #expect(await second.stop() == 0)
}
