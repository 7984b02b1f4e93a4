import Foundation
import KeyVaultCrypto
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultProtocol

/// The seeds committed under Fuzz/Corpus: well-formed inputs of every kind, made with
/// the fixed keys, so that a run starts from inputs that reach deep (a valid chain of
/// every link type, headers that verify, envelopes that open) and mutates from there.
/// `keyvault-fuzz --make-corpus DIR` writes them.
public enum SeedCorpus {
    public static func make() throws -> [(target: FuzzTarget, name: String, bytes: [UInt8])] {
        var seeds: [(FuzzTarget, String, [UInt8])] = []
        func add(_ target: FuzzTarget, _ name: String, _ bytes: [UInt8]) { seeds.append((target, name, bytes)) }

        // Mnemonic: a code in every list, typed carelessly, and passphrases to normalise.
        let entropy = SecureBytes(copying: (0..<32).map { UInt8(truncatingIfNeeded: $0 * 37 + 11) })
        for language in MnemonicLanguage.allCases {
            add(.mnemonic, "24-\(language.rawValue)", Array(try Mnemonic(entropy: entropy, language: language).phrase.utf8))
        }
        let twelve = try Mnemonic(entropy: SecureBytes(copying: [UInt8](repeating: 0x7f, count: 16)))
        add(.mnemonic, "12-english", Array(twelve.phrase.utf8))
        add(.mnemonic, "12-english-prefixes", Array(twelve.words.map { String($0.prefix(4)).uppercased() }.joined(separator: "\t  ").utf8))
        add(.mnemonic, "passphrase-accents", Array("Cafe\u{301}\u{327} e\u{323}\u{302} \u{1E0B}\u{323} Å".utf8))
        add(.mnemonic, "passphrase-halfwidth", Array("ｶﾞｷﾞｸﾞ ﾊﾟﾋﾟ \u{FF76}\u{FF9E}\u{FF9F} ㍿ ﬁ".utf8))

        // Envelopes under the target's key, in both algorithms, and a context as text.
        let context = try EnvelopeContext(purpose: "fuzz")
        let sealed = try AEADAlgorithm.allCases.map {
            try Envelope.seal(Array("a member key, say".utf8), under: EnvelopeTarget.key, generation: 3, context: context, algorithm: $0)
        }
        for (i, envelope) in sealed.enumerated() { add(.envelope, "sealed-\(i + 1)", envelope.bytes) }
        let inContext = try Envelope.seal(Array("a name".utf8), under: EnvelopeTarget.key, generation: 1,
                                          context: EnvelopeContext(purpose: "member-name", ["member": "ffeeddccbbaa99887766554433221100"]))
        add(.envelope, "context", Array("member-name\nmember=ffeeddccbbaa99887766554433221100\n\(inContext.base64)".utf8))

        // Attachment objects: a key envelope and a content envelope.
        add(.attachment, "object", AttachmentObject(key: sealed[0].bytes, content: sealed[1].bytes).bytes)
        add(.attachment, "key-only", sealed[0].bytes)
        // Version 2: two full chunks of 2^10 and a last one (framing only: the parser opens nothing).
        add(.attachment, "streamed", AttachmentObject(key: sealed[0].bytes, chunkShift: 10,
                                                      chunks: [UInt8](repeating: 0xab, count: 2 * 1040 + 100)).bytes)

        // Headers: a signed request and a session request, both valid at HeadersTarget.now.
        let r = HeadersTarget.request
        let signer = HeadersTarget.device
        let device = deviceID(for: signer.publicKey)
        let signed = RequestSignature.headers(method: r.method, path: r.path, query: r.query, body: [], device: device,
                                              key: signer, timestamp: HeadersTarget.now, nonce: HeadersTarget.nonce)
        let session = HeadersTarget.session
        let mac = try RequestMAC.headers(method: r.method, path: r.path, query: r.query, body: [], session: session.id,
                                         key: session.key, timestamp: HeadersTarget.now, nonce: HeadersTarget.nonce)
        add(.headers, "signed-and-session", Array((signed.map(\.1) + [session.id, mac[3].1]).joined(separator: "\n").utf8))

        // Chains: every link type, as is and to be repaired.
        let links = try chain()
        let encoder = JSONEncoder()
        encoder.outputFormatting = .sortedKeys
        let json = Array(try encoder.encode(links))
        add(.chain, "every-link-type", [0] + json)
        add(.chain, "every-link-type-repaired", [3] + json)
        add(.chain, "genesis-only", [0] + Array(try encoder.encode(Array(links.prefix(1)))))

        // Request bodies, one for each decoder (the first byte picks it); fixed bytes
        // where an envelope goes, so that the seeds are the same in every run.
        let opaque = base64Encode([UInt8](repeating: 7, count: 90))
        let box = KeyBox(generation: 1, sequence: 0, recipient: device.rawValue, box: base64Encode([UInt8](repeating: 1, count: 80)),
                         signer: device.rawValue, signature: base64Encode([UInt8](repeating: 2, count: 64)))
        let slot = RecoverySlot(salt: Hex.encode([UInt8](repeating: 3, count: 16)), iterations: 3, memoryKiB: 65536,
                                authKey: Hex.encode(ChainTarget.recovery.publicKey.rawRepresentation),
                                boxKey: Hex.encode(FixedKeys.box(0x62).publicKey.rawRepresentation),
                                anchor: opaque)
        let member = MemberID(rawValue: String(repeating: "5a", count: 16))!
        let request = LinkRequestCreate(device: device, name: "phone", signingKey: Hex.encode(signer.publicKey.rawRepresentation),
                                        boxKey: Hex.encode(FixedKeys.box(0x61).publicKey.rawRepresentation),
                                        commitment: Hex.encode([UInt8](repeating: 4, count: 32)))
        let identity = IdentityKeys(generation: 1, signingKey: Hex.encode(FixedKeys.signing(0x70).publicKey.rawRepresentation),
                                    boxKey: Hex.encode(FixedKeys.box(0x71).publicKey.rawRepresentation))
        let bodies: [String: any Encodable] = [
            "account": CreateAccountRequest(genesis: links[0], boxes: [box], recovery: slot),
            "append": AppendRequest(link: links[1], boxes: [box],
                                    wraps: [MemberWrap(member: member, memberGeneration: 1, masterGeneration: 1, envelope: opaque)]),
            "recovery-enroll": RecoveryEnrollRequest(token: String(repeating: "7e", count: 40), link: links[1], boxes: [box]),
            "recovery-proof": RecoveryProof(challenge: String(repeating: "6c", count: 40), signature: base64Encode([UInt8](repeating: 5, count: 64))),
            "link-request": request,
            "link-nonce": LinkNonce(nonce: Hex.encode([UInt8](repeating: 6, count: 32))),
            "contact-request": ContactRequestCreate(to: AccountID(rawValue: String(repeating: "c0", count: 16))!, identity: identity,
                                                    commitment: Hex.encode([UInt8](repeating: 8, count: 32))),
            "contact-response": ContactResponse(identity: identity, nonce: Hex.encode([UInt8](repeating: 9, count: 32))),
            "head-statement": HeadStatement(account: AccountID(unchecked: String(repeating: "ab", count: 16)),
                                            device: DeviceID(unchecked: String(repeating: "cd", count: 16)), sequence: 3,
                                            head: String(repeating: "ef", count: 32), time: 1_700_000_000,
                                            signature: base64Encode([UInt8](repeating: 1, count: 64))),
        ]
        for (index, decoder) in strictRequestDecoders.map(\.name).enumerated() {
            add(.requestJSON, decoder, [UInt8(index)] + Array(try encoder.encode(bodies[decoder]!)))
        }
        return seeds
    }

    /// A chain of every link type, signed with ``ChainTarget``'s fixed keys.
    static func chain() throws -> [ChainLink] {
        let keys = ChainTarget.devices
        let ids = keys.map { deviceID(for: $0.publicKey).rawValue }
        let member = String(repeating: "5a", count: 16)
        var links = [ChainLink.genesis(signingKey: keys[0], boxKey: FixedKeys.box(0x61).publicKey, name: "phone", time: 1_700_000_000,
                                       masterKeyCheck: String(repeating: "0c", count: 16))]
        func append(_ type: LinkType, by signer: Int?, _ body: [String: String]) throws {
            let last = links[links.count - 1]
            var link = ChainLink(sequence: last.sequence + 1, previous: last.hash, type: type,
                                 signer: signer.map { ids[$0] } ?? ChainLink.recoverySigner, time: 1_700_000_000 + Int64(links.count), body: body)
            ChainTarget.sign(&link)
            links.append(link)
        }
        try append(.deviceAdd, by: 0, ChainLink.deviceFields(signingKey: keys[1].publicKey, boxKey: FixedKeys.box(0x62).publicKey, name: "laptop"))
        try append(.recoverySet, by: 0, ["authKey": Hex.encode(ChainTarget.recovery.publicKey.rawRepresentation),
                                         "boxKey": Hex.encode(FixedKeys.box(0x63).publicKey.rawRepresentation), "recoveryGeneration": "1"])
        try append(.memberAdd, by: 1, ["member": member, "memberGeneration": "1", "name": base64Encode(Array("a name envelope".utf8))])
        try append(.masterRotate, by: 0, ["masterGeneration": "2", "masterKeyCheck": String(repeating: "0d", count: 16)])
        try append(.memberRotate, by: 1, ["member": member, "memberGeneration": "2"])
        try append(.deviceAdd, by: nil, ChainLink.deviceFields(signingKey: keys[2].publicKey, boxKey: FixedKeys.box(0x64).publicKey, name: "tablet"))
        try append(.deviceRevoke, by: 2, ["device": ids[1]])
        try append(.recoverySet, by: 2, ["authKey": Hex.encode(ChainTarget.recovery.publicKey.rawRepresentation),
                                         "boxKey": Hex.encode(FixedKeys.box(0x65).publicKey.rawRepresentation), "recoveryGeneration": "2"])
        // Sharing (docs/formats/member-sharing.md): an identity, a pinned contact, a grant and its end.
        let contact = String(repeating: "c0", count: 16)
        try append(.identitySet, by: 0, ["identityGeneration": "1", "signingKey": Hex.encode(keys[3].publicKey.rawRepresentation),
                                         "boxKey": Hex.encode(FixedKeys.box(0x66).publicKey.rawRepresentation)])
        try append(.contactPin, by: 2, ["account": contact, "identityGeneration": "1",
                                        "signingKey": Hex.encode(FixedKeys.signing(0x70).publicKey.rawRepresentation),
                                        "boxKey": Hex.encode(FixedKeys.box(0x71).publicKey.rawRepresentation)])
        try append(.shareGrant, by: 0, ["member": member, "grantee": contact, "granteeIdentityGeneration": "1", "readOnly": "true"])
        try append(.shareRevoke, by: 2, ["member": member, "grantee": contact])
        try append(.contactUnpin, by: 0, ["account": contact])
        _ = try ChainState(links: links)  // every seed link follows
        return links
    }
}
