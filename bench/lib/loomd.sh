# bench/lib/loomd.sh: sourced by the benchmark scripts that need a live loomd.
#
#   . bench/lib/loomd.sh
#   loomd_start BIN_DIR SPEC NAME ROLE...   # sets work, pid, url, and token_<role> per role
#   ... measure against "$url" ...          # loomd is stopped and $work removed on exit
#
# Makes a temp state dir (embedded PostgreSQL), applies SPEC, creates one token per ROLE,
# starts `loomd serve --simulate --listen 127.0.0.1:0` and waits until /readyz answers 200
# (the live state is loaded); LOOMD_LOG=FILE keeps loomd's log there (SPDLOG_LEVEL=debug in the
# environment times each live-state refresh; LOOMD_WRAP="heaptrack -o FILE" runs `loomd serve`
# under that command, and $pid is still loomd's own). Helpers: loomd_cpu (seconds of CPU so far), loomd_mem (VmRSS and
# VmHWM in MB).
. bench/lib/serve_ready.sh
work=
pid=
wrapper=
url=
loomd_cleanup() {
  [ -n "$pid" ] && { kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; }
  # A wrapper (heaptrack) writes its file after loomd exited: wait for it.
  [ -n "$wrapper" ] && { while kill -0 "$pid" 2>/dev/null; do sleep 0.5; done; wait "$wrapper" 2>/dev/null || true; }
  [ -n "$work" ] && [ -n "${LOOMD_LOG:-}" ] && cp "$work/loomd.log" "$LOOMD_LOG"
  [ -n "$work" ] && rm -rf "$work"
  return 0
}
trap loomd_cleanup EXIT

loomd_start() {
  local bin=$1 spec=$2 name=$3 role
  shift 3
  work=$(mktemp -d "/tmp/loom-$name-bench.XXXXXX"); chmod 755 "$work"
  echo "== apply $spec (embedded PostgreSQL in $work)"
  "$bin/loomd" apply -f "$spec" --state-dir "$work/state" >/dev/null
  for role in "$@"; do
    printf -v "token_$role" '%s' \
      "$("$bin/loomd" token create --role "$role" --name "bench-$role" --state-dir "$work/state" 2>/dev/null | tail -n 1)"
  done
  # shellcheck disable=SC2086  # LOOMD_WRAP is a command line
  ${LOOMD_WRAP:-} "$bin/loomd" serve --simulate --listen 127.0.0.1:0 --state-dir "$work/state" >"$work/loomd.log" 2>&1 &
  pid=$!
  if [ -n "${LOOMD_WRAP:-}" ]; then
    wrapper=$pid; pid=
    for _ in $(seq 1 300); do
      pid=$(pgrep -P "$wrapper" -x loomd || true); [ -n "$pid" ] && break; sleep 0.2
    done
    [ -n "$pid" ] || { cat "$work/loomd.log"; exit 1; }
  fi
  serve_ready "$work/loomd.log" "$pid" 300
}

loomd_cpu() { awk '{print ($14+$15)/100}' "/proc/$pid/stat"; }
loomd_kb() { grep -E "^$1:" "/proc/$pid/status" | tr -s ' \t' ' ' | cut -d' ' -f2; }
loomd_mem() { echo "VmRSS $(( $(loomd_kb VmRSS) / 1024 )) MB, VmHWM $(( $(loomd_kb VmHWM) / 1024 )) MB"; }
