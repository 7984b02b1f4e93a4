import Foundation
import KeyVaultFuzzing

#if FUZZING
// Built by Scripts/fuzz.sh with -sanitize=fuzzer,address -D FUZZING. SwiftPM links an
// executable's entry point as `main` (the module's `keyvault_fuzz_main`), so that is
// where libFuzzer's driver is started; it calls the two functions below. The target
// is named by KEYVAULT_FUZZ_TARGET.

@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(_ argc: UnsafeMutablePointer<CInt>,
                       _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
                       _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

@_cdecl("keyvault_fuzz_main")
public func fuzzMain(_ argc: CInt, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> CInt {
    var (argc, argv) = (argc, argv)
    return runDriver(&argc, &argv) { testOneInput($0, $1) }
}

nonisolated(unsafe) private var target = FuzzTarget.mnemonic

@_cdecl("LLVMFuzzerInitialize")
public func initialize(_ argc: UnsafeMutablePointer<CInt>, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>) -> CInt {
    let name = ProcessInfo.processInfo.environment["KEYVAULT_FUZZ_TARGET"] ?? ""
    guard let chosen = FuzzTarget(rawValue: name) else {
        FileHandle.standardError.write(Data("keyvault-fuzz: set KEYVAULT_FUZZ_TARGET to one of \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", "))\n".utf8))
        exit(2)
    }
    target = chosen
    // Warm up on the seeds: what is made once (static tables, lazily built globals) is
    // made here, outside any input, so that LeakSanitizer's per-input check does not
    // take it for a leak. A leak that grows per input is still reported.
    for seed in (try? SeedCorpus.make()) ?? [] where seed.target == chosen { try? chosen.run(seed.bytes) }
    return 0
}

@_cdecl("LLVMFuzzerTestOneInput")
public func testOneInput(_ data: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    do {
        try target.run(bytes)
    } catch {
        fatalError("\(target.rawValue): \(error)")
    }
    return 0
}
#else
/// Without libFuzzer: replays inputs through a target, or writes the seed corpus.
///
///     keyvault-fuzz TARGET FILE...        run each file once; exit 1 on a finding
///     keyvault-fuzz --make-corpus DIR     write the seeds to DIR/TARGET/NAME
@main
struct FuzzMain {
    static func main() throws {
        let arguments = Array(CommandLine.arguments.dropFirst())
        if arguments.first == "--make-corpus", arguments.count == 2 {
            for seed in try SeedCorpus.make() {
                let directory = URL(fileURLWithPath: arguments[1]).appendingPathComponent(seed.target.rawValue)
                try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
                try Data(seed.bytes).write(to: directory.appendingPathComponent(seed.name))
            }
            return
        }
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
            print("usage: keyvault-fuzz TARGET FILE... | --make-corpus DIR   (targets: \(FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")))")
            exit(2)
        }
        var found = false
        for path in arguments.dropFirst() {
            do {
                try target.run(Array(try Data(contentsOf: URL(fileURLWithPath: path))))
            } catch {
                print("\(path): \(error)")
                found = true
            }
        }
        exit(found ? 1 : 0)
    }
}
#endif
