#!/usr/bin/env bash
# star-bench.sh: a star on emulated hosts. As root, builds W+1 network
# namespaces on a bridge (in a hub namespace), each worker's egress
# limited by tc tbf to RATE and the coordinator's to CENTER_RATE (default
# RATE; a server's link beside phones' uplinks), the coordinator (rank 0)
# alone on the first host and one worker on each other, and runs
# `boltmesh bench --coordinator` there:
# every worker-to-worker frame, and every collective step between
# workers, crosses the coordinator's host. With two binaries (--bin A,B)
# the rounds run A B B A, the same sitting, to compare them. Every
# namespace it made is removed on exit, failure included; only addresses
# inside them receive traffic.
#
#   bench/netns/star-bench.sh [--workers 2] [--rate 1gbit] [--center-rate RATE] [--suite allreduce,broadcast]
#                             [--sizes 64K,1M,16M] [--duration 2s] [--rounds 1]
#                             [--seal auto|always|never] [--bin PATH[,PATH]] (default: built here)
#
# Without root it says so and exits 0.
set -euo pipefail

workers=2 rate=1gbit center_rate="" suite=allreduce,broadcast sizes=64K,1M,16M duration=2s rounds=1 seal="" bins=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --workers) workers=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --center-rate) center_rate=$2; shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --seal) seal=$2; shift 2 ;;
    --bin) bins=$2; shift 2 ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) echo "star-bench: unknown argument $1" >&2; exit 2 ;;
  esac
done
center_rate=${center_rate:-$rate}
((workers >= 1 && workers <= 200)) || { echo "star-bench: --workers must be 1 to 200" >&2; exit 2; }

if [[ $(id -u) -ne 0 ]]; then
  echo "star-bench: needs root to create network namespaces; skipping"
  exit 0
fi
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"
root=$(cd "$here/../.." && pwd)
tag="bs$$"
work=$(mktemp -d)
net="10.232.$((($$ % 200) + 10))"
ns=()
for i in $(seq 0 "$workers"); do ns+=("${tag}h$i"); done
hub="${tag}hub"
cleanup() {
  remove_netns "${ns[@]}" "$hub"
  rm -rf "$work"
}
trap cleanup EXIT

if [[ -z $bins ]]; then
  (cd "$root" && go build -o "$work/boltmesh" ./cmd/boltmesh)
  bins=$work/boltmesh
fi
IFS=, read -r -a bin <<<"$bins"
((${#bin[@]} <= 2)) || { echo "star-bench: --bin takes one or two binaries" >&2; exit 2; }
"${bin[0]}" keygen "$work/key" >/dev/null

ip netns add "$hub"
ip -n "$hub" link add br0 type bridge
ip -n "$hub" link set br0 up
for i in $(seq 0 "$workers"); do
  n=${ns[$i]}
  ip netns add "$n"
  ip -n "$n" link set lo up
  ip -n "$n" link add eth0 mtu 9000 type veth peer name "p$i" netns "$hub"
  ip -n "$hub" link set "p$i" mtu 9000 master br0 up
  ip -n "$n" addr add "$net.$((i + 1))/24" dev eth0
  ip -n "$n" link set eth0 up
  r=$rate
  ((i > 0)) || r=$center_rate
  ip netns exec "$n" tc qdisc add dev eth0 root tbf rate "$r" burst 500000 latency 20ms
done

# sitting BIN: one run of the star with BIN, its tables on stdout.
sitting() {
  local b=$1 world=$((workers + 1))
  local flags=(--world "$world" --coordinator "$net.1:7400" --key-file "$work/key" ${seal:+--seal "$seal"})
  for i in $(seq 1 "$workers"); do
    ip netns exec "${ns[$i]}" env GOMAXPROCS=1 "$b" rank --rank "$i" "${flags[@]}" >"$work/rank$i.txt" 2>&1 &
  done
  ip netns exec "${ns[0]}" env GOMAXPROCS=1 "$b" bench --rank 0 "${flags[@]}" --suite "$suite" --sizes "$sizes" \
    --duration "$duration" --baseline none --progress=false || { wait; return 1; }
  wait
}

order=("${bin[@]}")
if ((${#bin[@]} == 2)); then order=("${bin[0]}" "${bin[1]}" "${bin[1]}" "${bin[0]}"); fi
echo "star-bench: $workers workers and the coordinator, each on a host of its own, tbf $rate on every worker's egress, $center_rate on the coordinator's"
for r in $(seq 1 "$rounds"); do
  for b in "${order[@]}"; do
    echo "== round $r: $b"
    sitting "$b"
  done
done
