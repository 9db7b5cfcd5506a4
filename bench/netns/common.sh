# common.sh: what netns-bench.sh and scale-bench.sh share; sourced, not run.

# need CMD PKG...: installs the Debian packages PKG... unless CMD is
# already on the PATH.
need() {
  command -v "$1" >/dev/null && return
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${@:2}" >/dev/null
}

# remove_netns NS...: kills every process in each namespace, then
# deletes it; missing ones are no error.
remove_netns() {
  local n
  for n in "$@"; do
    ip netns pids "$n" 2>/dev/null | xargs -r kill 2>/dev/null || true
    ip netns del "$n" 2>/dev/null || true
  done
}

# p2p_args NAME LAST ARGS...: the flags of the sittings of two ranks'
# p2p cases (tunnel-bench.sh, wg-bench.sh): sets rounds (default 2),
# sizes (8,16M) and duration (1s); --help prints the script's header,
# lines 2 to LAST; NAME heads the complaint about an unknown argument.
p2p_args() {
  local name=$1 last=$2
  shift 2
  rounds=2 sizes=8,16M duration=1s
  while [[ $# -gt 0 ]]; do
    case $1 in
      --rounds) rounds=$2; shift 2 ;;
      --sizes) sizes=$2; shift 2 ;;
      --duration) duration=$2; shift 2 ;;
      -h|--help) sed -n "2,${last}p" "$0"; exit 0 ;;
      *) echo "$name: unknown argument $1" >&2; exit 2 ;;
    esac
  done
}
