#!/usr/bin/env bash
# bench/telemetry/scrape_farm.sh: loomd scraping a farm of exporters for the 24k cluster (issue
# 20, "Scrape").
#
#   bench/telemetry/scrape_farm.sh [--build DIR] [--spec FILE] [--seconds N] [--probes N]
#                                  [--snmp-ports N] [--snmp-roles LIST] [--snmp-interval-ms MS]
#
# Applies SPEC (default configs/clusters/meta-24k-roce.yaml) to an embedded PostgreSQL and puts
# every rack in service. Then `scrape_farm serve` (one process, one thread, pages pre-rendered)
# answers as the cluster's exporters on 127.0.0.0/8: a dcgm-exporter (:9400, 8 GPUs, every field
# Loom reads) and a node_exporter (:9100, the real node_exporter 1.5 InfiniBand page of 8 ConnectX
# ports, bench/telemetry/pages/) on 127.1.x.y per host, and one snmp_exporter (127.0.0.1:19116)
# answering for every switch by `target=` (an if_mib walk of the switch model's ports, or
# --snmp-ports N, named by the switch's portNaming: swpN on Cumulus, Ethernet<lane> on SONiC,
# Ethernet3/1/1 on an EOS chassis, plus its management, loopback, port-channel and VLAN). loomd scrapes it every second through its telemetry.targets templates and
# `addressFile` ({address}: host -> 127.1.x.y, switch -> 127.2.x.y). --snmp-roles rtsw limits
# the snmp template to those switch roles (the issue's 3,072 + 3,072 + 1,536 setup), and
# --snmp-interval-ms its interval (a real snmp_exporter walk is scraped every 10-30 s).
# Measured: the time until every target is up; loomd's and the farm's CPU over --seconds
# (default 60) of steady scraping; scrape-to-map latency (`scrape_farm probe`: a GPU's power
# changed in the farm -> GET /api/v1/telemetry/gpus/<gpu> shows it), p50/p99 over --probes
# (default 60); loomd's RSS idle on the same inventory without scraping, and while scraping;
# the per-kind scrape figures of loomd's /metrics; the load average before and after.
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build; spec=configs/clusters/meta-24k-roce.yaml; seconds=60; probes=60; snmpPorts=
snmpRoles=; snmpInterval=
while [ $# -gt 0 ]; do
  case "$1" in
    --build) build=$2; shift 2 ;;
    --spec) spec=$2; shift 2 ;;
    --seconds) seconds=$2; shift 2 ;;
    --probes) probes=$2; shift 2 ;;
    --snmp-ports) snmpPorts=$2; shift 2 ;;
    --snmp-roles) snmpRoles=$2; shift 2 ;;
    --snmp-interval-ms) snmpInterval=$2; shift 2 ;;
    -h|--help) sed -n '2,24p' "$0"; exit 0 ;;
    *) echo "scrape_farm.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
bin=$build/bin
for b in loomd scrape_farm; do
  [ -x "$bin/$b" ] || { echo "scrape_farm.sh: $bin/$b is not built (cmake --build $build --target $b)" >&2; exit 2; }
done
command -v curl >/dev/null || { echo "scrape_farm.sh: curl is missing" >&2; exit 2; }
[ "$(ulimit -n)" -ge 16384 ] || ulimit -n 20000 || { echo "scrape_farm.sh: need 16k file descriptors (ulimit -n)" >&2; exit 2; }

work=$(mktemp -d /tmp/loom-scrape-bench.XXXXXX); chmod 755 "$work"
pid=; farm=
cleanup() {
  for p in $pid $farm; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
state=$work/state
cpu() { awk '{print ($14+$15)/100}' "/proc/$1/stat"; }
rss() { awk '/^VmRSS:/ {print int($2/1024)}' "/proc/$1/status"; }
hwm() { awk '/^VmHWM:/ {print int($2/1024)}' "/proc/$1/status"; }
load() { cut -d' ' -f1-3 /proc/loadavg; }
start_loomd() {  # start_loomd [serve args]: sets pid, url
  "$bin/loomd" serve --listen 127.0.0.1:0 --state-dir "$state" "$@" >"$work/loomd.log" 2>&1 &
  pid=$!
  url=
  for _ in $(seq 1 600); do
    url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$work/loomd.log" | head -n 1 || true)
    [ -n "$url" ] && [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/readyz" || true)" = 200 ] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.2
  done
  echo "loomd never became ready:"; tail -20 "$work/loomd.log"; exit 1
}
stop_loomd() { kill "$pid"; wait "$pid" 2>/dev/null || true; pid=; }

echo "== apply $spec (embedded PostgreSQL in $work); load $(load)"
"$bin/loomd" apply -f "$spec" --state-dir "$state" >/dev/null
viewer=$("$bin/loomd" token create --role viewer --name bench-viewer --state-dir "$state" 2>/dev/null | tail -n 1)

# 1. The inventory, racks in service, loomd's RSS without any scraping.
start_loomd
psql -q -h "$state" -U postgres -d loom -c "BEGIN; UPDATE racks SET state = 'in_service';
  SELECT pg_notify('loom_stream', 'live' || chr(10) || '{\"source\":\"bench\"}'); COMMIT;" >/dev/null
list() {  # list KIND: every item of GET /api/v1/KIND as JSON lines
  local cursor= page
  while :; do
    page=$(curl -sf -H "Authorization: Bearer $viewer" "$url/api/v1/$1?limit=5000${cursor:+&cursor=$cursor}")
    echo "$page" | python3 -c 'import json,sys; [print(json.dumps(i)) for i in json.load(sys.stdin)["items"]]'
    cursor=$(echo "$page" | python3 -c 'import json,sys; print(json.load(sys.stdin).get("nextCursor",""))')
    [ -n "$cursor" ] || break
  done
}
list hosts >"$work/hosts.jsonl"
list switches >"$work/switches.jsonl"
sleep 10
idleRss=$(rss "$pid")
echo "== loomd idle (no targets, racks in service): VmRSS ${idleRss} MB"
stop_loomd

python3 - "$work" "$spec" "${snmpPorts:-0}" <<'PY'
import json, sys, yaml
work, spec, snmpPorts = sys.argv[1], sys.argv[2], int(sys.argv[3])
models = {m["name"]: m["ports"] for m in yaml.safe_load(open(spec))["spec"]["models"]["switches"]}
hosts = [json.loads(l)["name"] for l in open(f"{work}/hosts.jsonl")]
switches = [json.loads(l) for l in open(f"{work}/switches.jsonl")]
def addr(net, i): return f"127.{net}.{i // 250}.{i % 250 + 1}"
with open(f"{work}/exporters.hosts", "w") as hf, open(f"{work}/farm.list", "w") as fl:
    fl.write("snmp-exporter - 127.0.0.1 19116\n")
    for i, h in enumerate(hosts):
        a = addr(1, i)
        hf.write(f"{a} {h}\n")
        fl.write(f"dcgm {h} {a} 9400\nnode {h} {a} 9100\n")
    for i, s in enumerate(switches):
        a = addr(2, i)
        hf.write(f"{a} {s['name']}\n")
        # The switch's own port names (its portNaming: swpN, Ethernet<lane>, Ethernet3/1/1).
        fl.write(f"snmp {s['name']} {a} {snmpPorts or models.get(s.get('model'), 64)} {s.get('portNaming', '')}\n")
open(f"{work}/probe.hosts", "w").write("\n".join(hosts) + "\n")
print(f"   {len(hosts)} hosts (dcgm + node), {len(switches)} switches (snmp)")
PY
cat >"$work/loomd.yaml" <<EOF
telemetry:
  targets:
    dcgm: "http://{address}:9400/metrics"
    node: "http://{address}:9100/metrics?collect[]=infiniband"
    snmp: {url: "http://{exporter}/snmp?target={address}&module=if_mib"${snmpInterval:+, intervalMs: $snmpInterval}${snmpRoles:+, roles: [$snmpRoles]}}
    snmpExporter: "127.0.0.1:19116"
    addressFile: $work/exporters.hosts
EOF
echo "== loomd.yaml: $(grep 'snmp:' "$work/loomd.yaml" | sed 's/^ *//')"

# 2. The farm, then loomd scraping it.
"$bin/scrape_farm" serve --list "$work/farm.list" --control 127.0.0.1:19117 \
  --node-page bench/telemetry/pages/node_exporter_infiniband.txt >"$work/farm.log" 2>&1 &
farm=$!
for _ in $(seq 1 300); do grep -q 'farm listening' "$work/farm.log" && break; kill -0 "$farm" || { cat "$work/farm.log"; exit 1; }; sleep 0.2; done
echo "== $(cat "$work/farm.log"); load $(load)"
h0=$(sed -n 1p "$work/probe.hosts"); a0=$(awk -v h="$h0" '$2 == h {print $1}' "$work/exporters.hosts")
# One line per kind of switch (port count and naming: the rest of the line after field 4).
awk '$1 == "snmp" {k = $4; for (i = 5; i <= NF; i++) k = k " " $i; if (!n[k]++) first[k] = $2 " " $3} END {for (k in n) print first[k], n[k], k}' "$work/farm.list" |
  while read -r sw sa count ports scheme; do
  page=$(curl -s "http://127.0.0.1:19116/snmp?target=$sa&module=if_mib")
  echo "   snmp page of a $ports-port ${scheme:-default} switch ($sw, $count such): $(printf '%s' "$page" | wc -c) bytes, ifName $(printf '%s\n' "$page" | grep '^ifOperStatus{' | sed 's/.*ifName="\([^"]*\)".*/\1/' | sed -n '1p;2p;$p' | tr '\n' ' ')"
done
echo "   dcgm page: $(curl -s "http://$a0:9400/metrics" | wc -c) bytes, node page: $(curl -s "http://$a0:9100/metrics?collect[]=infiniband" | wc -c) bytes"
t0=$(date +%s.%N)
start_loomd --config "$work/loomd.yaml"
metric() { curl -s -H "Authorization: Bearer $viewer" "$url/metrics" | awk -v m="$1" '$1 ~ "^"m {s += $2} END {print s + 0}'; }
targets=$(metric 'loom_scrape_targets\{')
for _ in $(seq 1 600); do
  up=$(metric 'loom_scrape_targets_up\{')
  [ "$up" -ge "$targets" ] && [ "$targets" -gt 0 ] && break
  sleep 0.5
done
echo "== loomd ready and $up of $targets targets up after $(python3 -c "import time; print(round(time.time() - $t0, 1))") s; load $(load)"
sleep 15  # steady state
rss0=$(rss "$pid")
l0=$(load)
c0=$(cpu "$pid"); f0=$(cpu "$farm"); w0=$(date +%s.%N)
e0=$(metric 'loom_scrape_kind_errors_total'); i0=$(metric 'loom_telemetry_ingest_seconds_total'); b0=$(metric 'loom_telemetry_bodies_total')
sleep "$seconds"
c1=$(cpu "$pid"); f1=$(cpu "$farm"); w1=$(date +%s.%N)
e1=$(metric 'loom_scrape_kind_errors_total'); i1=$(metric 'loom_telemetry_ingest_seconds_total'); b1=$(metric 'loom_telemetry_bodies_total')
rss1=$(rss "$pid")
python3 - <<PY
wall = $w1 - $w0
print(f"== {wall:.0f} s of scraping: loomd {($c1 - $c0) / wall:.2f} cores, farm {($f1 - $f0) / wall:.2f} cores; "
      f"scrape errors {int($e1 - $e0)}; {($b1 - $b0) / wall:.0f} pages/s, parse+ingest {($i1 - $i0) / wall:.2f} s/s; "
      f"load before {'$l0'}, after {'$(load)'}")
PY
curl -s -H "Authorization: Bearer $viewer" "$url/metrics" | grep -E '^loom_(scrape_(targets|targets_up|kind_samples|duration_seconds_max|kind_errors_total)|telemetry_unknown_total)\{' | sort
# What loomd ignored: each switch's management, loopback, port-channel and VLAN interfaces
# (not_a_port); an unknown_port here is a front-panel name its naming scheme did not map.
echo "   ignored as not a port (first 5): $(curl -s -H "Authorization: Bearer $viewer" "$url/api/v1/telemetry/unknown?reason=not_a_port&limit=5" | python3 -c 'import json,sys; print(", ".join(i["name"] for i in json.load(sys.stdin)["items"]))')"
echo "== scrape-to-map ($probes probes); load $(load)"
"$bin/scrape_farm" probe --control 127.0.0.1:19117 --loomd "${url#http://}" --token "$viewer" \
  --hosts "$work/probe.hosts" --count "$probes"
rss2=$(rss "$pid")
echo "== loomd VmRSS: idle without scraping ${idleRss} MB; scraping ${rss0} MB at the start of the window, ${rss1} MB after ${seconds} s, ${rss2} MB after the probes (VmHWM $(hwm "$pid") MB): growth $((rss2 - idleRss)) MB over idle"
echo "== load average: $(load)"
echo "   loomd log lines about scrapes: $(grep -c 'scrape .*:' "$work/loomd.log" || true)"
grep 'scrape .*:' "$work/loomd.log" | head -5 || true
