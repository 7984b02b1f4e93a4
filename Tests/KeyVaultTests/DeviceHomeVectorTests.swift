import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultTestSupport
import Testing
@testable import KeyVault

/// docs/formats/device-home.md's two sealed forms, as an independent implementation
/// (Scripts/vectors/generate.py: argon2-cffi, PyNaCl) made them: a device file whose
/// secrets are sealed under a passphrase, and a document sealed under an app's key.
struct DeviceHomeVectors: Decodable {
    struct Secrets: Decodable, Sendable {
        let signingSeed: String, boxKey: String, master: [String: String], members: [String: [String: String]]
    }
    struct Home: Decodable, Sendable, CustomTestStringConvertible {
        let name: String, outcome: String, passphraseHex: String, document: String
        let key: String?, secrets: Secrets?, signingPublicKey: String?, boxPublicKey: String?
        var testDescription: String { name }
    }
    struct Stored: Decodable, Sendable, CustomTestStringConvertible {
        let name: String, outcome: String, key: String, stored: String, document: String?
        var testDescription: String { name }
    }
    struct Sealed: Decodable { let salt: String, iterations: UInt32, memoryKiB: UInt32, envelope: String }
    struct Document: Decodable { let account: String, device: String, sealed: Sealed }

    let outcomes: [String]
    let homes: [Home]
    let storage: [Stored]

    static func load() throws -> DeviceHomeVectors { try Vectors(in: .module).load("device-home-v1") }
}

@Suite struct DeviceHomeVectorTests {
    /// Every outcome the file names has a case (an empty list would pass the tests below).
    @Test func theVectorsCoverEveryOutcome() throws {
        let file = try DeviceHomeVectors.load()
        #expect(Set(file.homes.map(\.outcome) + file.storage.map(\.outcome)) == Set(file.outcomes))
        #expect(file.homes.filter { $0.outcome == "valid" }.count == 2)
    }

    /// The 22 bytes an envelope begins with (version, algorithm, key id, generation):
    /// what a seal with the same key must write too.
    static func header(_ envelope: [UInt8]) -> [UInt8] { Array(envelope.prefix(22)) }

    @Test(arguments: try DeviceHomeVectors.load().homes)
    func aDeviceFileSealedUnderAPassphraseOpensAsTheIndependentImplementationSealedIt(_ v: DeviceHomeVectors.Home) throws {
        let storage = MemoryDeviceStorage()
        try storage.write(Array(v.document.utf8))
        let home = DeviceHome(storage: storage)
        let passphrase = SecureBytes(copying: try Hex.decode(v.passphraseHex))
        home.passphrase = passphrase
        guard v.outcome == "valid" else {
            #expect { try home.load() } throws: { ($0 as? KeyVaultError)?.code.rawValue == v.outcome }
            return
        }
        let record = try home.load()
        let secrets = try #require(v.secrets)
        let document = try JSONDecoder().decode(DeviceHomeVectors.Document.self, from: Data(v.document.utf8))
        // The key Argon2id gives for the file's salt and parameters.
        let key = try SealingKey(passphrase: passphrase, salt: Hex.decode(document.sealed.salt),
                                 parameters: Argon2id.Parameters(iterations: document.sealed.iterations, memoryKiB: document.sealed.memoryKiB))
        #expect(Hex.encode(key.key.bytes.unprotectedCopy()) == v.key)
        // Every secret the file holds, and the identities they give.
        #expect(Hex.encode(record.keys.signing.seed.unprotectedCopy()) == secrets.signingSeed)
        #expect(Hex.encode(record.keys.signing.publicKey.rawRepresentation) == v.signingPublicKey)
        #expect(Hex.encode(record.keys.boxKey.rawRepresentation.unprotectedCopy()) == secrets.boxKey)
        #expect(Hex.encode(record.keys.boxKey.publicKey.rawRepresentation) == v.boxPublicKey)
        #expect(record.device.rawValue == document.device)
        #expect(record.account.rawValue == document.account)
        #expect(Dictionary(uniqueKeysWithValues: record.masterKeys.map { (String($0.key), Hex.encode($0.value.bytes.unprotectedCopy())) })
                == secrets.master)
        #expect(Dictionary(uniqueKeysWithValues: record.memberKeys.map { member, keys in
            (member.rawValue, Dictionary(uniqueKeysWithValues: keys.map { (String($0.key), Hex.encode($0.value.bytes.unprotectedCopy())) }))
        }) == secrets.members)
        // Sealing under that key writes what the independent implementation wrote, but the
        // nonce (fresh) and so the ciphertext: the same salt, parameters and envelope header.
        let plain = Array(#"{"secret":1}"#.utf8)
        let sealed = try SealedSecrets.seal(plain, under: key)
        #expect(sealed.salt == document.sealed.salt)
        #expect(sealed.iterations == document.sealed.iterations && sealed.memoryKiB == document.sealed.memoryKiB)
        #expect(Self.header(try Envelope(base64: sealed.envelope).bytes) == Self.header(try Envelope(base64: document.sealed.envelope).bytes))
        #expect(try sealed.open(passphrase: passphrase).plain == plain)
    }

    @Test(arguments: try DeviceHomeVectors.load().storage)
    func aDocumentSealedUnderAnAppsKeyOpensAsTheIndependentImplementationSealedIt(_ v: DeviceHomeVectors.Stored) throws {
        let base = MemoryDeviceStorage()
        try base.write(Hex.decode(v.stored))
        let sealed = try SealedDeviceStorage(base, key: Hex.decode(v.key))
        guard v.outcome == "valid" else {
            #expect { try sealed.read() } throws: { ($0 as? KeyVaultError)?.code.rawValue == v.outcome }
            return
        }
        let document = Array(try #require(v.document).utf8)
        #expect(try sealed.read() == document)
        // Sealing with the same key writes the same envelope header (the nonce is fresh).
        try sealed.write(document)
        let written = try #require(try base.read())
        #expect(Self.header(written) == Self.header(try Hex.decode(v.stored)))
        #expect(try sealed.read() == document)
    }
}
