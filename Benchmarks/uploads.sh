#!/usr/bin/env bash
# Signed 64 KiB uploads (server.sh's upload row) with several builds of keyctl taking
# turns in one sitting, for a before-and-after: each build's keyvault-bench sets up
# its own database (100 accounts) and signs 15,000 uploads (enough for 3,000/s) of new content to one
# member; its `keyctl serve` (SQLite) runs on core 0, `wrk -t1 -c32 -d5s` on core 1.
# Prints, per build and round, the uploads per second and the service's CPU per upload.
#
#   bash Benchmarks/uploads.sh [--rounds N] DIR…   # each DIR holds a release keyctl and keyvault-bench
#
# e.g. DIR = a worktree's .build-release/release, after `swift build -c release
# --scratch-path .build-release --product keyctl` (and `--product keyvault-bench`).
# Needs wrk (apt-get install wrk).
set -euo pipefail
usage() { echo "usage: bash Benchmarks/uploads.sh [--rounds N] DIR…" >&2; exit 64; }
rounds=3
if [ "${1:-}" = --rounds ]; then
  [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || usage
  rounds=$2; shift 2
fi
[ $# -gt 0 ] || usage
dirs=()
for dir in "$@"; do
  [ -x "$dir/keyctl" ] && [ -x "$dir/keyvault-bench" ] || { echo "uploads.sh: $dir has no keyctl and keyvault-bench" >&2; exit 66; }
  dirs+=("$(cd "$dir" && pwd)")  # before the cd below: a relative DIR is the caller's
done
cd "$(dirname "$0")/.."
source Benchmarks/lib.sh
command -v wrk >/dev/null || { echo "uploads.sh: needs wrk (apt-get install wrk)" >&2; exit 69; }
work=$(mktemp -d)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"' EXIT
hz=$(getconf CLK_TCK)
echo "| build | round | uploads/s | service CPU per upload | non-2xx |"
echo "| --- | ---: | ---: | ---: | ---: |"
for round in $(seq "$rounds"); do
  for dir in "${dirs[@]}"; do
    rm -f "$work"/kv.sqlite* "$work"/*.req
    "$dir/keyvault-bench" server-setup "$work/kv.sqlite" 100 "$work/devices.json" >"$work/setup.out" 2>&1 ||
      { echo "uploads.sh: setup failed:" >&2; cat "$work/setup.out" >&2; exit 1; }
    start_server "$work/serve.out" taskset -c 0 "$dir/keyctl" serve --port 0 --database "$work/kv.sqlite" --log-level warning
    "$dir/keyvault-bench" sign-requests "$work/devices.json" 15000 upload "$work/upload.req" >/dev/null
    before=$(cpu_ticks "$server")
    out=$(taskset -c 1 wrk -t1 -c32 -d5s -s Benchmarks/replay.lua "$url" -- "$work/upload.req" 2>"$work/wrk.err")
    after=$(cpu_ticks "$server")
    kill "$server"; wait "$server" 2>/dev/null || true
    server=""
    requests=$(awk '/requests in/ {print $1}' <<<"$out")
    rps=$(replay_rate "$out" "$work/wrk.err")
    bad=$(awk '/Non-2xx/ {print $5}' <<<"$out")
    us=$(awk -v t=$((after - before)) -v n="$requests" -v hz="$hz" 'BEGIN {printf "%.0f", t / hz * 1e6 / n}')
    echo "| $dir | $round | $rps | $us µs | ${bad:-0} |"
  done
done
