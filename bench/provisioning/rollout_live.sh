#!/usr/bin/env bash
# bench/provisioning/rollout_live.sh: a whole hall rolled into service the way an admin does it
# (issue 37 item 2; goal at 98k: <= 10 minutes, loomd <= 1 GB throughout, the live state
# converged within 2 s of the last transition).
#
#   bench/provisioning/rollout_live.sh [--build DIR] [--spec FILE] [--plan FILE] [--limit S]
#                                      [--trace] [--keep-log FILE] [--clients N] [--hold FILE]
#
# Defaults: configs/clusters/meta-98k-roce.yaml and configs/phases/meta-98k-32phase.yaml.
# What it runs is what an admin runs, nothing else drives loomd:
#   loomd apply -f SPEC; loomd token create --role admin
#   LOOM_PROVISIONING_DELAY_MS=0 loomd serve --simulate
#   loomctl phase apply -f PLAN && loomctl phase start
# and then only watches: every second loomd's VmRSS (its maximum over the run is reported),
# every 5 s the phases' progress read from PostgreSQL directly (psql on the embedded server's
# socket, so watching costs loomd nothing). When no phase is pending or running it prints:
#   - rollout wall (phase start -> last rack transition committed), racks in service, phases
#     completed/halted, audit rows, transitions per second;
#   - loomd VmRSS max over the run and VmHWM;
#   - convergence: the first live-state refresh loomd logged after the last transition (its
#     debug log), and /api/v1/hall's and /api/v1/fabric/degradation's in-service racks against
#     the database's;
#   - loomd's CPU and the PostgreSQL backends' CPU over the rollout.
# --trace samples pg_stat_activity every 5 s (the longest-running statement and lock waits) and
# enables log_min_duration_statement = 200 ms, whose lines are summarised at the end.
# --clients N: after the rollout, loomd as the hall is watched (issue 37 item 3): N stream
# clients (ws_fanout: gpu/link util and health snapshots, then deltas), /hall fetched, the
# console (console_bench, when built) connected; loomd's VmRSS max over that part and VmHWM.
# --hold FILE (with --clients): after that part, loomd and the N stream clients stay up; FILE gets
# "URL ADMIN-TOKEN LOOMD-PID" and the script waits until FILE is removed (or loomd ends), so a real
# browser or console can be pointed at the watched loomd (bench/web/browsers.mjs --url URL
# --viewer TOKEN --rollout 0), then prints loomd's VmRSS max over the hold and VmHWM.
# --limit S gives up after S seconds (default 3600). The load average is printed beside each part.
# Needs loomd and loomctl built.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build; spec=configs/clusters/meta-98k-roce.yaml; plan=configs/phases/meta-98k-32phase.yaml
limit=3600; trace=0; keeplog=; clients=0; hold=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --spec) spec=$2; shift 2 ;;
    --plan) plan=$2; shift 2 ;;
    --limit) limit=$2; shift 2 ;;
    --trace) trace=1; shift ;;
    --keep-log) keeplog=$2; shift 2 ;;
    --clients) clients=$2; shift 2 ;;
    --hold) hold=$2; shift 2 ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "rollout_live.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
bin=$build/bin
for b in loomd loomctl; do
  [ -x "$bin/$b" ] || { echo "rollout_live.sh: $bin/$b is not built (cmake --build $build --target $b)" >&2; exit 2; }
done
for f in "$spec" "$plan"; do [ -f "$f" ] || { echo "rollout_live.sh: no file $f" >&2; exit 2; }; done
case "$limit" in ''|*[!0-9]*) echo "rollout_live.sh: --limit needs seconds, not '$limit'" >&2; exit 2 ;; esac
case "$clients" in ''|*[!0-9]*) echo "rollout_live.sh: --clients needs a number, not '$clients'" >&2; exit 2 ;; esac
[ -n "$hold" ] && [ "$clients" = 0 ] && { echo "rollout_live.sh: --hold needs --clients N" >&2; exit 2; }
if [ "$clients" -gt 0 ]; then
  [ -x "$bin/ws_fanout" ] || { echo "rollout_live.sh: $bin/ws_fanout is not built (cmake --build $build --target ws_fanout)" >&2; exit 2; }
fi
command -v psql >/dev/null || { echo "rollout_live.sh: psql is needed to watch the database" >&2; exit 2; }

. bench/lib/serve_ready.sh
load() { echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"; }
work=$(mktemp -d /tmp/loom-rollout-live.XXXXXX); chmod 755 "$work"
pid=
cleanup() {
  [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  [ -n "$keeplog" ] && [ -f "$work/loomd.log" ] && cp "$work/loomd.log" "$keeplog"
  rm -rf "$work"
}
trap cleanup EXIT
state=$work/state

echo "== loomd apply -f $spec"; load
t=$(date +%s.%N)
"$bin/loomd" apply -f "$spec" --state-dir "$state" >/dev/null
echo "apply: $(echo "$(date +%s.%N) - $t" | bc) s"
token=$("$bin/loomd" token create --role admin --name rollout-bench --state-dir "$state" 2>/dev/null | tail -n 1)

LOOM_PROVISIONING_DELAY_MS=0 SPDLOG_LEVEL=${SPDLOG_LEVEL:-debug} \
  "$bin/loomd" serve --simulate --listen 127.0.0.1:0 --state-dir "$state" >"$work/loomd.log" 2>&1 &
pid=$!
serve_ready "$work/loomd.log" "$pid" 600
# The embedded server's socket (postmaster.pid: line 4 the port, line 5 the socket directory).
pidfile=$(find "$state" -name postmaster.pid | head -n 1)
pgport=$(sed -n 4p "$pidfile"); pgsock=$(sed -n 5p "$pidfile")
sql() { psql -X -q -At -h "$pgsock" -p "$pgport" -d loom -U postgres -c "$1" 2>/dev/null; }
[ -n "$(sql 'SELECT 1')" ] || { echo "rollout_live.sh: cannot reach the embedded PostgreSQL ($pgsock:$pgport)" >&2; exit 1; }
if [ "$trace" = 1 ]; then
  sql "ALTER SYSTEM SET log_min_duration_statement = 200" >/dev/null
  sql "SELECT pg_reload_conf()" >/dev/null
fi
kb() { grep -E "^$1:" "/proc/$pid/status" | tr -s ' \t' ' ' | cut -d' ' -f2; }
cpu() { awk '{print ($14+$15)/100}' "/proc/$pid/stat"; }
pgcpu() {  # CPU seconds of every PostgreSQL process (the postmaster and its children)
  local s=0 p pm
  pm=$(head -n 1 "$pidfile")
  for p in "$pm" $(pgrep -P "$pm" || true); do
    s=$(awk -v s="$s" '{print s + ($14+$15)/100}' "/proc/$p/stat" 2>/dev/null || echo "$s")
  done
  echo "$s"
}
echo "loomd ready at $url; VmRSS $(( $(kb VmRSS) / 1024 )) MB"

export LOOM_SERVER=$url LOOM_TOKEN=$token
echo "== loomctl phase apply -f $plan && loomctl phase start"; load
"$bin/loomctl" phase apply -f "$plan"
cpu0=$(cpu); pg0=$(pgcpu)
t0=$(date +%s.%N)
"$bin/loomctl" phase start
rssmax=0; last=0; tick=0
while :; do
  r=$(kb VmRSS); [ "$r" -gt "$rssmax" ] && rssmax=$r
  now=$(date +%s.%N); el=$(echo "$now - $t0" | bc); el=${el%.*}; el=${el:-0}  # bc writes .5 for 0.5
  if [ $((tick % 5)) = 0 ]; then
    p=$(sql "SELECT count(*) FILTER (WHERE status IN ('pending','running')), count(*) FILTER (WHERE status = 'completed'), count(*) FILTER (WHERE status = 'halted'), (SELECT count(*) FROM racks WHERE state = 'in_service') FROM phases")
    IFS='|' read -r open done halted insvc <<<"$p"
    if [ $((el - last)) -ge 30 ]; then
      echo "t=${el}s phases completed $done halted $halted, racks in service $insvc, VmRSS $((r / 1024)) MB, $(load)"
      last=$el
    fi
    if [ "$trace" = 1 ]; then
      sql "SELECT 'pg: ' || round(extract(epoch FROM now() - query_start)::numeric, 2) || ' s ' || coalesce(wait_event_type || '/' || wait_event, 'cpu') || ' ' || left(regexp_replace(query, '\s+', ' ', 'g'), 110) FROM pg_stat_activity WHERE state = 'active' AND pid <> pg_backend_pid() AND backend_type = 'client backend' ORDER BY query_start LIMIT 2" | sed "s/^/t=${el}s /"
    fi
    [ "${open:-1}" = 0 ] && break
    kill -0 "$pid" 2>/dev/null || { echo "loomd died"; tail -20 "$work/loomd.log"; exit 1; }
    [ "$el" -ge "$limit" ] && { echo "gave up after $limit s"; break; }
  fi
  tick=$((tick + 1)); sleep 1
done
cpu1=$(cpu); pg1=$(pgcpu)
echo "== rollout done"; load
# The last rack transition, by the database's clock (its commit follows within the batch).
res=$(sql "SELECT extract(epoch FROM max(at)), count(*), count(*) FILTER (WHERE entity_kind = 'rack') FROM provisioning_audit WHERE at >= to_timestamp($t0)")
IFS='|' read -r tlast audit rackaudit <<<"$res"
wall=$(echo "$tlast - $t0" | bc)
insvc=$(sql "SELECT count(*) FROM racks WHERE state = 'in_service'")
ph=$(sql "SELECT string_agg(status || ' ' || n, ', ') FROM (SELECT status, count(*) n FROM phases GROUP BY status) s")
echo "rollout wall (phase start -> last transition): $(printf '%.1f' "$wall") s; racks in service: $insvc; phases: $ph"
echo "audit rows: $audit (rack transitions $rackaudit): $(echo "scale=0; $audit / $wall" | bc) rows/s"
# Per phase: start to completed, start to 95 % of its racks in service, the retries (gate_failed
# events) that held it; summed, the time the gates spent waiting for retries' backoff.
sql "WITH ph AS (SELECT entity AS phase, min(at) FILTER (WHERE to_state = 'running') AS s,
       max(at) FILTER (WHERE to_state IN ('completed', 'halted')) AS e
     FROM provisioning_audit WHERE entity_kind = 'phase' AND at >= to_timestamp($t0) GROUP BY entity),
   r AS (SELECT phase, at, row_number() OVER (PARTITION BY phase ORDER BY at) AS n,
       count(*) OVER (PARTITION BY phase) AS c
     FROM provisioning_audit WHERE entity_kind = 'rack' AND to_state = 'in_service'),
   per AS (SELECT ph.phase, extract(epoch FROM ph.e - ph.s) AS d,
       extract(epoch FROM (SELECT min(at) FROM r WHERE r.phase = ph.phase AND r.n >= ceil(0.95 * r.c)) - ph.s) AS d95,
       (SELECT count(*) FROM provisioning_events v WHERE v.phase = ph.phase AND v.kind = 'gate_failed') AS retries
     FROM ph)
 SELECT 'phases: ' || count(*) || ', start to completed median ' || round(percentile_cont(0.5) WITHIN GROUP (ORDER BY d)::numeric, 1)
   || ' s (max ' || round(max(d)::numeric, 1) || '), start to 95 % in service median '
   || round(percentile_cont(0.5) WITHIN GROUP (ORDER BY d95)::numeric, 1) || ' s; retries ' || sum(retries)
   || '; sum of (completed - 95 %) ' || round(sum(d - d95)::numeric, 1) || ' s' FROM per"
echo "loomd VmRSS max over the rollout (1 s samples): $((rssmax / 1024)) MB; now $(( $(kb VmRSS) / 1024 )) MB, VmHWM $(( $(kb VmHWM) / 1024 )) MB"
echo "CPU over the rollout: loomd $(echo "$cpu1 - $cpu0" | bc) s, PostgreSQL $(echo "$pg1 - $pg0" | bc) s"
# Convergence: the first refresh loomd finished after the last transition, and what it serves.
sleep 3
conv=$(awk -v tl="$tlast" '
  /live state: (states refreshed|reloaded) in/ {
    ts = substr($1, 2) " " substr($2, 1, length($2) - 1)   # [YYYY-MM-DD HH:MM:SS.mmm]
    cmd = "date -u -d \"" ts "\" +%s.%N"; cmd | getline e; close(cmd)
    if (e + 0 >= tl + 0) { printf "%.2f", e - tl; exit }
  }' "$work/loomd.log")
echo "live state: first refresh logged $conv s after the last transition"
hall=$(curl -s -H "Authorization: Bearer $token" "$url/api/v1/hall" |
  python3 -c 'import json,sys; h=json.load(sys.stdin); print(sum(r["state"]=="in_service" for r in h["racks"]))')
deg=$(curl -s -H "Authorization: Bearer $token" "$url/api/v1/fabric/degradation" |
  python3 -c 'import json,sys; d=json.load(sys.stdin); print(sum(1 for r in d["racks"] if r.get("inService")))')
echo "in service: database $insvc, /hall $hall, /fabric/degradation $deg"
grep -o 'live state: [a-z ]* in [0-9]* ms' "$work/loomd.log" | awk '{print $(NF-1)}' | sort -n |
  awk '{t[NR]=$1} END {if (NR) printf "live-state refreshes: %d, median %d ms, max %d ms\n", NR, t[int((NR+1)/2)], t[NR]}'
grep -c 'set to follow their racks' "$work/loomd.log" | sed 's/^/leader link-sync writes: /' || true
if [ "$clients" -gt 0 ]; then
  echo "== the hall watched: $clients stream clients, /hall, the console"; load
  "$bin/ws_fanout" --url "${url#http://}" --token "$token" --clients "$clients" --seconds 100000 \
    > "$work/ws_fanout.txt" 2>&1 &
  fan=$!
  watchmax=0
  watchrss() { for _ in $(seq "$1"); do r=$(kb VmRSS); [ "$r" -gt "$watchmax" ] && watchmax=$r; sleep 1; done; }
  watchrss 15  # every client's snapshots
  for enc in identity gzip identity gzip; do
    curl -s -o /dev/null -H "Authorization: Bearer $token" -H "Accept-Encoding: $enc" \
      -w "GET /hall ($enc): %{http_code} %{size_download} bytes in %{time_total} s\n" "$url/api/v1/hall"
  done
  if [ -x "$bin/console_bench" ]; then
    QT_QPA_PLATFORM=offscreen "$bin/console_bench" --server "$url" --token "$token" --iterations 30 \
      2>/dev/null | grep -E 'first_paint|"rss"' || true
  fi
  watchrss 10
  kill -0 "$fan" 2>/dev/null && echo "the $clients stream clients were connected to the end" ||
    echo "ws_fanout ended early: $(tail -2 "$work/ws_fanout.txt")"
  echo "loomd VmRSS max while watched (1 s samples): $((watchmax / 1024)) MB; now $(( $(kb VmRSS) / 1024 )) MB, VmHWM $(( $(kb VmHWM) / 1024 )) MB; $(load)"
  if [ -n "$hold" ]; then
    echo "$url $token $pid" > "$hold"
    echo "== held: loomd at $url (pid $pid) with the $clients stream clients until $hold is removed; $(load)"
    holdmax=0; holdn=0
    while [ -f "$hold" ] && kill -0 "$pid" 2>/dev/null; do
      r=$(kb VmRSS); [ "$r" -gt "$holdmax" ] && holdmax=$r; holdn=$((holdn + 1)); sleep 1
    done
    kill -0 "$fan" 2>/dev/null && echo "the $clients stream clients were connected to the end of the hold" ||
      echo "ws_fanout ended early: $(tail -2 "$work/ws_fanout.txt")"
    echo "loomd VmRSS max over the hold ($holdn s, 1 s samples): $((holdmax / 1024)) MB; now $(( $(kb VmRSS) / 1024 )) MB, VmHWM $(( $(kb VmHWM) / 1024 )) MB; $(load)"
  fi
  kill "$fan" 2>/dev/null || true
  wait "$fan" 2>/dev/null || true
fi
grep -E 'pass failed|error' "$work/loomd.log" | head -5 || true
if [ "$trace" = 1 ]; then
  echo "== statements over 200 ms (count, total s, statement)"
  grep -o 'duration: [0-9.]* ms  [a-z]*[^:]*: .*' "$state/postgres.log" 2>/dev/null |
    awk '{d=$2; $1=$2=$3=""; q=substr($0,1,110); n[q]++; s[q]+=d} END {for (q in n) printf "%5d %8.1f %s\n", n[q], s[q]/1000, q}' |
    sort -k2 -rn | head -15 || true
fi
