#!/usr/bin/env bash
# `keyctl serve` on SQLite and on PostgreSQL, side by side in one run: session-MAC
# reads, signed chain appends and signed 64 KiB uploads, with the server's CPU time
# per request (and PostgreSQL's, with the backends and workers it reaped), p50/p99
# and non-2xx; then pgbench's select-only figure on the same PostgreSQL as its
# ceiling. The service and PostgreSQL run on core 0, wrk and pgbench on core 1.
# PostgreSQL keeps its durable defaults (fsync on), as SQLite's chain writes are
# synced (FULL).
#
#   bash Benchmarks/backends.sh        # ~8 minutes after the release build; prints Markdown
#
# Needs wrk (apt-get install wrk) and Debian's postgresql.
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/lib.sh  # cpu_ticks, start_server, replay_rate
if [ -z "${KEYVAULT_TEST_DATABASE_URL:-}" ]; then
  exec env KEYVAULT_PG_DURABLE=1 bash Scripts/with-postgres.sh bash "$0" "$@"
fi
duration=${BENCH_DURATION:-10}
connections=${BENCH_CONNECTIONS:-32}
accounts=${BENCH_ACCOUNTS:-30000}
command -v wrk >/dev/null || { echo "installing wrk" >&2; apt-get install -y -qq wrk >/dev/null; }
# BENCH_BIN=DIR: a release keyctl and keyvault-bench built before (another commit's, for a
# before-and-after); otherwise this checkout's, built here.
if [ -n "${BENCH_BIN:-}" ]; then
  bin=$BENCH_BIN
  [ -x "$bin/keyctl" ] && [ -x "$bin/keyvault-bench" ] || { echo "backends.sh: $bin has no keyctl and keyvault-bench" >&2; exit 66; }
else
  swift build -c release --scratch-path .build-release --product keyctl >&2
  swift build -c release --scratch-path .build-release --product keyvault-bench >&2
  bin=.build-release/release
fi
work=$(mktemp -d)
chmod 755 "$work"
trap 'kill $(jobs -p) 2>/dev/null || true; rm -rf "$work"' EXIT
hz=$(getconf CLK_TCK)

# PostgreSQL on core 0, like the service (its backends inherit the postmaster's affinity).
for pid in $(pgrep -x postgres); do taskset -a -p -c 0 "$pid" >/dev/null; done
pg_url=$KEYVAULT_TEST_DATABASE_URL
psql -q "$pg_url" -c "CREATE DATABASE kvbench" -c "CREATE DATABASE pgbench"
kv_pg=${pg_url/\/keyvault\?/\/kvbench?}

wrk_run() {  # wrk_run LABEL URL FILE SERVER-PID: "label|rps|p50|p99|non2xx|server µs/req|postgres µs/req"
  local label=$1 url=$2 file=$3 server=$4
  local before_s before_p out
  before_s=$(cpu_ticks "$server"); before_p=$(cpu_ticks $(pgrep -x postgres))
  out=$(taskset -c 1 wrk -t1 -c"$connections" -d"${duration}s" --latency -s Benchmarks/replay.lua "$url" -- "$file" 2>"$work/wrk.err")
  local after_s after_p requests rps p50 p99 bad
  after_s=$(cpu_ticks "$server"); after_p=$(cpu_ticks $(pgrep -x postgres))
  requests=$(awk '/requests in/ {print $1}' <<<"$out")
  rps=$(replay_rate "$out" "$work/wrk.err")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  bad=$(awk '/Non-2xx/ {print $5}' <<<"$out"); bad=${bad:-0}
  local us_s us_p
  us_s=$(awk -v t=$((after_s - before_s)) -v n="$requests" -v hz="$hz" 'BEGIN {printf "%.0f", t / hz * 1e6 / n}')
  us_p=$(awk -v t=$((after_p - before_p)) -v n="$requests" -v hz="$hz" 'BEGIN {printf "%.0f", t / hz * 1e6 / n}')
  echo "$label|$rps|$p50|$p99|$bad|$us_s|$us_p"
}

rows=()
for backend in SQLite PostgreSQL; do
  # SQLite as it runs by default (one process, no secret file: session nonces in memory);
  # PostgreSQL as replicas run (a secret file: session nonces in the database).
  if [ $backend = SQLite ]; then database="$work/kv.sqlite"; secret=(); else database=$kv_pg; secret=(--secret-file "$work/secret"); fi
  echo "setting up $accounts accounts on $backend…" >&2
  "$bin/keyvault-bench" server-setup "$database" "$accounts" "$work/all.json" all >&2
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); json.dump(d[:1000], open(sys.argv[2],'w'))" "$work/all.json" "$work/devices.json"
  start_server "$work/serve.out" taskset -c 0 "$bin/keyctl" serve --port 18093 --database "$database" "${secret[@]}" --log-level warning
  "$bin/keyvault-bench" session-requests "$work/devices.json" $((duration * 40000)) http://127.0.0.1:18093 "$work/session.req"
  rows+=("$(wrk_run "$backend|session-MAC read of this device's key boxes" http://127.0.0.1:18093 "$work/session.req" $server)")
  "$bin/keyvault-bench" sign-requests "$work/all.json" $((accounts - 1)) append "$work/append.req"
  rows+=("$(wrk_run "$backend|signed chain append (member.add, one per account)" http://127.0.0.1:18093 "$work/append.req" $server)")
  # As server.sh's upload row: 15,000 signed 64 KiB uploads of new content to one member, 5 s.
  "$bin/keyvault-bench" sign-requests "$work/devices.json" 15000 upload "$work/upload.req"  # up to 3,000/s
  rows+=("$(duration=5 wrk_run "$backend|signed 64 KiB attachment upload (new content each)" http://127.0.0.1:18093 "$work/upload.req" $server)")
  kill -TERM $server; wait $server 2>/dev/null || true
  rm -f "$work"/*.req
done

# The ceiling: PostgreSQL answering the simplest query, from one pgbench thread on core 1.
pg_bench=${pg_url/\/keyvault\?/\/pgbench?}
pgbench -q -i -s 10 "$pg_bench" >/dev/null 2>&1
before_p=$(cpu_ticks $(pgrep -x postgres))
tps=$(taskset -c 1 pgbench -n -S -c "$connections" -j 1 -T "$duration" "$pg_bench" 2>/dev/null | awk '/^tps/ {printf "%.0f", $3}')
after_p=$(cpu_ticks $(pgrep -x postgres))
pg_us=$(awk -v t=$((after_p - before_p)) -v n=$((tps * duration)) -v hz="$hz" 'BEGIN {printf "%.0f", t / hz * 1e6 / n}')

echo "Measured $(date -u +%Y-%m-%d) on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; $accounts accounts;"
echo "service and PostgreSQL $(psql -tA "$pg_url" -c 'SHOW server_version') (fsync on) pinned to core 0, wrk -t1 -c$connections -d${duration}s on core 1."
echo
echo "| store | what | requests/s | p50 | p99 | non-2xx | service CPU per request | PostgreSQL CPU per request |"
echo "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |"
for row in "${rows[@]}"; do
  IFS='|' read -r b l r p50 p99 bad us ps <<<"$row"
  [ "$b" = SQLite ] && ps="–" || ps="$ps µs"
  echo "| $b | $l | $r | $p50 | $p99 | $bad | $us µs | $ps |"
done
echo "| PostgreSQL | pgbench -S (select-only), the ceiling | $tps | | | | | $pg_us µs |"
exit 0
