#!/usr/bin/env bash
# bench/server/lists.sh: filtered list endpoints on the 24k reference cluster (issue 12's goal:
# p99 <= 100 ms for a filtered page of 100 under 50 concurrent clients; `loomctl get ports
# --field device=<a CTSW> -o json` <= 300 ms end to end).
#
#   bench/server/lists.sh [--build DIR] [--seconds N] [--clients N]
#
# Applies configs/clusters/meta-24k-roce.yaml to an embedded PostgreSQL, runs `loomd serve
# --simulate`, then for each query runs wrk with N connections (default 50) for N seconds
# (default 10) and prints req/s, p50, p99 and non-2xx; then times loomctl 5 times.
# Clients and server share the machine's cores: every figure includes the clients' cost.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build; seconds=10; clients=50
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "lists.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
bin=$build/bin
for b in loomd loomctl; do
  [ -x "$bin/$b" ] || { echo "lists.sh: $bin/$b is not built (cmake --build $build --target $b)" >&2; exit 2; }
done
command -v wrk >/dev/null || { echo "lists.sh: wrk is missing (apt-get install wrk)" >&2; exit 2; }

. bench/lib/loomd.sh
loomd_start "$bin" configs/clusters/meta-24k-roce.yaml lists viewer
token=$token_viewer
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg); $clients connections, ${seconds} s each"
queries=(
  "ports?limit=100"
  "ports?limit=100&device=z3-ctsw07"
  "ports?limit=100&name__isw=z5-r100-rtsw"
  "ports?limit=100&peer=z3-ctsw07"
  "ports?limit=100&device=z2-r050-rtsw&peer__ic=ctsw"
  "links?limit=100&switch=z3-ctsw07"
  "links?limit=100&switch=z2-r050-rtsw&device=z2-ctsw04"
  "gpus?limit=100&rack=z4-r120"
  "gpus?limit=100&rack=z4-r120&rack=z4-r121&index__gte=4"
  "hosts?limit=100&zone=z6&state=in_service"
  "links?limit=100&health=failed"
)
printf '%-58s %9s %9s %9s %s\n' QUERY REQ/S P50 P99 NON-2XX
for q in "${queries[@]}"; do
  out=$(wrk -t2 -c"$clients" -d"${seconds}s" --latency -H "Authorization: Bearer $token" "$url/api/v1/$q")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  bad=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  printf '%-58s %9s %9s %9s %s\n' "$q" "$rps" "$p50" "$p99" "${bad:-0}"
done
echo "== loomctl get ports --field device=z3-ctsw07 -o json (5 runs, wall ms)"
for _ in 1 2 3 4 5; do
  t0=$(date +%s%N)
  LOOM_SERVER=$url LOOM_TOKEN=$token "$bin/loomctl" get ports --field device=z3-ctsw07 -o json >/dev/null
  echo "$(( ($(date +%s%N) - t0) / 1000000 )) ms"
done
echo "loomd: $(loomd_mem)"
