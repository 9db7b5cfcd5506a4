#!/usr/bin/env bash
# stacked.sh: two ranks whose threads all share one core while they spin
# as if each had its own (the state issue 29's tails may come from: a
# spinning rank holding the core that the thread it waits for was woken
# on). Runs `boltmesh bench --ranks 2` pinned to CPU 0 (taskset) with an
# explicit --spin 200us, which a crowded machine's ranks do not turn into
# spins that give the core up between polls. Extra flags go to the bench
# (--spin-yield 10us, --suite p2p, --sizes 8,64K).
#
#   bench/device/stacked.sh [--bin PATH] [bench flags...]
#
# Linux with taskset only; skipped with a message elsewhere.
set -euo pipefail
bin=""
extra=()
while [[ $# -gt 0 ]]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) extra+=("$1"); shift ;;
  esac
done
command -v taskset >/dev/null || { echo "stacked: no taskset on the PATH; skipping"; exit 0; }
if [[ -z $bin ]]; then
  here=$(cd "$(dirname "$0")/../.." && pwd)
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  bin=$work/boltmesh
  (cd "$here" && go build -o "$bin" ./cmd/boltmesh)
fi
taskset -c 0 "$bin" bench --ranks 2 --spin 200us --suite allreduce --sizes 8 --duration 1s \
  --baseline none --progress=false "${extra[@]}"
