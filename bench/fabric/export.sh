#!/usr/bin/env bash
# The opensm export of the 24k InfiniBand reference end to end (spec load, routing, streamed
# writing): wall, CPU, peak RSS and bytes per variant, with the load average before each run.
#   bench/fabric/export.sh [SPEC] [OUTDIR]     (default: meta-24k-ib, a temporary directory)
# Needs build/bin/loomctl. OUTDIR needs ~4 GB free; each variant's files are removed after it.
set -euo pipefail
cd "$(dirname "$0")/../.."
spec=${1:-configs/clusters/meta-24k-ib.yaml}
out=${2:-$(mktemp -d)}
loomctl=build/bin/loomctl
[ -x "$loomctl" ] || { echo "build loomctl first: cmake --build build --target loomctl" >&2; exit 2; }
printf '%-22s %8s %8s %8s %8s %12s  %s\n' variant wall_s user_s sys_s rss_mb bytes load_before
variants=("" "--names" "--lids-only" "--gzip" "--gzip --names" "--gzip --lids-only")
# LOOM_EXPORT_VARIANTS=",--names" runs only those (comma-separated; empty: the default).
if [ -n "${LOOM_EXPORT_VARIANTS:-}" ]; then IFS=, read -r -a variants <<< "$LOOM_EXPORT_VARIANTS"; fi
for variant in "${variants[@]}"; do
    rm -rf "$out/export"
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    # shellcheck disable=SC2086
    /usr/bin/time -f '%e %U %S %M' -o "$out/time.txt" \
        "$loomctl" fabric export -f "$spec" --format opensm -o "$out/export" $variant > "$out/stdout.txt"
    read -r wall user sys rss < "$out/time.txt"
    bytes=$(du -cb "$out"/export/* | tail -1 | cut -f1)
    printf '%-22s %8s %8s %8s %8d %12s  %s\n' "${variant:-(default)}" "$wall" "$user" "$sys" \
        $((rss / 1024)) "$bytes" "$load"
    rm -rf "$out/export"
done
