#!/usr/bin/env bash
# Fuzzes the parsers and state machines that meet outside bytes (Fuzz/Targets) with
# libFuzzer and AddressSanitizer.
#
#   bash Scripts/fuzz.sh TARGET|all SECONDS [libFuzzer flags...]
#
# TARGET: mnemonic, envelope, attachment, headers, chain, request-json (all: each for
# SECONDS). Starts from the committed seeds (Fuzz/Corpus/TARGET, never written to);
# what it learns goes to .build-fuzz/corpus/TARGET and is kept between runs. A crash or
# broken invariant stops the run with exit 1 and leaves the input in
# .build-fuzz/crashes/TARGET/: replay it with `swift run keyvault-fuzz TARGET FILE`
# and commit it under Fuzz/Regressions/TARGET/ with the fix (KeyVaultFuzzTests replays it).
# Prints per target: executions, coverage (libFuzzer's cov: edges), corpus size, crashes.
set -euo pipefail
cd "$(dirname "$0")/.."
targets=(mnemonic envelope attachment headers chain request-json)
if [ $# -lt 2 ]; then sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 2; fi
target=$1 seconds=$2; shift 2
if [ "$target" = all ]; then run=("${targets[@]}")
elif printf '%s\n' "${targets[@]}" | grep -qx "$target"; then run=("$target")
else echo "fuzz.sh: no target $target (one of: ${targets[*]}, all)" >&2; exit 2; fi

scratch=.build-fuzz
echo "fuzz.sh: building keyvault-fuzz with -sanitize=fuzzer,address in $scratch" >&2
swift build --scratch-path "$scratch" --product keyvault-fuzz \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING 2>&1 | { grep -vE 'warning: Cannot export local symbol' || true; } >&2
binary="$(swift build --scratch-path "$scratch" --show-bin-path)/keyvault-fuzz"

status=0
for t in "${run[@]}"; do
  work="$scratch/corpus/$t" crashes="$scratch/crashes/$t"
  mkdir -p "$work" "$crashes"
  marker="$scratch/started-$t"; touch "$marker"
  dict=()
  [ -f "Fuzz/Dictionaries/$t.dict" ] && dict=(-dict="Fuzz/Dictionaries/$t.dict")
  log="$scratch/fuzz-$t.log"
  set +e
  KEYVAULT_FUZZ_TARGET=$t LSAN_OPTIONS="suppressions=$PWD/Fuzz/lsan.supp:print_suppressions=0" "$binary" "$work" "Fuzz/Corpus/$t" -max_total_time="$seconds" -max_len=8192 \
    -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/" ${dict[@]+"${dict[@]}"} "$@" >"$log" 2>&1
  code=$?
  set -e
  runs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || echo "?")
  cov=$(grep -oE 'cov: [0-9]+' "$log" | tail -1 | grep -oE '[0-9]+' || echo "?")
  corpus=$(find "$work" -type f | wc -l)
  found=$(find "$crashes" -type f -newer "$marker" | wc -l)
  printf '%-13s %10s executions  cov %6s  corpus %5s  crashes %s\n' "$t" "$runs" "$cov" "$corpus" "$found"
  if [ $code -ne 0 ] || [ "$found" -ne 0 ]; then
    status=1
    echo "fuzz.sh: $t failed (exit $code); the log is $log, the inputs are in $crashes/" >&2
    grep -E 'Fatal error|ERROR: AddressSanitizer|ERROR: libFuzzer|SUMMARY' "$log" | head -5 >&2 || true
  fi
done
exit $status
