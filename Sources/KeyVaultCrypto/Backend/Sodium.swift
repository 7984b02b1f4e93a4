internal import CSodium

// Every libsodium call of the package lives in this file. Return codes are checked
// here, once, and turned into `CryptoError`; nothing above this folder sees C.

/// libsodium must be initialised once before use; `sodium_init` is idempotent and
/// thread-safe, and a global `let` runs its initialiser exactly once.
private let sodiumStatus: Int32 = sodium_init()

@inline(__always)
func ensureSodium() {
    // 0 = initialised now, 1 = already initialised; -1 means the library cannot be
    // used at all (no entropy source), and continuing would be unsafe.
    precondition(sodiumStatus >= 0, "libsodium failed to initialise")
}

enum Sodium {
    // MARK: Memory

    static func secureAllocate(_ count: Int) -> UnsafeMutableRawPointer? {
        ensureSodium()
        return sodium_malloc(max(count, 1))
    }

    static func secureFree(_ pointer: UnsafeMutableRawPointer) {
        sodium_free(pointer)  // wipes before unmapping
    }

    static func wipe(_ buffer: UnsafeMutableRawBufferPointer) {
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        sodium_memzero(base, buffer.count)
    }

    static func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        guard a.count > 0 else { return true }
        return sodium_memcmp(a.baseAddress!, b.baseAddress!, a.count) == 0
    }

    // MARK: Randomness

    static func randomFill(_ buffer: UnsafeMutableRawBufferPointer) {
        ensureSodium()
        guard let base = buffer.baseAddress, buffer.count > 0 else { return }
        randombytes_buf(base, buffer.count)
    }

    static func randomUniform(_ upperBound: UInt32) -> UInt32 {
        ensureSodium()
        return randombytes_uniform(upperBound)
    }

    // MARK: BLAKE2b

    /// BLAKE2b-512. Not part of the public API: it checks the RFC 9106 vector's
    /// pre-hash, the one piece of that vector libsodium's Argon2id API can reach.
    static func blake2b512(_ input: UnsafeRawBufferPointer) -> [UInt8] {
        ensureSodium()
        var out = [UInt8](repeating: 0, count: 64)
        let rc = out.withUnsafeMutableBytes { out in
            crypto_generichash(out.baseAddress!.assumingMemoryBound(to: UInt8.self), 64,
                               input.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(input.count), nil, 0)
        }
        precondition(rc == 0, "BLAKE2b failed")
        return out
    }

    // MARK: Argon2id

    static let argon2SaltBytes = Int(crypto_pwhash_SALTBYTES)
    static let argon2MinOutput = Int(crypto_pwhash_BYTES_MIN)

    static func argon2id(output: UnsafeMutableRawBufferPointer, password: UnsafeRawBufferPointer,
                         salt: UnsafeRawBufferPointer, opsLimit: UInt64, memLimitBytes: Int) throws {
        ensureSodium()
        // An empty password still needs a valid pointer.
        let rc = withUnsafeBytes(of: UInt8(0)) { zero in
            crypto_pwhash(
                output.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(output.count),
                (password.baseAddress ?? zero.baseAddress!).assumingMemoryBound(to: CChar.self), UInt64(password.count),
                salt.baseAddress!.assumingMemoryBound(to: UInt8.self),
                opsLimit, memLimitBytes, crypto_pwhash_ALG_ARGON2ID13)
        }
        // The only documented failure is running out of memory for the requested cost.
        guard rc == 0 else {
            throw CryptoError(.backendFailure, "Argon2id could not run (out of memory for \(memLimitBytes / 1024 / 1024) MiB?)")
        }
    }

    // MARK: XChaCha20-Poly1305 (IETF)

    static let xchachaNonceBytes = Int(crypto_aead_xchacha20poly1305_ietf_NPUBBYTES)
    static let xchachaKeyBytes = Int(crypto_aead_xchacha20poly1305_ietf_KEYBYTES)
    static let xchachaTagBytes = Int(crypto_aead_xchacha20poly1305_ietf_ABYTES)

    static func xchachaSeal(output: UnsafeMutableRawBufferPointer, plaintext: UnsafeRawBufferPointer,
                            aad: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) throws {
        precondition(output.count == plaintext.count + xchachaTagBytes)
        var written: UInt64 = 0
        let rc = crypto_aead_xchacha20poly1305_ietf_encrypt(
            output.baseAddress!.assumingMemoryBound(to: UInt8.self), &written,
            plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(plaintext.count),
            aad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(aad.count),
            nil, nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard rc == 0, written == UInt64(output.count) else {
            throw CryptoError(.backendFailure, "XChaCha20-Poly1305 encryption failed")
        }
    }

    static func xchachaOpen(output: UnsafeMutableRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
                            aad: UnsafeRawBufferPointer, nonce: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) throws {
        precondition(output.count + xchachaTagBytes == ciphertext.count)
        var written: UInt64 = 0
        let rc = crypto_aead_xchacha20poly1305_ietf_decrypt(
            output.baseAddress?.assumingMemoryBound(to: UInt8.self), &written, nil,
            ciphertext.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(ciphertext.count),
            aad.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(aad.count),
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard rc == 0 else { throw CryptoError.authenticationFailure }
    }

    // MARK: Ed25519

    static let ed25519SeedBytes = Int(crypto_sign_SEEDBYTES)
    static let ed25519PublicKeyBytes = Int(crypto_sign_PUBLICKEYBYTES)
    static let ed25519SecretKeyBytes = Int(crypto_sign_SECRETKEYBYTES)
    static let ed25519SignatureBytes = Int(crypto_sign_BYTES)

    static func ed25519KeyPair(seed: UnsafeRawBufferPointer, publicKey: UnsafeMutableRawBufferPointer,
                               secretKey: UnsafeMutableRawBufferPointer) throws {
        ensureSodium()
        let rc = crypto_sign_seed_keypair(
            publicKey.baseAddress!.assumingMemoryBound(to: UInt8.self),
            secretKey.baseAddress!.assumingMemoryBound(to: UInt8.self),
            seed.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard rc == 0 else { throw CryptoError(.backendFailure, "Ed25519 key generation failed") }
    }

    static func ed25519Sign(signature: UnsafeMutableRawBufferPointer, message: UnsafeRawBufferPointer,
                            secretKey: UnsafeRawBufferPointer) throws {
        let rc = crypto_sign_detached(
            signature.baseAddress!.assumingMemoryBound(to: UInt8.self), nil,
            message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count),
            secretKey.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard rc == 0 else { throw CryptoError(.backendFailure, "Ed25519 signing failed") }
    }

    static func ed25519Verify(signature: UnsafeRawBufferPointer, message: UnsafeRawBufferPointer,
                              publicKey: UnsafeRawBufferPointer) -> Bool {
        ensureSodium()
        guard signature.count == ed25519SignatureBytes, publicKey.count == ed25519PublicKeyBytes else { return false }
        return crypto_sign_verify_detached(
            signature.baseAddress!.assumingMemoryBound(to: UInt8.self),
            message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count),
            publicKey.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 0
    }

    // MARK: X25519 and sealed boxes

    static let x25519Bytes = Int(crypto_scalarmult_BYTES)
    static let sealedBoxOverhead = Int(crypto_box_sealbytes())  // the macro is an expression Swift cannot import

    static func x25519PublicKey(secret: UnsafeRawBufferPointer, publicKey: UnsafeMutableRawBufferPointer) throws {
        ensureSodium()
        let rc = crypto_scalarmult_base(
            publicKey.baseAddress!.assumingMemoryBound(to: UInt8.self),
            secret.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard rc == 0 else { throw CryptoError(.backendFailure, "X25519 public key derivation failed") }
    }

    static func x25519(output: UnsafeMutableRawBufferPointer, secret: UnsafeRawBufferPointer,
                       publicKey: UnsafeRawBufferPointer) throws {
        ensureSodium()
        let rc = crypto_scalarmult(
            output.baseAddress!.assumingMemoryBound(to: UInt8.self),
            secret.baseAddress!.assumingMemoryBound(to: UInt8.self),
            publicKey.baseAddress!.assumingMemoryBound(to: UInt8.self))
        // libsodium refuses a result of all zeros (a low-order public key).
        guard rc == 0 else { throw CryptoError(.invalidKey, "the X25519 public key is of low order") }
    }

    static func sealBox(output: UnsafeMutableRawBufferPointer, message: UnsafeRawBufferPointer,
                        recipient: UnsafeRawBufferPointer) throws {
        ensureSodium()
        precondition(output.count == message.count + sealedBoxOverhead)
        let rc = crypto_box_seal(
            output.baseAddress!.assumingMemoryBound(to: UInt8.self),
            message.baseAddress?.assumingMemoryBound(to: UInt8.self), UInt64(message.count),
            recipient.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard rc == 0 else { throw CryptoError(.invalidKey, "could not seal to that X25519 public key") }
    }

    static func openBox(output: UnsafeMutableRawBufferPointer, box: UnsafeRawBufferPointer,
                        publicKey: UnsafeRawBufferPointer, secretKey: UnsafeRawBufferPointer) throws {
        ensureSodium()
        precondition(output.count + sealedBoxOverhead == box.count)
        let rc = crypto_box_seal_open(
            output.baseAddress!.assumingMemoryBound(to: UInt8.self),  // SecureBytes always has an address
            box.baseAddress!.assumingMemoryBound(to: UInt8.self), UInt64(box.count),
            publicKey.baseAddress!.assumingMemoryBound(to: UInt8.self),
            secretKey.baseAddress!.assumingMemoryBound(to: UInt8.self))
        guard rc == 0 else { throw CryptoError.authenticationFailure }
    }
}
