#!/usr/bin/env python3
"""Turns the JSON lines of one Benchmarks/run.sh run into the Markdown results table."""
import json
import pathlib
import platform
import subprocess
import sys

out = pathlib.Path(sys.argv[1])


def lines(name):
    return [json.loads(l) for l in (out / name).read_text().splitlines() if l.startswith("{")]


swift_m = lines("swift-mnemonic.json")[0]
py_m, rust_m = lines("py-mnemonic.json")
swift_a = lines("swift-argon2.json")[0]
cffi_a = lines("py-argon2.json")[0]
ca = lines("swift-ca.json")[0]
openssl_bps = next(float(l.split(":")[3]) for l in (out / "openssl.txt").read_text().splitlines() if l.startswith("+F:"))

cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), platform.machine())
print(f"Measured {subprocess.check_output(['date', '-u', '+%Y-%m-%d']).decode().strip()} on {cpu}, "
      f"{subprocess.check_output(['nproc']).decode().strip()} cores, one run of `bash Benchmarks/run.sh`.\n")
print("### Recovery codes (24 English words, per second, one core)\n")
print("| operation | KeyVault | python-mnemonic | py-bip39-bindings (Rust) | KeyVault ÷ python-mnemonic | KeyVault ÷ py-bip39-bindings |")
print("| --- | ---: | ---: | ---: | ---: | ---: |")
for label, key in [("verify", "verifyPerSecond"), ("generate", "generatePerSecond"), ("to seed (PBKDF2, 2048 rounds)", "toSeedPerSecond")]:
    s, p, r = swift_m[key], py_m[key], rust_m[key]
    print(f"| {label} | {s:,.0f} | {p:,.0f} | {r:,.0f} | {s / p:,.1f}× | {s / r:.2f}× |")
print(f"| parse with entropy into guarded memory | {swift_m['parseWithEntropyPerSecond']:,.0f} | | | | |")
print()
print(f"### Argon2id (t={swift_a['t']}, m={swift_a['mKiB'] // 1024} MiB, p=1; median of {swift_a['rounds']})\n")
print("| implementation | seconds | relative |")
print("| --- | ---: | ---: |")
print(f"| bare libsodium `crypto_pwhash` | {swift_a['bareMedianSeconds']:.4f} | 1.000 |")
print(f"| KeyVault `Argon2id.deriveKey` | {swift_a['keyvaultMedianSeconds']:.4f} | {swift_a['keyvaultOverBare']:.3f} |")
print(f"| argon2-cffi | {cffi_a['medianSeconds']:.4f} | {cffi_a['medianSeconds'] / swift_a['bareMedianSeconds']:.3f} |")
print()
print("### Content addressing (HMAC-SHA256 of a file)\n")
print("| what | throughput | ratio |")
print("| --- | ---: | ---: |")
print(f"| `openssl speed -hmac sha256 -bytes 16384` | {openssl_bps / 1e9:.3f} GB/s | 1.000 |")
print(f"| KeyVault `address(ofFileAt:)`, {ca['bytes'] / 2**30:.0f} GiB file (page cache), best of 3 | {ca['bytesPerSecond'] / 1e9:.3f} GB/s | {ca['bytesPerSecond'] / openssl_bps:.3f} |")
print(f"\nPeak resident memory of the content-addressing process: {ca['peakRSSKiB'] / 1024:.1f} MiB.")
