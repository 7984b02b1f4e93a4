// keyvault-bench: throughput of KeyVault's hot paths, printed as JSON lines for
// Benchmarks/run.sh, which runs the reference tools beside it and writes the
// report. Build with -c release; numbers from debug builds mean nothing.
//
//   keyvault-bench mnemonic [seconds]
//   keyvault-bench argon2 [iterations t] [memory KiB] [rounds]
//   keyvault-bench content-address FILE
//   keyvault-bench chain-appends DIRECTORY COUNT
import CSodium  // only for the bare crypto_pwhash call that Argon2id is measured against
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import KeyVaultCrypto
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultPostgres
import KeyVaultStore
import Logging
import Synchronization

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

/// A SQLite file, or a PostgreSQL URL (its pool running in the background until exit).
func openStore(_ location: String) -> any KeyVaultRepository {
    guard PostgresURL.isURL(location) else { return try! KeyVaultDatabase.open(path: location) }
    let semaphore = DispatchSemaphore(value: 0)
    nonisolated(unsafe) var store: PostgresKeyVaultDatabase?
    Task.detached {
        store = try! await PostgresKeyVaultDatabase.connect(try! PostgresURL(location), logger: Logger(label: "bench"))
        semaphore.signal()
        await store!.run()
    }
    semaphore.wait()
    return store!
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

case "server-setup":  // server-setup DATABASE ACCOUNTS DEVICES-FILE [all]: accounts straight into the store (SQLite file or postgres:// URL)
    let database = openStore(arguments[1])
    let count = Int(arguments[2])!
    let keepAll = arguments.count > 4 && arguments[4] == "all"  // every device (for one append per account)
    var devices = [[String: String]]()
    let start = now()
    for i in 0..<count {
        let signing = Ed25519.PrivateKey(), agreement = X25519.PrivateKey()
        let id = deviceID(for: signing.publicKey)
        let genesis = ChainLink.genesis(signingKey: signing, boxKey: agreement.publicKey, name: "device \(i)", time: 1_700_000_000)
        let account = genesis.accountID
        var box = KeyBox(generation: 1, sequence: 0, recipient: id.rawValue, box: base64Encode(try! agreement.publicKey.sealedBox(for: SymmetricKey())),
                         signer: id.rawValue, signature: "")
        box.sign(with: signing, account: account)
        let semaphore = DispatchSemaphore(value: 0)
        let linkJSON = try! JSONEncoder().encode(genesis)
        Task.detached {
            try! await database.createAccount(
                account, genesis: StoredLink(sequence: 0, hash: genesis.hash, json: linkJSON),
                device: StoredDevice(id: id, account: account, name: "device \(i)", signingKey: signing.publicKey.rawRepresentation,
                                     boxKey: agreement.publicKey.rawRepresentation, added: 0),
                boxes: [box], recovery: nil)
            semaphore.signal()
        }
        semaphore.wait()
        var entry = ["account": account.rawValue, "device": id.rawValue, "seed": Hex.encode(signing.seed),
                     "boxSeed": Hex.encode(agreement.rawRepresentation), "head": genesis.hash]
        if i == 0 {  // the upload benchmark's account gets one member
            let member = Hex.encode(SystemRandom.bytes(count: 16))
            var link = ChainLink(sequence: 1, previous: genesis.hash, type: .memberAdd, signer: id.rawValue, time: 1_700_000_001,
                                 body: ["member": member, "memberGeneration": "1"])
            link.sign(with: signing)
            let write = ChainWrite(link: StoredLink(sequence: 1, hash: link.hash, json: try! JSONEncoder().encode(link)),
                                   expectedHead: genesis.hash, audit: (.link(.memberAdd), id.rawValue))
            Task.detached { try! await database.append(account, write); semaphore.signal() }
            semaphore.wait()
            entry["member"] = member
            devices.append(entry)
            continue
        }
        // Keep 1,000 devices' keys for signing (requests spread over them at any account count).
        if keepAll || devices.count < 1000 || i % (count / 1000 + 1) == 0 {
            devices.append(entry)
        }
    }
    let kept = keepAll ? devices : [devices[0]] + Array(devices.dropFirst().suffix(999))
    try! JSONSerialization.data(withJSONObject: kept).write(to: URL(fileURLWithPath: arguments[3]))
    emit(["bench": "server-setup", "accounts": count, "seconds": now() - start])

case "chain-appends":  // chain-appends DIRECTORY COUNT: appends/s with chain writes synced (FULL) and not (NORMAL)
    let directory = arguments[1]
    let count = Int(arguments[2])!
    let signing = Ed25519.PrivateKey(), agreement = X25519.PrivateKey()
    let id = deviceID(for: signing.publicKey)
    let genesis = ChainLink.genesis(signingKey: signing, boxKey: agreement.publicKey, name: "bench", time: 1_700_000_000)
    let account = genesis.accountID
    // The links are signed before timing: only the store is measured.
    var writes = [ChainWrite]()
    var previous = genesis.hash
    for sequence in 1...UInt64(count) {
        var link = ChainLink(sequence: sequence, previous: previous, type: .masterRotate, signer: id.rawValue, time: 1_700_000_001,
                             body: ["masterGeneration": String(sequence + 1)])
        link.sign(with: signing)
        writes.append(ChainWrite(link: StoredLink(sequence: sequence, hash: link.hash, json: try! JSONEncoder().encode(link)),
                                 expectedHead: previous, audit: (.link(.masterRotate), id.rawValue)))
        previous = link.hash
    }
    let genesisJSON = try! JSONEncoder().encode(genesis)
    for synced in [false, true] {
        let path = "\(directory)/chain-appends-\(synced ? "full" : "normal").sqlite"
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        let database = try! KeyVaultDatabase.open(path: path, syncChainWrites: synced)
        let semaphore = DispatchSemaphore(value: 0)
        let seconds = Mutex(0.0)
        Task.detached {
            try! await database.createAccount(
                account, genesis: StoredLink(sequence: 0, hash: genesis.hash, json: genesisJSON),
                device: StoredDevice(id: id, account: account, name: "bench", signingKey: signing.publicKey.rawRepresentation,
                                     boxKey: agreement.publicKey.rawRepresentation, added: 0),
                boxes: [], recovery: nil)
            let start = now()
            for write in writes { try! await database.append(account, write) }
            seconds.withLock { $0 = now() - start }
            semaphore.signal()
        }
        semaphore.wait()
        let elapsed = seconds.withLock { $0 }
        emit(["bench": "chain-appends", "synchronous": synced ? "FULL" : "NORMAL", "appends": count, "seconds": elapsed,
              "appendsPerSecond": Double(count) / elapsed])
    }

case "sign-requests":  // sign-requests DEVICES-FILE COUNT KIND(boxes|upload|append) OUT: raw HTTP/1.1 requests, one per line block
    let devices = try! JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: arguments[1]))) as! [[String: String]]
    let count = Int(arguments[2])!
    let kind = arguments[3]
    let keys = devices.map { d -> (AccountID, DeviceID, Ed25519.PrivateKey) in
        var seed = try! Hex.decode(d["seed"]!)
        return (AccountID(rawValue: d["account"]!)!, DeviceID(rawValue: d["device"]!)!, try! Ed25519.PrivateKey(seed: SecureBytes(wiping: &seed)))
    }
    let out = FileHandle(forWritingAtPath: arguments[4]) ?? {
        _ = FileManager.default.createFile(atPath: arguments[4], contents: nil)
        return FileHandle(forWritingAtPath: arguments[4])!
    }()
    let timestamp = Int64(Date().timeIntervalSince1970)
    var buffer = Data()
    for i in 0..<count {
        let (account, device, key) = kind == "upload" ? keys[0] : kind == "append" ? keys[1 + i % (keys.count - 1)] : keys[i % keys.count]
        var path: String, method: String, body: [UInt8] = []
        if kind == "append" {
            // One chain append per account (a member added after genesis): each device's
            // link follows the head it knows, so no append is stale.
            let entry = devices[1 + i % (devices.count - 1)]
            var link = ChainLink(sequence: 1, previous: entry["head"]!, type: .memberAdd, signer: device.rawValue, time: 1_700_000_001,
                                 body: ["member": Hex.encode(SystemRandom.bytes(count: 16)), "memberGeneration": "1"])
            link.sign(with: key)
            body = Array(try! JSONEncoder().encode(AppendRequest(link: link)))
            path = "/v1/accounts/\(account)/chain"
            method = "POST"
        } else if kind == "upload" {
            // Every upload is new content (no dedup shortcut), to the setup's one member.
            let member = devices[0]["member"]!
            let content = try! Envelope.seal(SystemRandom.bytes(count: 64 * 1024 - 62 - 99), under: SymmetricKey(), generation: 1,
                                             context: EnvelopeContext(purpose: "attachment-content")).bytes
            let key = try! Envelope.seal(SymmetricKey(), under: SymmetricKey(), generation: 1,
                                         context: EnvelopeContext(purpose: "attachment-key")).bytes
            body = AttachmentObject(key: key, content: content).bytes
            let address = "ca1.1." + Hex.encode(SHA256.hash(body))
            path = "/v1/accounts/\(account)/members/\(member)/attachments/\(address)"
            method = "PUT"
        } else {
            path = "/v1/accounts/\(account)/boxes"
            method = "GET"
        }
        let headers = RequestSignature.headers(method: method, path: path, query: "", body: body, device: device, key: key, timestamp: timestamp)
        var text = "\(method) \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in headers { text += "\(name): \(value)\r\n" }
        if kind == "append" { text += "Content-Type: application/json\r\n" }
        text += "Content-Length: \(body.count)\r\n\r\n"
        // Length-prefixed records: the Lua replayer reads them back one by one.
        let record = Data(text.utf8) + Data(body)
        buffer += Data("\(record.count)\n".utf8) + record
        if buffer.count > 1 << 20 { out.write(buffer); buffer.removeAll(keepingCapacity: true) }
    }
    out.write(buffer)
    try! out.close()

case "session-requests":  // session-requests DEVICES-FILE COUNT BASE-URL OUT: opens a session per device, then MACs reads
    let devices = try! JSONSerialization.jsonObject(with: Data(contentsOf: URL(fileURLWithPath: arguments[1]))) as! [[String: String]]
    let count = Int(arguments[2])!
    let base = arguments[3]
    var sessions = [(AccountID, String, SymmetricKey)]()
    for d in devices {
        var seed = try! Hex.decode(d["seed"]!)
        let key = try! Ed25519.PrivateKey(seed: SecureBytes(wiping: &seed))
        let account = AccountID(rawValue: d["account"]!)!, device = DeviceID(rawValue: d["device"]!)!
        let path = "/v1/accounts/\(account)/sessions"
        var request = URLRequest(url: URL(string: base + path)!)
        request.httpMethod = "POST"
        for (name, value) in RequestSignature.headers(method: "POST", path: path, query: "", body: [], device: device, key: key,
                                                      timestamp: Int64(Date().timeIntervalSince1970)) {
            request.setValue(value, forHTTPHeaderField: name)
        }
        let semaphore = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var reply: Data?
        URLSession.shared.dataTask(with: request) { data, _, _ in reply = data; semaphore.signal() }.resume()
        semaphore.wait()
        guard let data = reply, let grant = try? JSONDecoder().decode(SessionGrant.self, from: data) else {
            FileHandle.standardError.write(Data("session refused: \(String(decoding: reply ?? Data(), as: UTF8.self))\n".utf8))
            exit(1)
        }
        var boxSeed = try! Hex.decode(d["boxSeed"]!)
        let boxKey = try! X25519.PrivateKey(rawRepresentation: SecureBytes(wiping: &boxSeed))
        sessions.append((account, grant.session, try! grant.key(using: boxKey)))
    }
    _ = FileManager.default.createFile(atPath: arguments[4], contents: nil)
    let out = FileHandle(forWritingAtPath: arguments[4])!
    let timestamp = Int64(Date().timeIntervalSince1970)
    var buffer = Data()
    for i in 0..<count {
        let (account, session, key) = sessions[i % sessions.count]
        let path = "/v1/accounts/\(account)/boxes"
        var text = "GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        for (name, value) in try! RequestMAC.headers(method: "GET", path: path, query: "", body: [], session: session, key: key, timestamp: timestamp) {
            text += "\(name): \(value)\r\n"
        }
        text += "Content-Length: 0\r\n\r\n"
        buffer += Data("\(text.utf8.count)\n".utf8) + Data(text.utf8)
        if buffer.count > 1 << 20 { out.write(buffer); buffer.removeAll(keepingCapacity: true) }
    }
    out.write(buffer)
    try! out.close()

default:
    FileHandle.standardError.write(Data("usage: keyvault-bench mnemonic|argon2|content-address FILE\n".utf8))
    exit(64)
}
