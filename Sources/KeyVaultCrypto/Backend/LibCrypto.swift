internal import CLibCrypto

// Every OpenSSL call of the package lives here (through the `static inline`
// helpers of shim.h). Each helper returns 1 or 0; the result is checked once.

/// Fetched once per process (a global `let` initialises exactly once, thread-safely)
/// and never freed; the pointer is immutable, hence safe to share.
nonisolated(unsafe) private let sha256Implementation: OpaquePointer = {
    guard let md = kv_sha256_fetch() else { fatalError("OpenSSL has no SHA-256 implementation") }
    return md
}()

nonisolated(unsafe) private let hmacImplementation: OpaquePointer = {
    guard let mac = kv_hmac_fetch() else { fatalError("OpenSSL has no HMAC implementation") }
    return mac
}()

enum LibCrypto {
    static func sha256(_ data: UnsafeRawBufferPointer, into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count == 32)
        let ok = kv_sha256(sha256Implementation, out.baseAddress!.assumingMemoryBound(to: UInt8.self),
                           data.baseAddress?.assumingMemoryBound(to: UInt8.self), data.count)
        // SHA-256 of in-memory bytes has no failure mode short of a broken library.
        precondition(ok == 1, "OpenSSL SHA-256 failed")
    }

    enum HKDFMode: Int32 { case extractAndExpand = 0, extractOnly = 1, expandOnly = 2 }

    static func hkdf(mode: HKDFMode, output: UnsafeMutableRawBufferPointer, ikm: UnsafeRawBufferPointer,
                     salt: UnsafeRawBufferPointer, info: UnsafeRawBufferPointer) throws {
        let ok = kv_hkdf_sha256(
            output.baseAddress!.assumingMemoryBound(to: UInt8.self), output.count,
            ikm.baseAddress?.assumingMemoryBound(to: UInt8.self), ikm.count,
            salt.baseAddress?.assumingMemoryBound(to: UInt8.self), salt.count,
            info.baseAddress?.assumingMemoryBound(to: UInt8.self), info.count,
            mode.rawValue)
        guard ok == 1 else { throw CryptoError(.backendFailure, "HKDF-SHA256 failed (output length \(output.count))") }
    }

    static func pbkdf2SHA512(output: UnsafeMutableRawBufferPointer, password: UnsafeRawBufferPointer,
                             salt: UnsafeRawBufferPointer, rounds: UInt32) throws {
        let ok = kv_pbkdf2_sha512(
            output.baseAddress!.assumingMemoryBound(to: UInt8.self), output.count,
            password.baseAddress?.assumingMemoryBound(to: UInt8.self), password.count,
            salt.baseAddress?.assumingMemoryBound(to: UInt8.self), salt.count, rounds)
        guard ok == 1 else { throw CryptoError(.backendFailure, "PBKDF2-HMAC-SHA512 failed") }
    }

    /// Owns an OpenSSL HMAC-SHA256 context.
    final class HMACContext {
        private let context: OpaquePointer

        init(key: UnsafeRawBufferPointer) throws {
            guard let ctx = kv_hmac_sha256_new(hmacImplementation, key.baseAddress?.assumingMemoryBound(to: UInt8.self), key.count) else {
                throw CryptoError(.backendFailure, "HMAC-SHA256 could not be initialised")
            }
            context = ctx
        }

        deinit { kv_hmac_free(context) }  // OpenSSL clears the key schedule on free

        func update(_ data: UnsafeRawBufferPointer) throws {
            guard kv_hmac_update(context, data.baseAddress?.assumingMemoryBound(to: UInt8.self), data.count) == 1 else {
                throw CryptoError(.backendFailure, "HMAC-SHA256 update failed")
            }
        }

        func finalize(into out: UnsafeMutableRawBufferPointer) throws {
            precondition(out.count == 32)
            guard kv_hmac_final(context, out.baseAddress!.assumingMemoryBound(to: UInt8.self)) == 1 else {
                throw CryptoError(.backendFailure, "HMAC-SHA256 finalisation failed")
            }
        }
    }

    static func aes256gcmSeal(ciphertext: UnsafeMutableRawBufferPointer, tag: UnsafeMutableRawBufferPointer,
                              plaintext: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
                              nonce: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) throws {
        precondition(ciphertext.count == plaintext.count && tag.count == 16 && nonce.count == 12 && key.count == 32)
        let ok = kv_aes256gcm_seal(
            ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self),
            tag.baseAddress!.assumingMemoryBound(to: UInt8.self),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self),
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self), plaintext.count,
            aad.baseAddress?.assumingMemoryBound(to: UInt8.self), aad.count)
        guard ok == 1 else { throw CryptoError(.backendFailure, "AES-256-GCM encryption failed") }
    }

    static func aes256gcmOpen(plaintext: UnsafeMutableRawBufferPointer, ciphertext: UnsafeRawBufferPointer,
                              tag: UnsafeRawBufferPointer, aad: UnsafeRawBufferPointer,
                              nonce: UnsafeRawBufferPointer, key: UnsafeRawBufferPointer) throws {
        precondition(ciphertext.count == plaintext.count && tag.count == 16 && nonce.count == 12 && key.count == 32)
        let ok = kv_aes256gcm_open(
            plaintext.baseAddress?.assumingMemoryBound(to: UInt8.self),
            key.baseAddress!.assumingMemoryBound(to: UInt8.self),
            nonce.baseAddress!.assumingMemoryBound(to: UInt8.self),
            ciphertext.baseAddress?.assumingMemoryBound(to: UInt8.self), ciphertext.count,
            tag.baseAddress!.assumingMemoryBound(to: UInt8.self),
            aad.baseAddress?.assumingMemoryBound(to: UInt8.self), aad.count)
        guard ok == 1 else { throw CryptoError.authenticationFailure }
    }
}
