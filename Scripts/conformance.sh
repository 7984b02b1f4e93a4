#!/usr/bin/env bash
# The API against its own description: runs schemathesis, with all of its checks,
# against a live `keyctl serve` on a temporary SQLite database and a free loopback
# port, and exits non-zero on any failure.
#
#   bash Scripts/conformance.sh [--long] [--keyctl PATH]
#
# --keyctl PATH   a built keyctl (default: `swift build --product keyctl`, debug)
# --long          many more examples per operation (KEYVAULT_CONFORMANCE_EXAMPLES sets the number)
#
# Signed routes are reached as a real device: `keyctl init` makes an account in a
# temporary home, and Scripts/conformance/hooks.py signs each request with that
# device's key (docs/formats/request-signature.md). The run must see answers other
# than 401 on signed routes, or it fails: a run that only met 401s tested nothing.
# schemathesis and PyNaCl are installed, pinned, into a virtual environment under
# ${XDG_CACHE_HOME:-~/.cache}/keyvault-conformance.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SCHEMATHESIS_VERSION=4.32.5
PYNACL_VERSION=1.6.2
examples=${KEYVAULT_CONFORMANCE_EXAMPLES:-}
keyctl=""
while [ $# -gt 0 ]; do
  case "$1" in
    --long) examples=${examples:-200} ;;
    --keyctl) keyctl=$2; shift ;;
    *) echo "conformance: unknown argument $1" >&2; exit 64 ;;
  esac
  shift
done
examples=${examples:-20}

if [ -z "$keyctl" ]; then
  swift build --product keyctl
  keyctl="$(swift build --show-bin-path)/keyctl"
fi
keyctl=$(cd "$(dirname "$keyctl")" && pwd)/$(basename "$keyctl")

venv=${XDG_CACHE_HOME:-$HOME/.cache}/keyvault-conformance/venv-$SCHEMATHESIS_VERSION
if [ ! -x "$venv/bin/schemathesis" ]; then
  python3 -m venv "$venv"
  "$venv/bin/pip" install --quiet --disable-pip-version-check "schemathesis==$SCHEMATHESIS_VERSION" "PyNaCl==$PYNACL_VERSION"
fi

work=$(mktemp -d)
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# A free loopback port: bind port 0 and read what the kernel gave.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
url="http://127.0.0.1:$port"
"$keyctl" serve --host 127.0.0.1 --port "$port" --database "$work/keyvault.sqlite" --log-level error 2>"$work/serve.log" &
server_pid=$!
for _ in $(seq 100); do
  python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "$url/health" 2>/dev/null && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log" >&2; echo "conformance: keyctl serve stopped" >&2; exit 1; }
  sleep 0.1
done

# The test device: an account with a recovery code, a member and one attachment, so
# that reads of them can answer 200.
export KEYCTL_HOME="$work/home"
"$keyctl" init --server "$url" --name conformance --recovery-file "$work/code" --kdf floor --yes --json >/dev/null
"$keyctl" member add Emma --json >/dev/null
echo "a scanned letter" >"$work/letter.txt"
address=$("$keyctl" attachment put --member Emma "$work/letter.txt" --json | tail -n 1 |
  python3 -c 'import json, sys; print(json.load(sys.stdin)["address"])')
member=$("$keyctl" status --json | tail -n 1 | python3 -c 'import json, sys; print(json.load(sys.stdin)["members"][0]["id"])')

export KEYVAULT_CONFORMANCE_HOME="$KEYCTL_HOME" KEYVAULT_CONFORMANCE_MEMBER="$member" KEYVAULT_CONFORMANCE_ADDRESS="$address"
export KEYVAULT_CONFORMANCE_TALLY="$work/signed.json"
export SCHEMATHESIS_HOOKS=hooks PYTHONPATH="$root/Scripts/conformance${PYTHONPATH:+:$PYTHONPATH}"
status=0
"$venv/bin/schemathesis" run "$url/openapi.json" \
  --checks all \
  --max-examples "$examples" \
  --seed "${KEYVAULT_CONFORMANCE_SEED:-1}" \
  --generation-database none \
  --workers 2 \
  --no-color \
  --suppress-health-check too_slow,filter_too_much \
  || status=$?

signed=$(python3 -c 'import json, sys; t = json.load(open(sys.argv[1])); print(sum(n for s, n in t.items() if s != "401"), json.dumps(t))' "$work/signed.json" 2>/dev/null || echo "0 {}")
echo "conformance: answers to signed requests by status: ${signed#* } (${signed%% *} not 401)"
if [ "${signed%% *}" -eq 0 ]; then
  echo "conformance: no signed request got past authentication: the signing hook is broken" >&2
  status=1
fi
exit $status
