#!/usr/bin/env bash
# bench/scale/run_196k.sh: beyond one building (issue 37 item 5) — the 196,608-GPU reference
# (configs/clusters/meta-196k-roce.yaml, 64 AI zones) applied, routed, served and painted on
# this machine, one part after the other, the load average printed beside every figure.
#
#   bench/scale/run_196k.sh [--build DIR] [--spec FILE] [--racks N] [--clients N]
#                           [--no-browser] [--keep-log FILE]
#
#   1. route (offline): `loom_bench_scale SPEC --summary-only` (summarised routing CPU, RSS,
#      one-link reroutes) and `loomctl fabric verify -f SPEC` under /usr/bin/time (wall, CPU,
#      peak RSS);
#   2. apply: `loomd apply -f SPEC` into a fresh embedded PostgreSQL under /usr/bin/time (wall,
#      CPU, peak RSS of the client), then the no-op re-apply, then the database's size
#      (pg_database_size) and the state directory's on disk;
#   3. serve: `loomd serve --simulate` (time to /readyz, VmRSS with the hall as applied), then
#      --racks N compute racks (default all) into service by operator `advance` calls (8
#      connections, as bench/server/run_scale_live.sh does), VmRSS after and its maximum over
#      the rollout, `GET /api/v1/hall` (plain, gzip, ?format=compact), --clients N stream
#      clients (ws_fanout, default 4) subscribed for 30 s: VmRSS max while they are;
#   4. paint: one Chromium (bench/web/browsers.mjs --url, needs node and tests/web/node_modules)
#      against this loomd: navigation -> complete hall map, first-load bytes, tick p50/p99,
#      JS heap; skipped with --no-browser or when another browsers.mjs is running (the web
#      engineers' bench: two browsers at once would measure each other);
#   5. loomd after all: VmRSS, VmHWM, CPU.
# Needs loomd, loomctl, loom_bench_scale and ws_fanout built (LOOM_BUILD_BENCH=ON) and psql.
# Heavy (~2 GB of RAM between loomd, PostgreSQL and the browser, ~10 min at load 2): run alone.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build; spec=configs/clusters/meta-196k-roce.yaml; racks=0; clients=4; browser=1; keeplog=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --spec) spec=$2; shift 2 ;;
    --racks) racks=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --no-browser) browser=0; shift ;;
    --keep-log) keeplog=$2; shift 2 ;;
    -h|--help) sed -n '2,27p' "$0"; exit 0 ;;
    *) echo "run_196k.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
bin=$build/bin
for b in loomd loomctl loom_bench_scale ws_fanout; do
  [ -x "$bin/$b" ] || { echo "run_196k.sh: $bin/$b is not built (cmake --build $build --target $b)" >&2; exit 2; }
done
[ -f "$spec" ] || { echo "run_196k.sh: no spec $spec" >&2; exit 2; }
for n in "$racks" "$clients"; do
  case "$n" in ''|*[!0-9]*) echo "run_196k.sh: --racks and --clients need a number, not '$n'" >&2; exit 2 ;; esac
done
command -v psql >/dev/null || { echo "run_196k.sh: psql is needed to read the database's size" >&2; exit 2; }

. bench/lib/serve_ready.sh
load() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"; }
timed() { /usr/bin/time -f "wall %e s, user %U s, sys %S s, peak RSS %M KB" "$@"; }
work=$(mktemp -d /tmp/loom-196k-bench.XXXXXX); chmod 755 "$work"
pid=; sampler=; fanout=
cleanup() {
  [ -n "$fanout" ] && { kill "$fanout" 2>/dev/null || true; wait "$fanout" 2>/dev/null || true; }
  [ -n "$sampler" ] && { kill "$sampler" 2>/dev/null || true; wait "$sampler" 2>/dev/null || true; }
  [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  [ -n "$keeplog" ] && [ -f "$work/loomd.log" ] && cp "$work/loomd.log" "$keeplog"
  rm -rf "$work"
}
trap cleanup EXIT
state=$work/state

echo "== 1. route (offline): loom_bench_scale $spec --summary-only"; load
timed "$bin/loom_bench_scale" "$spec" --summary-only
echo "== loomctl fabric verify -f $spec"; load
timed "$bin/loomctl" fabric verify -f "$spec"

echo "== 2. loomd apply -f $spec (fresh embedded PostgreSQL: initdb included)"; load
timed "$bin/loomd" apply -f "$spec" --state-dir "$state" | tail -n 1
echo "== no-op re-apply"; load
timed "$bin/loomd" apply -f "$spec" --state-dir "$state" | tail -n 1
viewer=$("$bin/loomd" token create --role viewer --name b196-viewer --state-dir "$state" 2>/dev/null | tail -n 1)
operator=$("$bin/loomd" token create --role operator --name b196-operator --state-dir "$state" 2>/dev/null | tail -n 1)

echo "== 3. loomd serve --simulate"; load
t0=$(date +%s.%N)
LOOM_PROVISIONING_DELAY_MS=0 SPDLOG_LEVEL=${SPDLOG_LEVEL:-debug} \
  "$bin/loomd" serve --simulate --listen 127.0.0.1:0 --state-dir "$state" >"$work/loomd.log" 2>&1 &
pid=$!
serve_ready "$work/loomd.log" "$pid"  # 5 minutes at most
kb() { grep -E "^$1:" "/proc/$pid/status" | tr -s ' \t' ' ' | cut -d' ' -f2; }
mem() { echo "VmRSS $(( $(kb VmRSS) / 1024 )) MB, VmHWM $(( $(kb VmHWM) / 1024 )) MB; $(load)"; }
cpu() { awk '{print ($14+$15)/100}' "/proc/$pid/stat"; }
echo "serve until /readyz: $(echo "$(date +%s.%N) - $t0" | bc) s"; mem
pidfile=$(find "$state" -name postmaster.pid | head -n 1)
psql -X -q -At -h "$(sed -n 5p "$pidfile")" -p "$(sed -n 4p "$pidfile")" -d loom -U postgres \
  -c "SELECT 'database size: ' || pg_size_pretty(pg_database_size('loom'))"
echo "state directory on disk: $(du -sh "$state" | cut -f1)"
# loomd's VmRSS every second from here on: its maximum per part.
(while kill -0 "$pid" 2>/dev/null; do echo "$(date +%s) $(kb VmRSS)"; sleep 1; done >"$work/rss") &
sampler=$!
maxsince() { awk -v t="$1" 'BEGIN {m = 0} $1 >= t && $2 + 0 > m {m = $2 + 0} END {printf "%d MB", m / 1024}' "$work/rss"; }

echo "== compute racks into service (7 operator advances each, 8 connections)"; load
t1=$(date +%s)
python3 bench/server/advance_racks.py "$url" "$operator" "$racks" 300
echo "VmRSS max over the rollout: $(maxsince "$t1")"
sleep 15  # the live state reloads; the simulator picks the racks up
echo "idle, hall in service, simulator running:"; mem
a=$(cpu); sleep 20; b=$(cpu)
echo "loomd cores with the simulator (20 s): $(echo "scale=3; ($b - $a) / 20" | bc)"

echo "== GET /api/v1/hall"; load
for q in "" "?format=compact"; do
  for enc in identity gzip; do
    for _ in 1 2; do
      curl -s -o /dev/null -H "Authorization: Bearer $viewer" -H "Accept-Encoding: $enc" \
        -w "hall$q $enc: %{http_code} %{size_download} bytes in %{time_total} s\n" "$url/api/v1/hall$q"
    done
  done
done
mem

t2=$(date +%s)
if [ "$clients" -gt 0 ]; then
  echo "== $clients stream clients (ws_fanout: gpu/link util and health) for 30 s"; load
  "$bin/ws_fanout" --url "${url#http://}" --token "$viewer" --clients "$clients" --seconds 30 \
    >"$work/ws_fanout.json" 2>&1 &
  fanout=$!
  wait "$fanout" || true; fanout=
  cat "$work/ws_fanout.json"; echo
  echo "VmRSS max with the stream clients and /hall: $(maxsince "$t2")"; mem
fi

echo "== 4. paint: Chromium against this loomd (bench/web/browsers.mjs --url)"; load
if [ "$browser" = 0 ]; then
  echo "skipped (--no-browser)"
elif pgrep -f 'bench/web/browsers\.mjs' >/dev/null; then
  echo "skipped: another bench/web/browsers.mjs is running ($(pgrep -af 'bench/web/browsers\.mjs' | head -n 1))"
elif ! command -v node >/dev/null || [ ! -d tests/web/node_modules/puppeteer-core ]; then
  echo "skipped: node or tests/web/node_modules/puppeteer-core missing (scripts/bootstrap)"
else
  t3=$(date +%s)
  node bench/web/browsers.mjs --url "$url" --viewer "$viewer" --spec "$spec" --browsers chromium \
    --rollout 0 --seconds 30 || echo "browsers.mjs failed"
  echo "loomd VmRSS max while the browser was open: $(maxsince "$t3")"
fi

echo "== 5. loomd after all"; mem
echo "loomd CPU since start: $(cpu) s"
{ grep -o 'live state: [a-z ]* in [0-9]* ms' "$work/loomd.log" || true; } | awk '{print $(NF-1)}' | sort -n |
  awk '{t[NR]=$1} END {if (NR) printf "live-state refreshes: %d, median %d ms, max %d ms\n", NR, t[int((NR+1)/2)], t[NR]}'
grep -E '\[(error|critical)\]' "$work/loomd.log" | head -5 || true
