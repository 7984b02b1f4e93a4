#!/usr/bin/env python3
"""The reference implementations KeyVault is measured against, printing JSON lines
in the same shape as keyvault-bench. Used by Benchmarks/run.sh.

    python3 Benchmarks/reference.py mnemonic SECONDS
    python3 Benchmarks/reference.py argon2 T M_KIB ROUNDS
"""
import json
import statistics
import sys
import time


def rate(fn, items, seconds):
    for item in items[:100]:
        fn(item)  # warm-up
    n, start = 0, time.perf_counter()
    while time.perf_counter() - start < seconds:
        for item in items:
            fn(item)
        n += len(items)
    return n / (time.perf_counter() - start)


def mnemonic_bench(seconds):
    import bip39  # py-bip39-bindings (Rust tiny-bip39)
    from mnemonic import Mnemonic  # python-mnemonic (trezor, the BIP's reference)

    m = Mnemonic("english")
    phrases = [m.generate(256) for _ in range(1000)]
    assert all(bip39.bip39_validate(p) for p in phrases)
    few = phrases[:20]
    print(json.dumps({"bench": "mnemonic", "implementation": "python-mnemonic " + getattr(sys.modules["mnemonic"], "__version__", ""),
                      "verifyPerSecond": rate(m.check, phrases, seconds),
                      "generatePerSecond": rate(lambda _: m.generate(256), range(200), seconds),
                      "toSeedPerSecond": rate(lambda p: Mnemonic.to_seed(p, ""), few, seconds)}))
    print(json.dumps({"bench": "mnemonic", "implementation": "py-bip39-bindings",
                      "verifyPerSecond": rate(bip39.bip39_validate, phrases, seconds),
                      "generatePerSecond": rate(lambda _: bip39.bip39_generate(24), range(1000), seconds),
                      "toSeedPerSecond": rate(lambda p: bip39.bip39_to_seed(p, ""), few, seconds),
                      "note": "bip39_to_seed returns 32 of the 64 seed bytes; the PBKDF2 work is the same"}))


def argon2_bench(t, m, rounds):
    from argon2.low_level import Type, hash_secret_raw

    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        hash_secret_raw(b"correct horse battery staple", b"\x07" * 16, time_cost=t, memory_cost=m,
                        parallelism=1, hash_len=32, type=Type.ID)
        times.append(time.perf_counter() - start)
    print(json.dumps({"bench": "argon2id", "implementation": "argon2-cffi", "t": t, "mKiB": m, "rounds": rounds,
                      "medianSeconds": statistics.median(times)}))


if __name__ == "__main__":
    if sys.argv[1] == "mnemonic":
        mnemonic_bench(float(sys.argv[2]))
    else:
        argon2_bench(int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]))
