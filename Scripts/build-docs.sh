#!/usr/bin/env bash
# Builds the KeyVault library's DocC documentation into .build/docs/KeyVault.doccarchive
# (symbol graphs from the compiler, then the toolchain's docc). Warnings are errors:
# a link to a symbol that does not exist fails the build.
#   bash Scripts/build-docs.sh            # then open or host the archive
set -euo pipefail
cd "$(dirname "$0")/.."
graphs=.build/docs/symbol-graphs
rm -rf "$graphs" && mkdir -p "$graphs"
swift package dump-symbol-graph --minimum-access-level public >/dev/null
# Only the KeyVault module's own graphs (not those of the modules below it).
cp "$(swift build --show-bin-path)"/../symbolgraph/KeyVault.symbols.json "$graphs"/
docc convert Sources/KeyVault/KeyVault.docc \
  --fallback-display-name KeyVault --fallback-bundle-identifier org.keyvault.KeyVault \
  --additional-symbol-graph-dir "$graphs" \
  --warnings-as-errors \
  --output-path .build/docs/KeyVault.doccarchive
echo "docs: .build/docs/KeyVault.doccarchive"
