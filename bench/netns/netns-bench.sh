#!/usr/bin/env bash
# netns-bench.sh: emulated hosts for boltmesh. As root, builds two network
# namespaces joined by a veth pair (optionally rate-limited with tc tbf to
# emulate a Thunderbolt link), runs one boltmesh rank in each, and runs
# iperf3 with 1 and N streams over the same link in the same run. Every
# namespace and link it made is removed on exit, failure included. Only
# addresses inside these namespaces receive traffic.
#
#   bench/netns/netns-bench.sh [--rate 20gbit] [--streams 4] [--sizes 1M,16M] [--suite p2p,allreduce]
#
# Without root it says so and exits 0.
set -euo pipefail

rate="" streams=4 sizes="64K,1M,16M" suite="p2p,allreduce"
while [[ $# -gt 0 ]]; do
  case $1 in
    --rate) rate=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --suite) suite=$2; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "netns-bench: unknown argument $1" >&2; exit 2 ;;
  esac
done

if [[ $(id -u) -ne 0 ]]; then
  echo "netns-bench: needs root to create network namespaces; skipping"
  exit 0
fi
command -v iperf3 >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq iperf3; }

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
tag="bm$$"
ns0="${tag}a" ns1="${tag}b" if0="${tag}v0" if1="${tag}v1"
ip0=10.231.0.1 ip1=10.231.0.2
bin=$(mktemp -d)/boltmesh

cleanup() {
  ip netns pids "$ns0" 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip netns pids "$ns1" 2>/dev/null | xargs -r kill 2>/dev/null || true
  ip netns del "$ns0" 2>/dev/null || true
  ip netns del "$ns1" 2>/dev/null || true
  ip link del "$if0" 2>/dev/null || true
  rm -rf "$(dirname "$bin")"
}
trap cleanup EXIT

(cd "$root" && go build -o "$bin" ./cmd/boltmesh)

ip netns add "$ns0"
ip netns add "$ns1"
ip link add "$if0" type veth peer name "$if1"
ip link set "$if0" netns "$ns0"
ip link set "$if1" netns "$ns1"
ip -n "$ns0" addr add "$ip0/24" dev "$if0"
ip -n "$ns1" addr add "$ip1/24" dev "$if1"
for ns in "$ns0" "$ns1"; do ip -n "$ns" link set lo up; done
ip -n "$ns0" link set "$if0" up mtu 9000
ip -n "$ns1" link set "$if1" up mtu 9000
if [[ -n $rate ]]; then
  for pair in "$ns0 $if0" "$ns1 $if1"; do
    set -- $pair
    ip netns exec "$1" tc qdisc add dev "$2" root tbf rate "$rate" burst 4mb latency 10ms
  done
fi
echo "== link: veth, MTU 9000, rate ${rate:-unlimited} =="

peers="$ip0:7710,$ip1:7710"
ip netns exec "$ns1" "$bin" rank --rank 1 --world 2 --peers "$peers" &
ip netns exec "$ns0" "$bin" bench --rank 0 --world 2 --peers "$peers" --suite "$suite" --sizes "$sizes" --progress=false
wait

ip netns exec "$ns1" iperf3 -s -1 -B "$ip1" >/dev/null &
sleep 0.3
for p in 1 "$streams"; do
  gbps=$(ip netns exec "$ns0" iperf3 -c "$ip1" -P "$p" -l 1M -t 3 -J |
    python3 -c 'import json,sys; print(round(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]/8e9, 3))')
  echo "iperf3 streams=$p GB/s=$gbps"
  if [[ $p != "$streams" ]]; then
    ip netns exec "$ns1" iperf3 -s -1 -B "$ip1" >/dev/null &
    sleep 0.3
  fi
done
