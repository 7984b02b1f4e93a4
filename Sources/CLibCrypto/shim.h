#ifndef KEYVAULT_CLIBCRYPTO_SHIM_H
#define KEYVAULT_CLIBCRYPTO_SHIM_H
// OpenSSL 3 libcrypto, seen by KeyVaultCrypto alone (internal import).
//
// OSSL_PARAM arrays keep pointers to what they describe and the EVP_CIPHER_CTX
// control calls are untyped; both are awkward and easy to get wrong from Swift,
// so they are built here. Every function returns 1 on success and 0 on any
// failure; the Swift side checks each result exactly once.
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/params.h>
#include <openssl/sha.h>

/// HKDF-SHA256 (RFC 5869). mode: 0 extract-and-expand, 1 extract only, 2 expand only
/// (then `ikm` is the PRK). An empty salt means HashLen zero bytes, as in the RFC.
static inline int kv_hkdf_sha256(uint8_t *out, size_t out_len,
                                 const uint8_t *ikm, size_t ikm_len,
                                 const uint8_t *salt, size_t salt_len,
                                 const uint8_t *info, size_t info_len,
                                 int mode) {
    EVP_KDF *kdf = EVP_KDF_fetch(NULL, OSSL_KDF_NAME_HKDF, NULL);
    if (kdf == NULL) return 0;
    EVP_KDF_CTX *ctx = EVP_KDF_CTX_new(kdf);
    EVP_KDF_free(kdf);
    if (ctx == NULL) return 0;
    static const uint8_t empty[1] = {0};
    OSSL_PARAM params[6];
    OSSL_PARAM *p = params;
    *p++ = OSSL_PARAM_construct_utf8_string(OSSL_KDF_PARAM_DIGEST, (char *)"SHA256", 0);
    *p++ = OSSL_PARAM_construct_int(OSSL_KDF_PARAM_MODE, &mode);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_KEY, (void *)(ikm_len ? ikm : empty), ikm_len);
    if (salt_len > 0)
        *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_SALT, (void *)salt, salt_len);
    *p++ = OSSL_PARAM_construct_octet_string(OSSL_KDF_PARAM_INFO, (void *)(info_len ? info : empty), info_len);
    *p = OSSL_PARAM_construct_end();
    int ok = EVP_KDF_derive(ctx, out, out_len, params) == 1;
    EVP_KDF_CTX_free(ctx);
    return ok;
}

/// The HMAC implementation, fetched once by the caller and kept (fetching it per
/// MAC costs more than the MAC of a short message).
static inline EVP_MAC *kv_hmac_fetch(void) { return EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL); }

/// A streaming HMAC-SHA256 context from a prefetched `mac`, or NULL.
static inline EVP_MAC_CTX *kv_hmac_sha256_new(EVP_MAC *mac, const uint8_t *key, size_t key_len) {
    EVP_MAC_CTX *ctx = EVP_MAC_CTX_new(mac);
    if (ctx == NULL) return NULL;
    static const uint8_t empty[1] = {0};
    OSSL_PARAM params[2];
    params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, (char *)"SHA256", 0);
    params[1] = OSSL_PARAM_construct_end();
    // A NULL key would mean "keep the previous key"; pass a real (empty) buffer instead.
    if (EVP_MAC_init(ctx, key_len ? key : empty, key_len, params) != 1) {
        EVP_MAC_CTX_free(ctx);
        return NULL;
    }
    return ctx;
}

static inline int kv_hmac_update(EVP_MAC_CTX *ctx, const uint8_t *data, size_t len) {
    if (len == 0) return 1;
    return EVP_MAC_update(ctx, data, len) == 1;
}

/// Writes the 32-byte tag. The context cannot be updated afterwards.
static inline int kv_hmac_final(EVP_MAC_CTX *ctx, uint8_t out[32]) {
    size_t out_len = 0;
    return EVP_MAC_final(ctx, out, &out_len, 32) == 1 && out_len == 32;
}

static inline void kv_hmac_free(EVP_MAC_CTX *ctx) { EVP_MAC_CTX_free(ctx); }

/// PBKDF2-HMAC-SHA512.
static inline int kv_pbkdf2_sha512(uint8_t *out, size_t out_len,
                                   const uint8_t *password, size_t password_len,
                                   const uint8_t *salt, size_t salt_len,
                                   uint32_t rounds) {
    if (password_len > INT32_MAX || salt_len > INT32_MAX || out_len > INT32_MAX || rounds == 0 || rounds > INT32_MAX)
        return 0;
    static const uint8_t empty[1] = {0};
    return PKCS5_PBKDF2_HMAC((const char *)(password_len ? password : empty), (int)password_len,
                             salt_len ? salt : empty, (int)salt_len, (int)rounds,
                             EVP_sha512(), (int)out_len, out) == 1;
}

/// The SHA-256 implementation, fetched once by the caller and kept: OpenSSL 3's
/// one-shot SHA256() fetches it on every call, which triples the cost of a short hash.
static inline EVP_MD *kv_sha256_fetch(void) { return EVP_MD_fetch(NULL, "SHA256", NULL); }

/// SHA-256 of `data` with a prefetched `md`. Each thread keeps one digest context
/// (a few hundred bytes, never freed) instead of allocating one per call.
static inline int kv_sha256(const EVP_MD *md, uint8_t out[32], const uint8_t *data, size_t len) {
    static _Thread_local EVP_MD_CTX *ctx = NULL;
    static const uint8_t empty[1] = {0};
    if (ctx == NULL && (ctx = EVP_MD_CTX_new()) == NULL) return 0;
    unsigned int out_len = 0;
    return EVP_DigestInit_ex2(ctx, md, NULL) == 1
        && EVP_DigestUpdate(ctx, len ? data : empty, len) == 1
        && EVP_DigestFinal_ex(ctx, out, &out_len) == 1 && out_len == 32;
}

/// AES-256-GCM with a 12-byte nonce and a 16-byte tag. `ct` receives `pt_len` bytes.
static inline int kv_aes256gcm_seal(uint8_t *ct, uint8_t tag[16],
                                    const uint8_t key[32], const uint8_t nonce[12],
                                    const uint8_t *pt, size_t pt_len,
                                    const uint8_t *aad, size_t aad_len) {
    if (pt_len > INT32_MAX || aad_len > INT32_MAX) return 0;
    uint8_t dummy[16];
    if (ct == NULL) ct = dummy;  // an empty plaintext still needs somewhere to "write" to
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return 0;
    int ok = 0, len = 0;
    if (EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce) != 1) goto done;
    if (aad_len > 0 && EVP_EncryptUpdate(ctx, NULL, &len, aad, (int)aad_len) != 1) goto done;
    if (pt_len > 0 && EVP_EncryptUpdate(ctx, ct, &len, pt, (int)pt_len) != 1) goto done;
    if (EVP_EncryptFinal_ex(ctx, ct + (pt_len > 0 ? (size_t)len : 0), &len) != 1) goto done;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag) != 1) goto done;
    ok = 1;
done:
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

/// Returns 1 only when the tag verifies; `pt` receives `ct_len` bytes, which the
/// caller must discard on failure.
static inline int kv_aes256gcm_open(uint8_t *pt,
                                    const uint8_t key[32], const uint8_t nonce[12],
                                    const uint8_t *ct, size_t ct_len,
                                    const uint8_t tag[16],
                                    const uint8_t *aad, size_t aad_len) {
    if (ct_len > INT32_MAX || aad_len > INT32_MAX) return 0;
    uint8_t dummy[16];
    if (pt == NULL) pt = dummy;
    EVP_CIPHER_CTX *ctx = EVP_CIPHER_CTX_new();
    if (ctx == NULL) return 0;
    int ok = 0, len = 0;
    uint8_t tag_copy[16];
    memcpy(tag_copy, tag, 16);
    if (EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), NULL, key, nonce) != 1) goto done;
    if (aad_len > 0 && EVP_DecryptUpdate(ctx, NULL, &len, aad, (int)aad_len) != 1) goto done;
    if (ct_len > 0 && EVP_DecryptUpdate(ctx, pt, &len, ct, (int)ct_len) != 1) goto done;
    if (EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, tag_copy) != 1) goto done;
    if (EVP_DecryptFinal_ex(ctx, pt + (ct_len > 0 ? (size_t)len : 0), &len) != 1) goto done;
    ok = 1;
done:
    EVP_CIPHER_CTX_free(ctx);
    return ok;
}

#endif
