# bench/lib/args.sh: sourced by the benchmark scripts for their command line and for what they
# need before they start anything.
#
#   . bench/lib/args.sh
#   build=build; seconds=30; snmpPorts=          # the defaults
#   bench_args build seconds snmp-ports:snmpPorts -- "$@"
#                                   # --build DIR sets $build, --snmp-ports N sets $snmpPorts;
#                                   # -h/--help prints the script's header comment and exits 0;
#                                   # anything else: a message naming it, exit 2
#   bench_need_built loomd ws_fanout    # each in $build/bin (sets $bin), else exit 2
#   bench_need_tool wrk curl            # each on PATH, else exit 2
#   echo "== load average: $(bench_load)"
bench_args() {
  # Locals start with _: printf -v must not land on one of them instead of the script's option.
  local _me=${0##*/} _opts=() _o _name _var _matched
  while [ $# -gt 0 ] && [ "$1" != -- ]; do _opts+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  while [ $# -gt 0 ]; do
    case "$1" in
      -h|--help) awk 'NR > 1 && /^#/ { print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    esac
    _matched=
    for _o in "${_opts[@]}"; do
      _name=${_o%%:*} _var=${_o#*:}
      [ "$1" = "--$_name" ] || continue
      [ $# -ge 2 ] || { echo "$_me: $1 needs a value (see --help)" >&2; exit 2; }
      printf -v "$_var" '%s' "$2"
      _matched=1
      shift 2
      break
    done
    [ -n "$_matched" ] || { echo "$_me: unknown argument $1 (see --help)" >&2; exit 2; }
  done
}

bench_need_built() {
  local _b
  bin=$build/bin
  for _b in "$@"; do
    [ -x "$bin/$_b" ] || {
      echo "${0##*/}: $bin/$_b is not built (cmake --build $build --target $_b)" >&2; exit 2; }
  done
}

bench_need_tool() {
  local _t
  for _t in "$@"; do
    command -v "$_t" >/dev/null || { echo "${0##*/}: $_t is missing (apt-get install $_t)" >&2; exit 2; }
  done
}

bench_load() { cut -d' ' -f1-3 /proc/loadavg; }
