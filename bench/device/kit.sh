#!/usr/bin/env bash
# kit.sh: prepares, on this machine, what a 16-core device machine (no Go,
# nothing to install, no network) needs for bench/device/sitting.sh: a
# static boltmesh and scalereport, the OpenMPI and Gloo anchors' sources,
# seal-sitting.sh, scale-bench.sh, stacked.sh and sitting.sh itself, in DIR of the checkout (default dev), which it
# adds to .git/info/exclude so that the device tool carries it as an
# ignored path. Then run, on the device: DIR/sitting.sh PART (see there),
# with carry [DIR].
#
#   bench/device/kit.sh [DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
dir=${1:-dev}
cd "$root"
mkdir -p "$dir"
CGO_ENABLED=0 go build -o "$dir/boltmesh" ./cmd/boltmesh
CGO_ENABLED=0 go build -o "$dir/scalereport" ./bench/netns/scalereport
cp bench/netns/mpi_allreduce.c bench/netns/gloo_allreduce.py bench/anchors/mpi_pingpong.c \
  bench/netns/seal-sitting.sh bench/netns/scale-bench.sh bench/netns/common.sh bench/device/sitting.sh \
  bench/device/stacked.sh "$dir/"
exclude=.git/info/exclude
if [[ -f .git ]]; then # a worktree: its exclude file is the main checkout's
  exclude=$(git rev-parse --git-common-dir)/info/exclude
fi
mkdir -p "$(dirname "$exclude")"
grep -qxF "/$dir/" "$exclude" 2>/dev/null || echo "/$dir/" >>"$exclude"
if ! git check-ignore -q "$dir/boltmesh"; then
  echo "kit: $dir is not ignored by git; the device tool would carry it as untracked files" >&2
fi
echo "kit: $dir ready ($(du -sh "$dir" | cut -f1)); on the device, with carry [\"$dir\"]: $dir/sitting.sh cores|algorithms|seal|tails|hosts"
