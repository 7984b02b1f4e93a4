#!/usr/bin/env python3
"""Generates KeyVault's committed test vectors with independent implementations.

Nothing here shares code with the Swift implementation: envelopes and content
addresses are built from the specs in docs/formats/ with pyca/cryptography
(HKDF, HMAC, AES-GCM) and PyNaCl (XChaCha20-Poly1305, sealed boxes); BIP39 with
trezor's python-mnemonic, the BIP's reference implementation. RFC vectors are
transcribed from the RFCs and re-checked here before they are written.

    pip install cryptography pynacl mnemonic argon2-cffi
    python3 Scripts/vectors/generate.py

CI does not run this; the JSON it writes is committed.
"""
import hashlib
import hmac
import json
import pathlib
import random
import unicodedata

import nacl.bindings as sodium
from nacl.public import PrivateKey, SealedBox
from nacl.signing import SigningKey
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from mnemonic import Mnemonic

ROOT = pathlib.Path(__file__).resolve().parents[2]
CRYPTO = ROOT / "Tests" / "KeyVaultCryptoTests" / "Vectors"
MNEMONIC = ROOT / "Tests" / "KeyVaultMnemonicTests" / "Vectors"
SERVER = ROOT / "Tests" / "KeyVaultProtocolTests" / "Vectors"
VAULT = ROOT / "Tests" / "KeyVaultVaultTests" / "Vectors"
SERVICE = ROOT / "Tests" / "KeyVaultServerTests" / "Vectors"
CLIENT = ROOT / "Tests" / "KeyVaultTests" / "Vectors"
rng = random.Random(20261121)  # deterministic, so regenerating changes nothing


def rand(n: int) -> bytes:
    return bytes(rng.getrandbits(8) for _ in range(n))


def write(path: pathlib.Path, doc: dict) -> None:
    path.write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print("wrote", path.relative_to(ROOT))


# --------------------------------------------------------------------------- RFC 8032

ED25519 = [  # RFC 8032 section 7.1: TEST 1, 2, 3 and SHA(abc)
    ("TEST 1", "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
     "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
     "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"),
    ("TEST 2", "4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
     "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
     "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"),
    ("TEST 3", "c5aa8df43f9f837bedb7442f31dcb7b166d38535076f094b85ce3a2e0b4458f7",
     "fc51cd8e6218a1a38da47ed00230f0580816ed13ba3303ac5deb911548908025", "af82",
     "6291d657deec24024827e69c3abe01a30ce548a284743a445e3680d7db5ac3ac18ff9b538d16f290ae67f760984dc6594a7c15e9716ed28dc027beceea1ec40a"),
    ("TEST SHA(abc)", "833fe62409237b9d62ec77587520911e9a759cec1d19755b7da901b96dca3d42",
     "ec172b93ad5e563bf4932c70e1245034c35467ef2efd4d64ebf819683467e2bf",
     "ddaf35a193617abacc417349ae20413112e6fa4e89a97ea20a9eeee64b55d39a2192992a274fc1a836ba3c23a3feebbd454d4423643ce80e2a9ac94fa54ca49f",
     "dc2a4459e7369633a52b1bf277839a00201009a3efbf3ecb69bea2186c26b58909351fc9ac90b3ecfdfbc7c66431e0303dca179c138ac17ad9bef1177331a704"),
]


def ed25519_vectors() -> None:
    tests = []
    for name, sk, pk, msg, sig in ED25519:
        key = SigningKey(bytes.fromhex(sk))
        assert key.verify_key.encode().hex() == pk, name
        assert key.sign(bytes.fromhex(msg)).signature.hex() == sig, name
        tests.append({"name": name, "outcome": "valid", "secretKey": sk, "publicKey": pk, "message": msg, "signature": sig})
        bad = bytearray(bytes.fromhex(sig)); bad[0] ^= 1
        tests.append({"name": name + ", signature bit 0 flipped", "outcome": "authentication_failure",
                      "secretKey": sk, "publicKey": pk, "message": msg, "signature": bad.hex()})
        tests.append({"name": name + ", message changed", "outcome": "authentication_failure",
                      "secretKey": sk, "publicKey": pk, "message": msg + "00", "signature": sig})
    write(CRYPTO / "ed25519-rfc8032.json", {
        "source": "RFC 8032 section 7.1 (TEST 1, 2, 3, SHA(abc)); failure cases derived here. Checked with PyNaCl.",
        "tests": tests})


# --------------------------------------------------------------------------- RFC 7748

def x25519_vectors() -> None:
    scalar_mult = [  # RFC 7748 section 5.2
        ("a546e36bf0527c9d3b16154b82465edd62144c0ac1fc5a18506a2244ba449ac4",
         "e6db6867583030db3594c1a424b15f7c726624ec26b3353b10a903a6d0ab1c4c",
         "c3da55379de9c6908e94ea4df28d084f32eccf03491c71f754b4075577a28552"),
        ("4b66e9d4d1b4673c5ad22691957d6af5c11b6421e0ea01d42ca4169e7918ba0d",
         "e5210f12786811d3f4b7959d0538ae2c31dbe7106fc03c3efc4cd549c715a493",
         "95cbde9476e8907d7aade45cb4b873f88b595a68799fa152e6f8f7647aac7957"),
    ]
    tests = []
    for k, u, out in scalar_mult:
        got = X25519PrivateKey.from_private_bytes(bytes.fromhex(k)).exchange(X25519PublicKey.from_public_bytes(bytes.fromhex(u)))
        assert got.hex() == out
        tests.append({"name": "section 5.2", "scalar": k, "uCoordinate": u, "output": out})
    alice = "77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a"
    alice_pub = "8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a"
    bob = "5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb"
    bob_pub = "de9edb7d7b7dc1b4d35b61c2ece435373f8343c85b78674dadfc7e146f882b4f"
    shared = "4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742"
    a = X25519PrivateKey.from_private_bytes(bytes.fromhex(alice))
    assert a.public_key().public_bytes_raw().hex() == alice_pub
    assert a.exchange(X25519PublicKey.from_public_bytes(bytes.fromhex(bob_pub))).hex() == shared
    # A sealed box made by PyNaCl (libsodium's crypto_box_seal) to Bob's key.
    box = SealedBox(PrivateKey(bytes.fromhex(bob)).public_key).encrypt(b"sealed to bob by pynacl")
    write(CRYPTO / "x25519-rfc7748.json", {
        "source": "RFC 7748 section 5.2 (scalar multiplication) and 6.1 (Diffie-Hellman); checked with pyca/cryptography. "
                  "sealedBox: made by PyNaCl's SealedBox to Bob's public key.",
        "scalarMultiplication": tests,
        "diffieHellman": {"alicePrivate": alice, "alicePublic": alice_pub, "bobPrivate": bob, "bobPublic": bob_pub, "shared": shared},
        "sealedBox": {"recipientPrivate": bob, "box": box.hex(), "plaintext": b"sealed to bob by pynacl".hex()},
    })


# --------------------------------------------------------------------------- AEADs

def aead_vectors() -> None:
    key = bytes(range(0x80, 0xa0))
    nonce = bytes(range(0x40, 0x58))
    aad = bytes.fromhex("50515253c0c1c2c3c4c5c6c7")
    pt = b"Ladies and Gentlemen of the class of '99: If I could offer you only one tip for the future, sunscreen would be it."
    expected = ("bd6d179d3e83d43b9576579493c0e939572a1700252bfaccbed2902c21396cbb731c7f1b0b4aa6440bf3a82f4eda7e39ae64c6708c54c216cb96b72e1213b452"
                "2f8c9ba40db5d945b11b69b982c1bb9e3f3fac2bc369488f76b2383565d3fff921f9664c97637da9768812f615c68b13b52e")
    tag = "c0875924c1c7987947deafd8780acf49"
    assert sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(pt, aad, nonce, key).hex() == expected + tag
    tests = [{"name": "draft-irtf-cfrg-xchacha-03 A.3.1", "algorithm": "xchacha20poly1305", "outcome": "valid",
              "key": key.hex(), "nonce": nonce.hex(), "aad": aad.hex(), "plaintext": pt.hex(), "ciphertext": expected, "tag": tag}]
    bad = bytearray(bytes.fromhex(tag)); bad[15] ^= 0x80
    tests.append(dict(tests[0], name="A.3.1, tag bit flipped", outcome="authentication_failure", tag=bad.hex()))
    tests.append(dict(tests[0], name="A.3.1, other associated data", outcome="authentication_failure", aad=aad[:-1].hex()))
    # AES-256-GCM from pyca/cryptography; `combined` is CryptoKit's nonce ‖ ciphertext ‖ tag.
    for i, (n_pt, n_aad) in enumerate([(0, 0), (16, 0), (61, 13), (1000, 32)]):
        k, n, p, a = rand(32), rand(12), rand(n_pt), rand(n_aad)
        sealed = AESGCM(k).encrypt(n, p, a)
        tests.append({"name": f"AES-256-GCM random {i + 1}", "algorithm": "aes256gcm", "outcome": "valid",
                      "key": k.hex(), "nonce": n.hex(), "aad": a.hex(), "plaintext": p.hex(),
                      "ciphertext": sealed[:-16].hex(), "tag": sealed[-16:].hex(), "combined": (n + sealed).hex()})
    last = tests[-1]
    bad = bytearray(bytes.fromhex(last["ciphertext"])); bad[7] ^= 1
    tests.append(dict(last, name="AES-256-GCM, ciphertext bit flipped", outcome="authentication_failure", ciphertext=bad.hex(), combined=None))
    write(CRYPTO / "aead.json", {
        "source": "XChaCha20-Poly1305: draft-irtf-cfrg-xchacha-03 Appendix A.3.1, checked with PyNaCl. "
                  "AES-256-GCM: generated with pyca/cryptography AESGCM.",
        "tests": tests})


# --------------------------------------------------------------------------- envelope v1

ALGORITHMS = {"xchacha20poly1305": 1, "aes256gcm": 2}


def hkdf(ikm: bytes, info: bytes, length: int) -> bytes:
    return HKDF(algorithm=hashes.SHA256(), length=length, salt=None, info=info).derive(ikm)


def key_id(key: bytes) -> bytes:
    return hkdf(key, b"keyvault/v1/key-id", 16)


def encode_context(purpose: str, fields: dict) -> bytes:
    out = bytes([len(fields) + 1])
    items = [("purpose", purpose)] + sorted(fields.items(), key=lambda kv: kv[0].encode())
    for name, value in items:
        n, v = name.encode(), value.encode()
        out += bytes([len(n)]) + n + len(v).to_bytes(2, "big") + v
    return out


def seal_envelope(alg: str, key: bytes, generation: int, purpose: str, fields: dict, nonce: bytes, pt: bytes) -> bytes:
    header = bytes([1, ALGORITHMS[alg]]) + key_id(key) + generation.to_bytes(4, "big")
    aad = b"keyvault/v1/envelope\x00" + header + encode_context(purpose, fields)
    if alg == "xchacha20poly1305":
        sealed = sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(pt, aad, nonce, key)
    else:
        sealed = AESGCM(key).encrypt(nonce, pt, aad)
    return header + nonce + sealed


def envelope_vectors() -> None:
    tests = []
    member_ctx = {"account": "acct-7f3a", "member": "emma", "member-generation": "3", "master-generation": "2"}
    cases = [
        ("member key under master key", "xchacha20poly1305", 2, "member-key", member_ctx, 32),
        ("member key under master key, AES-256-GCM", "aes256gcm", 2, "member-key", member_ctx, 32),
        ("attachment key, no fields", "xchacha20poly1305", 7, "attachment-dek", {}, 32),
        ("empty plaintext", "xchacha20poly1305", 0, "test", {"object": "x"}, 0),
        ("content, 300 bytes, unicode field", "aes256gcm", 4294967295, "attachment-content", {"object": "fiche-médicale"}, 300),
    ]
    valid = []
    for name, alg, gen, purpose, fields, size in cases:
        key, pt = rand(32), rand(size)
        nonce = rand(24 if alg == "xchacha20poly1305" else 12)
        env = seal_envelope(alg, key, gen, purpose, fields, nonce, pt)
        v = {"name": name, "outcome": "valid", "algorithm": alg, "key": key.hex(), "generation": gen,
             "purpose": purpose, "fields": fields, "nonce": nonce.hex(), "plaintext": pt.hex(), "envelope": env.hex()}
        tests.append(v)
        valid.append(v)
    base = valid[0]
    env = bytes.fromhex(base["envelope"])

    def variant(name, outcome, **changes):
        tests.append(dict(base, name=name, outcome=outcome, **changes))

    variant("opened as another member", "authentication_failure", fields=dict(member_ctx, member="noah"))
    variant("opened for another purpose", "authentication_failure", purpose="attachment-dek")
    variant("opened with an extra context field", "authentication_failure", fields=dict(member_ctx, object="1"))
    gen_changed = bytearray(env); gen_changed[21] ^= 1
    variant("generation in header changed", "authentication_failure", envelope=gen_changed.hex())
    for offset, label in [(22, "nonce"), (22 + 24 + 5, "ciphertext"), (len(env) - 1, "tag")]:
        flipped = bytearray(env); flipped[offset] ^= 0x01
        variant(f"{label} bit flipped", "authentication_failure", envelope=flipped.hex())
    wrong = bytearray(env); wrong[2] ^= 0xff
    variant("key id changed", "key_mismatch", envelope=wrong.hex())
    variant("opened with another key", "key_mismatch", key=rand(32).hex())
    variant("truncated to 40 bytes", "malformed", envelope=env[:40].hex())
    variant("truncated inside the tag", "malformed", envelope=env[:22 + 24 + 15].hex())
    variant("empty", "malformed", envelope="")
    variant("version 2", "unsupported_version", envelope=(bytes([2]) + env[1:]).hex())
    variant("version 0", "unsupported_version", envelope=(bytes([0]) + env[1:]).hex())
    variant("algorithm 9", "unsupported_algorithm", envelope=(env[:1] + bytes([9]) + env[2:]).hex())
    write(CRYPTO / "envelope-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/envelope.md with PyNaCl and pyca/cryptography.",
        "outcomes": ["valid", "authentication_failure", "key_mismatch", "malformed", "unsupported_version", "unsupported_algorithm"],
        "tests": tests})


# --------------------------------------------------------------------------- content address v1

def content_address_vectors() -> None:
    tests = []
    member_a, member_b = rand(32), rand(32)
    contents = [b"", b"abc", rand(1000), rand(1 << 20 | 17)]
    for member_name, member_key in [("a", member_a), ("b", member_b)]:
        for generation in [1, 7]:
            cak = hkdf(member_key, b"keyvault/v1/content-address", 32)
            for content in contents[:3]:
                mac = hmac.new(cak, content, hashlib.sha256).hexdigest()
                tests.append({"member": member_name, "memberKey": member_key.hex(), "generation": generation,
                              "content": content.hex(), "address": f"ca1.{generation}.{mac}"})
    big = contents[3]
    cak = hkdf(member_a, b"keyvault/v1/content-address", 32)
    write(CRYPTO / "content-address-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/content-address.md with pyca/cryptography HKDF and Python hmac.",
        "tests": tests,
        "large": {"memberKey": member_a.hex(), "generation": 3, "seed": "bytes i*31+7 mod 251 for i in 0..<n",
                  "length": len(big), "address": "ca1.3." + hmac.new(cak, bytes((i * 31 + 7) % 251 for i in range(len(big))), hashlib.sha256).hexdigest()},
        "invalid": ["", "ca1", "ca1.1", "ca2.1." + "0" * 64, "ca1.01." + "0" * 64, "ca1.-1." + "0" * 64,
                    "ca1.4294967296." + "0" * 64, "ca1.1." + "0" * 63, "ca1.1." + "A" * 64, "ca1.1." + "g" * 64,
                    "ca1..0" + "0" * 63, "ca1.1." + "0" * 64 + ".x"],
    })


# --------------------------------------------------------------------------- BIP39, all languages

def bip39_vectors() -> None:
    languages = ["english", "japanese", "korean", "spanish", "chinese_simplified", "chinese_traditional",
                 "french", "italian", "czech", "portuguese"]
    tests = []
    for language in languages:
        m = Mnemonic(language)
        entropies = [bytes(16), b"\x7f" * 16, b"\x80" * 20, b"\xff" * 32, rand(24), rand(28), rand(32), rand(32)]
        for entropy in entropies:
            phrase = m.to_mnemonic(entropy)
            assert m.check(phrase)
            tests.append({"language": language, "entropy": entropy.hex(), "mnemonic": phrase,
                          "passphrase": "TREZOR", "seed": Mnemonic.to_seed(phrase, "TREZOR").hex()})
    write(MNEMONIC / "bip39-all-languages.json", {
        "source": "Generated by Scripts/vectors/generate.py with trezor/python-mnemonic (the BIP39 reference implementation). "
                  "Japanese mnemonics are joined with U+3000, as python-mnemonic does.",
        "tests": tests})


# --------------------------------------------------------------------------- account chain v1

import base64


def short(b: bytes) -> bytes:
    return bytes([len(b)]) + b


def long_(b: bytes) -> bytes:
    return len(b).to_bytes(4, "big") + b


def link_signed_bytes(link: dict) -> bytes:
    out = b"keyvault/v1/chain-link\x00" + bytes([link["version"]]) + link["sequence"].to_bytes(8, "big")
    out += bytes.fromhex(link["previous"]) + short(link["type"].encode()) + short(link["signer"].encode())
    out += (link["time"] & (2**64 - 1)).to_bytes(8, "big") + bytes([len(link["body"])])
    for name in sorted(link["body"], key=lambda k: k.encode()):
        out += short(name.encode()) + long_(link["body"][name].encode())
    return out


def sign_link(link: dict, key: SigningKey) -> dict:
    link["signature"] = base64.b64encode(key.sign(link_signed_bytes(link)).signature).decode()
    return link


def link_hash(link: dict) -> str:
    return hashlib.sha256(link_signed_bytes(link) + base64.b64decode(link["signature"])).hexdigest()


def device_id(verify_key: bytes) -> str:
    return hashlib.sha256(b"keyvault/v1/device-id\x00" + verify_key).digest()[:16].hex()


def device_fields(sk: SigningKey, box: PrivateKey, name: str) -> dict:
    vk = sk.verify_key.encode()
    return {"device": device_id(vk), "name": name, "signingKey": vk.hex(), "boxKey": box.public_key.encode().hex()}


def chain_vectors() -> None:
    phone, tablet = SigningKey(rand(32)), SigningKey(rand(32))
    phone_box, tablet_box = PrivateKey(rand(32)), PrivateKey(rand(32))
    phone_id = device_id(phone.verify_key.encode())
    tablet_id = device_id(tablet.verify_key.encode())
    links, steps = [], []

    def make(type_, signer_key, signer, body, time=1_700_000_000):
        prev = links[-1] if links else None
        link = {"version": 1, "sequence": len(links), "previous": link_hash(prev) if prev else "0" * 64,
                "type": type_, "signer": signer, "time": time, "body": body}
        return sign_link(link, signer_key)

    def accept(link, note):
        steps.append({"note": note, "link": link, "outcome": "valid", "signedBytes": link_signed_bytes(link).hex(),
                      "hash": link_hash(link)})
        links.append(link)

    def refuse(link, note, code):
        steps.append({"note": note, "link": link, "outcome": code})

    accept(make("genesis", phone, phone_id, dict(device_fields(phone, phone_box, "phone"), masterGeneration="1")), "genesis by the phone")
    bad = make("device.add", phone, phone_id, device_fields(tablet, tablet_box, "tablet"))
    bad["body"]["name"] = "tampered"
    refuse(bad, "body changed after signing", "bad_signature")
    refuse(make("device.add", tablet, tablet_id, device_fields(tablet, tablet_box, "tablet")), "signed by a device not in the account", "unknown_signer")
    accept(make("device.add", phone, phone_id, device_fields(tablet, tablet_box, "tablet"), 1_700_000_100), "phone adds the tablet")
    stale = make("master.rotate", tablet, tablet_id, {"masterGeneration": "2"})
    stale["previous"] = links[0] and link_hash(links[0])
    stale["sequence"] = 1
    sign_link(stale, tablet)
    refuse(stale, "built on an old head", "stale_chain")
    refuse(make("master.rotate", tablet, tablet_id, {"masterGeneration": "3"}), "skips a generation", "stale_generation")
    accept(make("master.rotate", tablet, tablet_id, {"masterGeneration": "2"}), "tablet rotates the master key")
    accept(make("device.revoke", phone, phone_id, {"device": tablet_id}), "phone revokes the tablet")
    refuse(make("master.rotate", tablet, tablet_id, {"masterGeneration": "3"}), "signed by the revoked tablet", "signer_revoked")
    refuse(make("device.revoke", phone, phone_id, {"device": phone_id}), "revoking the last active device", "last_device")
    member = rand(16).hex()
    accept(make("member.add", phone, phone_id, {"member": member, "memberGeneration": "1"}), "a member is added")
    accept(make("member.rotate", phone, phone_id, {"member": member, "memberGeneration": "2"}), "the member key is rotated")
    write(SERVER / "account-chain-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/account-chain.md with PyNaCl and hashlib.",
        "account": link_hash(links[0])[:32], "head": link_hash(links[-1]),
        "steps": steps})


def request_vectors() -> None:
    key = SigningKey(rand(32))
    device = device_id(key.verify_key.encode())
    tests = []
    for method, path, query, body in [("GET", "/v1/accounts/" + "ab" * 16 + "/chain", "", b""),
                                      ("GET", "/v1/accounts/" + "ab" * 16 + "/boxes", "generation=2&recipient=all", b""),
                                      ("POST", "/v1/accounts/" + "ab" * 16 + "/chain", "", b'{"link":{}}'),
                                      ("PUT", "/v1/accounts/x/members/y/attachments/ca1.1." + "0" * 64, "", rand(300))]:
        timestamp, nonce = 1_800_000_000 + len(tests), rand(16).hex()
        signed = (b"keyvault/v1/request\x00" + short(method.encode()) + long_(path.encode()) + long_(query.encode())
                  + hashlib.sha256(body).digest() + timestamp.to_bytes(8, "big") + short(nonce.encode()) + short(device.encode()))
        tests.append({"method": method, "path": path, "query": query, "body": body.hex(), "timestamp": timestamp,
                      "nonce": nonce, "device": device, "signedBytes": signed.hex(),
                      "signature": base64.b64encode(key.sign(signed).signature).decode()})
    write(SERVER / "request-signature-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/request-signature.md with PyNaCl.",
        "seed": key.encode().hex(), "publicKey": key.verify_key.encode().hex(), "tests": tests})


# --------------------------------------------------------------------------- recovery keys v1

def recovery_vectors() -> None:
    from argon2.low_level import Type, hash_secret_raw

    tests = []
    for t, m in [(2, 19456), (3, 19456)]:
        entropy, salt = rand(32), rand(16)
        root = hash_secret_raw(entropy, salt, time_cost=t, memory_cost=m, parallelism=1, hash_len=32, type=Type.ID)
        rw = hkdf(root, b"keyvault/v1/recovery/wrap", 32)
        rx = hkdf(root, b"keyvault/v1/recovery/box", 32)
        ra = hkdf(root, b"keyvault/v1/recovery/auth", 32)
        account = rand(16).hex()
        anchor = json.dumps({"account": account, "genesis": rand(32).hex()}, sort_keys=True, separators=(",", ":")).encode()
        nonce = rand(24)
        envelope = seal_envelope("xchacha20poly1305", rw, 1, "recovery-anchor", {"account": account}, nonce, anchor)
        tests.append({
            "mnemonic": Mnemonic("english").to_mnemonic(entropy), "entropy": entropy.hex(), "salt": salt.hex(), "t": t, "m": m,
            "wrapKey": rw.hex(), "boxKey": rx.hex(),
            "boxPublicKey": X25519PrivateKey.from_private_bytes(rx).public_key().public_bytes_raw().hex(),
            "authSeed": ra.hex(), "authPublicKey": SigningKey(ra).verify_key.encode().hex(),
            "account": account, "anchor": anchor.decode(), "anchorNonce": nonce.hex(), "anchorEnvelope": envelope.hex()})
    write(VAULT / "recovery-keys-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/recovery-keys.md with argon2-cffi, "
                  "pyca/cryptography (HKDF, X25519), PyNaCl (Ed25519, XChaCha20-Poly1305) and python-mnemonic.",
        "tests": tests})


def session_vectors() -> None:
    key, session = rand(32), rand(16).hex()
    tests = []
    for method, path, query, body in [("GET", "/v1/accounts/" + "cd" * 16 + "/boxes", "", b""),
                                      ("POST", "/v1/accounts/" + "cd" * 16 + "/chain", "", b'{"link":{}}'),
                                      ("GET", "/v1/accounts/" + "cd" * 16 + "/audit", "after=7", b"")]:
        timestamp, nonce = 1_800_000_100 + len(tests), rand(16).hex()
        signed = (b"keyvault/v1/request-mac\x00" + short(method.encode()) + long_(path.encode()) + long_(query.encode())
                  + hashlib.sha256(body).digest() + timestamp.to_bytes(8, "big") + short(nonce.encode()) + short(session.encode()))
        tests.append({"method": method, "path": path, "query": query, "body": body.hex(), "timestamp": timestamp, "nonce": nonce,
                      "macBytes": signed.hex(), "mac": base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()})
    write(SERVER / "request-mac-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/request-signature.md (Sessions) with Python hmac.",
        "key": key.hex(), "session": session, "tests": tests})


def hierarchy_vectors() -> None:
    """docs/formats/member-keys.md and attachment.md."""
    account, member, other = rand(16).hex(), rand(16).hex(), rand(16).hex()
    master, member_key = rand(32), rand(32)
    wraps = []
    for h, g in [(1, 1), (3, 2)]:
        nonce = rand(24)
        env = seal_envelope("xchacha20poly1305", master, g, "member-key",
                            {"account": account, "member": member, "member-generation": str(h)}, nonce, member_key)
        wraps.append({"memberGeneration": h, "masterGeneration": g, "envelope": base64.b64encode(env).decode()})
    name_nonce = rand(24)
    name = "Emma Müller"
    name_env = seal_envelope("xchacha20poly1305", member_key, 1, "member-name", {"account": account, "member": member},
                             name_nonce, name.encode())

    h_addr, h_key = 2, 3
    key_addr, key_wrap = rand(32), rand(32)  # member keys of the address's and of the key part's generation
    plaintext, dek = rand(777), rand(32)
    cak = hkdf(key_addr, b"keyvault/v1/content-address", 32)
    address = f"ca1.{h_addr}." + hmac.new(cak, plaintext, hashlib.sha256).hexdigest()
    awk = hkdf(key_wrap, b"keyvault/v1/attachment-key-wrap", 32)
    ctx = {"account": account, "member": member, "address": address}
    key_part = seal_envelope("xchacha20poly1305", awk, h_key, "attachment-key", ctx, rand(24), dek)
    content = seal_envelope("xchacha20poly1305", dek, 1, "attachment-content", ctx, rand(24), plaintext)
    obj = bytes([1]) + len(key_part).to_bytes(4, "big") + key_part + content

    write(VAULT / "key-hierarchy-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/member-keys.md and attachment.md "
                  "with PyNaCl (XChaCha20-Poly1305), pyca/cryptography (HKDF) and Python hmac/hashlib.",
        "account": account, "member": member, "otherMember": other,
        "memberWraps": {"masterKey": master.hex(), "memberKey": member_key.hex(), "wraps": wraps},
        "memberName": {"firstKey": member_key.hex(), "name": name, "envelope": base64.b64encode(name_env).decode()},
        "attachment": {"addressGeneration": h_addr, "addressMemberKey": key_addr.hex(), "keyGeneration": h_key,
                       "keyMemberKey": key_wrap.hex(), "plaintext": plaintext.hex(), "dataKey": dek.hex(),
                       "address": address, "object": obj.hex()}})


def link_vectors() -> None:
    """docs/formats/device-link.md, version 4: the commitment (as version 2's), the SAS, which names the approver
    (as version 3's), and the confirmation code the approver shows once it approved (the same transcript, another domain)."""
    own = random.Random(20261122)  # its own stream: the files above keep their bytes

    def orand(n: int) -> bytes:
        return bytes(own.getrandbits(8) for _ in range(n))

    def commitment(account, device, signing, box, name, nonce):
        data = b"keyvault/v2/link-commit\x00" + short(account.encode()) + short(device.encode())
        data += signing + box + long_(name.encode()) + nonce
        return hashlib.sha256(data).digest()

    def sas(account, code, approver, request, commit, device_nonce, approver_nonce, domain=b"keyvault/v3/link-sas"):
        data = domain + b"\x00" + short(account.encode()) + short(code.encode()) + short(approver.encode())
        data += short(request["device"].encode())
        data += bytes.fromhex(request["signingKey"]) + bytes.fromhex(request["boxKey"]) + long_(request["name"].encode())
        data += commit + device_nonce + approver_nonce
        digest = hashlib.sha256(data).digest()
        for i in range(8):
            n = int.from_bytes(digest[4 * i:4 * i + 4], "big")
            if n < 4_294_000_000:
                break
        digits = f"{n % 1_000_000:06d}"
        return digits[:3] + " " + digits[3:]

    tests = []
    for i, name in enumerate(["tablet", "Emma's phone", "ordinateur portable \u00e9t\u00e9"]):
        account = orand(16).hex()
        sk, box = SigningKey(orand(32)), PrivateKey(orand(32))
        request = device_fields(sk, box, name)
        r_n, r_a = orand(32), orand(32)
        commit = commitment(account, request["device"], bytes.fromhex(request["signingKey"]), bytes.fromhex(request["boxKey"]),
                            name, r_n)
        request["commitment"] = commit.hex()
        code = "".join(own.choice("0123456789ABCDEFGHJKMNPQRSTVWXYZ") for _ in range(10))
        wrong = orand(32).hex()
        approver = device_fields(SigningKey(orand(32)), PrivateKey(orand(32)), "laptop")["device"]
        tests.append({"account": account, "code": code, "approver": approver, "request": request, "deviceNonce": r_n.hex(),
                      "approverNonce": r_a.hex(), "sas": sas(account, code, approver, request, commit, r_n, r_a),
                      "confirmation": sas(account, code, approver, request, commit, r_n, r_a, b"keyvault/v4/link-confirm"),
                      "wrongNonce": wrong})
    write(SERVER / "device-link-v4.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/device-link.md (version 4) with PyNaCl "
                  "(Ed25519 keys) and Python hashlib. `wrongNonce` does not open the commitment (outcome: refused).",
        "tests": tests})


# --------------------------------------------------------------------------- key boxes v2 and chain history

class ChainSteps:
    """A vector chain being built: its accepted links, every step (accepted, with its
    signed bytes and hash, or refused, with its code) and the sequence of each named link."""

    def __init__(self):
        self.links, self.steps, self.at = [], [], {}

    def link(self, type_: str, signer: str, body: dict, key: SigningKey) -> dict:
        prev = self.links[-1] if self.links else None
        link = {"version": 1, "sequence": len(self.links), "previous": link_hash(prev) if prev else "0" * 64, "type": type_,
                "signer": signer, "time": 1_700_000_000 + 10 * len(self.links), "body": body}
        return sign_link(link, key)

    def accept(self, name: str, link: dict, note: str) -> None:
        self.steps.append({"note": note, "link": link, "outcome": "valid", "signedBytes": link_signed_bytes(link).hex(),
                           "hash": link_hash(link)})
        self.at[name] = len(self.links)
        self.links.append(link)

    def refuse(self, link: dict, note: str, outcome: str) -> None:
        self.steps.append({"note": note, "link": link, "outcome": outcome})


def box_signed_bytes(account: str, box: dict) -> bytes:
    return (b"keyvault/v2/key-box\x00" + short(account.encode()) + box["generation"].to_bytes(4, "big")
            + box["sequence"].to_bytes(8, "big") + short(box["recipient"].encode())
            + hashlib.sha256(base64.b64decode(box["box"])).digest())


def key_box_vectors() -> None:
    """A chain whose history decides which boxes count: a box is judged at the link it
    names (its signer active there, its generation the one current there), and a
    recovery code set by a device that is later revoked is compromised from then on.
    Its own seeded generator, so that the files above keep their bytes."""
    global rng
    saved, rng = rng, random.Random(20261122)
    laptop, phone, tablet = SigningKey(rand(32)), SigningKey(rand(32)), SigningKey(rand(32))
    laptop_box, phone_box, tablet_box = PrivateKey(rand(32)), PrivateKey(rand(32)), PrivateKey(rand(32))
    codes = [(SigningKey(rand(32)), PrivateKey(rand(32))) for _ in range(3)]
    ids = {name: device_id(key.verify_key.encode()) for name, key in [("laptop", laptop), ("phone", phone), ("tablet", tablet)]}
    keys = {"laptop": laptop, "phone": phone, "tablet": tablet}
    boxkeys = {"laptop": laptop_box, "phone": phone_box, "tablet": tablet_box}
    chain = ChainSteps()
    links, steps, at, accept, refuse = chain.links, chain.steps, chain.at, chain.accept, chain.refuse

    def make(type_, signer, body):
        key = codes[signer][0] if isinstance(signer, int) else keys[signer]
        return chain.link(type_, "recovery" if isinstance(signer, int) else ids[signer], body, key)

    def code_fields(i, generation):
        return {"authKey": codes[i][0].verify_key.encode().hex(), "boxKey": codes[i][1].public_key.encode().hex(),
                "recoveryGeneration": str(generation)}

    accept("genesis", make("genesis", "laptop", dict(device_fields(laptop, laptop_box, "laptop"), masterGeneration="1")), "genesis by the laptop")
    accept("code1", make("recovery.set", "laptop", code_fields(0, 1)), "the laptop sets the first recovery code")
    accept("phone", make("device.add", "laptop", device_fields(phone, phone_box, "phone")), "the laptop adds the phone")
    accept("g2", make("master.rotate", "phone", {"masterGeneration": "2"}), "the phone makes master key generation 2")
    accept("code2", make("recovery.set", "phone", code_fields(1, 2)), "the phone (stolen) sets a recovery code of its own")
    accept("tablet", make("device.add", 1, device_fields(tablet, tablet_box, "tablet")), "the phone's code adds the tablet")
    accept("revoke", make("device.revoke", "laptop", {"device": ids["phone"]}), "the laptop revokes the phone: the phone's code is compromised")
    refuse(make("device.add", 1, device_fields(SigningKey(rand(32)), PrivateKey(rand(32)), "intruder")),
           "the compromised code adds a device", "recovery_compromised")
    refuse(make("recovery.set", 1, code_fields(2, 3)), "the compromised code sets the next code", "recovery_compromised")
    accept("revoke-tablet", make("device.revoke", "laptop", {"device": ids["tablet"]}), "the laptop revokes the tablet the phone's code added")
    accept("code3", make("recovery.set", "laptop", code_fields(2, 3)), "the laptop sets a new recovery code")
    accept("g3", make("master.rotate", "laptop", {"masterGeneration": "3"}), "the laptop makes master key generation 3")

    account = link_hash(links[0])[:32]
    boxes = []

    def box(note, outcome, generation, sequence, recipient, signer, signed_sequence=None):
        recipient_key = codes[recipient][1].public_key if isinstance(recipient, int) else boxkeys[recipient].public_key
        sealed = SealedBox(recipient_key).encrypt(rand(32))
        b = {"generation": generation, "sequence": sequence, "recipient": "recovery" if isinstance(recipient, int) else ids[recipient],
             "box": base64.b64encode(sealed).decode(), "signer": "recovery" if isinstance(signer, int) else ids[signer]}
        signing = codes[signer][0] if isinstance(signer, int) else keys[signer]
        signed = dict(b, sequence=sequence if signed_sequence is None else signed_sequence)
        b["signature"] = base64.b64encode(signing.sign(box_signed_bytes(account, signed)).signature).decode()
        boxes.append({"note": note, "box": b, "outcome": outcome, "signedBytes": box_signed_bytes(account, b).hex()})

    box("the phone's box of generation 2 for the laptop, made before the phone was revoked", "valid", 2, at["g2"], "laptop", "phone")
    box("the phone's box of generation 2 for the recovery code of then", "valid", 2, at["g2"], 0, "phone")
    box("the phone's code's box for the tablet it added", "valid", 2, at["tablet"], "tablet", 1)
    box("the laptop's box of generation 3 for the new code", "valid", 3, at["g3"], 2, "laptop")
    box("the laptop's box of generation 2 for the new code when it was set", "valid", 2, at["code3"], 2, "laptop")
    box("the revoked phone claims the link that revoked it", "signer_revoked", 2, at["revoke"], "laptop", "phone")
    box("the revoked phone claims an early link for a generation made after it", "wrong_generation", 3, at["g2"], "laptop", "phone")
    box("a box for a generation the chain does not have yet at that link", "wrong_generation", 2, at["phone"], "laptop", "laptop")
    box("a box naming a link beyond the head", "box_position", 3, len(links), "laptop", "laptop")
    box("a box for the tablet before it was added", "unknown_recipient", 2, at["g2"], "tablet", "phone")
    box("the compromised code receives a box after its setter was revoked", "recovery_compromised", 2, at["revoke"], 1, "laptop")
    box("the compromised code signs a box after its setter was revoked", "recovery_compromised", 2, at["revoke-tablet"], "laptop", 1)
    box("a box signed over another link than it names", "bad_signature", 2, at["g2"], "laptop", "phone", signed_sequence=at["tablet"])
    write(SERVER / "key-box-v2.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/account-chain.md with PyNaCl and hashlib.",
        "account": account, "head": link_hash(links[-1]), "steps": steps, "boxes": boxes})
    rng = saved


def unicode_passphrase_vectors() -> None:
    """BIP39 seeds for passphrases mixing letters, combining accents and halfwidth
    katakana with their voiced marks, by python-mnemonic (unicodedata's NFKD)."""
    own = random.Random(20261123)  # its own stream: the files above keep their bytes
    pool = ([chr(c) for c in range(0x61, 0x7B)] + ["\u00e9", "\u00c5", "\u1e0b", "\u01d5", "\u0451"]
            + [chr(c) for c in range(0x0300, 0x0370)]          # combining diacritical marks
            + [chr(c) for c in range(0x0591, 0x05A2)]          # Hebrew accents (other classes)
            + [chr(c) for c in range(0xFF66, 0xFF9E)]          # halfwidth katakana
            + ["\uFF9E", "\uFF9F"] * 8                         # their voiced marks, often
            + ["\u3099", "\u309A", " ", "\u3000"])
    m = Mnemonic("english")
    tests = []
    for i in range(64):
        entropy = bytes(own.getrandbits(8) for _ in range(16 if i % 2 else 32))
        mnemonic = m.to_mnemonic(entropy)
        passphrase = "".join(own.choice(pool) for _ in range(own.randint(1, 24)))
        tests.append({"mnemonic": mnemonic, "passphrase": passphrase,
                      "nfkd": unicodedata.normalize("NFKD", passphrase),
                      "seed": Mnemonic.to_seed(mnemonic, passphrase).hex()})
    write(MNEMONIC / "bip39-unicode-passphrases.json", {
        "source": "Generated by Scripts/vectors/generate.py with python-mnemonic (Mnemonic.to_seed, which applies "
                  "unicodedata.normalize('NFKD')); passphrases drawn from letters, combining marks, Hebrew accents, "
                  "halfwidth katakana and their voiced marks U+FF9E/U+FF9F.",
        "tests": tests})


def master_key_check_vectors() -> None:
    """docs/formats/member-keys.md, "Master key check"."""
    own = random.Random(20261124)  # its own stream: the files above keep their bytes
    tests = []
    for generation in [1, 2, 7, 4294967295]:
        key = bytes(own.getrandbits(8) for _ in range(32))
        data = b"keyvault/v1/master-key-check\x00" + generation.to_bytes(4, "big")
        tests.append({"key": key.hex(), "generation": generation, "check": hmac.new(key, data, hashlib.sha256).digest()[:16].hex()})
    write(VAULT / "master-key-check-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/member-keys.md with Python hmac/hashlib.",
        "tests": tests})


def server_secret_vectors() -> None:
    """Sessions (version 2) and recovery tickets derived from the server secret:
    docs/formats/request-signature.md, "Sessions" and "Recovery proof"."""
    sessions, tickets = [], []
    for _ in range(3):
        secret = rand(32)
        root = hkdf(secret, b"keyvault/v1/server/session", 32)
        tag = hkdf(secret, b"keyvault/v1/server/tag", 8)
        expires = 1_700_000_000 + rng.randrange(1_000_000)
        device, random_part = rand(16), rand(16)
        sid = tag + expires.to_bytes(8, "big") + device + random_part
        key = hmac.new(root, b"keyvault/v1/session-key\x00" + sid, hashlib.sha256).digest()
        sessions.append({"secret": secret.hex(), "expires": expires, "device": device.hex(), "random": random_part.hex(),
                         "session": sid.hex(), "key": key.hex()})
        for kind in ["recovery-challenge", "recovery-token"]:
            ticket_key = hkdf(secret, b"keyvault/v1/server/" + kind.encode(), 32)
            account = rand(16).hex()
            body = (expires + 120).to_bytes(8, "big") + rand(8)
            mac = hmac.new(ticket_key, b"keyvault/v1/" + kind.encode() + b"\x00" + account.encode() + b"\x00" + body,
                           hashlib.sha256).digest()[:16]
            tickets.append({"secret": secret.hex(), "kind": kind, "account": account, "expires": expires + 120,
                            "random": body[8:].hex(), "ticket": (body + mac).hex()})
    write(SERVICE / "server-secret-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/request-signature.md with Python cryptography (HKDF) and hmac.",
        "sessions": sessions, "tickets": tickets})


def sharing_vectors() -> None:
    """docs/formats/member-sharing.md: the sharing links of an account chain, the
    contact commitment and safety code, and share boxes judged against the chain.
    Its own seeded generator (the files above keep their bytes), and sealed boxes
    built here from their definition with a seeded ephemeral key (libsodium's
    crypto_box_seal draws a fresh one), so that regenerating changes nothing."""
    own = random.Random(20261125)

    def orand(n: int) -> bytes:
        return bytes(own.getrandbits(8) for _ in range(n))

    def seal(recipient, message: bytes) -> bytes:
        # crypto_box_seal: epk ‖ crypto_box(m, nonce = BLAKE2b-192(epk ‖ pk), pk, esk)
        ephemeral, pk = PrivateKey(orand(32)), recipient.encode()
        epk = ephemeral.public_key.encode()
        nonce = hashlib.blake2b(epk + pk, digest_size=24).digest()
        return epk + sodium.crypto_box(message, nonce, pk, ephemeral.encode())

    laptop, laptop_box = SigningKey(orand(32)), PrivateKey(orand(32))
    laptop_id = device_id(laptop.verify_key.encode())
    code = (SigningKey(orand(32)), PrivateKey(orand(32)))
    identities = [(SigningKey(orand(32)), PrivateKey(orand(32))) for _ in range(2)]      # the sharer's, generations 1 and 2
    grantee_ids = [(SigningKey(orand(32)), PrivateKey(orand(32))) for _ in range(2)]     # the grantee's, generations 1 and 2
    grantee, stranger = orand(16).hex(), orand(16).hex()
    member, other_member, unknown_member = orand(16).hex(), orand(16).hex(), orand(16).hex()
    chain = ChainSteps()
    links, steps, at, accept, refuse = chain.links, chain.steps, chain.at, chain.accept, chain.refuse

    def make(type_, body, recovery=False):
        return chain.link(type_, "recovery" if recovery else laptop_id, body, code[0] if recovery else laptop)

    def identity(keys, generation):
        return {"identityGeneration": str(generation), "signingKey": keys[0].verify_key.encode().hex(),
                "boxKey": keys[1].public_key.encode().hex()}

    def pin(account, keys, generation):
        return dict(identity(keys, generation), account=account)

    def grant(member_, account, generation, read_only="true"):
        return {"member": member_, "grantee": account, "granteeIdentityGeneration": str(generation), "readOnly": read_only}

    accept("genesis", make("genesis", dict(device_fields(laptop, laptop_box, "laptop"), masterGeneration="1")), "genesis by the laptop")
    accept("code", make("recovery.set", {"authKey": code[0].verify_key.encode().hex(), "boxKey": code[1].public_key.encode().hex(),
                                         "recoveryGeneration": "1"}), "the laptop sets a recovery code")
    accept("member", make("member.add", {"member": member, "memberGeneration": "1"}), "the laptop adds a member")
    accept("other", make("member.add", {"member": other_member, "memberGeneration": "1"}), "the laptop adds another member")
    refuse(make("share.grant", grant(member, grantee, 1)), "a grant before the account has a sharing identity", "no_identity")
    refuse(make("identity.set", identity(identities[0], 2)), "a first identity that is not generation 1", "stale_generation")
    refuse(make("identity.set", identity(identities[0], 1), recovery=True), "the recovery key sets the identity", "unknown_signer")
    accept("identity1", make("identity.set", identity(identities[0], 1)), "the laptop makes the sharing identity")
    refuse(make("identity.set", identity(identities[1], 3)), "an identity that skips a generation", "stale_generation")
    refuse(make("contact.pin", pin(link_hash(links[0])[:32], grantee_ids[0], 1)), "the account pins itself", "malformed_link")
    refuse(make("contact.pin", pin(grantee, grantee_ids[0], 1), recovery=True), "the recovery key pins a contact", "unknown_signer")
    refuse(make("share.grant", grant(member, grantee, 1)), "a grant to an account that is not pinned", "unknown_contact")
    accept("pin1", make("contact.pin", pin(grantee, grantee_ids[0], 1)), "the laptop pins the grantee's identity 1")
    refuse(make("share.grant", grant(member, grantee, 2)), "a grant naming an identity generation other than the pinned one", "contact_changed")
    refuse(make("share.grant", grant(unknown_member, grantee, 1)), "a grant of a member the account does not have", "unknown_member")
    refuse(make("share.grant", grant(member, grantee, 1, "yes")), "readOnly neither true nor false", "malformed_link")
    accept("grant1", make("share.grant", grant(member, grantee, 1)), "the member is shared read-only with the grantee")
    refuse(make("share.grant", grant(member, grantee, 1, "false")), "the same member shared again with the same account", "grant_exists")
    refuse(make("share.revoke", {"member": member, "grantee": stranger}), "revoking a share that was never granted", "unknown_grant")
    accept("revoke1", make("share.revoke", {"member": member, "grantee": grantee}), "the share is taken back")
    refuse(make("share.revoke", {"member": member, "grantee": grantee}), "revoking it again", "unknown_grant")
    accept("rotate", make("member.rotate", {"member": member, "memberGeneration": "2"}), "the member key is rotated after the unshare")
    accept("pin2", make("contact.pin", pin(grantee, grantee_ids[1], 2)), "the grantee's new identity 2 is verified and pinned again")
    accept("grant2", make("share.grant", grant(member, grantee, 2, "false")), "the member is shared again, not read-only")
    accept("identity2", make("identity.set", identity(identities[1], 2)), "the sharer's identity moves to generation 2")
    account = link_hash(links[0])[:32]

    def box_bytes(b: dict) -> bytes:
        return (b"keyvault/v1/share/box\x00" + short(account.encode()) + short(b["member"].encode())
                + b["memberGeneration"].to_bytes(4, "big") + short(b["grantee"].encode())
                + b["granteeIdentityGeneration"].to_bytes(4, "big") + b["grant"].to_bytes(8, "big")
                + hashlib.sha256(base64.b64decode(b["box"])).digest())

    boxes = []

    def box(note, outcome, generation=1, member_=member, grantee_=grantee, identity_generation=2, grant_=None, signer=None,
            signed=None, sealed=None):
        grant_ = at["grant2"] if grant_ is None else grant_
        recipient = grantee_ids[identity_generation - 1][1].public_key
        sealed = seal(recipient, orand(32)) if sealed is None else sealed
        b = {"member": member_, "memberGeneration": generation, "grantee": grantee_, "granteeIdentityGeneration": identity_generation,
             "grant": grant_, "box": base64.b64encode(sealed).decode()}
        signing = identities[1][0] if signer is None else signer
        b["signature"] = base64.b64encode(signing.sign(box_bytes(dict(b, **(signed or {})))).signature).decode()
        boxes.append({"note": note, "box": b, "outcome": outcome, "signedBytes": box_bytes(b).hex()})

    box("member key generation 1 for the grantee's identity 2, under the second grant", "valid", generation=1)
    box("member key generation 2 for the grantee's identity 2, under the second grant", "valid", generation=2)
    box("a box of a member key generation the member does not have yet", "wrong_generation", generation=3)
    box("a box of a member the account does not have", "unknown_member", member_=unknown_member)
    box("a box moved to a member that is not shared", "unknown_grant", member_=other_member)
    box("a box moved to another grantee", "unknown_grant", grantee_=stranger)
    box("a box under the first grant, revoked since", "unknown_grant", identity_generation=1, grant_=at["grant1"])
    box("a box naming a link that is not a grant", "unknown_grant", grant_=at["rotate"])
    box("a box sealed to the grantee's old identity under the second grant", "wrong_generation", identity_generation=1)
    box("a box signed by the sharer's previous identity", "bad_signature", signer=identities[0][0])
    box("a box signed by another identity", "bad_signature", signer=SigningKey(orand(32)))
    box("a box signed for member key generation 1, presented as generation 2", "bad_signature", generation=2, signed={"memberGeneration": 1})
    box("a box that is not a sealed box", "malformed_box", sealed=orand(20))
    for vector in boxes:  # the valid boxes open with the grantee's key (libsodium's own crypto_box_seal_open)
        if vector["outcome"] == "valid":
            SealedBox(grantee_ids[1][1]).decrypt(base64.b64decode(vector["box"]["box"]))

    def identity_json(account_, keys, generation):
        return {"account": account_, "identityGeneration": generation, "signingKey": keys[0].verify_key.encode().hex(),
                "boxKey": keys[1].public_key.encode().hex()}

    def identity_bytes(ident: dict) -> bytes:
        return (short(ident["account"].encode()) + ident["identityGeneration"].to_bytes(4, "big")
                + bytes.fromhex(ident["signingKey"]) + bytes.fromhex(ident["boxKey"]))

    contacts = []
    for generations in [(1, 1), (2, 7), (4294967295, 3)]:
        initiator = identity_json(orand(16).hex(), (SigningKey(orand(32)), PrivateKey(orand(32))), generations[0])
        responder = identity_json(orand(16).hex(), (SigningKey(orand(32)), PrivateKey(orand(32))), generations[1])
        r_a, r_b = orand(32), orand(32)
        commitment = hashlib.sha256(b"keyvault/v1/contact/commit\x00" + identity_bytes(initiator) + r_a).digest()
        digest = hashlib.sha256(b"keyvault/v1/contact/safety-code\x00" + identity_bytes(initiator) + commitment + r_a
                                + identity_bytes(responder) + r_b).digest()
        for i in range(8):
            n = int.from_bytes(digest[4 * i:4 * i + 4], "big")
            if n < 4_294_000_000:
                break
        digits = f"{n % 1_000_000:06d}"
        contacts.append({"initiator": initiator, "responder": responder, "initiatorNonce": r_a.hex(), "responderNonce": r_b.hex(),
                         "commitment": commitment.hex(), "safetyCode": digits[:3] + " " + digits[3:], "wrongNonce": orand(32).hex()})
    write(SERVER / "member-sharing-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/member-sharing.md with PyNaCl (Ed25519, crypto_box) "
                  "and Python hashlib. Steps: the sharer's chain, each link valid or refused with its code. Boxes: judged against "
                  "the whole chain. Contacts: `wrongNonce` does not open the commitment.",
        "account": account, "head": link_hash(links[-1]), "member": member, "grantee": grantee,
        "steps": steps, "boxes": boxes, "contacts": contacts})


def identity_key_vectors() -> None:
    """docs/formats/member-sharing.md, "Identity": the private halves of a sharing
    identity generation wrapped under a master key generation. Its own seeded generator."""
    own = random.Random(20261123)

    def orand(n: int) -> bytes:
        return bytes(own.getrandbits(8) for _ in range(n))

    account, master = orand(16).hex(), orand(32)
    wraps = []
    for identity_generation, master_generation in [(1, 1), (2, 5)]:
        seed, box = orand(32), orand(32)
        env = seal_envelope("xchacha20poly1305", master, master_generation, "identity-key",
                            {"account": account, "identity-generation": str(identity_generation)}, orand(24), seed + box)
        wraps.append({"identityGeneration": identity_generation, "masterGeneration": master_generation,
                      "envelope": base64.b64encode(env).decode(),
                      "signingKey": SigningKey(seed).verify_key.encode().hex(), "boxKey": PrivateKey(box).public_key.encode().hex()})
    write(VAULT / "identity-key-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/member-sharing.md (Identity) with PyNaCl "
                  "(XChaCha20-Poly1305, Ed25519, X25519). Each wrap opens to a seed and a box key whose public halves are given.",
        "account": account, "masterKey": master.hex(), "wraps": wraps})


def authority_vectors() -> None:
    """docs/formats/account-chain.md, "Authority": every body field a link type does
    not name is refused; contact.unpin ends a pin once its grants have ended; the
    signer of each pin and grant is what revocation follows. A chain where the laptop
    adds a phone, the phone pins a contact and shares a member with it, and the pins
    and grants end. Its own seeded generator (the files above keep their bytes)."""
    own = random.Random(20261126)

    def orand(n: int) -> bytes:
        return bytes(own.getrandbits(8) for _ in range(n))

    laptop, laptop_box = SigningKey(orand(32)), PrivateKey(orand(32))
    phone, phone_box = SigningKey(orand(32)), PrivateKey(orand(32))
    laptop_id, phone_id = device_id(laptop.verify_key.encode()), device_id(phone.verify_key.encode())
    contact, member = orand(16).hex(), orand(16).hex()
    chain = ChainSteps()
    accept, refuse = chain.accept, chain.refuse

    def make(type_, body, by="laptop"):
        key, signer = (laptop, laptop_id) if by == "laptop" else (phone, phone_id)
        return chain.link(type_, signer, body, key)

    def identity(generation):
        return {"identityGeneration": str(generation), "signingKey": SigningKey(orand(32)).verify_key.encode().hex(),
                "boxKey": PrivateKey(orand(32)).public_key.encode().hex()}

    grant = {"member": member, "grantee": contact, "granteeIdentityGeneration": "1", "readOnly": "false"}
    refuse(make("genesis", dict(device_fields(laptop, laptop_box, "laptop"), masterGeneration="1", note="x")),
           "a genesis link with a field genesis does not name", "malformed_link")
    accept("genesis", make("genesis", dict(device_fields(laptop, laptop_box, "laptop"), masterGeneration="1")), "genesis by the laptop")
    refuse(make("device.add", dict(device_fields(phone, phone_box, "phone"), addedBy=laptop_id)),
           "device.add with an extra signed field", "malformed_link")
    accept("phone", make("device.add", device_fields(phone, phone_box, "phone")), "the laptop adds the phone")
    refuse(make("member.add", {"member": member, "memberGeneration": "1", "owner": "x"}), "member.add with an extra field", "malformed_link")
    accept("member", make("member.add", {"member": member, "memberGeneration": "1"}), "the laptop adds a member")
    accept("identity", make("identity.set", identity(1)), "the laptop makes the sharing identity")
    refuse(make("contact.unpin", {"account": contact}), "unpinning an account that is not pinned", "unknown_contact")
    accept("pin", make("contact.pin", dict(identity(1), account=contact), by="phone"), "the phone pins a contact")
    refuse(make("share.grant", dict(grant, expires="0"), by="phone"), "share.grant with an extra field", "malformed_link")
    accept("grant", make("share.grant", grant, by="phone"), "the phone shares the member with it")
    refuse(make("contact.unpin", {"account": contact}), "unpinning while a grant to it is in force", "grant_exists")
    refuse(make("contact.unpin", {"account": contact, "reason": "revoked"}), "contact.unpin with an extra field", "malformed_link")
    accept("revoke", make("device.revoke", {"device": phone_id}), "the laptop revokes the phone: its pin and grant are still in force")
    accept("end", make("share.revoke", {"member": member, "grantee": contact}), "the laptop ends the phone's grant")
    accept("unpin", make("contact.unpin", {"account": contact}), "then the phone's pin")
    refuse(make("contact.unpin", {"account": contact}), "unpinning it again", "unknown_contact")
    write(SERVER / "authority-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/account-chain.md (Authority) with PyNaCl.",
        "account": link_hash(chain.links[0])[:32], "head": link_hash(chain.links[-1]), "contact": contact, "member": member,
        "laptop": laptop_id, "phone": phone_id,
        # What is in force, and which device signed it, after each named step.
        "standing": {"grant": [{"kind": "pin", "account": contact, "signer": phone_id, "link": chain.at["pin"]},
                               {"kind": "share", "account": contact, "signer": phone_id, "link": chain.at["grant"]}],
                     "unpin": []},
        "steps": chain.steps})


def head_statement_vectors() -> None:
    """docs/formats/head-statement.md: the signed bytes of a head statement, each check
    in order, and which devices are stale at a given time. Its own seeded generator."""
    own = random.Random(20261127)

    def orand(n: int) -> bytes:
        return bytes(own.getrandbits(8) for _ in range(n))

    laptop, laptop_box = SigningKey(orand(32)), PrivateKey(orand(32))
    phone, phone_box = SigningKey(orand(32)), PrivateKey(orand(32))
    tablet, tablet_box = SigningKey(orand(32)), PrivateKey(orand(32))
    stranger = SigningKey(orand(32))
    ids = {name: device_id(key.verify_key.encode()) for name, key in
           [("laptop", laptop), ("phone", phone), ("tablet", tablet), ("stranger", stranger)]}
    chain = ChainSteps()

    def make(type_, body, key=laptop, signer="laptop"):
        return chain.link(type_, ids[signer], body, key)

    chain.accept("genesis", make("genesis", dict(device_fields(laptop, laptop_box, "laptop"), masterGeneration="1")), "genesis")
    chain.accept("phone", make("device.add", device_fields(phone, phone_box, "phone")), "the laptop adds the phone")
    chain.accept("tablet", make("device.add", device_fields(tablet, tablet_box, "tablet")), "the laptop adds the tablet")
    chain.accept("revoke", make("device.revoke", {"device": ids["phone"]}), "the laptop revokes the phone")
    links = chain.links
    account = link_hash(links[0])[:32]

    def signed_bytes(st: dict) -> bytes:
        return (b"keyvault/v1/head-statement\x00" + bytes([st["version"]]) + short(st["account"].encode()) + short(st["device"].encode())
                + st["sequence"].to_bytes(8, "big") + bytes.fromhex(st["head"]) + (st["time"] & (2**64 - 1)).to_bytes(8, "big"))

    def statement(note, outcome, key, device, sequence, time, head=None, account_=None, version=1, signed=None):
        st = {"version": version, "account": account_ or account, "device": ids[device], "sequence": sequence,
              "head": head or link_hash(links[sequence]), "time": time}
        st["signature"] = base64.b64encode(key.sign(signed_bytes(dict(st, **(signed or {})))).signature).decode()
        return {"note": note, "statement": st, "outcome": outcome, "signedBytes": signed_bytes(st).hex()}

    now = 1_800_000_000
    day = 24 * 3600
    statements = [
        statement("the laptop states the head", "valid", laptop, "laptop", 3, now - 2 * day),
        statement("the tablet states an earlier head of the same chain", "valid", tablet, "tablet", 2, now - 20 * day),
        statement("the phone states a head from before its revocation", "valid", phone, "phone", 2, now - 30 * day),
        statement("the tablet, a newer statement", "valid", tablet, "tablet", 3, now - 15 * day),
        statement("a version other than 1", "unsupported_version", laptop, "laptop", 3, now, version=2),
        statement("another account's", "wrong_account", laptop, "laptop", 3, now, account_=orand(16).hex()),
        statement("a device the chain does not have", "unknown_signer", stranger, "stranger", 3, now),
        statement("a signature over another time", "bad_signature", laptop, "laptop", 3, now, signed={"time": now - 1}),
        statement("a head beyond the chain shown", "stale_chain", laptop, "laptop", 7, now, head=orand(32).hex()),
        statement("another link at a place the chain has", "stale_chain", laptop, "laptop", 2, now, head=orand(32).hex()),
        statement("the phone at the link that revoked it", "signer_revoked", phone, "phone", 3, now),
    ]
    valid = [v["statement"] for v in statements if v["outcome"] == "valid"]
    window = 14 * day
    active = ["laptop", "tablet"]  # the phone is revoked at the head
    freshest = {}
    for st in valid:
        freshest[st["device"]] = max(freshest.get(st["device"], -2**63), min(st["time"], now))
    stale = [ids[d] for d in active if not (ids[d] in freshest and now - freshest[ids[d]] <= window)]
    write(SERVER / "head-statement-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/head-statement.md with PyNaCl.",
        "account": account, "links": links, "statements": statements,
        "freshness": {"now": now, "window": window, "stale": stale}})


def seal_chunks(dek: bytes, s: int, plaintext: bytes, flags=None) -> list:
    """docs/formats/attachment.md, version 2: plaintext sealed in chunks of 2^s bytes under PK of the DEK."""
    pk = hkdf(dek, b"keyvault/v2/attachment-payload", 32)
    aad = b"keyvault/v2/attachment-chunk\x00" + bytes([2, s])
    size = 1 << s
    pieces = [plaintext[i:i + size] for i in range(0, len(plaintext), size)] or [b""]
    out = []
    for i, piece in enumerate(pieces):
        last = (i == len(pieces) - 1) if flags is None else flags[i]
        nonce = bytes(15) + i.to_bytes(8, "big") + bytes([1 if last else 0])
        out.append(sodium.crypto_aead_xchacha20poly1305_ietf_encrypt(piece, aad, nonce, pk))
    return out


def attachment_stream_vectors() -> None:
    """docs/formats/attachment.md, version 2: content in chunks (STREAM over XChaCha20-Poly1305)."""
    account, member = rand(16).hex(), rand(16).hex()
    h_addr, h_key = 1, 2
    key_addr, key_wrap = rand(32), rand(32)
    cak = hkdf(key_addr, b"keyvault/v1/content-address", 32)
    awk = hkdf(key_wrap, b"keyvault/v1/attachment-key-wrap", 32)

    def frame(s: int, key_part: bytes, chunks: list) -> bytes:
        return bytes([2, s]) + len(key_part).to_bytes(4, "big") + key_part + b"".join(chunks)

    def make(plaintext: bytes, s: int):
        address = f"ca1.{h_addr}." + hmac.new(cak, plaintext, hashlib.sha256).hexdigest()
        dek = rand(32)
        key_part = seal_envelope("xchacha20poly1305", awk, h_key, "attachment-key",
                                 {"account": account, "member": member, "address": address}, rand(24), dek)
        return address, dek, key_part, seal_chunks(dek, s, plaintext)

    cases = []
    for name, s, size in [("three chunks of 2^10, the last 300 bytes", 10, 2 * 1024 + 300),
                          ("exactly two full chunks of 2^10", 10, 2048),
                          ("empty content: one empty chunk", 10, 0),
                          ("one byte", 10, 1),
                          ("one chunk of 2^11, not full", 11, 2000)]:
        plaintext = rand(size)
        address, dek, key_part, chunks = make(plaintext, s)
        cases.append({"name": name, "chunkShift": s, "plaintext": plaintext.hex(), "dataKey": dek.hex(),
                      "address": address, "object": frame(s, key_part, chunks).hex()})

    # Each tampering of the three-chunk object keeps a well-framed object (or says which frame it breaks).
    plaintext = bytes.fromhex(cases[0]["plaintext"])
    address, dek, key_part, chunks = make(plaintext, 10)
    _, _, _, other_chunks = make(plaintext, 10)  # the same content under another data key: another object
    full = plaintext[:2048]
    flagless = seal_chunks(dek, 10, full, flags=[False, False])
    impostor = seal_chunks(dek, 10, rand(len(plaintext)))  # genuine chunks under this DEK, of other content
    one_address, one_dek, one_key, one_chunk = make(rand(300), 10)  # one chunk: the same bytes under either size
    tampered = [
        ("cut after chunk 1, at a chunk boundary", frame(10, key_part, chunks[:2]), "address_mismatch"),
        ("chunks 0 and 1 swapped", frame(10, key_part, [chunks[1], chunks[0], chunks[2]]), "address_mismatch"),
        ("chunk 1 spliced from another object of the same content", frame(10, key_part, [chunks[0], other_chunks[1], chunks[2]]), "address_mismatch"),
        ("a chunk repeated", frame(10, key_part, [chunks[0], chunks[0], chunks[1], chunks[2]]), "address_mismatch"),
        ("its last chunk sealed as if more followed", frame(10, key_part, flagless), "address_mismatch"),
        ("a chunk appended after the last", frame(10, key_part, chunks + [chunks[2]]), "address_mismatch"),
        ("one byte of chunk 2 flipped", frame(10, key_part, chunks[:2] + [bytes([chunks[2][0] ^ 1]) + chunks[2][1:]]), "address_mismatch"),
        ("the header's chunk size changed", frame(11, key_part, chunks), "address_mismatch"),
        ("an empty last chunk after full ones", frame(10, key_part, chunks[:2] + seal_chunks(dek, 10, b"")), "malformed_attachment"),
        ("a chunk size of 2^9", frame(9, key_part, chunks), "malformed_attachment"),
        ("other content sealed under this object's data key", frame(10, key_part, impostor), "address_mismatch"),
        ("no chunk at all", frame(10, key_part, []), "malformed_attachment"),
    ]
    write(VAULT / "attachment-stream-v2.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/attachment.md (version 2) "
                  "with PyNaCl (XChaCha20-Poly1305), pyca/cryptography (HKDF) and Python hmac/hashlib.",
        "account": account, "member": member,
        "addressGeneration": h_addr, "addressMemberKey": key_addr.hex(), "keyGeneration": h_key, "keyMemberKey": key_wrap.hex(),
        "objects": cases,
        "tampered": {"address": address, "plaintext": plaintext.hex(),
                     "objects": [{"name": n, "object": o.hex(), "error": e} for n, o, e in tampered]},
        # The chunk's AD holds the header: one chunk relabelled 2^11 keeps its bytes and its place, and is refused.
        "relabelled": {"address": one_address, "object": frame(11, one_key, one_chunk).hex(), "error": "address_mismatch"}})


def upload_journal_vectors() -> None:
    """docs/formats/attachment.md, "Resuming an upload" (journal version 2): record i is the tag of sealed chunk i."""
    dek = rand(32)
    content = rand(1024) + rand(1024) + rand(100)  # as many bytes drawn as version 1's vectors: the files after keep theirs
    sealed = seal_chunks(dek, 10, content)
    write(VAULT / "upload-journal-v2.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/attachment.md (Resuming an upload) "
                  "with PyNaCl (XChaCha20-Poly1305) and pyca/cryptography (HKDF).",
        "dataKey": dek.hex(), "chunkShift": 10,
        "records": [{"chunk": content[i << 10:(i + 1) << 10].hex(), "last": i == len(sealed) - 1, "record": c[-16:].hex()}
                    for i, c in enumerate(sealed)]})


def attachment_meta_vectors() -> None:
    """docs/formats/attachment-meta.md: an attachment's sealed name and details."""
    account, member = rand(16).hex(), rand(16).hex()
    member_key, generation = rand(32), 3
    address = "ca1.2." + rand(32).hex()
    other = "ca1.2." + rand(32).hex()
    meta = {"name": "Impfpass Emma – 2026.pdf", "size": 1234567, "time": 1764000000, "type": "application/pdf", "v": 1}
    plain = json.dumps(meta, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
    amk = hkdf(member_key, b"keyvault/v1/attachment-meta", 32)
    env = seal_envelope("xchacha20poly1305", amk, generation, "attachment-meta",
                        {"account": account, "member": member, "address": address}, rand(24), plain)
    write(VAULT / "attachment-meta-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/attachment-meta.md "
                  "with PyNaCl (XChaCha20-Poly1305) and Python json.",
        "account": account, "member": member, "address": address, "otherAddress": other,
        "memberKey": member_key.hex(), "metaKey": amk.hex(), "generation": generation, "meta": meta, "plaintext": plain.decode(),
        "envelope": base64.b64encode(env).decode()})


def member_lifecycle_vectors() -> None:
    """docs/formats/account-chain.md: member.rename seals the name again under a
    generation the member has; member.remove ends a member once its shares have ended,
    and its id is never added again. Its own seeded generator."""
    own = random.Random(20261127)

    def orand(n: int) -> bytes:
        return bytes(own.getrandbits(8) for _ in range(n))

    laptop, laptop_box = SigningKey(orand(32)), PrivateKey(orand(32))
    laptop_id = device_id(laptop.verify_key.encode())
    member, contact = orand(16).hex(), orand(16).hex()
    keys = {1: orand(32), 2: orand(32)}
    chain = ChainSteps()
    accept, refuse = chain.accept, chain.refuse

    def make(type_, body):
        return chain.link(type_, laptop_id, body, laptop)

    genesis = make("genesis", dict(device_fields(laptop, laptop_box, "laptop"), masterGeneration="1"))
    account = link_hash(genesis)[:32]
    accept("genesis", genesis, "genesis by the laptop")

    def sealed_name(name, generation):
        return base64.b64encode(seal_envelope("xchacha20poly1305", keys[generation], generation, "member-name",
                                              {"account": account, "member": member}, orand(24), name.encode())).decode()

    identity = {"identityGeneration": "1", "signingKey": SigningKey(orand(32)).verify_key.encode().hex(),
                "boxKey": PrivateKey(orand(32)).public_key.encode().hex()}
    accept("member", make("member.add", {"member": member, "memberGeneration": "1", "name": sealed_name("Emma", 1)}), "add Emma")
    refuse(make("member.rename", {"member": member, "name": sealed_name("Emilia", 1), "nameGeneration": "2"}),
           "a rename under a generation the member does not have yet", "stale_generation")
    accept("rotate", make("member.rotate", {"member": member, "memberGeneration": "2"}), "the member key moves to generation 2")
    renamed = sealed_name("Emilia", 2)
    refuse(make("member.rename", {"member": member, "name": renamed, "nameGeneration": "2", "old": "x"}),
           "member.rename with an extra field", "malformed_link")
    refuse(make("member.rename", {"member": orand(16).hex(), "name": renamed, "nameGeneration": "2"}),
           "renaming a member the account does not have", "unknown_member")
    accept("rename", make("member.rename", {"member": member, "name": renamed, "nameGeneration": "2"}), "Emma is renamed Emilia")
    accept("identity", make("identity.set", identity), "the sharing identity")
    accept("pin", make("contact.pin", dict(identity, account=contact)), "a contact")
    accept("grant", make("share.grant", {"member": member, "grantee": contact, "granteeIdentityGeneration": "1", "readOnly": "true"}),
           "the member is shared")
    refuse(make("member.remove", {"member": member}), "removing a member still shared", "grant_exists")
    accept("unshare", make("share.revoke", {"member": member, "grantee": contact}), "its share ends")
    refuse(make("member.remove", {"member": member, "attachments": "0"}), "member.remove with an extra field", "malformed_link")
    accept("remove", make("member.remove", {"member": member}), "the member is removed")
    refuse(make("member.remove", {"member": member}), "removing it again", "unknown_member")
    refuse(make("member.rotate", {"member": member, "memberGeneration": "3"}), "rotating a removed member", "unknown_member")
    refuse(make("member.add", {"member": member, "memberGeneration": "1"}), "adding a removed member's id again", "member_exists")
    write(SERVER / "member-lifecycle-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/account-chain.md (member.rename, member.remove) "
                  "and member-keys.md with PyNaCl.",
        "account": account, "head": link_hash(chain.links[-1]), "member": member,
        "memberKeys": {str(g): k.hex() for g, k in keys.items()}, "renamed": {"name": "Emilia", "envelope": renamed, "generation": 2},
        "steps": chain.steps})


def account_reset_vectors() -> None:
    """docs/formats/account-chain.md, account.reset: one link revokes every other
    device, removes every member, ends every share and contact, retires the sharing
    identity and sets a new master key and recovery code. Its own seeded generator."""
    own = random.Random(20261128)

    def orand(n: int) -> bytes:
        return bytes(own.getrandbits(8) for _ in range(n))

    laptop, laptop_box = SigningKey(orand(32)), PrivateKey(orand(32))
    phone, phone_box = SigningKey(orand(32)), PrivateKey(orand(32))
    code = SigningKey(orand(32))
    ids = {"laptop": device_id(laptop.verify_key.encode()), "phone": device_id(phone.verify_key.encode())}
    member, contact = orand(16).hex(), orand(16).hex()
    chain = ChainSteps()
    accept, refuse = chain.accept, chain.refuse

    def make(type_, body, by="laptop"):
        if by == "recovery":
            return chain.link(type_, "recovery", body, code)
        return chain.link(type_, ids[by], body, laptop if by == "laptop" else phone)

    def identity(generation):
        return {"identityGeneration": str(generation), "signingKey": SigningKey(orand(32)).verify_key.encode().hex(),
                "boxKey": PrivateKey(orand(32)).public_key.encode().hex()}

    def reset(master_generation, recovery_generation, drop=None):
        body = {"masterGeneration": str(master_generation), "masterKeyCheck": orand(16).hex(),
                "authKey": SigningKey(orand(32)).verify_key.encode().hex(), "boxKey": PrivateKey(orand(32)).public_key.encode().hex(),
                "recoveryGeneration": str(recovery_generation)}
        if drop:
            del body[drop]
        return body

    accept("genesis", make("genesis", dict(device_fields(laptop, laptop_box, "laptop"), masterGeneration="1")), "genesis by the laptop")
    accept("phone", make("device.add", device_fields(phone, phone_box, "phone")), "the laptop adds the phone")
    accept("code", make("recovery.set", {"authKey": code.verify_key.encode().hex(),
                                         "boxKey": PrivateKey(orand(32)).public_key.encode().hex(), "recoveryGeneration": "1"}),
           "a recovery code")
    accept("member", make("member.add", {"member": member, "memberGeneration": "1"}), "a member")
    identity_one = identity(1)
    accept("identity", make("identity.set", identity_one), "the sharing identity")
    accept("pin", make("contact.pin", dict(identity(1), account=contact)), "a contact")
    accept("grant", make("share.grant", {"member": member, "grantee": contact, "granteeIdentityGeneration": "1", "readOnly": "false"}),
           "the member is shared")
    refuse(make("account.reset", reset(2, 2, drop="masterKeyCheck"), by="phone"), "a reset without its master key check", "malformed_link")
    refuse(make("account.reset", reset(3, 2), by="phone"), "a reset that skips a master generation", "stale_generation")
    refuse(make("account.reset", reset(2, 1), by="phone"), "a reset that does not move the recovery generation on", "stale_generation")
    refuse(make("account.reset", reset(2, 2), by="recovery"), "a reset signed with the recovery code", "unknown_signer")
    accept("reset", make("account.reset", reset(2, 2), by="phone"), "the phone resets the account")
    refuse(make("member.add", {"member": orand(16).hex(), "memberGeneration": "1"}), "the laptop, revoked by the reset, writes", "signer_revoked")
    refuse(make("device.add", device_fields(SigningKey(orand(32)), PrivateKey(orand(32)), "x"), by="recovery"),
           "the old recovery code adds a device", "bad_signature")
    refuse(make("member.add", {"member": member, "memberGeneration": "1"}, by="phone"), "the removed member's id again", "member_exists")
    refuse(make("share.revoke", {"member": member, "grantee": contact}, by="phone"), "ending the share the reset ended", "unknown_grant")
    refuse(make("identity.set", identity(1), by="phone"), "an identity generation that goes back", "stale_generation")
    accept("identity2", make("identity.set", identity(2), by="phone"), "a new identity after the retired one")
    write(SERVER / "account-reset-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/account-chain.md (account.reset) with PyNaCl.",
        "account": link_hash(chain.links[0])[:32], "head": link_hash(chain.links[-1]), "member": member, "contact": contact,
        "laptop": ids["laptop"], "phone": ids["phone"], "reset": chain.at["reset"], "steps": chain.steps})


# --------------------------------------------------------------------------- the device home, version 1

def device_home_vectors() -> None:
    """A device file sealed under a passphrase (docs/formats/device-home.md: `sealed`, an
    envelope of the secrets under Argon2id(passphrase, salt)), and a device document sealed
    under an app's key (`SealedDeviceStorage`: an envelope of the whole document)."""
    from argon2.low_level import Type, hash_secret_raw

    homes = []
    for name, passphrase, t, m in [
        ("at the floor (t=2, 19 MiB)", "correct horse battery staple", 2, 19 * 1024),
        ("at today's cost (t=2, 64 MiB), a passphrase beyond ASCII", "mot de passe \u00e9t\u00e9 \U0001f511", 2, 64 * 1024),
    ]:
        signing = SigningKey(rand(32))
        box = PrivateKey(rand(32))
        secrets = {"signingSeed": signing.encode().hex(), "boxKey": bytes(box).hex(),
                   "master": {"1": rand(32).hex(), "2": rand(32).hex()},
                   "members": {rand(16).hex(): {"1": rand(32).hex(), "3": rand(32).hex()}}}
        salt, nonce = rand(16), rand(24)
        key = hash_secret_raw(passphrase.encode(), salt, time_cost=t, memory_cost=m, parallelism=1, hash_len=32, type=Type.ID)
        plain = json.dumps(secrets, sort_keys=True, separators=(",", ":")).encode()
        envelope = seal_envelope("xchacha20poly1305", key, 1, "device-home", {}, nonce, plain)
        document = {"format": 1, "server": "https://vault.example.org", "account": rand(16).hex(),
                    "device": device_id(signing.verify_key.encode()), "name": "laptop", "head": rand(32).hex(),
                    "sequence": 3, "enrolled": True,
                    "sealed": {"salt": salt.hex(), "iterations": t, "memoryKiB": m, "envelope": base64.b64encode(envelope).decode()}}
        homes.append({"name": name, "outcome": "valid", "passphrase": passphrase, "passphraseHex": passphrase.encode().hex(),
                      "key": key.hex(), "nonce": nonce.hex(), "document": json.dumps(document, sort_keys=True),
                      "secrets": secrets, "signingPublicKey": signing.verify_key.encode().hex(),
                      "boxPublicKey": bytes(box.public_key).hex()})

    base = homes[0]
    document = json.loads(base["document"])

    def variant(name, outcome, passphrase=None, **sealed):
        changed = dict(document, sealed=dict(document["sealed"], **sealed))
        homes.append({"name": name, "outcome": outcome, "passphrase": passphrase or base["passphrase"],
                      "passphraseHex": (passphrase or base["passphrase"]).encode().hex(),
                      "document": json.dumps(changed, sort_keys=True)})

    envelope = base64.b64decode(document["sealed"]["envelope"])
    variant("another passphrase", "wrong_passphrase", passphrase="correct horse battery stapler")
    flipped = bytearray(envelope); flipped[-1] ^= 1
    variant("the envelope's tag changed", "wrong_passphrase", envelope=base64.b64encode(bytes(flipped)).decode())
    other_salt = bytearray(bytes.fromhex(document["sealed"]["salt"])); other_salt[0] ^= 1
    variant("another salt", "wrong_passphrase", salt=bytes(other_salt).hex())
    key = bytes.fromhex(base["key"])
    plain = json.dumps(base["secrets"], sort_keys=True, separators=(",", ":")).encode()
    other_purpose = seal_envelope("xchacha20poly1305", key, 1, "device-storage", {}, bytes.fromhex(base["nonce"]), plain)
    variant("sealed for another purpose (device-storage)", "wrong_passphrase",
            envelope=base64.b64encode(other_purpose).decode())
    variant("one iteration (below the floor)", "weak_kdf", iterations=1)
    variant("8 MiB (below the floor)", "weak_kdf", memoryKiB=8 * 1024)
    variant("2 GiB (above the ceiling)", "kdf_above_ceiling", memoryKiB=2 * 1024 * 1024)
    variant("11 iterations (above the ceiling)", "kdf_above_ceiling", iterations=11)
    variant("a salt of 8 bytes", "home_damaged", salt=rand(8).hex())
    variant("an envelope that is not base64", "home_damaged", envelope="not base64!")

    storage = []
    app_key, nonce = rand(32), rand(24)
    whole = base["document"].encode()
    storage.append({"name": "a sealed device's document under an app's key", "outcome": "valid", "key": app_key.hex(),
                    "nonce": nonce.hex(), "document": base["document"],
                    "stored": seal_envelope("xchacha20poly1305", app_key, 1, "device-storage", {}, nonce, whole).hex()})
    storage.append({"name": "sealed for another purpose (device-home)", "outcome": "bad_box", "key": app_key.hex(),
                    "stored": seal_envelope("xchacha20poly1305", app_key, 1, "device-home", {}, rand(24), whole).hex()})
    storage.append({"name": "another key", "outcome": "bad_box", "key": rand(32).hex(), "stored": storage[0]["stored"]})

    write(CLIENT / "device-home-v1.json", {
        "source": "Generated by Scripts/vectors/generate.py from docs/formats/device-home.md and envelope.md with "
                  "argon2-cffi (Argon2id, parallelism 1), PyNaCl (Ed25519, X25519, XChaCha20-Poly1305) and pyca/cryptography (HKDF).",
        "outcomes": ["valid", "wrong_passphrase", "weak_kdf", "kdf_above_ceiling", "home_damaged", "bad_box"],
        "homes": homes, "storage": storage})


if __name__ == "__main__":
    ed25519_vectors()
    x25519_vectors()
    aead_vectors()
    envelope_vectors()
    content_address_vectors()
    bip39_vectors()
    # Added later; last, so that the seeded generator gives the files above the
    # same bytes as before. (The sealed boxes of x25519-rfc7748.json and
    # key-box-v2.json use a fresh ephemeral key on every run, so those two files
    # always change: keep the committed ones.)
    chain_vectors()
    request_vectors()
    recovery_vectors()
    session_vectors()
    hierarchy_vectors()
    key_box_vectors()
    link_vectors()
    unicode_passphrase_vectors()
    master_key_check_vectors()
    server_secret_vectors()
    sharing_vectors()
    identity_key_vectors()
    authority_vectors()
    head_statement_vectors()
    attachment_stream_vectors()
    upload_journal_vectors()
    attachment_meta_vectors()
    member_lifecycle_vectors()
    account_reset_vectors()
    device_home_vectors()
