#!/usr/bin/env bash
# seal-sitting.sh: sealed links beside unsealed, one sitting, for a
# machine with cores (or this VM): 2 local ranks over loopback TCP, with
# 1 and N data streams per pair, --seal never and always interleaved
# (never, always, always, never per round), p2p and allreduce at 8 B,
# 1 MiB and 16 MiB, each run's header (which links were sealed, with
# which cipher) and rows printed with a label. It installs nothing and
# needs no root: give it a boltmesh binary (a static one for a machine
# without Go: CGO_ENABLED=0 go build -o DIR/boltmesh ./cmd/boltmesh), or
# it builds one.
#
#   bench/netns/seal-sitting.sh [--bin PATH] [--rounds 2] [--streams 4] [--sizes 8,1M,16M] [--duration 1s]
set -euo pipefail

bin="" rounds=2 streams=4 sizes=8,1M,16M duration=1s
while [[ $# -gt 0 ]]; do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "seal-sitting: unknown argument $1" >&2; exit 2 ;;
  esac
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if [[ -z $bin ]]; then
  root=$(cd "$(dirname "$0")/../.." && pwd)
  (cd "$root" && go build -o "$work/boltmesh" ./cmd/boltmesh)
  bin=$work/boltmesh
fi
echo "seal-sitting: $(nproc) cores, $("$bin" --version 2>/dev/null || echo boltmesh), $(date -u +%FT%TZ)"
# --seal always needs a key; a local run hands its own to its ranks.
for r in $(seq 1 "$rounds"); do
  for s in 1 "$streams"; do
    for seal in never always always never; do
      label="round $r streams $s seal $seal"
      "$bin" bench --ranks 2 --transport tcp --streams "$s" --seal "$seal" --suite p2p,allreduce \
        --sizes "$sizes" --duration "$duration" --baseline none --progress=false 2>&1 |
        awk -v l="$label" '/^transport:/ { print l ": " $0 } /^  (pingpong|stream|allreduce) / { print l, $0 }'
    done
  done
done
