# Shared by the benchmark scripts (sourced, not run).

# cpu_ticks PID…: the clock ticks of CPU those processes used, user and system, with
# what their children that ended used (a postmaster's reaped backends and autovacuum
# workers): between two calls, the difference counts a child that came and went too.
cpu_ticks() {
  local total=0 pid fields
  for pid in "$@"; do
    fields=$(cut -d')' -f2 "/proc/$pid/stat" 2>/dev/null) || continue
    total=$((total + $(awk '{print $12 + $13 + $14 + $15}' <<<"$fields")))
  done
  echo $total
}

# start_server OUT COMMAND…: starts COMMAND (a `keyctl serve …`, perhaps under
# taskset) in the background with its output in OUT, waits until it says it serves,
# and sets `server` (its pid) and `url`; on failure prints its output and exits.
start_server() {
  local out=$1
  shift
  "$@" >"$out" 2>&1 &
  server=$!
  for _ in $(seq 100); do grep -q "serving on" "$out" 2>/dev/null && break; sleep 0.2; done
  if ! kill -0 "$server" 2>/dev/null || ! grep -q "serving on" "$out"; then
    echo "keyctl serve did not start:" >&2; cat "$out" >&2; exit 1
  fi
  url=$(grep -o 'http://127.0.0.1:[0-9]*' "$out" | head -n1)
}

# replay_rate WRK-OUT WRK-ERR: wrk's requests per second, written "≥ N (ran out)" when
# Benchmarks/replay.lua ran out of pre-signed requests before the run ended (wrk then
# still divides by the whole duration: the rate is the file's size, not the server's).
replay_rate() {
  local rps; rps=$(awk '/Requests\/sec/ {print $2}' <<<"$1")
  if [ -z "$rps" ]; then
    echo "replay_rate: wrk printed no Requests/sec:" >&2; cat "$2" >&2 2>/dev/null; echo "n/a"; return 1
  fi
  if grep -qF "replay.lua: ran out" "$2" 2>/dev/null; then echo "≥ $rps (ran out)"; else echo "$rps"; fi
}
