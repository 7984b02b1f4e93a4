import Foundation
import KeyVaultTestSupport
import PropertyBased
import Testing
@testable import KeyVaultCrypto

struct EnvelopeVector: Decodable, Sendable, CustomTestStringConvertible {
    let name: String, outcome: String, algorithm: String, key: String, generation: UInt32
    let purpose: String, fields: [String: String], nonce: String, plaintext: String, envelope: String
    var testDescription: String { "\(name) → \(outcome)" }
    var aead: AEADAlgorithm { algorithm == "aes256gcm" ? .aes256GCM : .xchacha20Poly1305 }
    func context() throws -> EnvelopeContext { try EnvelopeContext(purpose: purpose, fields) }
}

struct EnvelopeFile: Decodable { let tests: [EnvelopeVector] }

@Test(arguments: try vectors.load("envelope-v1", as: EnvelopeFile.self).tests)
func envelopeMatchesIndependentImplementation(_ v: EnvelopeVector) throws {
    let openIt = { try Envelope(bytes: hex(v.envelope)).open(using: key(v.key), context: v.context()) }
    switch v.outcome {
    case "valid":
        #expect(try openIt().unprotectedCopy() == hex(v.plaintext))
        let sealed = try Envelope.seal(hex(v.plaintext), under: key(v.key), generation: v.generation,
                                       context: v.context(), algorithm: v.aead, nonce: hex(v.nonce))
        #expect(sealed.bytes == (try hex(v.envelope)))
        #expect(try Envelope(base64: sealed.base64) == sealed)
        #expect(sealed.generation == v.generation)
    default:
        do {
            _ = try openIt()
            Issue.record("\(v.name) opened")
        } catch let error as CryptoError {
            #expect(error.code.rawValue == v.outcome, "\(error)")
        }
    }
}

@Test func envelopeVectorsCoverEveryOutcome() throws {
    let outcomes = Set(try vectors.load("envelope-v1", as: EnvelopeFile.self).tests.map(\.outcome))
    #expect(outcomes == ["valid", "authentication_failure", "key_mismatch", "malformed", "unsupported_version", "unsupported_algorithm"])
}

let plaintexts = Gen.uint8().array(of: 0...300)

@Test(arguments: AEADAlgorithm.allCases)
func envelopeRoundTripsAnyPlaintext(_ algorithm: AEADAlgorithm) async {
    let key = SymmetricKey()
    let context = try! EnvelopeContext(purpose: "member-key", ["member": "emma", "generation": "1"])
    await propertyCheck(count: 50, input: plaintexts, Gen.uint32()) { plaintext, generation in
        let envelope = try Envelope.seal(plaintext, under: key, generation: generation, context: context, algorithm: algorithm)
        let parsed = try Envelope(bytes: envelope.bytes)
        #expect(try parsed.open(using: key, context: context).unprotectedCopy() == plaintext)
        #expect(parsed.generation == generation && parsed.algorithm == algorithm)
    }
}

@Test(arguments: AEADAlgorithm.allCases)
func envelopeRefusesAnyFlippedBit(_ algorithm: AEADAlgorithm) async throws {
    let key = SymmetricKey()
    let context = try EnvelopeContext(purpose: "member-key", ["member": "emma"])
    let bytes = try Envelope.seal(SystemRandom.bytes(count: 40), under: key, generation: 3, context: context, algorithm: algorithm).bytes
    await propertyCheck(count: 200, input: Gen.int(in: 0..<(bytes.count * 8))) { bit in
        var tampered = bytes
        tampered[bit / 8] ^= 1 << UInt8(bit % 8)
        #expect(throws: CryptoError.self) { try Envelope(bytes: tampered).open(using: key, context: context) }
    }
}

@Test func envelopeRefusesAWrongKeyOrAnyOtherContext() async throws {
    let key = SymmetricKey()
    let context = try EnvelopeContext(purpose: "member-key", ["account": "a1", "member": "emma", "generation": "2"])
    let envelope = try Envelope.seal([9, 9, 9], under: key, generation: 2, context: context)
    #expect { try envelope.open(using: SymmetricKey(), context: context) } throws: {
        ($0 as? CryptoError)?.code == .keyMismatch
    }
    let others: [EnvelopeContext] = try [
        EnvelopeContext(purpose: "member-key", ["account": "a1", "member": "noah", "generation": "2"]),
        EnvelopeContext(purpose: "member-key", ["account": "a1", "member": "emma", "generation": "3"]),
        EnvelopeContext(purpose: "member-key", ["account": "a2", "member": "emma", "generation": "2"]),
        EnvelopeContext(purpose: "attachment-dek", ["account": "a1", "member": "emma", "generation": "2"]),
        EnvelopeContext(purpose: "member-key", ["account": "a1", "member": "emma"]),
        EnvelopeContext(purpose: "member-key", ["account": "a1", "member": "emma", "generation": "2", "x": ""]),
    ]
    for other in others {
        #expect(throws: CryptoError.authenticationFailure) { try envelope.open(using: key, context: other) }
    }
}

@Test func envelopeContextRefusesNamesThatCouldCollide() {
    #expect(throws: CryptoError.self) { try EnvelopeContext(purpose: "") }
    #expect(throws: CryptoError.self) { try EnvelopeContext(purpose: "Member Key") }
    #expect(throws: CryptoError.self) { try EnvelopeContext(purpose: "x", ["purpose": "y"]) }
    #expect(throws: CryptoError.self) { try EnvelopeContext(purpose: "x", ["Bad": "y"]) }
    #expect(throws: CryptoError.self) { try EnvelopeContext(purpose: "x", ["v": String(repeating: "a", count: 1025)]) }
}

@Test func envelopeRefusesBadBase64() {
    #expect(throws: CryptoError.self) { try Envelope(base64: "not base64!") }
}
