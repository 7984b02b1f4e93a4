import Foundation
import KeyVaultCrypto
import KeyVaultMnemonic
import KeyVaultModel
import KeyVaultProtocol

enum MnemonicTarget {
    static func run(_ data: [UInt8]) throws(FuzzFinding) {
        let quick = data.withUnsafeBytes { Mnemonic.validate(utf8: $0) }
        let parsed = try? Mnemonic(utf8: data)
        // The hot path and the parser agree on every input.
        try expect(quick == parsed?.language,
                   "validate says \(String(describing: quick)), parsing says \(String(describing: parsed?.language))")
        if let parsed {
            let again = try? Mnemonic(phrase: parsed.phrase, language: parsed.language)
            try expect(again?.entropy == parsed.entropy, "the words of a parsed phrase do not parse back to its entropy")
        }
        // NFKD (passphrases): canonically ordered, and a fixed point.
        let text = String(decoding: data, as: UTF8.self)
        let once = Array(NFKD.normalize(text).unicodeScalars)
        for (a, b) in zip(once, once.dropFirst()) {
            let (ca, cb) = (a.properties.canonicalCombiningClass.rawValue, b.properties.canonicalCombiningClass.rawValue)
            try expect(cb == 0 || ca <= cb, "NFKD left U+\(String(a.value, radix: 16)) before U+\(String(b.value, radix: 16)) out of canonical order")
        }
        let twice = Array(NFKD.normalize(String(String.UnicodeScalarView(once))).unicodeScalars)
        try expect(once == twice, "NFKD is not idempotent")
    }
}

enum EnvelopeTarget {
    static let key = FixedKeys.symmetric(0x42)

    static func run(_ data: [UInt8]) throws(FuzzFinding) {
        if let envelope = try? Envelope(bytes: data) {
            try expect(envelope.bytes == data, "an envelope does not encode back to the bytes it was parsed from")
            _ = try? envelope.open(using: key, context: EnvelopeContext(purpose: "fuzz"))
        }
        // As text: a purpose, key=value lines, and on the last line an envelope in base64,
        // opened under the known key in that context.
        let lines = String(decoding: data.prefix(4096), as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        guard lines.count >= 2, let envelope = try? Envelope(base64: lines[lines.count - 1]) else { return }
        var fields: [String: String] = [:]
        for part in lines.dropFirst().dropLast() {
            let pair = part.split(separator: "=", maxSplits: 1).map(String.init)
            fields[pair.first ?? ""] = pair.count > 1 ? pair[1] : ""
        }
        guard let context = try? EnvelopeContext(purpose: lines[0], fields) else { return }
        _ = context.description
        _ = try? envelope.open(using: key, context: context)
    }
}

enum AttachmentTarget {
    static func run(_ data: [UInt8]) throws(FuzzFinding) {
        if let object = try? AttachmentObject(bytes: data) {
            try expect(object.bytes == data, "an attachment object does not encode back to its bytes")
            try expect((try? AttachmentObject(bytes: object.bytes)) == object, "an encoded attachment object does not parse back")
            try expect((try? AttachmentObject.checkKey(object.key)) != nil, "the key part of a parsed object is refused on its own")
            try expect(AttachmentObject(key: object.key, storedContent: object.storedContent) == object,
                       "an attachment object does not come back from what the server stores of it")
            if let layout = try? object.chunkLayout() {
                let covered = (0..<layout.count).reduce(0) { $0 + layout.range(of: $1).count }
                try expect(covered == object.content.count && layout.range(of: layout.count - 1).upperBound == object.content.count,
                           "the chunks of a parsed object do not cover its content exactly")
            }
        }
        _ = try? AttachmentObject.checkKey(data)
    }
}

enum HeadersTarget {
    /// The time the seeds were made at: their sessions are unexpired then.
    static let now: Int64 = 1_700_000_000
    static let device = FixedKeys.signing(0x01)
    static let deviceID = KeyVaultProtocol.deviceID(for: device.publicKey)
    static let nonce = String(repeating: "ab", count: 16)
    static let sessions = try! Sessions(sharedSecret: FixedKeys.symmetric(0x53), outliveProcess: false)
    /// The one session the seeds use.
    static let session = try! sessions.open(for: deviceID, now: now, random: [UInt8](repeating: 9, count: 16))
    static let request = (method: "POST", path: "/v1/accounts/00112233445566778899aabbccddeeff/chain", query: "",
                          bodyHash: SHA256.hash([UInt8]()))

    /// Lines: device, timestamp, nonce, signature, session, MAC. Only the request the
    /// seeds signed (this device, time and nonce; this session) may verify.
    /// Whether the signature and the session MAC verified.
    @discardableResult
    static func run(_ data: [UInt8]) throws(FuzzFinding) -> (signature: Bool, mac: Bool) {
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n", omittingEmptySubsequences: false).map(String.init)
        func line(_ i: Int) -> String? { i < lines.count ? lines[i] : nil }
        let r = request
        var verified = (signature: false, mac: false)
        if let claim = try? RequestSignature.Claim(device: line(0), timestamp: line(1), nonce: line(2), signature: line(3)),
           claim.isValid(method: r.method, path: r.path, query: r.query, bodyHash: r.bodyHash, key: device.publicKey) {
            try expect(claim.device == deviceID && claim.timestamp == now && claim.nonce == nonce,
                       "a signature verified for a request the key never signed")
            verified.signature = true
        }
        guard let id = line(4) else { return verified }
        let found: Sessions.Session?
        do { found = try sessions.get(id, now: now) } catch { throw FuzzFinding("the session lookup threw: \(error)") }
        guard let found else { return verified }
        if let claim = try? RequestMAC.Claim(session: id, timestamp: line(1), nonce: line(2), mac: line(5)),
           (try? claim.isValid(method: r.method, path: r.path, query: r.query, bodyHash: r.bodyHash, key: found.key)) == true {
            try expect(id == session.id && found.device == deviceID && claim.timestamp == now && claim.nonce == nonce,
                       "a session MAC verified for a request or session the seeds never made")
            verified.mac = true
        }
        return verified
    }
}

enum RequestJSONTarget {
    /// The first byte picks the request type; the rest is the body.
    static func run(_ data: [UInt8]) {
        guard let first = data.first else { return }
        let decoder = strictRequestDecoders[Int(first) % strictRequestDecoders.count]
        _ = try? decoder.decode(Array(data.dropFirst()))
    }
}
