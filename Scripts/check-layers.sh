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
# - Examples/ imports anything but KeyVault and Foundation (an app's view of the library);
# - keyctl's client commands (KeyVaultCommands) import a module of ours but KeyVault and
#   KeyVaultMnemonic (the BIP39 tools): they are written as an app would write them, and
#   Scripts/check-public-api.sh (after a build) checks they use only the public API.
set -euo pipefail
cd "$(dirname "$0")/.."
status=0
imports='^\s*(@testable |@_exported |internal |public |private |package )*import '
bad=$(grep -rlE "${imports}(CSodium|CLibCrypto)\b" Sources | grep -v '^Sources/KeyVaultCrypto/Backend/' || true)
if [ -n "$bad" ]; then
  echo "check-layers: C modules imported outside KeyVaultCrypto/Backend:" >&2; echo "$bad" >&2; status=1
fi
# refuse WHAT MODULES-REGEX TARGET... : no file of the targets imports those modules,
# and Package.swift gives none of the targets a dependency on them.
refuse() {
  local what=$1 modules=$2; shift 2
  local target bad
  for target in "$@"; do
    bad=$(grep -rlE "${imports}(${modules})\b" "Sources/$target" || true)
    if [ -n "$bad" ]; then echo "check-layers: $target imports $what:" >&2; echo "$bad" >&2; status=1; fi
    if awk "/name: \"$target\", dependencies/,/\]\)/" Package.swift | grep -qE "\"(${modules})\""; then
      echo "check-layers: Package.swift gives $target a dependency on $what" >&2; status=1
    fi
  done
}
refuse "code that handles recovery codes or unwraps keys" 'KeyVaultMnemonic|KeyVaultVault|KeyVault|KeyVaultCommands' \
  KeyVaultServer KeyVaultStore KeyVaultPostgres KeyVaultModel KeyVaultProtocol
refuse "server code" 'KeyVaultServer|KeyVaultStore|KeyVaultPostgres' KeyVaultCommands KeyVault
# @testable would open internal and package declarations to code that ships.
bad=$(grep -rlE '^\s*@testable ' Sources || true)
if [ -n "$bad" ]; then
  echo "check-layers: @testable import outside the tests:" >&2; echo "$bad" >&2; status=1
fi
refuse "a module below the library (keyctl uses the public API: KeyVault, KeyVaultMnemonic)" \
  'KeyVaultCrypto|KeyVaultModel|KeyVaultProtocol|KeyVaultVault' KeyVaultCommands
bad=$(grep -rhE "${imports}" Examples | grep -vE "${imports}(KeyVault|Foundation)\s*$" || true)
if [ -n "$bad" ]; then
  echo "check-layers: an example imports more than KeyVault and Foundation:" >&2; echo "$bad" >&2; status=1
fi
# Apps import KeyVault only: every module below it is `package`, but for the few types
# the library's public API shows (the ids, ContentAddress, SecureBytes) and the BIP39
# tools of KeyVaultMnemonic (any word count and wordlist, for `keyctl recovery`), so
# nothing else of theirs is an app's to import.
bad=$(grep -rnE '^\s*(@[A-Za-z_]+(\([^)]*\))? )*((final|nonisolated) )*(public|open) ' Sources/KeyVaultMnemonic Sources/KeyVaultVault Sources/KeyVaultProtocol \
      Sources/KeyVaultModel Sources/KeyVaultCrypto Sources/KeyVaultStore Sources/KeyVaultPostgres Sources/KeyVaultServer --include=*.swift \
      | grep -vE '^Sources/(KeyVaultModel/Identifiers|KeyVaultCrypto/SecureBytes|KeyVaultMnemonic/Mnemonic(Error|Language)?)\.swift:' \
      | grep -vE '^Sources/KeyVaultCrypto/ContentAddress\.swift:[0-9]+:(public struct ContentAddress:|    public )' || true)
if [ -n "$bad" ]; then
  echo "check-layers: a public declaration in a package-only module (make it package):" >&2; echo "$bad" >&2; status=1
fi
# What to run is keyctl's to say (KeyVaultCommands/Hints.swift): no string of the library
# or the service names it (doc comments may).
bad=$(grep -rnE '"[^"]*keyctl' Sources/KeyVault Sources/KeyVaultServer Sources/KeyVaultProtocol Sources/KeyVaultModel \
      --include=*.swift | grep -vE '^\S+:[0-9]+:\s*///' || true)
if [ -n "$bad" ]; then
  echo "check-layers: a string of the library or the service names keyctl (hints are keyctl's, in Hints.swift):" >&2; echo "$bad" >&2; status=1
fi
[ $status -eq 0 ] && echo "check-layers: ok (C only in KeyVaultCrypto/Backend; the service links nothing that unwraps keys; keyctl's client commands link no server code; examples see only KeyVault; no library or service string names keyctl; the modules below KeyVault are package-only but for the types its API shows)"
exit $status
