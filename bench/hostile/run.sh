#!/usr/bin/env bash
# bench/hostile/run.sh: what hostile request bodies cost a real loomd (issue 18 item 7).
#
#   bench/hostile/run.sh [--build DIR] [--cluster SPEC]
#
# Starts an embedded PostgreSQL in a temp state dir, applies a cluster (default
# meta-24k-roce.yaml, as in the issue), runs `loomd serve --simulate`, and sends, each a few
# times, with loomd's VmRSS/VmHWM (/proc/PID/status) before and after each:
#   1. a 381-byte YAML alias bomb (10 levels x 10 aliases: 10^10 scalars expanded) as a
#      viewer to POST /api/v1/fabric/impact;
#   2. a 12 MB apply body of 6.3 M scalars (one flow list) as an operator to POST /api/v1/apply;
#   3. a 3.8 MB spec-like document of ~520k nodes to POST /api/v1/apply;
#   4. 8 concurrent 12 MB apply bodies (the per-route concurrency bound answers 503 to some).
# Then RSS 5 s after the last request (malloc_trim gives freed arenas back).
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib/args.sh
build=build; cluster=configs/clusters/meta-24k-roce.yaml
bench_args build cluster -- "$@"
bench_need_built loomd
bench_need_tool curl

. bench/lib/loomd.sh
loomd_start "$bin" "$cluster" hostile viewer operator
viewer=$token_viewer operator=$token_operator
sleep 3
mem() { loomd_mem; }

python3 - "$work" <<'PY'
import sys
w = sys.argv[1]
y = "a0: &a0 [x, x, x, x, x, x, x, x, x, x]\n"
for i in range(1, 10):
    y += f"a{i}: &a{i} [" + ", ".join([f"*a{i-1}"] * 10) + "]\n"
open(f"{w}/bomb.yaml", "w").write(y)
# 6.3 M one-character scalars in flow lists: 12.6 MB
n = 6_300_000
open(f"{w}/scalars.yaml", "w").write("apiVersion: loom/v1\nkind: Cluster\nspec:\n  x: [" + ",".join(["1"] * n) + "]\n")
# 3.8 MB with ~520k nodes, spec-like maps
rows = "".join(f"    - {{name: host-{i:06d}, labels: {{owner: team-{i % 97}, slot: s{i}}}}}\n" for i in range(58000))
open(f"{w}/nodes.yaml", "w").write("apiVersion: loom/v1\nkind: Cluster\nmetadata: {name: x}\nspec:\n  overrides:\n    hosts:\n" + rows)
PY
ls -l "$work"/*.yaml | awk '{print "   ", $5, "bytes", $NF}'
echo "== load average: $(bench_load)"
echo "baseline: $(mem)"

send() {  # send NAME TOKEN PATH FILE
  local t0 t1 out
  t0=$(date +%s.%N)
  # "Expect:" off: curl would wait 1 s for a 100 Continue before sending a big body.
  out=$(curl -s -o "$work/resp" -w '%{http_code}' -H "Authorization: Bearer $2" -H 'Expect:' \
        -H 'Content-Type: application/yaml' --data-binary "@$4" "$url$3" || echo 000)
  t1=$(date +%s.%N)
  printf '%-28s -> %s in %.2f s  %s  | %s\n' "$1" "$out" "$(echo "$t1 - $t0" | bc)" \
    "$(head -c 150 "$work/resp" | tr -d '\n')" "$(mem)"
}
for i in 1 2 3; do
  t0=$(date +%s.%N)
  curl -s -o /dev/null -H "Authorization: Bearer $viewer" "$url/healthz"
  t1=$(date +%s.%N)
  printf '%-28s -> %.2f s (round trip on this machine now)\n' "GET /healthz #$i" "$(echo "$t1 - $t0" | bc)"
done
for i in 1 2 3; do send "alias bomb (viewer) #$i" "$viewer" /api/v1/fabric/impact "$work/bomb.yaml"; done
for i in 1 2; do send "12 MB 6.3M scalars #$i" "$operator" /api/v1/apply "$work/scalars.yaml"; done
for i in 1 2; do send "3.8 MB ~520k nodes #$i" "$operator" /api/v1/apply "$work/nodes.yaml"; done
echo "== 8 concurrent 12 MB apply bodies"
for i in $(seq 1 8); do
  curl -s -o /dev/null -w '%{http_code}\n' -H "Authorization: Bearer $operator" -H 'Expect:' \
    -H 'Content-Type: application/yaml' --data-binary "@$work/scalars.yaml" "$url/api/v1/apply" \
    >"$work/c$i" 2>/dev/null &
done
wait $(jobs -p | grep -v "^$pid$") 2>/dev/null || true
echo "statuses: $(cat "$work"/c* | sort | uniq -c | tr -s ' ' | tr '\n' ' ')| $(mem)"
sleep 5
echo "5 s later: $(mem)"
