#!/usr/bin/env bash
# keyctl is the library's first user: its client commands (Sources/KeyVaultCommands)
# must build on the KeyVault library's public API alone, as an app's code would.
# Swift lets every target of this package see `package` declarations, so this
# type-checks those sources again as if they were another package's (another
# `-package-name`), with the compiler and arguments of the last debug build
# (.build/debug.yaml), writing nothing of the build's. Fails (exit 1) with the
# compiler's errors: each names a declaration keyctl reaches that an app could not.
# A probe that reaches a `package` declaration must fail the same way, or the
# check itself is broken (exit 2). Needs a debug build first (`swift build` or `swift test`).
set -euo pipefail
cd "$(dirname "$0")/.."
plan=.build/debug.yaml
[ -f "$plan" ] || { echo "check-public-api: build first (swift build): no $plan" >&2; exit 2; }
work=$(mktemp -d); trap 'rm -rf "$work"' EXIT
if ! python3 - "$plan" >"$work/args" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
start = next((i for i, l in enumerate(lines) if l.startswith('  "C.KeyVaultCommands-') and l.endswith('.module":')), None)
if start is None:
    sys.exit("no KeyVaultCommands compile step in the build plan")
argv = json.loads(next(l for l in lines[start:] if l.strip().startswith('args:')).split('args:', 1)[1])
# The build's own outputs and incremental state are left alone: type-check only.
skip_with_value = {'-emit-module-path', '-output-file-map', '-index-store-path', '-package-name',
                   '-emit-objc-header-path', '-emit-module-interface-path', '-emit-private-module-interface-path'}
skip = {'-emit-dependencies', '-emit-module', '-incremental', '-c', '-enable-batch-mode', '-emit-objc-header',
        '-serialize-diagnostics', '-v', '-parseable-output', '-color-diagnostics', '-enable-testing'}
kept, i = [argv[0]], 1
while i < len(argv):
    a = argv[i]
    if a in skip_with_value: i += 2; continue
    i += 1
    if a in skip: continue
    kept.append(a)
print('\n'.join(kept + ['-typecheck', '-package-name', 'an_app_of_its_own', '-diagnostic-style=llvm']))
PY
then
  echo "check-public-api: cannot read the build plan $plan (build again: swift build)" >&2; exit 2
fi
argv=()
while IFS= read -r line; do argv+=("$line"); done <"$work/args"
# The probe: a `package` entry point of the library, which this check must refuse.
printf 'import KeyVault\nfunc probe(_ vault: Vault) async throws { _ = try await vault.chain }\n' >"$work/probe.swift"
if "${argv[@]}" "$work/probe.swift" >"$work/probe.out" 2>&1 || ! grep -q "'chain' is inaccessible due to 'package' protection level" "$work/probe.out"; then
  echo "check-public-api: the check is broken: a probe that reaches Vault.chain (package) was not refused" >&2
  cat "$work/probe.out" >&2; exit 2
fi
if ! "${argv[@]}" >"$work/out" 2>&1; then
  grep -E 'error:' "$work/out" | awk '!seen[$0]++' >&2 || cat "$work/out" >&2
  echo "check-public-api: keyctl's commands use more than the KeyVault library's public API (above)" >&2
  exit 1
fi
echo "check-public-api: ok (keyctl's client commands build on the library's public API alone; a probe that does not is refused)"
