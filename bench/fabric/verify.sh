#!/usr/bin/env bash
# loomctl fabric verify end to end (spec load, routing, check): wall, CPU and peak RSS of the
# summarised check (the default on RoCE) and of the full per-rack one, with the load average
# before each run.
#   bench/fabric/verify.sh [SPEC] [RUNS]     (default: meta-98k-roce, 1 run each)
# Needs build/bin/loomctl. LOOM_VERIFY_VARIANTS=",--per-rack" picks the variants (empty: default).
set -euo pipefail
cd "$(dirname "$0")/../.."
spec=${1:-configs/clusters/meta-98k-roce.yaml}
runs=${2:-1}
loomctl=build/bin/loomctl
[ -x "$loomctl" ] || { echo "build loomctl first: cmake --build build --target loomctl" >&2; exit 2; }
variants=("" "--per-rack")
if [ -n "${LOOM_VERIFY_VARIANTS:-}" ]; then IFS=, read -r -a variants <<< "$LOOM_VERIFY_VARIANTS"; fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
printf '%-12s %8s %8s %8s %8s %10s  %s\n' variant wall_s user_s sys_s rss_mb check_ms load_before
for ((i = 0; i < runs; i++)); do
    for variant in "${variants[@]}"; do
        load=$(cut -d' ' -f1-3 /proc/loadavg)
        # shellcheck disable=SC2086
        /usr/bin/time -f '%e %U %S %M' -o "$tmp/time.txt" \
            "$loomctl" fabric verify -f "$spec" $variant > "$tmp/out.txt" || true
        read -r wall user sys rss < "$tmp/time.txt"
        check=$(sed -n 's/^\(OK\|FAILED\) (\([0-9]*\) ms)$/\2/p' "$tmp/out.txt")
        printf '%-12s %8s %8s %8s %8d %10s  %s\n' "${variant:-(default)}" "$wall" "$user" "$sys" \
            $((rss / 1024)) "$check" "$load"
    done
done
