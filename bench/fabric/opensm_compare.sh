#!/usr/bin/env bash
# Loom vs OpenSM routing time on the same InfiniBand fabric: Loom's own graph written as an
# ibsim net file (loom_fabric_bench --write-ibsim, fabric::ibsimNet), one OpenSM sweep per
# engine on ibsim (tests/fabric/tools/ibsim-opensm), and Loom's full routing of that fabric
# (loom_fabric_bench). The load average is printed with every figure.
#   bench/fabric/opensm_compare.sh PODS [ENGINE...]     (default engines: ftree updn)
# PODS=24 is configs/clusters/meta-24k-ib.yaml; other counts are the same cabling rule
# (testbed::meta24kIb with that many pods). OpenSM needs ~2 GB and tens of minutes at 24k.
set -euo pipefail
cd "$(dirname "$0")/../.."
pods=${1:?usage: opensm_compare.sh PODS [ENGINE...]}
shift
engines=("$@")
[ ${#engines[@]} -gt 0 ] || engines=(ftree updn)
bench=build/bin/loom_fabric_bench
[ -x "$bench" ] || { echo "build loom_fabric_bench first" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
"$bench" --write-ibsim="$work/fabric.net" --ib-pods="$pods"
for engine in "${engines[@]}"; do
    echo "== OpenSM $engine, $pods pods, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
    OPENSM_TIMEOUT=${OPENSM_TIMEOUT:-3600} tests/fabric/tools/ibsim-opensm "$work/$engine" "$work/fabric.net" -R "$engine" || true
    echo "ftree_AB0B_lines $(grep -c 'ERR AB0B' "$work/$engine/osm.log" || true)"
    echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
    rm -rf "$work/$engine"
done
echo "== Loom full routing, load before: $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "$pods" = 24 ]; then filter='BM_FullRouting/ib24k'; else filter="BM_FullRoutingIbPods/ib_pods${pods}_"; fi
"$bench" --benchmark_filter="$filter" 2>&1 | grep -E 'BM_|^---' || echo "(no benchmark for $pods pods: add one to fabric_bench.cpp)"
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
