#!/usr/bin/env bash
# A bounded soak on loopback: one `keyctl serve` (SQLite), many devices (real keyctl
# homes, 2 per account) doing the normal mix at once for MINUTES: uploads, downloads,
# listings, status, now and then a member or master key rotation. Every command's
# exit code and time are logged; the server's RSS is sampled every 5 seconds.
#
#   bash Scripts/soak.sh MINUTES [ACCOUNTS]     # default 2 minutes, 4 accounts (8 devices)
#
# Prints latency percentiles per minute, the RSS samples' first/last/peak, and the
# failures; exits 1 if any command failed or if the RSS after the first minute grew
# by more than half. Uses the release keyctl when one is built, else builds debug.
set -euo pipefail
cd "$(dirname "$0")/.."
minutes=${1:-2}
accounts=${2:-4}
if [ -x .build-release/release/keyctl ]; then keyctl=$PWD/.build-release/release/keyctl
elif [ -x .build/release/keyctl ]; then keyctl=$PWD/.build/release/keyctl
else swift build --product keyctl >&2; keyctl=$(swift build --show-bin-path)/keyctl; fi
work=$(mktemp -d "${TMPDIR:-/tmp}/keyvault-soak.XXXXXX")
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
"$keyctl" serve --port 0 --database "$work/soak.sqlite" --log-level error > "$work/serve.out" 2>&1 &
server=$!
for _ in $(seq 100); do grep -q serving "$work/serve.out" 2>/dev/null && break; sleep 0.1; done
kill -0 $server 2>/dev/null && grep -q serving "$work/serve.out" || { echo "soak: keyctl serve did not start:" >&2; cat "$work/serve.out" >&2; exit 1; }
url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/serve.out" | head -n1)

# Accounts: a laptop (init) and a phone (enrolled with the recovery code), one member each.
for a in $(seq "$accounts"); do
  "$keyctl" init --server "$url" --name laptop --recovery-file "$work/code$a" --yes --home "$work/a$a-laptop" --json >/dev/null
  "$keyctl" member add Child --home "$work/a$a-laptop" --json >/dev/null
  account=$("$keyctl" status --home "$work/a$a-laptop" --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["account"])')
  "$keyctl" device enroll --server "$url" --account "$account" --name phone --home "$work/a$a-phone" --json \
    < "$work/code$a" >/dev/null
done
echo "soak: $accounts accounts, $((accounts * 2)) devices, $minutes minutes on $url" >&2

# Each device: the normal mix, every command timed ("unix-ms command exit ms").
worker() {
  local home=$1 log=$2 end=$3 i=0 file="$1.upload"
  while [ "$(date +%s)" -lt "$end" ]; do
    i=$((i + 1))
    head -c $((1024 + RANDOM * 4)) /dev/urandom > "$file"
    local commands=("attachment put --member Child $file" "attachment list --member Child" "status")
    [ $((i % 25)) = 0 ] && commands+=("member rotate Child")
    [ $((i % 60)) = 0 ] && commands+=("master rotate")
    for c in "${commands[@]}"; do
      local start stop code=0 kind
      kind=$(cut -d' ' -f1-2 <<<"$c" | tr ' ' '-')
      start=$(date +%s%3N)
      # shellcheck disable=SC2086
      "$keyctl" $c --home "$home" --json > "$home.out" 2> "$home.err" || code=$?
      stop=$(date +%s%3N)
      printf '%s\t%s\t%s\t%s\n' "$start" "$kind" "$code" $((stop - start)) >> "$log"
      [ $code = 0 ] || { echo "== $(date -u +%T) $home: keyctl $c -> $code"; cat "$home.err"; } >> "$work/failures.txt"
      case "$c" in "attachment put"*)
        [ $code = 0 ] || continue
        local address
        address=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["address"])' "$home.out")
        start=$(date +%s%3N)
        "$keyctl" attachment get --member Child "$address" -o "$home.download" --home "$home" --json > /dev/null 2> "$home.err" || code=$?
        stop=$(date +%s%3N)
        printf '%s\tattachment-get\t%s\t%s\n' "$start" "$code" $((stop - start)) >> "$log"
        [ $code = 0 ] || { echo "== $home: attachment get -> $code"; cat "$home.err"; } >> "$work/failures.txt"
        rm -f "$home.download";;
      esac
    done
  done
}
end=$(( $(date +%s) + minutes * 60 ))
: > "$work/failures.txt"
for home in "$work"/a*-laptop "$work"/a*-phone; do worker "$home" "$work/times.tsv" "$end" & done
start=$(date +%s)
while [ "$(date +%s)" -lt "$end" ]; do
  echo "$(( $(date +%s) - start )) $(awk '/VmRSS/ {print $2}' "/proc/$server/status")" >> "$work/rss.txt"
  sleep 5
done
wait $(jobs -p | grep -v "^$server$") 2>/dev/null || true

status=0
python3 - "$work/times.tsv" "$work/rss.txt" "$work/failures.txt" <<'PY' || status=$?
import sys, statistics, collections
times, rss, failures = sys.argv[1:4]
rows = [l.split('\t') for l in open(times).read().splitlines() if l]
t0 = min(int(r[0]) for r in rows)
per_minute = collections.defaultdict(list)
for start, what, code, ms in rows:
    per_minute[(int(start) - t0) // 60000].append(int(ms))
def pct(values, p): return sorted(values)[min(len(values) - 1, int(len(values) * p))]
print("| minute | commands | p50 ms | p99 ms |")
print("| ---: | ---: | ---: | ---: |")
for minute in sorted(per_minute):
    v = per_minute[minute]
    print(f"| {minute + 1} | {len(v)} | {pct(v, .5)} | {pct(v, .99)} |")
kinds = collections.Counter(r[1] for r in rows)
failed = [r for r in rows if r[2] != "0"]
samples = [tuple(map(int, l.split())) for l in open(rss).read().splitlines() if l]
after_warmup = [kib for s, kib in samples if s >= 60] or [kib for _, kib in samples]
print()
print("commands:", ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())), f"; failed: {len(failed)}")
print(f"server RSS: first {samples[0][1] // 1024} MiB, after the first minute {after_warmup[0] // 1024} MiB, "
      f"last {samples[-1][1] // 1024} MiB, peak {max(k for _, k in samples) // 1024} MiB ({len(samples)} samples)")
grew = after_warmup[-1] > 1.5 * after_warmup[0]
if failed:
    print(open(failures).read()[:4000], file=sys.stderr)
sys.exit(1 if failed or grew else 0)
PY
kill -TERM $server; wait $server 2>/dev/null || true
exit $status
