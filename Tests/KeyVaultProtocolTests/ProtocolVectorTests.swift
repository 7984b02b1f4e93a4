import Foundation
import KeyVaultCrypto
import KeyVaultModel
import KeyVaultTestSupport
import Testing
@testable import KeyVaultProtocol

/// This target's JSON vector files (its `Vectors` resources).
let vectors = Vectors(in: .module)

struct ChainFile: Decodable {
    struct Step: Decodable {
        let note: String, link: ChainLink, outcome: String
        let signedBytes: String?, hash: String?
    }
    let account: String, head: String, steps: [Step]
}

/// Replays the independently built chain step by step: each valid link must give
/// the same signed bytes and hash, each refused one the same error code.
@Test func accountChainMatchesIndependentImplementation() throws {
    let file = try vectors.load("account-chain-v1", as: ChainFile.self)
    #expect(Set(file.steps.map(\.outcome)) == ["valid", "bad_signature", "unknown_signer", "stale_chain", "stale_generation",
                                                "signer_revoked", "last_device"])
    var state: ChainState?
    for step in file.steps {
        if step.outcome == "valid" {
            #expect(Hex.encode(step.link.signedBytes) == step.signedBytes, "\(step.note)")
            #expect(step.link.hash == step.hash, "\(step.note)")
        }
        do {
            if var current = state {
                try current.apply(step.link)
                state = current
            } else {
                state = try ChainState(genesis: step.link)
            }
            #expect(step.outcome == "valid", "\(step.note) was accepted")
        } catch let error as ProtocolError {
            #expect(error.code.rawValue == step.outcome, "\(step.note): \(error)")
        }
    }
    #expect(state?.account.rawValue == file.account)
    #expect(state?.head == file.head)
    #expect(state?.activeDevices.count == 1 && state?.masterGeneration == 2)
}

struct KeyBoxFile: Decodable {
    struct Box: Decodable { let note: String, box: KeyBox, outcome: String, signedBytes: String }
    let account: String, head: String, steps: [ChainFile.Step], boxes: [Box]
}

/// A chain with a stolen phone that set its own recovery code and added a tablet
/// with it, then was revoked; each box is judged at the link it names, each
/// refused link or box with the code the independent implementation expects.
@Test func keyBoxesAreJudgedByChainHistoryAsTheIndependentImplementationDoes() throws {
    let file = try vectors.load("key-box-v2", as: KeyBoxFile.self)
    var state: ChainState?
    for step in file.steps {
        if step.outcome == "valid" {
            #expect(Hex.encode(step.link.signedBytes) == step.signedBytes, "\(step.note)")
        }
        do {
            if var current = state { try current.apply(step.link); state = current } else { state = try ChainState(genesis: step.link) }
            #expect(step.outcome == "valid", "\(step.note) was accepted")
        } catch let error as ProtocolError {
            #expect(error.code.rawValue == step.outcome, "\(step.note): \(error)")
        }
    }
    let chain = try #require(state)
    #expect(chain.account.rawValue == file.account && chain.head == file.head)
    #expect(chain.recovery?.generation == 3 && chain.recovery?.isCompromised == false)
    #expect(chain.recoveries[1].compromised != nil, "the phone's code is compromised by the phone's revocation")
    #expect(Set(file.boxes.map(\.outcome)) == ["valid", "signer_revoked", "wrong_generation", "box_position", "unknown_recipient",
                                                "recovery_compromised", "bad_signature"])
    for vector in file.boxes {
        #expect(Hex.encode(vector.box.signedBytes(account: chain.account)) == vector.signedBytes, "\(vector.note)")
        expectOutcome(vector.outcome, vector.note) { try vector.box.verify(in: chain) }
    }
}

/// Runs `attempt` for a vector: one whose outcome is `valid` must pass, any other
/// must throw the `ProtocolError` of that code.
func expectOutcome(_ outcome: String, _ note: String, sourceLocation: SourceLocation = #_sourceLocation, _ attempt: () throws -> Void) {
    do {
        try attempt()
        #expect(outcome == "valid", "\(note) was accepted", sourceLocation: sourceLocation)
    } catch let error as ProtocolError {
        #expect(error.code.rawValue == outcome, "\(note): \(error)", sourceLocation: sourceLocation)
    } catch {
        Issue.record("\(note): \(error)", sourceLocation: sourceLocation)
    }
}

struct RequestFile: Decodable {
    struct Test: Decodable, Sendable {
        let method: String, path: String, query: String, body: String, timestamp: Int64
        let nonce: String, device: String, signedBytes: String, signature: String
    }
    let seed: String, publicKey: String, tests: [Test]
}

@Test func requestSignaturesMatchIndependentImplementation() throws {
    let file = try vectors.load("request-signature-v1", as: RequestFile.self)
    #expect(file.tests.count == 4)
    var seed = try Hex.decode(file.seed)
    let key = try Ed25519.PrivateKey(seed: SecureBytes(wiping: &seed))
    #expect(Hex.encode(key.publicKey.rawRepresentation) == file.publicKey)
    for v in file.tests {
        let device = try #require(DeviceID(rawValue: v.device))
        #expect(deviceID(for: key.publicKey) == device)
        let body = try Hex.decode(v.body)
        let bytes = RequestSignature.signedBytes(method: v.method, path: v.path, query: v.query, bodyHash: SHA256.hash(body),
                                                 timestamp: v.timestamp, nonce: v.nonce, device: device)
        #expect(Hex.encode(bytes) == v.signedBytes)
        let headers = Dictionary(uniqueKeysWithValues: RequestSignature.headers(
            method: v.method, path: v.path, query: v.query, body: body, device: device, key: key, timestamp: v.timestamp, nonce: v.nonce))
        #expect(headers[RequestSignature.signatureHeader] == v.signature)
        let claim = try RequestSignature.Claim(device: v.device, timestamp: String(v.timestamp), nonce: v.nonce, signature: v.signature)
        #expect(claim.isValid(method: v.method, path: v.path, query: v.query, bodyHash: SHA256.hash(body), key: key.publicKey))
        #expect(!claim.isValid(method: v.method, path: v.path + "x", query: v.query, bodyHash: SHA256.hash(body), key: key.publicKey))
        #expect(!claim.isValid(method: v.method, path: v.path, query: v.query, bodyHash: SHA256.hash(body + [0]), key: key.publicKey))
    }
}

@Test func base64RoundTripsAndRefusesGarbage() {
    for count in 0..<70 {
        let bytes = SystemRandom.bytes(count: count)
        #expect(base64Decode(base64Encode(bytes)) == bytes)
        #expect(base64Encode(bytes) == Data(bytes).base64EncodedString())
    }
    for bad in ["a", "a===", "ab!d", "abc=d===", "====", "ab=c"] {
        #expect(base64Decode(bad) == nil, "\(bad)")
    }
}

@Test func aChainStartsOnlyWithAValidGenesis() throws {
    let key = Ed25519.PrivateKey()
    let id = deviceID(for: key.publicKey)
    var link = ChainLink(sequence: 0, previous: ChainLink.noPrevious, type: .genesis, signer: id.rawValue, time: 0, body: [
        "device": id.rawValue, "name": "phone", "signingKey": Hex.encode(key.publicKey.rawRepresentation),
        "boxKey": Hex.encode(X25519.PrivateKey().publicKey.rawRepresentation), "masterGeneration": "1"])
    link.sign(with: key)
    #expect(try ChainState(genesis: link).devices.count == 1)
    for mutate in [{ (l: inout ChainLink) in l.sequence = 1 }, { $0.version = 2 }, { $0.body["masterGeneration"] = "2" },
                   { $0.body["device"] = String(repeating: "0", count: 32) }, { $0.body["name"] = "" }, { $0.type = .deviceAdd }] {
        var changed = link
        mutate(&changed)
        changed.sign(with: key)
        #expect(throws: ProtocolError.self) { try ChainState(genesis: changed) }
    }
    #expect(throws: ProtocolError.self) { try ChainState(links: []) }
}

struct MACFile: Decodable {
    struct Test: Decodable {
        let method: String, path: String, query: String, body: String, timestamp: Int64, nonce: String, macBytes: String, mac: String
    }
    let key: String, session: String, tests: [Test]
}

@Test func sessionMACsMatchIndependentImplementation() throws {
    let file = try vectors.load("request-mac-v1", as: MACFile.self)
    #expect(file.tests.count == 3)
    var keyBytes = try Hex.decode(file.key)
    let key = try SymmetricKey(SecureBytes(wiping: &keyBytes))
    for v in file.tests {
        let body = try Hex.decode(v.body)
        let bytes = RequestMAC.macBytes(method: v.method, path: v.path, query: v.query, bodyHash: SHA256.hash(body),
                                        timestamp: v.timestamp, nonce: v.nonce, session: file.session)
        #expect(Hex.encode(bytes) == v.macBytes)
        let headers = Dictionary(uniqueKeysWithValues: try RequestMAC.headers(
            method: v.method, path: v.path, query: v.query, body: body, session: file.session, key: key, timestamp: v.timestamp, nonce: v.nonce))
        #expect(headers[RequestMAC.macHeader] == v.mac)
    }
}

struct DeviceLinkFile: Decodable {
    struct Case: Decodable {
        let account: String, code: String, approver: DeviceID, request: LinkRequestCreate
        let deviceNonce: String, approverNonce: String, sas: String, confirmation: String, wrongNonce: String
    }
    let tests: [Case]
}

/// docs/formats/device-link.md, version 4: the commitment, the SAS and the confirmation
/// code as an independent implementation computes them; a reveal that does not open the
/// commitment, or any changed key, name, code or approving device, gives something else.
@Test func deviceLinkCommitmentAndSASMatchTheIndependentImplementation() throws {
    let file = try vectors.load("device-link-v4", as: DeviceLinkFile.self)
    #expect(file.tests.count == 3)
    for v in file.tests {
        let account = try #require(AccountID(rawValue: v.account))
        let rN = try Hex.decode(v.deviceNonce), rA = try Hex.decode(v.approverNonce)
        func sas(code: String? = nil, approver: DeviceID? = nil, request: LinkRequestCreate? = nil, approverNonce: [UInt8]? = nil) -> String? {
            LinkSAS.compute(account: account, code: code ?? v.code, approver: approver ?? v.approver, request: request ?? v.request,
                            deviceNonce: rN, approverNonce: approverNonce ?? rA)
        }
        #expect(v.request.isWellFormed)
        #expect(LinkCommitment.opens(account: account, request: v.request, nonce: rN))
        #expect(!LinkCommitment.opens(account: account, request: v.request, nonce: try Hex.decode(v.wrongNonce)))
        #expect(sas() == v.sas)

        var renamed = v.request
        renamed.name += "x"
        #expect(!LinkCommitment.opens(account: account, request: renamed, nonce: rN))
        #expect(sas(request: renamed) != v.sas)
        #expect(sas(code: "0000000000") != v.sas)
        #expect(sas(approverNonce: rN) != v.sas)
        #expect(sas(approver: v.request.device) != v.sas)

        func confirmation(approver: DeviceID? = nil) -> String? {
            LinkSAS.confirmation(account: account, code: v.code, approver: approver ?? v.approver, request: v.request,
                                 deviceNonce: rN, approverNonce: rA)
        }
        #expect(confirmation() == v.confirmation)
        #expect(v.confirmation != v.sas)
        #expect(confirmation(approver: v.request.device) != v.confirmation)
    }
}

/// The digits are uniform: the rejection step leaves no value more likely than 10^-6
/// (a skewed reduction would make some SAS values likelier for an attacker to hit).
@Test func linkSASDigitsParseOnlyAsSixDigits() {
    #expect(LinkSAS.digits("123 456") == "123456")
    #expect(LinkSAS.digits("123-456") == "123456")
    #expect(LinkSAS.digits(" 123456 ") == "123456")
    #expect(LinkSAS.digits("12345") == nil)
    #expect(LinkSAS.digits("１２３４５６") == nil)
    #expect(LinkSAS.digits("12a456") == nil)
}
