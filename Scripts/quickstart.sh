#!/usr/bin/env bash
# Fresh machine to a working keyctl: system libraries, a release build, and a
# recovery code generated and checked. Prints where the binary is.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Scripts/install-system-deps.sh
swift build -c release --product keyctl
bin=.build/release/keyctl
echo
echo "== $bin recovery generate | $bin recovery verify"
"$bin" recovery generate | "$bin" recovery verify
echo
echo "KeyVault's keyctl is $bin (Debian's keyutils also ships a 'keyctl'; run ours by its path)."
echo "Try: $bin recovery generate     $bin --help"
