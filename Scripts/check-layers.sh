#!/usr/bin/env bash
# The build graph carries the zero-knowledge promise. Fails (exit 1) naming the file when:
# - a C module is imported outside Sources/KeyVaultCrypto/Backend;
# - the service (KeyVaultServer, KeyVaultStore, KeyVaultPostgres) or the shared formats (KeyVaultModel,
#   KeyVaultProtocol) import the modules that handle recovery codes or unwrap keys
#   (KeyVaultMnemonic, KeyVaultVault, KeyVault, KeyVaultCommands);
# - Package.swift gives KeyVaultServer or KeyVaultPostgres such a dependency;
# - keyctl's client commands (KeyVaultCommands) or the KeyVault library import server code
#   (KeyVaultServer, KeyVaultStore) or Package.swift gives them such a dependency: only the
#   keyctl executable, where `serve` lives, links both;
# - Examples/ imports anything but KeyVault and Foundation (an app's view of the library).
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
imports='^\s*(@testable |@_exported |internal |public |private |package )*import '
bad=$(grep -rlE "${imports}(CSodium|CLibCrypto)\b" Sources | grep -v '^Sources/KeyVaultCrypto/Backend/' || true)
if [ -n "$bad" ]; then
  echo "check-layers: C modules imported outside KeyVaultCrypto/Backend:" >&2; echo "$bad" >&2; status=1
fi
bad=$(grep -rlE "${imports}(KeyVaultMnemonic|KeyVaultVault|KeyVault|KeyVaultCommands)\b" \
      Sources/KeyVaultServer Sources/KeyVaultStore Sources/KeyVaultPostgres Sources/KeyVaultModel Sources/KeyVaultProtocol || true)
if [ -n "$bad" ]; then
  echo "check-layers: the service imports code that handles recovery codes or unwraps keys:" >&2; echo "$bad" >&2; status=1
fi
for target in KeyVaultServer KeyVaultPostgres; do
  server_deps=$(awk "/name: \"$target\", dependencies/,/\]\)/" Package.swift)
  if grep -qE '"(KeyVaultMnemonic|KeyVaultVault|KeyVault|KeyVaultCommands)"' <<<"$server_deps"; then
    echo "check-layers: Package.swift gives $target a dependency on key-unwrapping code" >&2; status=1
  fi
done
bad=$(grep -rlE "${imports}(KeyVaultServer|KeyVaultStore|KeyVaultPostgres)\b" Sources/KeyVaultCommands Sources/KeyVault || true)
if [ -n "$bad" ]; then
  echo "check-layers: client code imports the server:" >&2; echo "$bad" >&2; status=1
fi
for target in KeyVaultCommands KeyVault; do
  deps=$(awk "/name: \"$target\", dependencies/,/\]\)/" Package.swift)
  if grep -qE '"(KeyVaultServer|KeyVaultStore|KeyVaultPostgres)"' <<<"$deps"; then
    echo "check-layers: Package.swift gives $target a dependency on server code" >&2; status=1
  fi
done
bad=$(grep -rhE "${imports}" Examples | grep -vE "${imports}(KeyVault|Foundation)\s*$" || true)
if [ -n "$bad" ]; then
  echo "check-layers: an example imports more than KeyVault and Foundation:" >&2; echo "$bad" >&2; status=1
fi
[ $status -eq 0 ] && echo "check-layers: ok (C only in KeyVaultCrypto/Backend; the service links nothing that unwraps keys; keyctl's client commands link no server code; examples see only KeyVault)"
exit $status
