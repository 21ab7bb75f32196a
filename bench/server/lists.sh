#!/usr/bin/env bash
# bench/server/lists.sh: filtered list endpoints on the 24k reference cluster (issue 12's goal:
# p99 <= 100 ms for a filtered page of 100 under 50 concurrent clients; `loomctl get ports
# --field switch=<a CTSW> -o json` <= 300 ms end to end).
#
#   bench/server/lists.sh [--build DIR] [--seconds N] [--clients N] [--url URL --token T --pgdata D]
#
# Applies configs/clusters/meta-24k-roce.yaml to an embedded PostgreSQL, runs `loomd serve
# --simulate` (or uses a running one: --url, --token and its --pgdata, to read PostgreSQL's
# CPU), then for each query runs wrk with N connections (default 50) for N seconds (default 10)
# and prints req/s, p50, p99, non-2xx, and the CPU per request of loomd and of PostgreSQL (all
# its processes, from /proc/PID/stat) over the run; then times loomctl with hyperfine.
# Clients and server share the machine's cores: on 2 cores p99 is mostly queueing
# (50 / req/s), so the CPU per request is the figure to compare.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib/args.sh
build=build; seconds=10; clients=50; url=; token=; pgdata=
bench_args build seconds clients url token pgdata -- "$@"
bench_need_built loomd loomctl
bench_need_tool wrk

if [ -z "$url" ]; then
  . bench/lib/loomd.sh
  loomd_start "$bin" configs/clusters/meta-24k-roce.yaml lists viewer
  token=$token_viewer
  pgdata=$work/state/pgdata
  loomd_pid=$pid
else
  loomd_pid=$(ss -ltnp "sport = :${url##*:}" | grep -o 'pid=[0-9]*' | head -n 1 | cut -d= -f2)
fi
# CPU seconds (user + system) of loomd, and of the whole PostgreSQL cluster of $pgdata.
# /proc/PID/stat's fields after the ")" (a process name may hold spaces): $14/$15 are utime and
# stime, $16/$17 the cutime and cstime of its children that have exited and been reaped.
# A process gone meanwhile counts 0.
stat_ticks() { awk -v from="$2" -v to="$3" '{sub(/.*\) /, ""); for (i = from; i <= to; i++) s += $(i - 2)}
  END {print s + 0}' "$1" 2>/dev/null || echo 0; }
cpu_of() { awk -v t="$(stat_ticks "$1" 14 15)" -v hz="$(getconf CLK_TCK)" 'BEGIN {print t / hz}'; }
# The cluster's CPU: the postmaster's own and that of its children that have exited (backends
# that loomd closed, parallel workers, autovacuum: the postmaster reaps them all, so their CPU
# lands in its cutime/cstime), plus each live child's so far. Summing only the live children
# went negative (-2552 ms/req) when a long-lived backend exited during a run. The live children
# are read before the postmaster, so one that exits in between is counted twice rather than
# lost (at most one backend's life, against the run's seconds).
pg_cpu() {
  local pm t=0 c; pm=$(head -n 1 "$pgdata/postmaster.pid")
  for c in $(pgrep -P "$pm"); do t=$((t + $(stat_ticks "/proc/$c/stat" 14 15))); done
  t=$((t + $(stat_ticks "/proc/$pm/stat" 14 17)))
  awk -v t="$t" -v hz="$(getconf CLK_TCK)" 'BEGIN {print t / hz}'
}
echo "== load average: $(bench_load); $clients connections, ${seconds} s each"
queries=(
  "ports?limit=100"
  "ports?limit=100&switch=z1-ctsw01"
  "ports?limit=100&name__ic=z5-r100-rtsw"
  "ports?limit=100&name__ic=ctsw"
  "links?limit=100&name__ic=z2-r050-rtsw/p3"
  "ports?limit=100&device=z3-ctsw07"
  "ports?limit=100&name__isw=z5-r100-rtsw"
  "ports?limit=100&peer=z3-ctsw07"
  "links?limit=100&switch=z3-ctsw07"
  "links?limit=100&switch=z2-r050-rtsw&device=z2-ctsw04"
  "gpus?limit=100&rack=z4-r120"
  "gpus?limit=100&rack=z4-r120&rack=z4-r121&index__gte=4"
  "hosts?limit=100&zone=z6&state=in_service"
  "links?limit=100&health=failed"
  "ports?limit=100&device=z2-r050-rtsw&peer__ic=ctsw"
  # A peer pattern alone: a broad one (~31k ports face a CTSW) is found in the first ports of
  # the natural order; one switch in each of the 8 zones (1,728 ports) is the set of far ends,
  # ~35 ms of PostgreSQL a page. Last: its backlog outlives wrk's run.
  "ports?limit=100&peer__ic=ctsw"
  "ports?limit=100&peer__ic=ctsw07"
)
printf '%-58s %9s %9s %9s %7s %11s %11s %s\n' QUERY REQ/S P50 P99 NON-2XX LOOMD-MS/REQ PG-MS/REQ LOAD1
for q in "${queries[@]}"; do
  sleep 2  # the previous run's backlog drains
  l0=$(cpu_of "/proc/$loomd_pid/stat"); p0=$(pg_cpu)
  out=$(wrk -t2 -c"$clients" -d"${seconds}s" --latency -H "Authorization: Bearer $token" "$url/api/v1/$q")
  l1=$(cpu_of "/proc/$loomd_pid/stat"); p1=$(pg_cpu)
  reqs=$(awk '/requests in/ {print $1}' <<<"$out")
  rps=$(awk '/Requests\/sec/ {print $2}' <<<"$out")
  p50=$(awk '$1 == "50%" {print $2}' <<<"$out")
  p99=$(awk '$1 == "99%" {print $2}' <<<"$out")
  bad=$(awk '/Non-2xx/ {print $NF}' <<<"$out")
  per() { awk -v a="$1" -v b="$2" -v n="$reqs" 'BEGIN {printf "%.2f", (n > 0 ? (b - a) * 1000 / n : 0)}'; }
  printf '%-58s %9s %9s %9s %7s %11s %11s %s\n' "$q" "$rps" "$p50" "$p99" "${bad:-0}" \
    "$(per "$l0" "$l1")" "$(per "$p0" "$p1")" "$(cut -d' ' -f1 /proc/loadavg)"
done
echo "== loomctl get ports --field switch=z1-ctsw01 -o json (hyperfine, 10 runs)"
LOOM_SERVER=$url LOOM_TOKEN=$token hyperfine -N -w 2 -r 10 \
  "$bin/loomctl get ports --field switch=z1-ctsw01 -o json" 2>&1 | grep -E 'Time|Range'
echo "load average after: $(bench_load)"
