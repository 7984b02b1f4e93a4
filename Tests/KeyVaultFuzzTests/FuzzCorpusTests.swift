import Foundation
import Testing
@testable import KeyVaultFuzzing
import KeyVaultTestSupport
import KeyVaultCrypto

/// The fuzz targets' committed inputs: the seeds (Fuzz/Corpus) and every input a run
/// ever found a crash or a broken invariant with (Fuzz/Regressions), replayed on every
/// test run, so that a fixed finding stays fixed.
@Suite struct FuzzCorpusTests {
    static let fuzz = repositoryRoot.appendingPathComponent("Fuzz")

    static func inputs(_ folder: String, _ target: FuzzTarget) throws -> [URL] {
        let directory = fuzz.appendingPathComponent(folder).appendingPathComponent(target.rawValue)
        guard FileManager.default.fileExists(atPath: directory.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(at: directory, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
    }

    @Test(arguments: FuzzTarget.allCases)
    func everySeedAndRegressionInputRunsWithoutAFinding(_ target: FuzzTarget) throws {
        let files = try Self.inputs("Corpus", target) + Self.inputs("Regressions", target)
        #expect(!files.isEmpty, "no seeds for \(target.rawValue) in Fuzz/Corpus")
        for file in files {
            do {
                try target.run(Array(try Data(contentsOf: file)))
            } catch {
                Issue.record("\(target.rawValue) \(file.lastPathComponent): \(error)")
            }
        }
    }

    /// The committed seeds are what `keyvault-fuzz --make-corpus` writes today (a change
    /// to a format or a fixed key shows up here, and the corpus is made again).
    @Test func theCommittedSeedsAreTheOnesTheGeneratorMakes() throws {
        // Envelopes are sealed with fresh nonces: those seeds differ in every run.
        for seed in try SeedCorpus.make() where seed.target != .envelope && seed.target != .attachment {
            let file = Self.fuzz.appendingPathComponent("Corpus/\(seed.target.rawValue)/\(seed.name)")
            #expect((try? Data(contentsOf: file)) == Data(seed.bytes), "Fuzz/Corpus/\(seed.target.rawValue)/\(seed.name) is stale")
        }
    }

    /// The headers seed is a request that verifies both ways, so mutations start from
    /// the checks past parsing; one changed byte of either verifies no more.
    @Test func theHeadersSeedVerifiesAndAChangedOneDoesNot() throws {
        let seed = try #require(try SeedCorpus.make().first { $0.target == .headers }?.bytes)
        let both = try HeadersTarget.run(seed)
        #expect(both.signature && both.mac)
        var changed = seed
        changed[changed.count - 3] ^= 1  // in the MAC
        #expect(try HeadersTarget.run(changed) == (signature: true, mac: false))
        changed = seed
        changed[0] = changed[0] == UInt8(ascii: "a") ? UInt8(ascii: "b") : UInt8(ascii: "a")  // the device id
        #expect(try HeadersTarget.run(changed).signature == false)
    }

    /// Fuzz/Corpus holds exactly the seeds the generator names: none missing, none left over.
    @Test func theCorpusHoldsExactlyTheGeneratorsSeeds() throws {
        let made = Set(try SeedCorpus.make().map { "\($0.target.rawValue)/\($0.name)" })
        var committed = Set<String>()
        for target in FuzzTarget.allCases {
            for file in try Self.inputs("Corpus", target) { committed.insert("\(target.rawValue)/\(file.lastPathComponent)") }
        }
        #expect(committed == made)
    }

    /// The chain seeds reach past the signatures: every link is accepted, as is and
    /// after the target's repair, so mutations start from a chain the rules accept.
    @Test func theChainSeedsReplayWhole() throws {
        let links = try SeedCorpus.chain()
        let json = Array(try JSONEncoder().encode(links))
        #expect(try ChainTarget.run([0] + json) == links.count)
        #expect(try ChainTarget.run([3] + json) == links.count)
        // Repairs make a link with a stale `previous` and another signature follow again.
        var moved = links
        moved[4].previous = String(repeating: "0", count: 64)
        moved[4].signature = ""
        let movedJSON = Array(try JSONEncoder().encode(moved))
        #expect(try ChainTarget.run([0] + movedJSON) == 4)
        #expect(try ChainTarget.run([3] + movedJSON) == links.count)
    }
}
