#!/usr/bin/env bash
# bench/fabric/previous_config.sh: what GET /api/v1/fabric/config/{sw}?previous=true costs loomd
# (issue 18 goal: no request, any role, raises loomd's RSS by more than 64 MB).
#
#   bench/fabric/previous_config.sh [--build DIR] [--spec FILE] [--requests N] [--clients C]
#
# Applies SPEC (default configs/clusters/meta-24k-roce.yaml) to an embedded PostgreSQL, starts
# `loomd serve --simulate`, reads a switch's config (RoCE: the first CTSW of zone 1, its FRR
# config; InfiniBand: the first leaf of pod 1, its LFT; the router is built), brings a rack of
# that zone into service and drains it (so the switch has earlier versions), resets loomd's
# peak RSS (clear_refs 5) and then sends N viewer requests with ?previous=true from C clients
# at once. Prints, with the load average: VmRSS before, VmHWM during (the peak the requests
# raised), VmRSS after, the requests' wall times (median / max) and loomd's CPU seconds.
# Needs loomd built (cmake --build build --target loomd).
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib/args.sh
build=build; spec=configs/clusters/meta-24k-roce.yaml; requests=20; clients=4
bench_args build spec requests clients -- "$@"
bench_need_built loomd
[ -f "$spec" ] || { echo "previous_config.sh: no spec $spec" >&2; exit 2; }
load() { echo "load average: $(bench_load)"; }

. bench/lib/loomd.sh
load
loomd_start "$bin" "$spec" prevcfg viewer operator
loomd_mem
python3 - "$url" "$token_viewer" "$token_operator" "$pid" "$requests" "$clients" <<'PY'
import concurrent.futures, http.client, json, statistics, sys, time, urllib.parse
url, viewer, operator, pid, requests, clients = sys.argv[1:7]
requests, clients = int(requests), int(clients)
port = urllib.parse.urlparse(url).port

def call(method, path, token, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    c.request(method, path, body=body, headers={"Authorization": "Bearer " + token,
                                                "Content-Type": "application/json"})
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data

def status(key):
    for line in open(f"/proc/{pid}/status"):
        if line.startswith(key + ":"):
            return int(line.split()[1]) // 1024
def cpu():
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / 100

topo = json.loads(call("GET", "/api/v1/fabric/topology", viewer)[1])
hall = json.loads(call("GET", "/api/v1/hall", viewer)[1])
rack = next(r["name"] for r in hall["racks"] if r["gpuCount"] > 0)
zone = rack.split("-")[0]
# RoCE: a CTSW of the rack's zone (its FRR config names the drained links); InfiniBand: a leaf
# of the rack's pod (its LFT drops the drained HCAs' LIDs).
roce = topo["fabric"] == "roce"
sw = next(s["name"] for s in topo["switches"] if s["tier"] == (2 if roce else 1) and s["zone"] == zone)
path = f"/api/v1/fabric/config/{sw}?previous=true"
def config():
    st, body = call("GET", path, viewer)
    assert st == 200, (st, body[:300])
    return json.loads(body)
def until(what, cond):
    deadline = time.time() + 120
    while True:
        j = config()
        if cond(j):
            return j
        if time.time() > deadline:
            sys.exit(f"{sw}: no {what} after 120 s: {json.dumps(j)[:400]}")
        time.sleep(0.5)
planned = config()["config"]  # the router is built before the changes
for _ in range(7):  # planned -> ... -> in_service
    assert call("POST", f"/api/v1/racks/{rack}/advance", operator, "{}")[0] == 200
serving = until("in-service config", lambda j: j["config"] != planned)["config"]
for action in ("drain", "advance"):  # in_service -> draining -> drained
    assert call("POST", f"/api/v1/racks/{rack}/{action}", operator, "{}")[0] == 200
print(f"rack {rack}, switch {sw}", flush=True)
j = until("previous config", lambda j: j["config"] != serving and isinstance(j.get("previous"), dict))
print(f"switch {sw} (rack {rack} drained, {j['format']}): config v{j['version']} {len(j['config'])} bytes, "
      f"previous v{j['previous']['version']}", flush=True)
time.sleep(2)
before = status("VmRSS")
open(f"/proc/{pid}/clear_refs", "w").write("5")  # VmHWM := VmRSS
c0 = cpu()
times = []
def one(_):
    t = time.time()
    st, body = call("GET", path, viewer)
    assert st == 200 and json.loads(body)["previous"] is not None, (st, body[:200])
    return time.time() - t
t0 = time.time()
with concurrent.futures.ThreadPoolExecutor(clients) as ex:
    times = list(ex.map(one, range(requests)))
wall = time.time() - t0
c1 = cpu()
peak = status("VmHWM")
time.sleep(1)
print(f"{requests} requests from {clients} clients in {wall:.2f} s: median {statistics.median(times)*1000:.1f} ms, "
      f"max {max(times)*1000:.1f} ms; loomd CPU {c1 - c0:.2f} s", flush=True)
print(f"loomd VmRSS before {before} MB, peak during {peak} MB (+{peak - before} MB), "
      f"after {status('VmRSS')} MB", flush=True)
PY
load
