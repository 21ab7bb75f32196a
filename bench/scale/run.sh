#!/usr/bin/env bash
# The issue 14 cost table: loom_bench_scale (routing, summary, reroute, exports) and
# loom_bench_apply (first apply, no-op, raw COPY reference) on RoCE clusters of the 24k design
# with 3 / 8 / 16 / 32 zones (9,216 / 24,576 / 49,152 / 98,304 GPUs). The 3- and 16-zone specs
# are meta-98k-roce.yaml with another zone count (written to a temp dir); 8 and 32 are the
# shipped meta-24k-roce and meta-98k-roce. Then InfiniBand routing (loom_bench_scale) on
# meta-24k-ib and on its 64-pod variant (65,536 GPUs, 1,024 cores: the largest three-tier fat
# tree of 64-port switches, so the largest IB cluster a spec can describe at full bisection).
# Prints `uptime` before every run.
#   cmake --build build --target loom_bench_scale loom_bench_apply && bench/scale/run.sh [OUT]
set -euo pipefail
cd "$(dirname "$0")/../.."
out=${1:-/tmp/loom-scale-bench}
mkdir -p "$out"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/^    - count: 32$/    - count: 3/; s/name: meta-98k-roce/name: roce-3zones/' configs/clusters/meta-98k-roce.yaml >"$tmp/roce-9k.yaml"
sed 's/^    - count: 32$/    - count: 16/; s/name: meta-98k-roce/name: roce-16zones/' configs/clusters/meta-98k-roce.yaml >"$tmp/roce-49k.yaml"
for size in 9k 24k 49k 98k; do
  case $size in
    9k) spec=$tmp/roce-9k.yaml ;;
    24k) spec=configs/clusters/meta-24k-roce.yaml ;;
    49k) spec=$tmp/roce-49k.yaml ;;
    98k) spec=configs/clusters/meta-98k-roce.yaml ;;
  esac
  for bench in scale apply; do
    f=$out/$bench-$size.txt
    { echo "# $(date -u +%FT%TZ) $(uptime)"; } >"$f"
    if [ $bench = scale ]; then
      build/bin/loom_bench_scale "$spec" >>"$f"
    else
      build/bin/loom_bench_apply "$spec" --no-logall >>"$f"
    fi
    echo "# after: $(uptime)" >>"$f"
    echo "== $f"; cat "$f"
  done
done
sed 's/^    - count: 24$/    - count: 64/; s/^      count: 512$/      count: 1024/; s/name: meta-24k-ib/name: ib-64pods/' configs/clusters/meta-24k-ib.yaml >"$tmp/ib-65k.yaml"
for size in 24k 65k; do
  case $size in
    24k) spec=configs/clusters/meta-24k-ib.yaml ;;
    65k) spec=$tmp/ib-65k.yaml ;;
  esac
  f=$out/scale-ib-$size.txt
  { echo "# $(date -u +%FT%TZ) $(uptime)"; } >"$f"
  build/bin/loom_bench_scale "$spec" --reps 11 >>"$f"
  echo "# after: $(uptime)" >>"$f"
  echo "== $f"; cat "$f"
done
