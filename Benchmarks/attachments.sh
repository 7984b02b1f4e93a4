#!/usr/bin/env bash
# Attachments of 1 GiB through keyctl and keyctl serve (SQLite), side by side with
# `openssl enc -chacha20` writing the same file on the same disk (issue 21, item 3):
# put and get, each timed over several runs by Benchmarks/paired.py (public tools
# only), paired with openssl run for run, so the ratio holds however the machine's
# speed drifts. Prints the Markdown table BENCHMARKS.md holds. A put's CPU is its
# script's (keyctl member add and put, and the shell's od and tr); its peak is keyctl's.
#
#   bash Benchmarks/attachments.sh        # ~5 minutes on 2 cores, after a release build
#
# Needs: Swift, openssl, python3, 3 GiB of free disk in $TMPDIR.
set -euo pipefail
cd "$(dirname "$0")/.."
runs=${BENCH_RUNS:-3}
# BENCH_KEYCTL: another build to measure (an older commit's, for a before-and-after in one sitting).
[ -n "${BENCH_KEYCTL:-}" ] || swift build -c release --scratch-path .build-release --product keyctl >&2
keyctl=${BENCH_KEYCTL:-$PWD/.build-release/release/keyctl}
work=$(mktemp -d "${TMPDIR:-/tmp}/kv-bench-att.XXXXXX")
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
"$keyctl" serve --port 0 --database "$work/kv.sqlite" --secret-file "$work/secret" \
  --max-attachment-bytes $((2 << 30)) >"$work/serve.out" 2>/dev/null &
server=$!
for _ in $(seq 100); do grep -q "serving on" "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
url=$(grep -o 'http://127.0.0.1:[0-9]*' "$work/serve.out")
home=(--home "$work/home")
"$keyctl" init --server "$url" --name bench --recovery-file "$work/code" --kdf interactive --yes "${home[@]}" >/dev/null
head -c $((1 << 30)) /dev/urandom > "$work/1g.bin"
cat "$work/1g.bin" > /dev/null  # into the page cache: measure the work, not the first read
key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'); iv=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
openssl_enc=$(printf '%q ' openssl enc -chacha20 -K "$key" -iv "$iv" -in "$work/1g.bin" -out "$work/openssl.out")
# Each put goes to a new member: the same content under another member key is a new
# attachment (a second put to one member is "already there" and sends nothing).
cat > "$work/put.sh" <<SH
#!/bin/sh
n=\$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
"$keyctl" member add "m\$n" --home "$work/home" >/dev/null && exec "$keyctl" attachment put --member "m\$n" "$work/1g.bin" --home "$work/home" >/dev/null
SH
chmod +x "$work/put.sh"
echo "put…" >&2
python3 Benchmarks/paired.py --runs "$runs" --label '`attachment put` (new member each run)' \
  --a "$(printf '%q' "$work/put.sh")" --b "$openssl_enc" > "$work/put.txt"
member=$("$keyctl" member list --json "${home[@]}" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1])["members"][0]["name"])')
address=$("$keyctl" attachment list --member "$member" --json "${home[@]}" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1])["attachments"][0]["address"])')
echo "get…" >&2
python3 Benchmarks/paired.py --runs "$runs" --label '`attachment get -o`' --b "$openssl_enc" \
  --a "$(printf '%q ' "$keyctl" attachment get --member "$member" "$address" -o "$work/copy.bin" "${home[@]}")" > "$work/get.txt"
cmp -s "$work/1g.bin" "$work/copy.bin" || { echo "attachments.sh: the copy differs" >&2; exit 1; }
echo "| 1 GiB | keyctl wall s | openssl enc wall s | openssl / keyctl (goal ≥ 0.5) | keyctl cpu s | keyctl peak MiB |"
echo "| --- | --- | --- | --- | --- | --- |"
cat "$work/put.txt" "$work/get.txt"
