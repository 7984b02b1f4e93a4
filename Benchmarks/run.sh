#!/usr/bin/env bash
# Runs KeyVault's benchmarks beside the reference implementations, in one run on
# one machine, and prints the Markdown results (BENCHMARKS.md holds the last run).
#
#   bash Benchmarks/run.sh            # ~2 minutes; BENCH_SECONDS=5 for steadier numbers
#
# Needs: Swift, python3 with pip (installs mnemonic, py-bip39-bindings, argon2-cffi
# if missing), openssl, 1 GiB of free disk for the content-addressing file.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${BENCH_SECONDS:-3}
python3 -c "import mnemonic, bip39, argon2" 2>/dev/null || pip install -q mnemonic py-bip39-bindings argon2-cffi
swift build -c release --product keyvault-bench >&2
bench=.build/release/keyvault-bench
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT

echo "mnemonic…" >&2
"$bench" mnemonic "$seconds" > "$out/swift-mnemonic.json"
python3 Benchmarks/reference.py mnemonic "$seconds" > "$out/py-mnemonic.json"

echo "argon2id…" >&2
"$bench" argon2 3 65536 15 > "$out/swift-argon2.json"
python3 Benchmarks/reference.py argon2 3 65536 15 > "$out/py-argon2.json"

echo "content addressing (1 GiB)…" >&2
head -c 1073741824 /dev/urandom > "$out/1g.bin"
cat "$out/1g.bin" > /dev/null  # into the page cache: measure hashing, not the disk
"$bench" content-address "$out/1g.bin" > "$out/swift-ca.json"
openssl speed -hmac sha256 -bytes 16384 -seconds "$seconds" -mr 2>/dev/null > "$out/openssl.txt"

python3 Benchmarks/report.py "$out"
