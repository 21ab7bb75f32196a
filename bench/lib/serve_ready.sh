# bench/lib/serve_ready.sh: sourced by the benchmark scripts that start `loomd serve` (directly,
# or through bench/lib/loomd.sh's loomd_start).
#
#   . bench/lib/serve_ready.sh
#   "$bin/loomd" serve --simulate --listen 127.0.0.1:0 --state-dir "$state" >"$log" 2>&1 &
#   pid=$!
#   serve_ready "$log" "$pid" [TRIES]   # sets url; returns once loomd is ready
#
# Waits for the URL loomd prints on LOG (600 x 0.2 s), then for /readyz to answer 200 (the live
# state is loaded; TRIES x 0.2 s, default 1500 = 5 minutes). When loomd (PID) ends first or
# never gets there, prints the end of LOG and exits 1 (the caller's EXIT trap cleans up).
serve_ready() {
  local log=$1 p=$2 tries=${3:-1500}
  url=
  for _ in $(seq 1 600); do
    url=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$log" | head -n 1 || true)
    [ -n "$url" ] && break
    kill -0 "$p" 2>/dev/null || break
    sleep 0.2
  done
  [ -n "$url" ] || { echo "loomd printed no URL:"; tail -n 40 "$log"; exit 1; }
  for _ in $(seq 1 "$tries"); do
    [ "$(curl -s -o /dev/null -w '%{http_code}' "$url/readyz" || true)" = 200 ] && return 0
    kill -0 "$p" 2>/dev/null || break
    sleep 0.2
  done
  echo "loomd never became ready:"; tail -n 40 "$log"; exit 1
}
