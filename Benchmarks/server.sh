#!/usr/bin/env bash
# Load test of `keyctl serve` on loopback, beside nginx serving a static body, in
# one run. The server (and nginx) run on core 0, wrk on core 1.
#
#   bash Benchmarks/server.sh            # ~3 minutes; prints a Markdown table
#
# Needs wrk and nginx (apt-get install wrk nginx-light) and ~2 GiB of disk.
set -euo pipefail
cd "$(dirname "$0")/.."
source Benchmarks/lib.sh
duration=${BENCH_DURATION:-10}
connections=${BENCH_CONNECTIONS:-32}
command -v wrk >/dev/null && command -v nginx >/dev/null || {
  echo "installing wrk and nginx" >&2; apt-get install -y -qq wrk nginx-light >/dev/null; }
swift build -c release --product keyctl >&2
swift build -c release --product keyvault-bench >&2
bin=.build/release
work=$(mktemp -d)
trap 'kill $(jobs -p) 2>/dev/null; rm -rf "$work"' EXIT

wrk_run() {  # wrk_run LABEL URL [FILE]: prints "label|rps|p50|p99|non2xx"
  local label=$1 url=$2 file=${3:-}
  local args=(-t1 -c"$connections" -d"${duration}s" --latency)
  [ -n "$file" ] && args+=(-s Benchmarks/replay.lua "$url" -- "$file") || args+=("$url")
  local out; out=$(taskset -c 1 wrk "${args[@]}" 2>"$work/wrk.err")
  local rps p50 p99 bad
  rps=$(replay_rate "$out" "$work/wrk.err")
  p50=$(awk '$1=="50%" {print $2}' <<<"$out")
  p99=$(awk '$1=="99%" {print $2}' <<<"$out")
  bad=$(awk '/Non-2xx/ {print $5}' <<<"$out"); bad=${bad:-0}
  echo "$label|$rps|$p50|$p99|$bad"
}

# nginx: the ceiling of this machine's loopback HTTP.
mkdir -p "$work/nginx/logs"
cat > "$work/nginx/nginx.conf" <<CONF
daemon off; worker_processes 1; error_log $work/nginx/logs/error.log; pid $work/nginx/nginx.pid;
events { worker_connections 1024; }
http { access_log off; server { listen 127.0.0.1:18090; location / { default_type application/json;
  return 200 '{"boxes":[{"generation":1,"recipient":"0123456789abcdef0123456789abcdef","box":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA","signer":"0123456789abcdef0123456789abcdef","signature":"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="}]}'; } } }
CONF
taskset -c 0 nginx -p "$work/nginx" -c "$work/nginx/nginx.conf" &
sleep 1
rows=("$(wrk_run "nginx, static body of the same size" http://127.0.0.1:18090/)")
kill %1; wait %1 2>/dev/null || true

for accounts in 100 100000; do
  db="$work/kv-$accounts.sqlite"
  echo "setting up $accounts accounts…" >&2
  "$bin/keyvault-bench" server-setup "$db" "$accounts" "$work/devices.json" >&2
  taskset -c 0 "$bin/keyctl" serve --port 18091 --database "$db" --log-level warning > "$work/serve.out" &
  server=$!
  for _ in $(seq 50); do grep -q serving "$work/serve.out" 2>/dev/null && break; sleep 0.2; done
  # Enough unique requests for the whole run at up to 40k/s (each is sent once).
  "$bin/keyvault-bench" sign-requests "$work/devices.json" $((duration * 25000)) boxes "$work/reads.req"
  rows+=("$(wrk_run "read of this device's key boxes, Ed25519 signature per request, $accounts accounts" http://127.0.0.1:18091 "$work/reads.req")")
  "$bin/keyvault-bench" session-requests "$work/devices.json" $((duration * 40000)) http://127.0.0.1:18091 "$work/session.req"
  rows+=("$(wrk_run "read of this device's key boxes, session MAC per request, $accounts accounts" http://127.0.0.1:18091 "$work/session.req")")
  if [ "$accounts" = 100 ]; then
    "$bin/keyvault-bench" sign-requests "$work/devices.json" 15000 upload "$work/uploads.req"  # up to 3,000/s
    rows+=("$(duration=5 wrk_run "signed 64 KiB attachment upload (new content each)" http://127.0.0.1:18091 "$work/uploads.req")")
  fi
  kill -TERM $server; wait $server 2>/dev/null || true
  rm -f "$work"/*.req
done

echo "Measured $(date -u +%Y-%m-%d) on $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores;"
echo "server pinned to core 0, wrk -t1 -c$connections -d${duration}s on core 1, HTTP/1.1 keep-alive on loopback."
echo
echo "| what | requests/s | p50 | p99 | non-2xx |"
echo "| --- | ---: | ---: | ---: | ---: |"
for row in "${rows[@]}"; do IFS='|' read -r l r p50 p99 bad <<<"$row"; echo "| $l | $r | $p50 | $p99 | $bad |"; done
trap - EXIT
kill $(jobs -p) 2>/dev/null || true
rm -rf "$work"
exit 0
