#!/usr/bin/env bash
# bench/server/run.sh: loomd under load with the 24k reference cluster live.
#
#   bench/server/run.sh [--build DIR] [--seconds N] [--clients N]
#
# Starts an embedded PostgreSQL in a temp state dir, applies configs/clusters/meta-24k-roce.yaml,
# creates an admin token, runs `loomd serve --simulate`, then measures:
#   1. WebSocket fan-out: ws_fanout with N clients (default 100) subscribed to every data topic
#      at 1 Hz: p50/p99 server-to-client latency, loomd CPU (cores) over the run.
#   2. API under 200 concurrent connections: wrk -t2 -c200 on /api/v1/racks?limit=100,
#      /api/v1/racks/<one>, /api/v1/summary, /api/v1/hall (req/s, p50, p99).
#   3. loomd RSS (VmRSS, VmHWM) after each part.
# Everything is stopped at the end. Needs wrk (scripts/bootstrap installs it) and a build with
# loomd and ws_fanout (LOOM_BUILD_BENCH=ON).
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib/args.sh
build=build; seconds=30; clients=100
bench_args build seconds clients -- "$@"
bench_need_built loomd ws_fanout
bench_need_tool wrk

. bench/lib/loomd.sh
loomd_start "$bin" configs/clusters/meta-24k-roce.yaml server admin
token=$token_admin
hostport=${url#http://}
sleep 5  # the first ticks and the hall layout
cpu() { awk '{print $14+$15}' "/proc/$pid/stat"; }
rss() { grep -E 'VmRSS|VmHWM' "/proc/$pid/status" | tr -s ' \t' ' ' | tr '\n' ' '; echo; }
echo "== load average: $(bench_load)"
echo "== idle (simulator only), 10 s"
a=$(cpu); sleep 10; b=$(cpu); echo "loomd cores: $(echo "scale=3; ($b-$a)/100/10" | bc)"; rss

echo "== WebSocket fan-out: $clients clients, ${seconds} s"
a=$(cpu); t0=$(date +%s.%N)
"$bin/ws_fanout" --url "$hostport" --token "$token" --clients "$clients" --seconds "$seconds"
b=$(cpu); t1=$(date +%s.%N)
echo "loomd cores: $(echo "scale=3; ($b-$a)/100/($t1-$t0)" | bc)"; rss

for path in "/api/v1/racks?limit=100" "/api/v1/racks/z3-r100" "/api/v1/summary" "/api/v1/hall"; do
  echo "== wrk -t2 -c200 -d15s $path"
  a=$(cpu)
  wrk -t2 -c200 -d15s --latency -H "Authorization: Bearer $token" "$url$path" |
    grep -E 'Requests/sec|^ +50%|^ +99%|Non-2xx|Socket errors|Transfer/sec'
  b=$(cpu); echo "loomd cores: $(echo "scale=2; ($b-$a)/100/15" | bc)"; rss
done
