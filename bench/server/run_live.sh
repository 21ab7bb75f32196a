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
work=$(mktemp -d /tmp/loom-live-bench.XXXXXX); chmod 755 "$work"
pid=
cleanup() { [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }; rm -rf "$work"; }
trap cleanup EXIT
echo "== apply $spec (embedded PostgreSQL in $work)"
"$bin/loomd" apply -f "$spec" --state-dir "$work/state" >/dev/null
token=$("$bin/loomd" token create --role admin --name bench --state-dir "$work/state" 2>/dev/null | tail -n 1)
"$bin/loomd" serve --simulate --listen 127.0.0.1:0 --state-dir "$work/state" >"$work/loomd.log" 2>&1 &
pid=$!
url=
for _ in $(seq 1 300); do
  url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/loomd.log" | head -n 1 || true)
  [ -n "$url" ] && break; sleep 0.2
done
[ -n "$url" ] || { cat "$work/loomd.log"; exit 1; }
for _ in $(seq 1 100); do curl -fs "$url/readyz" >/dev/null && break; sleep 0.2; done
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
"$bin/live_latency" --url "${url#http://}" --token "$token" --pid "$pid" --repeats "$repeats"
grep -E 'VmRSS|VmHWM' "/proc/$pid/status" | tr -s ' \t' ' ' | tr '\n' ' '; echo
echo "== load average: $(cut -d' ' -f1-3 /proc/loadavg)"
