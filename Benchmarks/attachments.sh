#!/usr/bin/env bash
# Attachments of 1 GiB through keyctl and keyctl serve, on SQLite and on PostgreSQL
# in one run, side by side with `openssl enc -chacha20` writing the same file on the
# same disk (issue 21, item 3): put and get, each timed over several runs by
# Benchmarks/paired.py (public tools only), paired with openssl run for run, so the
# ratio holds however the machine's speed drifts. Prints the Markdown table
# BENCHMARKS.md holds. A put's CPU is its script's (keyctl member add and put, and the
# shell's od and tr); its peak is keyctl's. The service's CPU (and PostgreSQL's, with
# the backends and workers it reaped) is its mean per run, read from /proc around the
# runs (openssl's runs cost it nothing). PostgreSQL is a throwaway one
# (Scripts/with-postgres.sh) with its durable defaults (fsync on), as backends.sh.
#
#   bash Benchmarks/attachments.sh        # ~12 minutes on 2 cores, after a release build
#
# Needs: Swift, openssl, python3, Debian's postgresql, and about 8 GiB free in
# $TMPDIR (three puts of 1 GiB per backend, the file, its copies, PostgreSQL's WAL).
# BENCH_BACKENDS=SQLite (or PostgreSQL) measures one backend only.
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/lib.sh
backends=${BENCH_BACKENDS:-SQLite PostgreSQL}
for backend in $backends; do
  case $backend in SQLite | PostgreSQL) ;; *) echo "attachments.sh: BENCH_BACKENDS names SQLite and PostgreSQL, not $backend" >&2; exit 64 ;; esac
done
if [[ " $backends " == *" PostgreSQL "* && -z "${KEYVAULT_BENCH_POSTGRES:-}" ]]; then
  exec env KEYVAULT_PG_DURABLE=1 KEYVAULT_BENCH_POSTGRES=1 bash Scripts/with-postgres.sh bash "$0" "$@"
fi
runs=${BENCH_RUNS:-3}
# BENCH_KEYCTL: another build to measure (an older commit's, for a before-and-after in one sitting).
[ -n "${BENCH_KEYCTL:-}" ] || swift build -c release --scratch-path .build-release --product keyctl >&2
keyctl=${BENCH_KEYCTL:-$PWD/.build-release/release/keyctl}
work=$(mktemp -d "${TMPDIR:-/tmp}/kv-bench-att.XXXXXX")
server=""
cleanup() { [ -n "$server" ] && kill "$server" 2>/dev/null; wait 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
hz=$(getconf CLK_TCK)
postgres_pids() { pgrep -x postgres || true; }

head -c $((1 << 30)) /dev/urandom > "$work/1g.bin"
cat "$work/1g.bin" > /dev/null  # into the page cache: measure the work, not the first read
key=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'); iv=$(head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n')
openssl_enc=$(printf '%q ' openssl enc -chacha20 -K "$key" -iv "$iv" -in "$work/1g.bin" -out "$work/openssl.out")

# paired BACKEND LABEL COMMAND: one table row, with the service's and PostgreSQL's CPU per run.
paired() {
  local backend=$1 label=$2 command=$3 s0 p0 s1 p1
  s0=$(cpu_ticks "$server"); p0=$(cpu_ticks $(postgres_pids))
  python3 Benchmarks/paired.py --runs "$runs" --label "$backend: $label" --a "$command" --b "$openssl_enc" > "$work/row.txt"
  s1=$(cpu_ticks "$server"); p1=$(cpu_ticks $(postgres_pids))
  local per_run='BEGIN {printf "%.2f", (b - a) / hz / n}'
  local service postgres="–"
  service=$(awk -v a="$s0" -v b="$s1" -v hz="$hz" -v n="$runs" "$per_run")
  [ "$backend" = PostgreSQL ] && postgres=$(awk -v a="$p0" -v b="$p1" -v hz="$hz" -v n="$runs" "$per_run")
  echo "$(cat "$work/row.txt") $service | $postgres |"
}

echo "| 1 GiB | keyctl wall s | openssl enc wall s | openssl / keyctl (goal ≥ 0.5) | keyctl cpu s | keyctl peak MiB | service cpu s | PostgreSQL cpu s |"
echo "| --- | --- | --- | --- | --- | --- | --- | --- |"
for backend in $backends; do
  if [ "$backend" = SQLite ]; then
    database="$work/kv.sqlite"
  else
    [ "$(psql -tA "$KEYVAULT_TEST_DATABASE_URL" -c 'SHOW fsync')" = on ] || { echo "attachments.sh: PostgreSQL runs with fsync off" >&2; exit 1; }
    database=${KEYVAULT_TEST_DATABASE_URL/\/keyvault\?/\/kvattach?}
    psql -q "$KEYVAULT_TEST_DATABASE_URL" -c "CREATE DATABASE kvattach"
  fi
  start_server "$work/serve.out" "$keyctl" serve --port 0 --database "$database" --secret-file "$work/secret" \
    --max-attachment-bytes $((2 << 30)) --log-level warning
  home=(--home "$work/home-$backend")
  "$keyctl" init --server "$url" --name bench --recovery-file "$work/code-$backend" --kdf interactive --yes "${home[@]}" >/dev/null
  # Each put goes to a new member: the same content under another member key is a new
  # attachment (a second put to one member is "already there" and sends nothing).
  cat > "$work/put.sh" <<SH
#!/bin/sh
n=\$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')
"$keyctl" member add "m\$n" --home "$work/home-$backend" >/dev/null && exec "$keyctl" attachment put --member "m\$n" "$work/1g.bin" --home "$work/home-$backend" >/dev/null
SH
  chmod +x "$work/put.sh"
  echo "$backend: put…" >&2
  paired "$backend" '`attachment put` (new member each run)' "$(printf '%q' "$work/put.sh")"
  member=$("$keyctl" member list --json "${home[@]}" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1])["members"][0]["name"])')
  address=$("$keyctl" attachment list --member "$member" --json "${home[@]}" | python3 -c 'import json,sys; print(json.loads(sys.stdin.read().splitlines()[-1])["attachments"][0]["address"])')
  echo "$backend: get…" >&2
  paired "$backend" '`attachment get -o`' "$(printf '%q ' "$keyctl" attachment get --member "$member" "$address" -o "$work/copy.bin" "${home[@]}")"
  cmp -s "$work/1g.bin" "$work/copy.bin" || { echo "attachments.sh: the copy differs ($backend)" >&2; exit 1; }
  kill -TERM "$server"; wait "$server" 2>/dev/null || true
  server=""
  # What this backend stored goes before the next one stores as much.
  rm -f "$work/copy.bin" "$work"/kv.sqlite*
  [ "$backend" = SQLite ] || psql -q "$KEYVAULT_TEST_DATABASE_URL" -c "DROP DATABASE kvattach"
done
