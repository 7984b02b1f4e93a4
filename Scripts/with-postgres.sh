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
#
# With the openssl command there, the server also listens on 127.0.0.1 (a free port)
# for TLS only, with a certificate of a CA made here (names 127.0.0.1 and localhost):
# KEYVAULT_TEST_DATABASE_TLS_URL=postgres://keyvault@127.0.0.1:PORT/keyvault?sslmode=verify-full&sslrootcert=CA
# for the TLS tests, and KEYVAULT_TEST_OTHER_CA, a CA that did not sign it.
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
# synchronous_commit stays at its default (on): the service sets it per connection, and a test checks that.
durability="-c fsync=off -c full_page_writes=off"
[ "${KEYVAULT_PG_DURABLE:-0}" = 1 ] && durability=""
"${as[@]}" "$bin/initdb" -D "$dir/data" -U keyvault --auth=trust -E UTF8 --no-locale >"$dir/initdb.log" 2>&1 \
  || { cat "$dir/initdb.log" >&2; exit 70; }
listen="-c listen_addresses=''"
tls_url=""
if command -v openssl >/dev/null; then
  tls="$dir/tls"; mkdir -p "$tls"
  make_ca() {
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$2" \
      -keyout "$tls/$1.key" -out "$tls/$1.pem" 2>/dev/null
  }
  make_ca ca "keyvault test CA" && make_ca other-ca "another CA"
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=127.0.0.1" \
    -keyout "$tls/server.key" -out "$tls/server.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1,DNS:localhost\n' >"$tls/san.ext"
  openssl x509 -req -in "$tls/server.csr" -CA "$tls/ca.pem" -CAkey "$tls/ca.key" -CAcreateserial -days 2 \
    -extfile "$tls/san.ext" -out "$tls/server.pem" 2>/dev/null
  chmod 600 "$tls/server.key"
  [ ${#as[@]} -gt 0 ] && chown -R nobody "$tls"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  # TLS only on TCP: a connection without it is turned away.
  printf 'local all all trust\nhostssl all all 127.0.0.1/32 trust\nhostnossl all all 0.0.0.0/0 reject\n' >"$dir/data/pg_hba.conf"
  listen="-c listen_addresses=127.0.0.1 -p $port -c ssl=on -c ssl_cert_file=$tls/server.pem -c ssl_key_file=$tls/server.key"
  tls_url="postgres://keyvault@127.0.0.1:$port/keyvault?sslmode=verify-full&sslrootcert=$tls/ca.pem"
fi
if ! "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 60 \
     -o "$listen -k $dir $durability -c max_connections=400" \
     start >/dev/null; then
  cat "$dir/server.log" >&2; exit 70
fi
pgport=()
[ -n "$tls_url" ] && pgport=(-p "$port")
"${as[@]}" "$bin/createdb" -h "$dir" "${pgport[@]}" -U keyvault keyvault
echo "with-postgres: PostgreSQL $("$bin/postgres" --version | awk '{print $3}') on $dir" >&2
status=0
socket_port=""
[ -n "$tls_url" ] && socket_port=":$port"
KEYVAULT_TEST_DATABASE_URL="postgres://keyvault@${socket_port}/keyvault?host=$dir" \
  KEYVAULT_TEST_DATABASE_TLS_URL="$tls_url" KEYVAULT_TEST_OTHER_CA="${tls:+$tls/other-ca.pem}" "$@" || status=$?
exit $status
