#!/usr/bin/env bash
# The build graph carries the zero-knowledge promise: only KeyVaultCrypto sees C,
# and inside it only Backend/ calls it. Fails (exit 1) and names the file otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
bad=$(grep -rlE '^\s*(@testable |internal |public |private )?import (CSodium|CLibCrypto)' Sources \
      | grep -v '^Sources/KeyVaultCrypto/Backend/' || true)
if [ -n "$bad" ]; then
  echo "check-layers: these files import a C module outside KeyVaultCrypto/Backend:" >&2
  echo "$bad" >&2
  exit 1
fi
echo "check-layers: ok (C is imported only in Sources/KeyVaultCrypto/Backend)"
