#!/usr/bin/env bash
# bench/server/follow_latency.sh: how fast every loomd follows the stored open events (issue 39).
#
#   bench/server/follow_latency.sh [--build DIR] [--repeats N] [--spec FILE]
#
# Two real `loomd serve` on one database: A (`--simulate`, the leader, with the embedded
# PostgreSQL in a temp state dir) and B (a follower, `--db` on A's database). The spec's racks
# are put in service first. Each round pushes an XID 79 of one GPU to A and times until B's own
# failure list (GET /api/v1/failures: its hub) has the GPU — "follow"; then pushes the XID 0 to B
# and times until the event is closed in A's REST and the GPU is off A's failure list —
# "close". Prints each round, then p50/p90/max of both, and both loomds' CPU over the rounds and
# their RSS; then, over a quiet window (FOLLOW_QUIET_SECONDS, default 30), the events A's simulator
# opened, how many B took, and B's CPU.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib/args.sh
build=build; repeats=20; spec=configs/clusters/dev-small.yaml
bench_args build repeats spec -- "$@"
bench_need_built loomd
bench_need_tool curl python3 psql bc

work=$(mktemp -d /tmp/loom-follow-bench.XXXXXX); chmod 755 "$work"
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

echo "== apply $spec (embedded PostgreSQL in $work)"
"$bin/loomd" apply -f "$spec" --state-dir "$work/state" >/dev/null
token=$("$bin/loomd" token create --role operator --name bench-follow --state-dir "$work/state" \
  2>/dev/null | tail -n 1)

# url_of LOG: the URL a loomd printed, once it answers /readyz 200.
url_of() {
  local u=
  for _ in $(seq 1 300); do
    u=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$1" | head -n 1 || true)
    [ -n "$u" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "$u/readyz" || true)" = 200 ] && {
      echo "$u"; return 0; }
    sleep 0.2
  done
  echo "a loomd never became ready:" >&2; cat "$1" >&2; exit 1
}

db="postgresql://postgres@/loom?host=$work/state&port=5432"
# Every rack in service (the simulator reports those): written while a first loomd runs the
# embedded PostgreSQL, then A starts again on that state.
"$bin/loomd" serve --listen 127.0.0.1:0 --state-dir "$work/state" >"$work/a0.log" 2>&1 &
pid0=$!
url_of "$work/a0.log" >/dev/null
psql -q "$db" -c "UPDATE racks SET state = 'in_service'" >/dev/null
kill "$pid0"; wait "$pid0" 2>/dev/null || true
"$bin/loomd" serve --simulate --listen 127.0.0.1:0 --state-dir "$work/state" >"$work/a.log" 2>&1 &
pids+=($!); pidA=$!
urlA=$(url_of "$work/a.log")
"$bin/loomd" serve --db "$db" --listen 127.0.0.1:0 >"$work/b.log" 2>&1 &
pids+=($!); pidB=$!
urlB=$(url_of "$work/b.log")
echo "== A (leader, --simulate) $urlA pid $pidA; B (follower) $urlB pid $pidB"
echo "== load average: $(bench_load)"
cpu() { awk '{print ($14+$15)/100}' "/proc/$1/stat"; }
cpuA0=$(cpu "$pidA"); cpuB0=$(cpu "$pidB"); t0=$(date +%s.%N)

python3 - "$urlA" "$urlB" "$token" "$repeats" "$spec" <<'EOF'
import json, statistics, sys, time, urllib.request
a, b, token, repeats = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
H = {"Authorization": "Bearer " + token}

def call(url, body=None):
    req = urllib.request.Request(url, data=body.encode() if body else None, headers=dict(H))
    if body:
        req.add_header("Content-Type", "text/plain")
    with urllib.request.urlopen(req, timeout=10) as r:
        return json.loads(r.read() or b"null")

def listed(base, gpu):
    return any(f.get("name") == gpu for f in call(base + "/api/v1/failures").get("items", []))

def wait(cond, limit=10.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if cond():
            return (time.monotonic() - t0) * 1000
        time.sleep(0.002)
    return None

hall = call(a + "/api/v1/hall")
gpus = hall["gpus"]
follow, close = [], []
for i in range(repeats):
    gpu = gpus[(7 + 13 * i) % len(gpus)]
    host, idx = gpu.rsplit("-gpu", 1)
    xid = 'DCGM_FI_DEV_XID_ERRORS{gpu="%s",Hostname="%s"} ' % (idx, host)
    t0 = time.monotonic()
    call(a + "/api/v1/telemetry", xid + "79\n")
    f = wait(lambda: listed(b, gpu))
    if f is not None:
        f = (time.monotonic() - t0) * 1000
    t1 = time.monotonic()
    call(b + "/api/v1/telemetry", xid + "0\n")
    def closed():
        items = call(a + "/api/v1/events?location=%s&kind=gpu_xid&limit=1" % gpu)["items"]
        return items and items[0]["state"] == "closed" and not listed(a, gpu)
    c = wait(closed)
    if c is not None:
        c = (time.monotonic() - t1) * 1000
    print("round %2d %s: follow %s ms, close %s ms" % (
        i, gpu, "never" if f is None else "%.0f" % f, "never" if c is None else "%.0f" % c))
    if f is not None: follow.append(f)
    if c is not None: close.append(c)

def summary(name, v):
    if not v:
        print("%s: none" % name); return
    v = sorted(v)
    print("%s: n=%d p50 %.0f ms, p90 %.0f ms, max %.0f ms" % (
        name, len(v), statistics.median(v), v[int(0.9 * (len(v) - 1))], v[-1]))
summary("follow (push to A -> on B's failure list)", follow)
summary("close (XID 0 to B -> closed in A's REST, off A's failure list)", close)
print("missed: %d follow, %d close of %d" % (repeats - len(follow), repeats - len(close), repeats))
EOF
wall=$(echo "$(date +%s.%N) - $t0" | bc)
for p in A B; do
  v=pid$p c0=cpu${p}0
  used=$(echo "$(cpu "${!v}") - ${!c0}" | bc)
  echo "== loomd $p: CPU $used s in the ${wall%.*} s of the rounds ($(echo "scale=1; 100 * $used / $wall" | bc) % of a core), VmRSS" \
    "$(( $(grep -E '^VmRSS:' "/proc/${!v}/status" | tr -s ' \t' ' ' | cut -d' ' -f2) / 1024 )) MB"
done
# A quiet window: what following a simulating leader costs B (the rounds above poll it).
metric() { curl -s -H "Authorization: Bearer $token" "$1/metrics" | awk -v m="$2" '$1 == m {print $2}'; }
quiet=${FOLLOW_QUIET_SECONDS:-30}
cpuB0=$(cpu "$pidB"); openedA0=$(metric "$urlA" loom_events_opened_total)
restoredB0=$(metric "$urlB" loom_events_restored_total)
sleep "$quiet"
used=$(echo "$(cpu "$pidB") - $cpuB0" | bc)
echo "== quiet ${quiet} s: A opened $(echo "$(metric "$urlA" loom_events_opened_total) - $openedA0" | bc)" \
  "events, B took $(echo "$(metric "$urlB" loom_events_restored_total) - $restoredB0" | bc) of them;" \
  "B's CPU $used s ($(echo "scale=2; 100 * $used / $quiet" | bc) % of a core)"
echo "== load average: $(bench_load)"
