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
. bench/lib/args.sh
build=build; repeats=50; spec=configs/clusters/meta-24k-roce.yaml
bench_args build repeats spec -- "$@"
bench_need_built loomd live_latency
. bench/lib/loomd.sh
loomd_start "$bin" "$spec" live admin
echo "== load average: $(bench_load)"
"$bin/live_latency" --url "${url#http://}" --token "$token_admin" --pid "$pid" --repeats "$repeats"
loomd_mem
echo "== load average: $(bench_load)"
