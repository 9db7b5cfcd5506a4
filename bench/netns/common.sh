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
