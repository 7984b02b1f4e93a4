// keyvault-bench: throughput of KeyVault's hot paths, printed as JSON lines for
// Benchmarks/run.sh, which runs the reference tools beside it and writes the
// report. Build with -c release; numbers from debug builds mean nothing.
//
//   keyvault-bench mnemonic [seconds]
//   keyvault-bench argon2 [iterations t] [memory KiB] [rounds]
//   keyvault-bench content-address FILE
import CSodium  // only for the bare crypto_pwhash call that Argon2id is measured against
import Foundation
import KeyVaultCrypto
import KeyVaultMnemonic

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func emit(_ object: [String: Any]) {
    let data = try! JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])
    print(String(decoding: data, as: UTF8.self))
}

/// Runs `body` in batches until `seconds` pass; returns operations per second.
func rate(seconds: Double, batch: Int, _ body: () -> Void) -> Double {
    for _ in 0..<batch { body() }  // warm-up
    var operations = 0
    let start = now()
    var elapsed = 0.0
    repeat {
        for _ in 0..<batch { body() }
        operations += batch
        elapsed = now() - start
    } while elapsed < seconds
    return Double(operations) / elapsed
}

func peakRSSKiB() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_maxrss
}

let arguments = Array(CommandLine.arguments.dropFirst())
switch arguments.first {
case "mnemonic":
    let seconds = arguments.count > 1 ? Double(arguments[1])! : 3
    // Verify: 1000 distinct valid 24-word English codes, cycled, as UTF-8 bytes.
    let phrases = (0..<1000).map { _ in Array(try! Mnemonic.generate().phrase.utf8) }
    var i = 0, valid = 0
    let verify = rate(seconds: seconds, batch: 1000) {
        phrases[i % phrases.count].withUnsafeBytes { if Mnemonic.validate(utf8: $0) != nil { valid += 1 } }
        i += 1
    }
    precondition(valid == i, "a generated code failed to verify")
    var sink = 0
    let generate = rate(seconds: seconds, batch: 100) { sink &+= try! Mnemonic.generate().phrase.utf8.count }
    let code = try! Mnemonic.generate()
    let toSeed = rate(seconds: seconds, batch: 10) { sink &+= try! code.seed().count }
    let parse = rate(seconds: seconds, batch: 100) {
        sink &+= try! Mnemonic(utf8: phrases[i % phrases.count]).wordCount
        i += 1
    }
    emit(["bench": "mnemonic", "verifyPerSecond": verify, "generatePerSecond": generate,
          "toSeedPerSecond": toSeed, "parseWithEntropyPerSecond": parse, "sink": sink])

case "verify":  // verification alone, for profiling
    let seconds = arguments.count > 1 ? Double(arguments[1])! : 3
    let phrases = (0..<1000).map { _ in Array(try! Mnemonic.generate().phrase.utf8) }
    var i = 0
    let verify = rate(seconds: seconds, batch: 1000) {
        phrases[i % phrases.count].withUnsafeBytes { precondition(Mnemonic.validate(utf8: $0) != nil) }
        i += 1
    }
    emit(["bench": "verify", "verifyPerSecond": verify])

case "argon2":
    let t = arguments.count > 1 ? UInt32(arguments[1])! : 3
    let m = arguments.count > 2 ? UInt32(arguments[2])! : 64 * 1024
    let rounds = arguments.count > 3 ? Int(arguments[3])! : 15
    let password = Array("correct horse battery staple".utf8)
    let salt = [UInt8](repeating: 7, count: 16)
    let parameters = try! Argon2id.Parameters(iterations: t, memoryKiB: m)
    var ours = [Double](), bare = [Double]()
    var out = [UInt8](repeating: 0, count: 32)
    // Interleaved so that drift (frequency, other load) hits both alike.
    for _ in 0..<rounds {
        var start = now()
        _ = try! Argon2id.deriveKey(from: password, salt: salt, parameters: parameters)
        ours.append(now() - start)
        start = now()
        let rc = crypto_pwhash(&out, 32, password.map { CChar(bitPattern: $0) }, UInt64(password.count), salt,
                               UInt64(t), Int(m) * 1024, crypto_pwhash_ALG_ARGON2ID13)
        precondition(rc == 0)
        bare.append(now() - start)
    }
    let median = { (xs: [Double]) in xs.sorted()[xs.count / 2] }
    emit(["bench": "argon2id", "t": t, "mKiB": m, "rounds": rounds,
          "keyvaultMedianSeconds": median(ours), "bareMedianSeconds": median(bare),
          "keyvaultOverBare": median(ours) / median(bare)])

case "content-address":
    let path = arguments[1]
    let key = try! ContentAddressKey(memberKey: SymmetricKey(), generation: 1)
    var best = Double.infinity
    var size: UInt64 = 0
    for _ in 0..<3 {
        let start = now()
        _ = try! key.address(ofFileAt: path) { size = $0 }
        best = min(best, now() - start)
    }
    emit(["bench": "content-address", "bytes": size, "bestSeconds": best,
          "bytesPerSecond": Double(size) / best, "peakRSSKiB": peakRSSKiB()])

default:
    FileHandle.standardError.write(Data("usage: keyvault-bench mnemonic|argon2|content-address FILE\n".utf8))
    exit(64)
}
