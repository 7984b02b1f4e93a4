#!/usr/bin/env bash
# Runs the whole suite under ThreadSanitizer (a separate build folder, .build-tsan), the
# binaries the tests start (keyctl serve, keyctl) instrumented too. Fails on any test
# failure and on any report, from the test process or from a process it started: every
# report goes to a file under .build-tsan/reports/ and is printed here.
#
#   bash Scripts/tsan.sh [swift test arguments...]     e.g. --filter ConcurrencyTests
set -euo pipefail
cd "$(dirname "$0")/.."
reports="$PWD/.build-tsan/reports"
rm -rf "$reports"; mkdir -p "$reports"
# halt_on_error=0: finish the run and list every report; exitcode 66 marks a process that had one.
export TSAN_OPTIONS="log_path=$reports/tsan halt_on_error=0 exitcode=66 ${TSAN_OPTIONS:-}"
# The kill-under-load and stop stress tests run their full rounds in CI's test step;
# here a few rounds reach the same code paths for the race detector (set the variables
# to run more).
export KEYVAULT_CRASH_ROUNDS="${KEYVAULT_CRASH_ROUNDS:-3}" KEYVAULT_STOP_ROUNDS="${KEYVAULT_STOP_ROUNDS:-4}"
# The memory test's attachment: 64 MiB here (its 1 GiB runs in the test step, unsanitized).
export KEYVAULT_MEMORY_TEST_BYTES="${KEYVAULT_MEMORY_TEST_BYTES:-$((64 << 20))}"
set +e
swift test --sanitize=thread --scratch-path .build-tsan "$@"
code=$?
set -e
found=$(find "$reports" -type f | wc -l)
if [ "$found" -gt 0 ]; then
  for f in "$reports"/*; do echo "== $f"; cat "$f"; done
  echo "tsan.sh: ThreadSanitizer reported in $found process(es) (above; files in $reports)" >&2
  exit 1
fi
[ $code -eq 0 ] || { echo "tsan.sh: the suite failed under ThreadSanitizer (exit $code)" >&2; exit $code; }
echo "tsan.sh: the suite passed under ThreadSanitizer with no report"
