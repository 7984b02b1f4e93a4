import KeyVaultCrypto
import KeyVaultModel

/// Signed requests (docs/formats/request-signature.md): every request after
/// enrollment carries these headers, and the server checks them before anything else.
package enum RequestSignature {
    package static let deviceHeader = "KeyVault-Device"
    package static let timestampHeader = "KeyVault-Timestamp"
    package static let nonceHeader = "KeyVault-Nonce"
    package static let signatureHeader = "KeyVault-Signature"
    /// Accepted clock difference, either way.
    package static let defaultWindowSeconds: Int64 = 300

    /// A nonce is 16 to 64 lowercase hex digits.
    package static func isWellFormedNonce(_ nonce: String) -> Bool {
        (16...64).contains(nonce.utf8.count) && nonce.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    /// The bytes a device signs for one request.
    package static func signedBytes(method: String, path: String, query: String, bodyHash: [UInt8],
                                   timestamp: Int64, nonce: String, device: DeviceID) -> [UInt8] {
        requestBytes(domain: "keyvault/v1/request", method: method, path: path, query: query, bodyHash: bodyHash,
                     timestamp: timestamp, nonce: nonce, signer: device.rawValue)
    }

    /// The fields both request formats cover (docs/formats/request-signature.md); they differ in
    /// domain and in who is named last (the device, or the session).
    static func requestBytes(domain: String, method: String, path: String, query: String, bodyHash: [UInt8],
                             timestamp: Int64, nonce: String, signer: String) -> [UInt8] {
        var w = CanonicalWriter(domain: domain)
        w.short(method.uppercased())
        w.long(Array(path.utf8))
        w.long(Array(query.utf8))
        w.raw(bodyHash)
        w.u64(UInt64(bitPattern: timestamp))
        w.short(nonce)
        w.short(signer)
        return w.bytes
    }

    /// The four headers for a request, signed by `key` (whose device id is `device`).
    package static func headers(method: String, path: String, query: String, body: [UInt8], device: DeviceID,
                               key: Ed25519.PrivateKey, timestamp: Int64,
                               nonce: String = Hex.encode(SystemRandom.bytes(count: 16))) -> [(String, String)] {
        let bytes = signedBytes(method: method, path: path, query: query, bodyHash: SHA256.hash(body),
                                timestamp: timestamp, nonce: nonce, device: device)
        return [
            (deviceHeader, device.rawValue),
            (timestampHeader, String(timestamp)),
            (nonceHeader, nonce),
            (signatureHeader, base64Encode(key.signature(for: bytes))),
        ]
    }

    /// The parsed headers of an incoming request.
    package struct Claim: Sendable {
        package let device: DeviceID
        package let timestamp: Int64
        package let nonce: String
        package let signature: [UInt8]

        /// - Throws: `unsigned_request` when a header is missing, `malformed_signature` when one is ill-formed.
        package init(device: String?, timestamp: String?, nonce: String?, signature: String?) throws {
            guard let device, let timestamp, let nonce, let signature else {
                throw ProtocolError(.unsignedRequest, "this request needs the KeyVault-Device, -Timestamp, -Nonce and -Signature headers")
            }
            guard let id = DeviceID(rawValue: device) else {
                throw ProtocolError(.malformedSignature, "KeyVault-Device is 32 lowercase hex digits")
            }
            guard let time = Int64(timestamp) else {
                throw ProtocolError(.malformedSignature, "KeyVault-Timestamp is Unix seconds")
            }
            guard RequestSignature.isWellFormedNonce(nonce) else {
                throw ProtocolError(.malformedSignature, "KeyVault-Nonce is 16 to 64 lowercase hex digits")
            }
            guard let bytes = base64Decode(signature), bytes.count == 64 else {
                throw ProtocolError(.malformedSignature, "KeyVault-Signature is a base64 64-byte Ed25519 signature")
            }
            self.device = id
            self.timestamp = time
            self.nonce = nonce
            self.signature = bytes
        }

        /// Whether the signature covers this request under `key`.
        package func isValid(method: String, path: String, query: String, bodyHash: [UInt8], key: Ed25519.PublicKey) -> Bool {
            key.isValidSignature(signature, for: signedBytes(method: method, path: path, query: query, bodyHash: bodyHash,
                                                             timestamp: timestamp, nonce: nonce, device: device))
        }
    }
}

/// The recovery proof (docs/formats/request-signature.md, "Recovery proof"): what
/// the recovery auth key signs to answer a single-use challenge.
package enum RecoveryProofFormat {
    package static func signedBytes(account: AccountID, challenge: String) -> [UInt8] {
        Array("keyvault/v1/recovery-proof".utf8) + [0] + Array(account.rawValue.utf8) + [0] + Array(challenge.utf8)
    }
}

/// Session-authenticated requests (docs/formats/request-signature.md, "Sessions"):
/// after one Ed25519-signed `POST …/sessions`, a device MACs its requests with the
/// session key it was sent (sealed to its box key). Verifying an HMAC costs about a
/// microsecond instead of an Ed25519 verification's fifty.
package enum RequestMAC {
    package static let sessionHeader = "KeyVault-Session"
    package static let macHeader = "KeyVault-MAC"

    package static func macBytes(method: String, path: String, query: String, bodyHash: [UInt8],
                                timestamp: Int64, nonce: String, session: String) -> [UInt8] {
        RequestSignature.requestBytes(domain: "keyvault/v1/request-mac", method: method, path: path, query: query,
                                      bodyHash: bodyHash, timestamp: timestamp, nonce: nonce, signer: session)
    }

    /// The four headers of a session request.
    package static func headers(method: String, path: String, query: String, body: [UInt8], session: String,
                               key: SymmetricKey, timestamp: Int64,
                               nonce: String = Hex.encode(SystemRandom.bytes(count: 16))) throws -> [(String, String)] {
        let bytes = macBytes(method: method, path: path, query: query, bodyHash: SHA256.hash(body),
                             timestamp: timestamp, nonce: nonce, session: session)
        return [
            (sessionHeader, session),
            (RequestSignature.timestampHeader, String(timestamp)),
            (RequestSignature.nonceHeader, nonce),
            (macHeader, base64Encode(try HMACSHA256.authenticationCode(for: bytes, using: key))),
        ]
    }
}

extension RequestMAC {
    /// The headers a session request makes its claim with, checked for form only
    /// (the session and its MAC are the server's to judge).
    package struct Claim: Sendable {
        package let session: String
        package let timestamp: Int64
        package let nonce: String
        package let mac: [UInt8]

        /// - Throws: `malformed_signature` when a header is missing or ill-formed.
        package init(session: String, timestamp: String?, nonce: String?, mac: String?) throws {
            guard let timestamp, let time = Int64(timestamp), let nonce, RequestSignature.isWellFormedNonce(nonce),
                  let bytes = mac.flatMap(base64Decode), bytes.count == 32
            else {
                throw ProtocolError(.malformedSignature, "a session request needs KeyVault-Timestamp, KeyVault-Nonce and a base64 32-byte KeyVault-MAC")
            }
            self.session = session
            self.timestamp = time
            self.nonce = nonce
            self.mac = bytes
        }

        /// Whether the MAC is right for this request under the session's key.
        package func isValid(method: String, path: String, query: String, bodyHash: [UInt8], key: SymmetricKey) throws -> Bool {
            let bytes = RequestMAC.macBytes(method: method, path: path, query: query, bodyHash: bodyHash,
                                            timestamp: timestamp, nonce: nonce, session: session)
            return try HMACSHA256.isValidAuthenticationCode(mac, for: bytes, using: key)
        }
    }
}

extension KeyVaultModel.SessionGrant {
    /// Opens the session key sealed to this device.
    package func key(using boxKey: X25519.PrivateKey) throws -> SymmetricKey {
        guard let sealed = base64Decode(key) else { throw ProtocolError(.malformedSession, "the session key is not base64") }
        return try SymmetricKey(boxKey.openSealedBox(sealed))
    }
}
