#!/usr/bin/env bash
# bench/server/run_live.sh: change-to-live-view latency with the 24k reference cluster (issue 11).
#
#   bench/server/run_live.sh [--build DIR] [--repeats N] [--spec FILE]
#
# Starts an embedded PostgreSQL in a temp state dir, applies the spec (default
# configs/clusters/meta-24k-roce.yaml), runs `loomd serve --simulate`, then live_latency:
# a whole zone (192 racks) moved into service at once (time until hall and fabric agree, loomd
# CPU), rack transition -> stream and link failure -> stream p50/p99. Prints loomd RSS at the end.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build; repeats=50; spec=configs/clusters/meta-24k-roce.yaml
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --repeats) repeats=$2; shift 2 ;;
    --spec) spec=$2; shift 2 ;;
    -h|--help) sed -n '2,10p' "$0"; exit 0 ;;
    *) echo "run_live.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
bin=$build/bin
for b in loomd live_latency; do
  [ -x "$bin/$b" ] || { echo "run_live.sh: $bin/$b is not built (cmake --build $build --target $b)" >&2; exit 2; }
done
. bench/lib/loomd.sh
loomd_start "$bin" "$spec" live admin
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin/live_latency" --url "${url#http://}" --token "$token_admin" --pid "$pid" --repeats "$repeats"
loomd_mem
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
