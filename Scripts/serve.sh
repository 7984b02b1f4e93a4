#!/usr/bin/env bash
# Fresh machine to a running service: system libraries, a release build, and
# `keyctl serve` on embedded SQLite (./keyvault.sqlite, 127.0.0.1:8080; options
# and KEYVAULT_* variables as in README.md). Ctrl-C stops it gracefully.
set -euo pipefail
cd "$(dirname "$0")/.."
bash Scripts/install-system-deps.sh
swift build -c release --product keyctl
exec .build/release/keyctl serve "$@"
