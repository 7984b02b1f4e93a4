import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultProtocol
import KeyVaultStore
import KeyVaultTestSupport
import Logging
import Testing
@testable import KeyVaultServer

/// A full scenario with secrets whose bytes are known, on a database file; then
/// every file the database left is scanned for those bytes in the forms a bug
/// would store them: raw, hex and base64.
@Test func theDatabaseNeverHoldsAKeyOrPlaintextInTheClear() async throws {
    let scan = try TemporaryDirectory("kv-scan")
    let directory = scan.url

    let masterKey = SymmetricKey(), memberKey = SymmetricKey(), attachmentKey = SymmetricKey()
    let recoveryEntropy = SecureBytes(randomCount: 32)
    let plaintext = Array("Emma's vaccination record: measles, 2026-03-02. ".utf8) + SystemRandom.bytes(count: 64)
    let phone = TestDevice("phone"), tablet = TestDevice("tablet")
    let member = MemberID(unchecked: Hex.encode(SystemRandom.bytes(count: 16)))

    var configuration = ServerConfiguration()
    configuration.databasePath = directory.appendingPathComponent("keyvault.sqlite").path
    do {
        let database = try KeyVaultDatabase.open(path: configuration.databasePath)
        let app = try buildApplication(configuration, database: database, logger: Logger(label: "scan"))
        try await app.test(.router) { client in
            // Genesis with a recovery slot whose anchor is sealed under a key from the entropy.
            let genesis = phone.genesis()
            var state = try ChainState(genesis: genesis)
            let recoveryWrapKey = try HKDF.deriveKey(from: recoveryEntropy, info: Array("keyvault/v1/recovery-wrap".utf8))
            let anchor = try Envelope.seal(Array(state.account.rawValue.utf8), under: recoveryWrapKey, generation: 1,
                                           context: EnvelopeContext(purpose: "recovery-anchor"))
            let authKey = Ed25519.PrivateKey(), boxKey = X25519.PrivateKey()
            let slot = RecoverySlot(salt: Hex.encode(SystemRandom.bytes(count: 16)), iterations: 3, memoryKiB: 65536,
                                    authKey: Hex.encode(authKey.publicKey.rawRepresentation),
                                    boxKey: Hex.encode(boxKey.publicKey.rawRepresentation), anchor: anchor.base64)
            let create = CreateAccountRequest(genesis: genesis, boxes: [try phone.box(masterKey, generation: 1, for: phone, at: 0, account: state.account)],
                                              recovery: nil)
            #expect(try await client.execute(uri: "/v1/accounts", method: .post, body: jsonBody(create)).status == .created)
            let recoverySet = phone.link(.recoverySet, after: state, body: [
                "authKey": slot.authKey, "boxKey": slot.boxKey, "recoveryGeneration": "1"])
            let recoveryBox = KeyBox(generation: 1, sequence: recoverySet.sequence, recipient: ChainLink.recoverySigner,
                                     box: base64Encode(try boxKey.publicKey.sealedBox(for: masterKey)), signer: phone.id.rawValue, signature: "")
            var signedBox = recoveryBox
            signedBox.sign(with: phone.signing, account: state.account)
            #expect(try await client.append(phone, &state, AppendRequest(link: recoverySet, boxes: [signedBox], recovery: slot)).status == .created)
            // A second device, a member with a wrapped key, an attachment.
            try await client.append(phone, &state, AppendRequest(
                link: phone.link(.deviceAdd, after: state, body: tablet.deviceFields),
                boxes: [try phone.box(masterKey, generation: 1, for: tablet, at: state.sequence + 1, account: state.account)]))
            let context = try EnvelopeContext(purpose: "member-key", ["account": state.account.rawValue, "member": member.rawValue])
            let wrap = MemberWrap(member: member, memberGeneration: 1, masterGeneration: 1,
                                  envelope: try Envelope.seal(memberKey, under: masterKey, generation: 1, context: context).base64)
            let added = try await client.append(phone, &state, AppendRequest(
                link: phone.link(.memberAdd, after: state, body: ["member": member.rawValue, "memberGeneration": "1"]), wraps: [wrap]))
            #expect(added.status == .created)
            let address = try ContentAddressKey(memberKey: memberKey, generation: 1).address(of: plaintext)
            let sealed = try Envelope.seal(plaintext, under: attachmentKey, generation: 1,
                                           context: EnvelopeContext(purpose: "attachment-content", ["object": address.description]))
            let wrappedKey = try Envelope.seal(attachmentKey, under: memberKey, generation: 1,
                                               context: EnvelopeContext(purpose: "attachment-key", ["object": address.description]))
            let put = try await client.signed(tablet, .put, "/v1/accounts/\(state.account)/members/\(member)/attachments/\(address)",
                                              body: AttachmentObject(key: wrappedKey.bytes, content: sealed.bytes).bytes)
            #expect(put.status == .created)
        }
    }

    var secrets: [(String, [UInt8])] = [
        ("master key", masterKey.bytes.unprotectedCopy()), ("member key", memberKey.bytes.unprotectedCopy()),
        ("attachment key", attachmentKey.bytes.unprotectedCopy()), ("recovery entropy", recoveryEntropy.unprotectedCopy()),
        ("phone signing key", phone.signing.seed.unprotectedCopy()), ("phone box key", phone.boxKey.rawRepresentation.unprotectedCopy()),
        ("tablet signing key", tablet.signing.seed.unprotectedCopy()), ("tablet box key", tablet.boxKey.rawRepresentation.unprotectedCopy()),
        ("plaintext", Array(plaintext.prefix(24))),
    ]
    secrets += secrets.map { ("\($0.0) (hex)", Array(Hex.encode($0.1).utf8)) }
    secrets += secrets.prefix(9).map { ("\($0.0) (base64)", Array(base64Encode($0.1).dropLast(4).utf8)) }

    let files = try FileManager.default.contentsOfDirectory(atPath: directory.path)
    #expect(files.contains("keyvault.sqlite"))
    var scanned = 0
    for file in files {
        let bytes = [UInt8](try Data(contentsOf: directory.appendingPathComponent(file)))
        scanned += bytes.count
        for (name, secret) in secrets {
            #expect(!contains(bytes, secret), "\(name) found in \(file)")
        }
    }
    #expect(scanned > 10_000)  // the scenario wrote something
    // And the scan can see what it looks for: the public device name is stored.
    let database = [UInt8](try Data(contentsOf: directory.appendingPathComponent("keyvault.sqlite")))
        + ((try? Data(contentsOf: directory.appendingPathComponent("keyvault.sqlite-wal"))).map { [UInt8]($0) } ?? [])
    #expect(contains(database, Array("tablet".utf8)))
}

func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
    guard !needle.isEmpty, haystack.count >= needle.count else { return false }
    let first = needle[0]
    var i = 0
    while i <= haystack.count - needle.count {
        if haystack[i] == first, haystack[i..<(i + needle.count)].elementsEqual(needle) { return true }
        i += 1
    }
    return false
}
