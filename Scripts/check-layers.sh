#!/usr/bin/env bash
# The build graph carries the zero-knowledge promise. Fails (exit 1) naming the file when:
# - a C module is imported outside Sources/KeyVaultCrypto/Backend;
# - the service (KeyVaultServer, KeyVaultStore) or the shared formats (KeyVaultModel,
#   KeyVaultProtocol) import the modules that handle recovery codes or unwrap keys
#   (KeyVaultMnemonic, KeyVaultVault, KeyVault, KeyVaultCommands);
# - Package.swift gives KeyVaultServer such a dependency.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
imports='^\s*(@testable |@_exported |internal |public |private |package )*import '
bad=$(grep -rlE "${imports}(CSodium|CLibCrypto)\b" Sources | grep -v '^Sources/KeyVaultCrypto/Backend/' || true)
if [ -n "$bad" ]; then
  echo "check-layers: C modules imported outside KeyVaultCrypto/Backend:" >&2; echo "$bad" >&2; status=1
fi
bad=$(grep -rlE "${imports}(KeyVaultMnemonic|KeyVaultVault|KeyVault|KeyVaultCommands)\b" \
      Sources/KeyVaultServer Sources/KeyVaultStore Sources/KeyVaultModel Sources/KeyVaultProtocol || true)
if [ -n "$bad" ]; then
  echo "check-layers: the service imports code that handles recovery codes or unwraps keys:" >&2; echo "$bad" >&2; status=1
fi
server_deps=$(awk '/name: "KeyVaultServer", dependencies/,/\]\)/' Package.swift)
if grep -qE '"(KeyVaultMnemonic|KeyVaultVault|KeyVault|KeyVaultCommands)"' <<<"$server_deps"; then
  echo "check-layers: Package.swift gives KeyVaultServer a dependency on key-unwrapping code" >&2; status=1
fi
[ $status -eq 0 ] && echo "check-layers: ok (C only in KeyVaultCrypto/Backend; the service links nothing that unwraps keys)"
exit $status
