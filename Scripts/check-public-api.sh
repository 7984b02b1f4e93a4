#!/usr/bin/env bash
# keyctl is the library's first user: its client commands (Sources/KeyVaultCommands)
# must build on the KeyVault library's public API alone, as an app's code would.
# Swift lets every target of this package see `package` declarations, so this
# type-checks those sources again as if they were another package's (another
# `-package-name`), with the compiler arguments of the last debug build
# (.build/debug.yaml). Fails (exit 1) with the compiler's errors: each names a
# declaration keyctl reaches that an app could not.
# Needs a debug build first (`swift build` or `swift test`).
set -euo pipefail
cd "$(dirname "$0")/.."
plan=.build/debug.yaml
[ -f "$plan" ] || { echo "check-public-api: build first (swift build): no $plan" >&2; exit 2; }
args=$(mktemp); out=$(mktemp); trap 'rm -f "$args" "$out"' EXIT
python3 - "$plan" >"$args" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith('  "C.KeyVaultCommands-') and l.endswith('.module":'))
argv = json.loads(next(l for l in lines[start:] if l.strip().startswith('args:')).split('args:', 1)[1])
# The build's own outputs and incremental state are left alone: type-check only.
skip_with_value = {'-emit-module-path', '-output-file-map', '-index-store-path', '-package-name'}
skip = {'-emit-dependencies', '-emit-module', '-incremental', '-c', '-enable-batch-mode',
        '-serialize-diagnostics', '-v', '-parseable-output', '-color-diagnostics'}
kept, i = [], 1
while i < len(argv):
    a = argv[i]
    if a in skip_with_value: i += 2; continue
    i += 1
    if a in skip: continue
    kept.append(a)
print('\n'.join(kept + ['-typecheck', '-package-name', 'an_app', '-diagnostic-style=llvm']))
PY
mapfile -t argv <"$args"
if ! swiftc "${argv[@]}" >"$out" 2>&1; then
  grep -E 'error:' "$out" | sort -u >&2 || cat "$out" >&2
  echo "check-public-api: keyctl's commands use more than the KeyVault library's public API (above)" >&2
  exit 1
fi
echo "check-public-api: ok (keyctl's client commands build on the library's public API alone)"
