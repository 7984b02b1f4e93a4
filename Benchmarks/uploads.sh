#!/usr/bin/env bash
# Signed 64 KiB uploads (server.sh's upload row) with several builds of keyctl taking
# turns in one sitting, for a before-and-after: each build's keyvault-bench sets up
# its own database (100 accounts) and signs 6,000 uploads of new content to one
# member; its `keyctl serve` (SQLite) runs on core 0, `wrk -t1 -c32 -d5s` on core 1.
# Prints, per build and round, the uploads per second and the service's CPU per upload.
#
#   bash Benchmarks/uploads.sh [--rounds N] DIR…   # each DIR holds a release keyctl and keyvault-bench
#
# e.g. DIR = a worktree's .build-release/release, after `swift build -c release
# --scratch-path .build-release --product keyctl` (and `--product keyvault-bench`).
# Needs wrk (apt-get install wrk).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=3
if [ "${1:-}" = --rounds ]; then rounds=$2; shift 2; fi
if [ $# -eq 0 ]; then echo "usage: bash Benchmarks/uploads.sh [--rounds N] DIR…" >&2; exit 64; fi
for dir in "$@"; do
  [ -x "$dir/keyctl" ] && [ -x "$dir/keyvault-bench" ] || { echo "uploads.sh: $dir has no keyctl and keyvault-bench" >&2; exit 66; }
done
command -v wrk >/dev/null || { echo "uploads.sh: needs wrk (apt-get install wrk)" >&2; exit 69; }
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
hz=$(getconf CLK_TCK)
echo "| build | round | uploads/s | service CPU per upload | non-2xx |"
echo "| --- | ---: | ---: | ---: | ---: |"
for round in $(seq "$rounds"); do
  for dir in "$@"; do
    rm -f "$work"/kv.sqlite* "$work"/*.req
    "$dir/keyvault-bench" server-setup "$work/kv.sqlite" 100 "$work/devices.json" >/dev/null 2>&1
    taskset -c 0 "$dir/keyctl" serve --port 18095 --database "$work/kv.sqlite" --log-level warning > "$work/serve.out" 2>&1 &
    server=$!
    for _ in $(seq 50); do grep -q serving "$work/serve.out" 2>/dev/null && break; sleep 0.2; done
    "$dir/keyvault-bench" sign-requests "$work/devices.json" 6000 upload "$work/upload.req" >/dev/null 2>&1
    before=$(cut -d')' -f2 "/proc/$server/stat" | awk '{print $12 + $13}')
    out=$(taskset -c 1 wrk -t1 -c32 -d5s -s Benchmarks/replay.lua http://127.0.0.1:18095 -- "$work/upload.req" 2>/dev/null)
    after=$(cut -d')' -f2 "/proc/$server/stat" | awk '{print $12 + $13}')
    kill "$server"; wait "$server" 2>/dev/null || true
    server=""
    requests=$(awk '/requests in/ {print $1}' <<<"$out")
    rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
    bad=$(awk '/Non-2xx/ {print $5}' <<<"$out")
    us=$(awk -v t=$((after - before)) -v n="$requests" -v hz="$hz" 'BEGIN {printf "%.0f", t / hz * 1e6 / n}')
    echo "| $dir | $round | $rps | $us µs | ${bad:-0} |"
  done
done
