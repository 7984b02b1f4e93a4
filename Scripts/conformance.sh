#!/usr/bin/env bash
# The API against its own description: runs schemathesis, with all of its checks,
# against a live `keyctl serve` on a temporary SQLite database and a free loopback
# port, and exits non-zero on any failure.
#
#   bash Scripts/conformance.sh [--long] [--keyctl PATH]
#
# --keyctl PATH   a built keyctl (default: `swift build --product keyctl`, debug)
# --spec FILE     the description to test against (default: the one the server serves)
# --long          many more examples per operation (KEYVAULT_CONFORMANCE_EXAMPLES sets the number)
#
# Signed routes are reached as a real device: `keyctl init` makes an account in a
# temporary home, and Scripts/conformance/hooks.py signs each request with that
# device's key (docs/formats/request-signature.md). The run must see signed requests
# answered past authentication, some with 2xx, or it fails: one that met only 401s
# tested nothing behind them.
# schemathesis and PyNaCl are installed, pinned, into a virtual environment under
# ${XDG_CACHE_HOME:-~/.cache}/keyvault-conformance.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

SCHEMATHESIS_VERSION=4.32.5
PYNACL_VERSION=1.6.2
examples=${KEYVAULT_CONFORMANCE_EXAMPLES:-}
keyctl=""
spec=""
while [ $# -gt 0 ]; do
  case "$1" in
    --long) examples=${examples:-200} ;;
    --keyctl) keyctl=$2; shift ;;
    --spec) spec=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift ;;
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
export KEYVAULT_CONFORMANCE_TALLY="$work/tally.json"
export SCHEMATHESIS_HOOKS=hooks PYTHONPATH="$root/Scripts/conformance${PYTHONPATH:+:$PYTHONPATH}"
# And a pending device-link request on the account (a new device asking to join).
KEYVAULT_CONFORMANCE_LINK_CODE=$(cd "$work" && "$venv/bin/python" -c 'import sys, hooks; print(hooks.create_link_request(sys.argv[1]))' "$url")
export KEYVAULT_CONFORMANCE_LINK_CODE
status=0
# From the temporary directory: schemathesis writes its .schemathesis/ where it runs.
(cd "$work" && "$venv/bin/schemathesis" run ${spec:+--url "$url"} "${spec:-$url/openapi.json}" \
  --checks all \
  --max-examples "$examples" \
  --seed "${KEYVAULT_CONFORMANCE_SEED:-1}" \
  --generation-database none \
  --workers 1 \
  --no-color \
  --suppress-health-check too_slow,filter_too_much) \
  || status=$?

# The hooks' tally: answers to signed requests by status, and the refusals of
# schema-valid requests that were forgiven as content checks (Scripts/conformance/hooks.py).
if ! python3 - "$work/tally.json" <<'PY'
import json, sys
tally = json.load(open(sys.argv[1]))
signed = tally["signed"]
# 405 is answered before authentication (a method the path does not have): not counted.
past = sum(n for status, n in signed.items() if status.isdigit() and status not in ("401", "405"))
accepted = sum(n for status, n in signed.items() if status.startswith("2"))
print(f"conformance: answers to signed requests by status: {json.dumps(signed, sort_keys=True)}"
      f" ({past} past authentication, {accepted} accepted)")
for what, n in sorted(tally["forgiven"].items()):
    print(f"conformance: schema-valid but refused by a content check (forgiven): {what} x{n}")
if past == 0 or accepted == 0:
    print("conformance: no signed request got past authentication: the signing hook is broken", file=sys.stderr)
    sys.exit(1)
PY
then
  status=1
fi
exit $status
