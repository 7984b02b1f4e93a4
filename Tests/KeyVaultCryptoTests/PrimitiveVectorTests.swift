import Foundation
import KeyVaultTestSupport
import Testing
@testable import KeyVaultCrypto

// MARK: HMAC-SHA256 (RFC 4231)

struct HMACVector: Decodable, Sendable, CustomTestStringConvertible {
    let tcId: Int, key: String, data: String, hmacSha256: String, truncatedToBits: Int?
    var testDescription: String { "RFC 4231 case \(tcId)" }
}

struct HMACFile: Decodable { let tests: [HMACVector] }

@Test(arguments: try vectors.load("hmac-sha256-rfc4231", as: HMACFile.self).tests)
func hmacSHA256MatchesRFC4231(_ v: HMACVector) throws {
    let mac = try HMACSHA256.authenticationCode(for: hex(v.data), using: hex(v.key))
    let expected = try hex(v.hmacSha256)
    #expect(Array(mac.prefix(expected.count)) == expected)
}

@Test func streamingHMACEqualsOneShotForAnySplit() throws {
    let data = SystemRandom.bytes(count: 1000)
    let key = SymmetricKey()
    let oneShot = try HMACSHA256.authenticationCode(for: data, using: key)
    for split in [0, 1, 63, 64, 65, 999, 1000] {
        var mac = try HMACSHA256(key: key)
        try mac.update(data[..<split])
        try mac.update(data[split...])
        #expect(try mac.finalize() == oneShot)
    }
    #expect(try HMACSHA256.isValidAuthenticationCode(oneShot, for: data, using: key))
    var forged = oneShot
    forged[31] ^= 1
    #expect(try !HMACSHA256.isValidAuthenticationCode(forged, for: data, using: key))
}

// MARK: HKDF-SHA256 (RFC 5869)

struct HKDFVector: Decodable, Sendable, CustomTestStringConvertible {
    let tcId: Int, ikm: String, salt: String, info: String, L: Int, prk: String, okm: String
    var testDescription: String { "RFC 5869 case \(tcId)" }
}

struct HKDFFile: Decodable { let tests: [HKDFVector] }

@Test(arguments: try vectors.load("hkdf-sha256-rfc5869", as: HKDFFile.self).tests)
func hkdfMatchesRFC5869(_ v: HKDFVector) throws {
    let prk = try HKDF.extract(from: hex(v.ikm), salt: hex(v.salt))
    #expect(prk.unprotectedCopy() == (try hex(v.prk)))
    let okm = try HKDF.expand(prk, info: hex(v.info), outputByteCount: v.L)
    #expect(okm.unprotectedCopy() == (try hex(v.okm)))
    let direct = try HKDF.deriveKey(from: hex(v.ikm), salt: hex(v.salt), info: hex(v.info), outputByteCount: v.L)
    #expect(direct.bytes.unprotectedCopy() == (try hex(v.okm)))
}

@Test func hkdfRefusesImpossibleLengths() {
    #expect(throws: CryptoError.self) { try HKDF.deriveKey(from: [1, 2, 3], info: [], outputByteCount: 0) }
    #expect(throws: CryptoError.self) { try HKDF.deriveKey(from: [1, 2, 3], info: [], outputByteCount: 8161) }
}

// MARK: Argon2id

struct Argon2Vector: Decodable, Sendable, CustomTestStringConvertible {
    let id: Int, password: String, salt: String, t: UInt32, m: UInt32, outlen: Int, tag: String
    var testDescription: String { "libsodium-compatible vector \(id) (t=\(t), m=\(m) KiB)" }
}

struct Argon2File: Decodable { let vectors: [Argon2Vector] }

@Test(arguments: try vectors.load("argon2id-libsodium-compatible", as: Argon2File.self).vectors)
func argon2idMatchesArgon2Cffi(_ v: Argon2Vector) throws {
    // Vectors go below the floor on purpose (libsodium's minimums), hence `unchecked`.
    let out = try Argon2id.deriveKey(from: hex(v.password), salt: hex(v.salt),
                                     parameters: .init(unchecked: v.t, memoryKiB: v.m), outputByteCount: v.outlen)
    #expect(out.unprotectedCopy() == (try hex(v.tag)))
}

struct RFC9106File: Decodable {
    struct Vector: Decodable { let password: String, salt: String, secret: String, ad: String
        let t: UInt32, m: UInt32, p: UInt32, tagLength: UInt32, version: UInt32, preHashingDigest: String, tag: String }
    let vectors: [Vector]
}

/// libsodium's crypto_pwhash fixes p = 1 and takes no secret or associated data, so
/// the RFC 9106 tag cannot be produced through it. What can be checked is the
/// vector's H0 (section 3.2): BLAKE2b-512 over its parameters, through libsodium.
@Test func argon2idRFC9106PreHashMatchesThroughLibsodiumBLAKE2b() throws {
    let file = try vectors.load("argon2id-rfc9106", as: RFC9106File.self)
    #expect(file.vectors.count == 1)
    for v in file.vectors {
        func le(_ x: UInt32) -> [UInt8] { withUnsafeBytes(of: x.littleEndian, Array.init) }
        func field(_ bytes: [UInt8]) -> [UInt8] { le(UInt32(bytes.count)) + bytes }
        let input = le(v.p) + le(v.tagLength) + le(v.m) + le(v.t) + le(v.version) + le(2)
            + field(try hex(v.password)) + field(try hex(v.salt)) + field(try hex(v.secret)) + field(try hex(v.ad))
        let h0 = input.withUnsafeBytes(Sodium.blake2b512)
        #expect(h0 == (try hex(v.preHashingDigest)))
    }
}

@Test func argon2idRefusesParametersBelowTheFloorAndNamesIt() {
    #expect(throws: CryptoError.self) { try Argon2id.Parameters(iterations: 1, memoryKiB: 64 * 1024) }
    do {
        _ = try Argon2id.Parameters(iterations: 3, memoryKiB: 1024)
        Issue.record("1 MiB was accepted")
    } catch let error as CryptoError {
        #expect(error.code == .parametersBelowFloor)
        #expect(error.message.contains("t=2, m=19456 KiB"))
    } catch { Issue.record("unexpected \(error)") }
    #expect(throws: CryptoError.self) { try Argon2id.Parameters(iterations: 3, memoryKiB: .max) }
    #expect((try? Argon2id.Parameters(iterations: 2, memoryKiB: 19 * 1024)) == .floor)
}

@Test func argon2idParametersFromJSONAreCheckedAgainstTheFloor() throws {
    let low = Data(#"{"iterations":1,"memoryKiB":8}"#.utf8)
    #expect(throws: CryptoError.self) { try JSONDecoder().decode(Argon2id.Parameters.self, from: low) }
    let ok = Data(#"{"iterations":3,"memoryKiB":65536}"#.utf8)
    #expect(try JSONDecoder().decode(Argon2id.Parameters.self, from: ok) == .recovery)
}

@Test func argon2idRefusesAWrongSaltLength() {
    #expect(throws: CryptoError.self) {
        try Argon2id.deriveKey(from: [1], salt: [UInt8](repeating: 0, count: 15), parameters: .init(unchecked: 1, memoryKiB: 8))
    }
}

// MARK: Ed25519 (RFC 8032)

struct Ed25519Vector: Decodable, Sendable, CustomTestStringConvertible {
    let name: String, outcome: String, secretKey: String, publicKey: String, message: String, signature: String
    var testDescription: String { "\(name) (\(outcome))" }
}

struct Ed25519File: Decodable { let tests: [Ed25519Vector] }

@Test(arguments: try vectors.load("ed25519-rfc8032", as: Ed25519File.self).tests)
func ed25519MatchesRFC8032(_ v: Ed25519Vector) throws {
    var seed = try hex(v.secretKey)
    let key = try Ed25519.PrivateKey(seed: SecureBytes(wiping: &seed))
    #expect(key.publicKey.rawRepresentation == (try hex(v.publicKey)))
    let valid = key.publicKey.isValidSignature(try hex(v.signature), for: try hex(v.message))
    #expect(valid == (v.outcome == "valid"))
    if v.outcome == "valid" {
        #expect(key.signature(for: try hex(v.message)) == (try hex(v.signature)))
    }
}

@Test func ed25519RefusesTruncatedSignaturesAndWrongKeys() throws {
    let key = Ed25519.PrivateKey()
    let signature = key.signature(for: [1, 2, 3])
    #expect(key.publicKey.isValidSignature(signature, for: [1, 2, 3]))
    #expect(!key.publicKey.isValidSignature(signature.dropLast(), for: [1, 2, 3]))
    #expect(!Ed25519.PrivateKey().publicKey.isValidSignature(signature, for: [1, 2, 3]))
    #expect(throws: CryptoError.self) { try Ed25519.PublicKey(rawRepresentation: [1, 2]) }
}

// MARK: X25519 (RFC 7748) and sealed boxes

struct X25519File: Decodable {
    struct ScalarMult: Decodable { let scalar: String, uCoordinate: String, output: String }
    struct DH: Decodable { let alicePrivate: String, alicePublic: String, bobPrivate: String, bobPublic: String, shared: String }
    struct Box: Decodable { let recipientPrivate: String, box: String, plaintext: String }
    let scalarMultiplication: [ScalarMult]
    let diffieHellman: DH
    let sealedBox: Box
}

func x25519Key(_ text: String) throws -> X25519.PrivateKey {
    var bytes = try hex(text)
    return try X25519.PrivateKey(rawRepresentation: SecureBytes(wiping: &bytes))
}

@Test func x25519MatchesRFC7748() throws {
    let file = try vectors.load("x25519-rfc7748", as: X25519File.self)
    #expect(file.scalarMultiplication.count == 2)
    for v in file.scalarMultiplication {
        let shared = try x25519Key(v.scalar).sharedSecret(with: X25519.PublicKey(rawRepresentation: hex(v.uCoordinate)))
        #expect(shared.unprotectedCopy() == (try hex(v.output)))
    }
    let dh = file.diffieHellman
    let alice = try x25519Key(dh.alicePrivate), bob = try x25519Key(dh.bobPrivate)
    #expect(alice.publicKey.rawRepresentation == (try hex(dh.alicePublic)))
    #expect(bob.publicKey.rawRepresentation == (try hex(dh.bobPublic)))
    #expect(try alice.sharedSecret(with: bob.publicKey).unprotectedCopy() == hex(dh.shared))
    #expect(try bob.sharedSecret(with: alice.publicKey).unprotectedCopy() == hex(dh.shared))
}

@Test func x25519OpensASealedBoxMadeByPyNaCl() throws {
    let v = try vectors.load("x25519-rfc7748", as: X25519File.self).sealedBox
    let opened = try x25519Key(v.recipientPrivate).openSealedBox(hex(v.box))
    #expect(opened.unprotectedCopy() == (try hex(v.plaintext)))
    #expect(throws: CryptoError.authenticationFailure) { try X25519.PrivateKey().openSealedBox(hex(v.box)) }
}

@Test func x25519RefusesALowOrderPeer() throws {
    let zero = try X25519.PublicKey(rawRepresentation: [UInt8](repeating: 0, count: 32))
    #expect(throws: CryptoError.self) { try X25519.PrivateKey().sharedSecret(with: zero) }
}

// MARK: AEADs

struct AEADVector: Decodable, Sendable, CustomTestStringConvertible {
    let name: String, algorithm: String, outcome: String
    let key: String, nonce: String, aad: String, plaintext: String, ciphertext: String, tag: String, combined: String?
    var testDescription: String { name }
    var aead: AEADAlgorithm { algorithm == "aes256gcm" ? .aes256GCM : .xchacha20Poly1305 }
}

struct AEADFile: Decodable { let tests: [AEADVector] }

@Test(arguments: try vectors.load("aead", as: AEADFile.self).tests)
func aeadMatchesVectors(_ v: AEADVector) throws {
    let box = try SealedBox(combined: hex(v.nonce) + hex(v.ciphertext) + hex(v.tag), algorithm: v.aead)
    if v.outcome == "valid" {
        #expect(try v.aead.open(box, using: key(v.key), authenticating: hex(v.aad)).unprotectedCopy() == hex(v.plaintext))
        let sealed = try v.aead.seal(hex(v.plaintext), using: key(v.key), nonce: hex(v.nonce), authenticating: hex(v.aad))
        #expect(sealed.combined == box.combined)
        if let combined = v.combined { #expect(sealed.combined == (try hex(combined))) }
    } else {
        #expect(throws: CryptoError.authenticationFailure) {
            try v.aead.open(box, using: key(v.key), authenticating: hex(v.aad))
        }
    }
}

@Test(arguments: AEADAlgorithm.allCases)
func aeadRefusesShortBoxesAndWrongKeySizes(_ algorithm: AEADAlgorithm) throws {
    #expect(throws: CryptoError.self) { try SealedBox(combined: [UInt8](repeating: 0, count: 27), algorithm: algorithm) }
    let short = try SymmetricKey(SecureBytes(randomCount: 16))
    #expect(throws: CryptoError.self) { try algorithm.seal([1], using: short, authenticating: [UInt8]()) }
}
