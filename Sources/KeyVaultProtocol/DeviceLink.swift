import KeyVaultCrypto
import KeyVaultModel

// docs/formats/device-link.md (version 4) is the specification of everything in this file.

/// The new device's commitment to its keys and its random value r_N, posted before
/// the approver contributes r_A: SHA-256 over the account, the device's id, keys and
/// name, and r_N. Server and approver check a reveal against it.
package enum LinkCommitment {
    package static let nonceByteCount = 32

    /// The commitment, 32 bytes.
    package static func compute(account: AccountID, device: DeviceID, signingKey: [UInt8], boxKey: [UInt8], name: String,
                               nonce: [UInt8]) -> [UInt8] {
        var w = CanonicalWriter(domain: "keyvault/v2/link-commit")
        w.short(account.rawValue)
        w.short(device.rawValue)
        w.raw(signingKey)
        w.raw(boxKey)
        w.long(Array(name.utf8))
        w.raw(nonce)
        return SHA256.hash(w.bytes)
    }

    /// The commitment of a request, from its hex fields; nil when a field does not parse.
    package static func compute(account: AccountID, request: LinkRequestCreate, nonce: [UInt8]) -> [UInt8]? {
        guard let keys = LinkKeys(request), nonce.count == nonceByteCount else { return nil }
        return compute(account: account, device: request.device, signingKey: keys.signing, boxKey: keys.box, name: request.name,
                       nonce: nonce)
    }

    /// True when `nonce` opens the request's commitment (compared in constant time).
    package static func opens(account: AccountID, request: LinkRequestCreate, nonce: [UInt8]) -> Bool {
        guard let expected = try? Hex.decode(request.commitment), expected.count == 32,
              let actual = compute(account: account, request: request, nonce: nonce) else { return false }
        return constantTimeEquals(actual, expected)
    }
}

/// The short authentication string both devices show once both random values are
/// known: six digits, uniform over 000000-999999, which the person types on the
/// approver. Neither side's value is known to the other when it commits, so a server
/// in the middle cannot steer it (docs/formats/device-link.md). It names the approving
/// device too, as does the confirmation code drawn from the same transcript, which the
/// approver shows once it approved and the person types on the new device: equal codes
/// tell the new device that the device the person approved on is the one it was told
/// of, and it joins only a chain where that device added it (a server cannot pass the
/// approval of one device off as another's, a revoked one's on a fork say).
package enum LinkSAS {
    /// 4 294 000 000: the largest multiple of 10^6 below 2^32. A 32-bit chunk below
    /// it, reduced mod 10^6, is exactly uniform.
    static let bound: UInt32 = 4_294_000_000

    package static func compute(account: AccountID, code: String, approver: DeviceID, request: LinkRequestCreate, deviceNonce: [UInt8],
                               approverNonce: [UInt8]) -> String? {
        draw(sasDomain, account: account, code: code, approver: approver, request: request, deviceNonce: deviceNonce,
             approverNonce: approverNonce)
    }

    /// The SAS and the confirmation code of one transcript, as both devices use them.
    package static func codes(account: AccountID, code: String, approver: DeviceID, request: LinkRequestCreate, deviceNonce: [UInt8],
                              approverNonce: [UInt8]) -> (sas: String, confirmation: String)? {
        guard let sas = compute(account: account, code: code, approver: approver, request: request, deviceNonce: deviceNonce,
                                approverNonce: approverNonce),
              let confirmation = confirmation(account: account, code: code, approver: approver, request: request,
                                              deviceNonce: deviceNonce, approverNonce: approverNonce)
        else { return nil }
        return (sas, confirmation)
    }

    /// The confirmation code (version 4): six digits over the same transcript as the
    /// SAS under another domain, which the approver shows once it has approved and the
    /// person types on the new device. The new device joins only when they equal its
    /// own: the device the person approved on is then the one the new device was told
    /// adds it (a server that named it another device, a revoked one on a fork, gets
    /// digits nobody is shown).
    package static func confirmation(account: AccountID, code: String, approver: DeviceID, request: LinkRequestCreate,
                                     deviceNonce: [UInt8], approverNonce: [UInt8]) -> String? {
        draw(confirmationDomain, account: account, code: code, approver: approver, request: request,
             deviceNonce: deviceNonce, approverNonce: approverNonce)
    }

    static let sasDomain = "keyvault/v3/link-sas"
    static let confirmationDomain = "keyvault/v4/link-confirm"

    /// Six digits over the transcript under `domain`.
    private static func draw(_ domain: String, account: AccountID, code: String, approver: DeviceID, request: LinkRequestCreate,
                               deviceNonce: [UInt8], approverNonce: [UInt8]) -> String? {
        guard deviceNonce.count == LinkCommitment.nonceByteCount, approverNonce.count == LinkCommitment.nonceByteCount,
              let before = digestInput(domain, account: account, code: code, approver: approver, request: request)
        else { return nil }
        return sixDigits(SHA256.hash(before + deviceNonce + approverNonce))
    }

    /// The digest's input before the two nonces, or nil for a malformed request (its
    /// own function for a test that searches nonces as a dishonest server would).
    static func digestInput(_ domain: String = sasDomain, account: AccountID, code: String, approver: DeviceID,
                            request: LinkRequestCreate) -> [UInt8]? {
        guard let keys = LinkKeys(request), let commitment = try? Hex.decode(request.commitment), commitment.count == 32 else { return nil }
        var w = CanonicalWriter(domain: domain)
        w.short(account.rawValue)
        w.short(code)
        w.short(approver.rawValue)
        w.short(request.device.rawValue)
        w.raw(keys.signing)
        w.raw(keys.box)
        w.long(Array(request.name.utf8))
        w.raw(commitment)
        return w.bytes
    }

    /// Six digits "ddd ddd" drawn from a 32-byte digest, exactly uniform: the first
    /// 32-bit big-endian chunk below `bound`, mod 10^6 (all eight above it has
    /// probability 2^-97; then the last is used). The contact safety code
    /// (Sharing.swift) draws its digits the same way.
    static func sixDigits(_ digest: [UInt8]) -> String {
        var number: UInt32 = 0
        for chunk in 0..<8 {
            number = digest[(chunk * 4)..<(chunk * 4 + 4)].reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            if number < bound { break }
        }
        let digits = String(number % 1_000_000)
        let padded = String(repeating: "0", count: 6 - digits.count) + digits
        return padded.prefix(3) + " " + padded.suffix(3)
    }

    /// The six digits of a typed SAS ("123 456", "123-456", "123456"), or nil.
    package static func digits(_ typed: String) -> String? {
        let digits = typed.filter { !$0.isWhitespace && $0 != "-" }
        guard digits.count == 6, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return digits
    }
}

/// The code a new device shows and the approver types: 10 characters of Crockford's
/// base32 (0-9 and A-Z without I, L, O, U), 50 bits, chosen by the server.
package enum LinkCode {
    static let alphabet = Array("0123456789ABCDEFGHJKMNPQRSTVWXYZ".unicodeScalars)

    package static func isValid(_ code: String) -> Bool {
        code.unicodeScalars.count == 10 && code.unicodeScalars.allSatisfy { alphabet.contains($0) }
    }

    package static func random() -> String {
        var scalars = String.UnicodeScalarView()
        for _ in 0..<10 { scalars.append(alphabet[Int(SystemRandom.uniform(below: 32))]) }
        return String(scalars)
    }
}

/// The raw keys of a link request, when its fields are well formed: hex keys of the
/// right length, the device id derived from the signing key, a 1-100 character name
/// without control characters.
struct LinkKeys {
    let signing: [UInt8]
    let box: [UInt8]

    init?(_ request: LinkRequestCreate) {
        guard let signing = try? Hex.decode(request.signingKey), signing.count == 32,
              let box = try? Hex.decode(request.boxKey), box.count == 32,
              let key = try? Ed25519.PublicKey(rawRepresentation: signing), deviceID(for: key) == request.device,
              ChainLink.isStorableDeviceName(request.name), request.name.utf8.count <= 400
        else { return nil }
        self.signing = signing
        self.box = box
    }
}

extension LinkRequestCreate {
    /// True when every field is well formed (keys, derived id, name, 32-byte hex commitment).
    package var isWellFormed: Bool {
        LinkKeys(self) != nil && commitment.utf8.count == 64 && (try? Hex.decode(commitment))?.count == 32
    }
}
