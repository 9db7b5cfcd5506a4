#!/usr/bin/env bash
# netns-bench.sh: emulated hosts for boltmesh. As root, builds 2 or 4
# network namespaces joined by veth pairs (2: one pair; 4: each to a bridge
# in a hub namespace), optionally rate-limited with tc tbf to emulate a
# Thunderbolt link, runs one boltmesh rank per namespace with 1 and with N
# streams per pair, runs iperf3 with 1 and N streams over the same link,
# and OpenMPI's allreduce over TCP (btl_tcp_links N) on a namespace's
# loopback, all in the same run, and prints them side by side. Every
# namespace and link it made is removed on exit, failure included. Only
# addresses inside these namespaces receive traffic.
#
#   bench/netns/netns-bench.sh [--hosts 2|4] [--rate 20gbit] [--streams 2] [--size 16M] [--iters 20]
#                              [--congestion system|cubic|bbr] (boltmesh's; the others keep the system's)
#                              [--seal auto|always|never] (boltmesh's --seal, with a mesh key of the run's own)
#
# Without root it says so and exits 0.
set -euo pipefail

hosts=2 rate="" streams=2 size=16M iters=20 congestion="" seal=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --rate) rate=$2; shift 2 ;;
    --streams) streams=$2; shift 2 ;;
    --size) size=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --congestion) congestion=$2; shift 2 ;;
    --seal) seal=$2; shift 2 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "netns-bench: unknown argument $1" >&2; exit 2 ;;
  esac
done
[[ $hosts == 2 || $hosts == 4 ]] || { echo "netns-bench: --hosts must be 2 or 4" >&2; exit 2; }

if [[ $(id -u) -ne 0 ]]; then
  echo "netns-bench: needs root to create network namespaces; skipping"
  exit 0
fi
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"
need iperf3 iperf3
need mpicc openmpi-bin libopenmpi-dev

root=$(cd "$here/../.." && pwd)
tag="bm$$"
work=$(mktemp -d)
bin=$work/boltmesh
ns=() ips=()
for i in $(seq 0 $((hosts - 1))); do ns+=("${tag}n$i"); ips+=("10.231.$((($$ % 200) + 10)).$((i + 1))"); done
hub="${tag}hub"

cleanup() {
  remove_netns "${ns[@]}" "$hub"
  for i in $(seq 0 $((hosts - 1))); do ip link del "${tag}v$i" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

(cd "$root" && go build -o "$bin" ./cmd/boltmesh)
mpicc -O2 -o "$work/mpi_allreduce" "$here/mpi_allreduce.c"

# The links: rank i's side is ${tag}v$i in namespace ns[i], MTU 9000.
for n in "${ns[@]}"; do ip netns add "$n"; ip -n "$n" link set lo up; done
if [[ $hosts == 2 ]]; then
  ip link add "${tag}v0" type veth peer name "${tag}v1"
  for i in 0 1; do ip link set "${tag}v$i" netns "${ns[$i]}"; done
else
  ip netns add "$hub"
  ip -n "$hub" link add br0 type bridge
  ip -n "$hub" link set br0 up
  for i in $(seq 0 $((hosts - 1))); do
    ip link add "${tag}v$i" type veth peer name "${tag}h$i"
    ip link set "${tag}v$i" netns "${ns[$i]}"
    ip link set "${tag}h$i" netns "$hub"
    ip -n "$hub" link set "${tag}h$i" mtu 9000 master br0 up
  done
fi
for i in $(seq 0 $((hosts - 1))); do
  ip -n "${ns[$i]}" addr add "${ips[$i]}/24" dev "${tag}v$i"
  ip -n "${ns[$i]}" link set "${tag}v$i" mtu 9000 up
  if [[ -n $rate ]]; then
    ip netns exec "${ns[$i]}" tc qdisc add dev "${tag}v$i" root tbf rate "$rate" burst 4mb latency 10ms
  fi
done
echo "== $hosts namespaces, veth, MTU 9000, rate ${rate:-unlimited}, $streams streams =="

# Each namespace stands for a host: with enough cores, each rank gets its
# own (taskset) and GOMAXPROCS = cores per host, as a process per core on
# a real host; otherwise the ranks share.
cores=$(nproc)
per=$((cores / hosts))
pin() {
  if ((per >= 1)); then
    local lo=$(($1 * per))
    if [[ ${NETNS_PIN:-1} == 1 ]]; then echo env GOMAXPROCS=$per taskset -c "$lo-$((lo + per - 1))"; else echo env GOMAXPROCS=$per; fi
  fi
}

if [[ -n $seal ]]; then
  BOLTMESH_KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
  export BOLTMESH_KEY
fi
peers=$(for i in $(seq 0 $((hosts - 1))); do printf '%s:7710,' "${ips[$i]}"; done)
peers=${peers%,}

# boltmesh: p2p (rank 0 <-> 1), then allreduce over every rank, each in
# fresh processes (an allreduce loop is what an ML job runs), with $1
# streams; the results go to one CSV.
boltmesh() {
  local s=$1 csv=$work/bm-$1.csv suite
  for suite in p2p allreduce; do
    for i in $(seq 1 $((hosts - 1))); do
      ip netns exec "${ns[$i]}" $(pin "$i") "$bin" rank --rank "$i" --world "$hosts" --peers "$peers" --streams "$s" ${congestion:+--congestion "$congestion"} ${seal:+--seal "$seal"} &
    done
    ip netns exec "${ns[0]}" $(pin 0) "$bin" bench --rank 0 --world "$hosts" --peers "$peers" --streams "$s" ${congestion:+--congestion "$congestion"} ${seal:+--seal "$seal"} \
      --suite "$suite" --sizes "$size" --iters "$iters" --baseline none --progress=false --csv "$csv.$suite" >/dev/null
    wait
  done
  cat "$csv.p2p" >"$csv"
  tail -n +2 "$csv.allreduce" >>"$csv"
}
# field prints column $2 (GB/s) of the boltmesh result for op $1.
field() { awk -F, -v op="$1" -v col="$2" '$2 == op && $3 == "boltmesh" { print $col }' "$3"; }

# iperf3 with $1 streams from namespace 0 to 1: receiver GB/s (1e9 bytes).
iperf() {
  ip netns exec "${ns[1]}" $(pin 1) iperf3 -s -1 -B "${ips[1]}" >/dev/null &
  sleep 0.3
  ip netns exec "${ns[0]}" $(pin 0) iperf3 -c "${ips[1]}" -P "$1" -l 1M -t 3 -f g |
    awk '/receiver/ && (/SUM/ || !sum) { v = $(NF-2); if (/SUM/) sum = 1 } END { printf "%.3f", v / 8 }'
  wait
}

for s in 1 "$streams"; do boltmesh "$s"; done
ip1=$(iperf 1)
ipn=$(iperf "$streams")
bytes=$(awk -F, 'NR == 2 { print $5 }' "$work/bm-1.csv")
# OpenMPI across the namespaces: mpirun runs in namespace 0 and starts its
# daemons through an "rsh" that enters the namespace of the host named.
{
  echo '#!/bin/sh'
  echo 'while [ "${1#-}" != "$1" ]; do shift; done'
  echo 'host=$1; shift'
  echo 'case $host in'
  for i in $(seq 0 $((hosts - 1))); do echo "  ${ips[$i]}) ns=${ns[$i]} ;;"; done
  echo '  *) echo "nsrsh: unknown host $host" >&2; exit 1 ;;'
  echo 'esac'
  echo 'exec ip netns exec "$ns" /bin/sh -c "$*"'
} >"$work/nsrsh"
chmod +x "$work/nsrsh"
mpihosts=$(for i in $(seq 0 $((hosts - 1))); do printf '%s:1,' "${ips[$i]}"; done)
subnet="${ips[0]%.*}.0/24"
mpi() { # $1: links, $2: where (span or lo)
  local where=(-H "${mpihosts%,}" --mca plm_rsh_agent "$work/nsrsh" --mca btl_tcp_if_include "$subnet" --mca oob_tcp_if_include "$subnet")
  [[ $2 == lo ]] && where=(--mca btl_tcp_if_include lo)
  ip netns exec "${ns[0]}" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
    mpirun --oversubscribe --bind-to none -np "$hosts" "${where[@]}" --mca btl tcp,self --mca btl_tcp_links "$1" \
    "$work/mpi_allreduce" "$bytes" 2>/dev/null | awk '{ print $4 }'
}
mpi1=$(mpi 1 span)
mpin=$(mpi "$streams" span)
mpilo=$(mpi "$streams" lo)

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }
s1=$(field stream 12 "$work/bm-1.csv")
sn=$(field stream 12 "$work/bm-$streams.csv")
a1=$(field allreduce 13 "$work/bm-1.csv")
an=$(field allreduce 13 "$work/bm-$streams.csv")
printf '%-44s %10s %10s %8s\n' "$size messages, GB/s" boltmesh reference ratio
printf '%-44s %10s %10s %8s\n' "send, 1 stream vs iperf3 -P 1" "$s1" "$ip1" "$(ratio "$s1" "$ip1")"
printf '%-44s %10s %10s %8s\n' "send, $streams streams vs iperf3 -P $streams" "$sn" "$ipn" "$(ratio "$sn" "$ipn")"
printf '%-44s %10s %10s %8s\n' "allreduce busbw, 1 stream vs OpenMPI, 1 link" "$a1" "$mpi1" "$(ratio "$a1" "$mpi1")"
printf '%-44s %10s %10s %8s\n' "allreduce busbw, $streams streams vs OpenMPI, $streams links" "$an" "$mpin" "$(ratio "$an" "$mpin")"
printf '%-44s %10s %10s %8s\n' "allreduce busbw, best vs OpenMPI on loopback" "$(printf '%s\n%s\n' "$a1" "$an" | sort -g | tail -1)" "$mpilo" "$(ratio "$(printf '%s\n%s\n' "$a1" "$an" | sort -g | tail -1)" "$mpilo")"
echo "(OpenMPI: --mca btl tcp,self, one rank per namespace over the same links, and all $hosts on one namespace's loopback with btl_tcp_links $streams)"
