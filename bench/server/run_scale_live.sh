#!/usr/bin/env bash
# bench/server/run_scale_live.sh: loomd live at scale and the console against it (issue 14
# item 5, goals: loomd live at 98k <= 1 GB RSS; console first paint <= 1 s, repaint p99 <= 16 ms).
#
#   bench/server/run_scale_live.sh [--build DIR] [--spec FILE] [--iterations N] [--seconds N]
#                                  [--no-rollout] [--racks N] [--rss-only] [--heaptrack FILE]
#                                  [--clients N]
#
# Applies SPEC (default configs/clusters/meta-98k-roce.yaml) to an embedded PostgreSQL, runs
# `loomd serve --simulate`, moves every compute rack into service (7 operator `advance` calls
# per rack on 8 connections, as bench/web/run does; --no-rollout keeps the hall as applied, all
# planned, where the simulator reports nothing), then measures, printing the load average
# before each part:
#   1. apply time, time to /readyz, rollout time, loomd RSS and CPU (simulator driving the
#      whole hall) over --seconds;
#   2. GET /api/v1/hall: bytes and time, plain and gzip (what the console's Qt network access
#      manager asks for), and the 304 with If-None-Match;
#   3. the stream: stream_probe (time to the first snapshots, snapshot and per-second bytes),
#      plain and with permessage-deflate offered;
#   4. console_bench --server (the real console offscreen: connect -> first paint, repaint
#      p50/p99 over --iterations metric updates, RSS);
#   5. loomd RSS after all (VmRSS, VmHWM).
# --racks N moves only the first N compute racks into service (a partial rollout). --heaptrack
# FILE runs loomd under heaptrack (FILE.zst is written when loomd stops: heaptrack_print -f
# FILE.zst); slow, so pair it with --racks or --no-rollout. loomd runs with SPDLOG_LEVEL=debug:
# every live-state refresh is timed in its log, and the script prints their median and max.
# --clients N keeps N more stream clients (ws_fanout: gpu/link util and health) subscribed from
# part 2 to the end, the way consoles and web dashboards left open hold loomd's memory (issue 37
# item 3); their frames and latency are printed at the end.
# --rss-only stops after part 1 and prints where loomd's memory is (smaps_rollup, the largest
# mappings, glibc's arenas via malloc_info is not reachable from outside: anonymous = heap).
# Needs loomd, stream_probe and console_bench built (LOOM_BUILD_BENCH=ON; --rss-only: loomd).
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build; spec=configs/clusters/meta-98k-roce.yaml; iterations=60; seconds=20; rollout=1; rssonly=0
racks=0; heaptrack=; clients=0
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --spec) spec=$2; shift 2 ;;
    --iterations) iterations=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --no-rollout) rollout=0; shift ;;
    --rss-only) rssonly=1; shift ;;
    --racks) racks=$2; shift 2 ;;
    --heaptrack) heaptrack=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    -h|--help) sed -n '2,31p' "$0"; exit 0 ;;
    *) echo "run_scale_live.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
bin=$build/bin
needed="loomd stream_probe console_bench"; [ "$rssonly" = 1 ] && needed=loomd
case "$clients" in ''|*[!0-9]*) echo "run_scale_live.sh: --clients needs a number, not '$clients'" >&2; exit 2 ;; esac
[ "$clients" -gt 0 ] && needed="$needed ws_fanout"
for b in $needed; do
  [ -x "$bin/$b" ] || { echo "run_scale_live.sh: $bin/$b is not built (cmake --build $build --target $b)" >&2; exit 2; }
done
[ -f "$spec" ] || { echo "run_scale_live.sh: no spec $spec" >&2; exit 2; }
case "$racks" in ''|*[!0-9]*) echo "run_scale_live.sh: --racks needs a number, not '$racks'" >&2; exit 2 ;; esac
if [ -n "$heaptrack" ]; then
  command -v heaptrack >/dev/null || { echo "run_scale_live.sh: heaptrack is not installed" >&2; exit 2; }
  export LOOMD_WRAP="heaptrack -o $heaptrack"
fi
export SPDLOG_LEVEL=${SPDLOG_LEVEL:-debug}
load() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"; }
# The live-state refreshes loomd logged so far: count, median and max of their wall times.
refreshes() {
  { grep -o 'live state: [a-z ]* in [0-9]* ms' "$work/loomd.log" || true; } | awk '{print $(NF-1), $3}' |
    sort -n | awk '{t[NR]=$1; if ($2 == "reloaded") f++} END {if (NR) printf "live-state refreshes: %d (%d full reloads), median %d ms, max %d ms\n", NR, f, t[int((NR+1)/2)], t[NR]}'
}

. bench/lib/loomd.sh
load
t0=$(date +%s.%N)
loomd_start "$bin" "$spec" scale-live viewer operator
t1=$(date +%s.%N)
echo "apply + token + serve until /readyz: $(echo "$t1 - $t0" | bc) s"; loomd_mem
token=$token_viewer
hostport=${url#http://}
if [ "$rollout" = 1 ]; then
  echo "== every compute rack into service"; load
  refreshes
  python3 bench/server/advance_racks.py "$url" "$token_operator" "$racks"
  loomd_mem; refreshes
fi
sleep 10  # the live state reloads; the simulator picks the racks up
echo "== loomd with the simulator, ${seconds} s"; load
a=$(loomd_cpu); sleep "$seconds"; b=$(loomd_cpu)
echo "loomd cores: $(echo "scale=3; ($b - $a) / $seconds" | bc)"; loomd_mem
echo "loomd CPU since start: $b s"; refreshes
if [ "$rssonly" = 1 ]; then
  echo "== where loomd's memory is"; load
  grep -E '^(Rss|Pss_Anon|Pss_File|Anonymous|Private_Dirty):' "/proc/$pid/smaps_rollup" || true
  echo "largest mappings (RSS kB, name):"
  awk '/^[0-9a-f]+-[0-9a-f]+ /{name=($6==""?"[anon]":$6)} /^Rss:/{rss[name]+=$2} END{for (n in rss) print rss[n], n}' \
    "/proc/$pid/smaps" | sort -rn | head -8
  grep -E '^(Threads|VmRSS|VmHWM|RssAnon|RssFile):' "/proc/$pid/status"
  exit 0
fi

fanout=
if [ "$clients" -gt 0 ]; then
  echo "== $clients more stream clients (ws_fanout) until the end"; load
  "$bin/ws_fanout" --url "$hostport" --token "$token" --clients "$clients" --seconds 100000 \
    > "$work/ws_fanout.json" 2>&1 &
  fanout=$!
  sleep 15  # their snapshots go out
  loomd_mem
fi

echo "== GET /api/v1/hall"; load
for enc in identity gzip; do
  for i in 1 2 3; do
    curl -s -o /dev/null -H "Authorization: Bearer $token" -H "Accept-Encoding: $enc" \
      -w "$enc: %{http_code} %{size_download} bytes in %{time_total} s (first byte %{time_starttransfer} s)\n" \
      "$url/api/v1/hall"
  done
done
etag=$(curl -s -D - -o /dev/null -H "Authorization: Bearer $token" "$url/api/v1/hall" | tr -d '\r' |
  awk 'tolower($1) == "etag:" {print $2}')
curl -s -o /dev/null -H "Authorization: Bearer $token" -H "If-None-Match: $etag" \
  -w "If-None-Match: %{http_code} in %{time_total} s\n" "$url/api/v1/hall"
loomd_mem

echo "== stream, one client, 10 s"; load
"$bin/stream_probe" --url "$hostport" --token "$token" --seconds 10 || true
echo "== stream, one client offering permessage-deflate, 10 s"; load
"$bin/stream_probe" --url "$hostport" --token "$token" --seconds 10 --deflate || true
loomd_mem

echo "== console (offscreen) against loomd, $iterations repaints"; load
QT_QPA_PLATFORM=offscreen "$bin/console_bench" --server "$url" --token "$token" --iterations "$iterations"
load
echo "== loomd after all"; loomd_mem
if [ -n "$fanout" ]; then
  kill -0 "$fanout" 2>/dev/null && echo "the $clients ws_fanout clients were connected to the end" ||
    echo "ws_fanout ended early: $(tail -3 "$work/ws_fanout.json")"
  kill "$fanout" 2>/dev/null || true
  wait "$fanout" 2>/dev/null || true
fi
