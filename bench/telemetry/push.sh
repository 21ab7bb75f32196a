#!/usr/bin/env bash
# bench/telemetry/push.sh: push ingest through a live loomd (issue 20, "Push").
#
#   bench/telemetry/push.sh [--build DIR] [--cluster SPEC] [--mib N] [--repeats N]
#
# Applies SPEC (default configs/clusters/dev-small.yaml) to an embedded PostgreSQL, runs
# `loomd serve --simulate`, writes an N MiB body (default 64) of dcgm-exporter pages in the
# exporter's own format (HELP/TYPE, labels gpu, UUID, device, modelName, Hostname,
# DCGM_FI_DRIVER_VERSION, pci_bus_id, 20 fields per GPU) for the cluster's hosts, and POSTs it
# with curl, each time with and without `Expect: 100-continue`. Per request: curl's total time,
# loomd's CPU time for it (utime+stime from /proc), the hub's parse+ingest ms from the answer,
# and MB/s of body per second of loomd CPU and per second of wall time. Prints the load average.
set -euo pipefail
cd "$(dirname "$0")/../.."
. bench/lib/args.sh
build=build; cluster=configs/clusters/dev-small.yaml; mib=64; repeats=3
bench_args build cluster mib repeats -- "$@"
bench_need_built loomd
bench_need_tool curl

. bench/lib/loomd.sh
loomd_start "$bin" "$cluster" push viewer operator
operator=$token_operator

curl -s -H "Authorization: Bearer $token_viewer" "$url/api/v1/hosts?limit=5000" >"$work/hosts.json"
python3 - "$work" "$mib" <<'PY'
import json, sys
work, mib = sys.argv[1], int(sys.argv[2])
hosts = [h["name"] for h in json.load(open(f"{work}/hosts.json"))["items"]]
fields = [("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", "1410"),
          ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", "1593"),
          ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", "41"),
          ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", "38"),
          ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", "312.448"),
          ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", "81630482211"),
          ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", "0"),
          ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", "97"),
          ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", "38"),
          ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", "0"),
          ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", "2123"),
          ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", "79032"),
          ("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.", "0"),
          ("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.", "0"),
          ("DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors", "0"),
          ("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors", "0"),
          ("DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", "0"),
          ("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "counter", "Total number of NVLink flow-control CRC errors.", "0"),
          ("DCGM_FI_PROF_GR_ENGINE_ACTIVE", "gauge", "Ratio of time the graphics engine is active (in %).", "0.953211"),
          ("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE", "gauge", "Ratio of cycles the tensor (HMMA) pipe is active (in %).", "0.612004")]
def page(h):
    out = []
    for name, typ, help_, val in fields:
        out.append(f"# HELP {name} {help_}\n# TYPE {name} {typ}\n")
        for g in range(8):
            out.append(f'{name}{{gpu="{g}",UUID="GPU-{abs(hash((h, g))) % (1 << 64):016x}-5c1b-4f5e-9c3a-7d2e1f0a{g:04d}",'
                       f'device="nvidia{g}",modelName="NVIDIA H100 80GB HBM3",Hostname="{h}",'
                       f'DCGM_FI_DRIVER_VERSION="535.129.03",pci_bus_id="00000000:{0x18 + 0x10 * g:02X}:00.0"}} {val}\n')
    return "".join(out)
pages = [page(h) for h in hosts]
size, i, parts = 0, 0, []
while size < mib << 20:
    p = pages[i % len(pages)]; parts.append(p); size += len(p); i += 1
open(f"{work}/body.txt", "w").write("".join(parts))
print(f"   body: {size} bytes, {i} dcgm-exporter pages of {len(hosts)} hosts")
PY
echo "== load average: $(bench_load)"
printf '%-16s %9s %9s %9s %11s %11s %s\n' request wall_s cpu_s parse_ms MB/s_cpu MB/s_wall answer
bytes=$(stat -c %s "$work/body.txt")
post() {  # post LABEL [curl args]
  local label=$1; shift
  local c0 c1 t
  c0=$(loomd_cpu)
  t=$(curl -s -o "$work/resp" -w '%{time_total}' "$@" -H "Authorization: Bearer $operator" \
      -H 'Content-Type: text/plain; version=0.0.4' --data-binary "@$work/body.txt" "$url/api/v1/telemetry")
  c1=$(loomd_cpu)
  python3 - "$label" "$t" "$c0" "$c1" "$bytes" "$work/resp" <<'PY'
import json, sys
label, t, c0, c1, n, resp = sys.argv[1], float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
r = json.load(open(resp)); cpu = c1 - c0; mb = n / 1e6
print(f"{label:16s} {t:9.3f} {cpu:9.2f} {r.get('ms', float('nan')):9.1f} {mb / cpu if cpu > 0 else float('inf'):11.0f} {mb / t:11.0f} samples={r.get('samples')} applied={r.get('applied')}")
PY
}
for i in $(seq 1 "$repeats"); do
  post "no-expect #$i" -H 'Expect:'
  post "100-continue #$i" -H 'Expect: 100-continue'
done
echo "== load average: $(bench_load); loomd $(loomd_mem)"
