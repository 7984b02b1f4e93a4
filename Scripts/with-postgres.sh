#!/usr/bin/env bash
# Runs CMD… beside a throwaway PostgreSQL, then removes it:
#
#   bash Scripts/with-postgres.sh swift test      # the tests on SQLite and on PostgreSQL
#
# initdb makes a cluster in a new temporary directory; the server listens on a unix
# socket there only (no TCP), as an unprivileged user (PostgreSQL refuses to run as
# root: under root it runs as `nobody`), with trust authentication on that socket
# and fsync off (a test database need not survive a power cut; KEYVAULT_PG_DURABLE=1
# keeps it on, for benchmarks). CMD runs with
# KEYVAULT_TEST_DATABASE_URL=postgres://keyvault@/keyvault?host=DIR; its exit status
# is this script's. Needs Debian's `postgresql` package (or PG_BIN=dir of initdb).
set -euo pipefail
if [ $# -eq 0 ]; then
  echo "usage: bash Scripts/with-postgres.sh CMD [ARG]…" >&2; exit 64
fi
bin=${PG_BIN:-$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1)}
if [ -z "$bin" ] || [ ! -x "$bin/initdb" ]; then
  echo "with-postgres: PostgreSQL's initdb was not found: apt-get install postgresql (or set PG_BIN)" >&2; exit 69
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/keyvault-pg.XXXXXX")
as=()
if [ "$(id -u)" -eq 0 ]; then
  chown nobody "$dir"
  as=(runuser -u nobody --)
fi
stop() {
  "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate stop >/dev/null 2>&1 || true
  rm -rf "$dir"
}
trap stop EXIT
trap 'exit 130' INT TERM
# KEYVAULT_PG_DURABLE=1 keeps PostgreSQL's defaults (fsync on), for benchmarks.
durability="-c fsync=off -c synchronous_commit=off -c full_page_writes=off"
[ "${KEYVAULT_PG_DURABLE:-0}" = 1 ] && durability=""
"${as[@]}" "$bin/initdb" -D "$dir/data" -U keyvault --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 70; }
if ! "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
     -o "-c listen_addresses='' -k $dir $durability -c max_connections=400" \
     start >/dev/null; then
  cat "$dir/server.log" >&2; exit 70
fi
"${as[@]}" "$bin/createdb" -h "$dir" -U keyvault keyvault
echo "with-postgres: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on $dir" >&2
status=0
KEYVAULT_TEST_DATABASE_URL="postgres://keyvault@/keyvault?host=$dir" "$@" || status=$?
exit $status
