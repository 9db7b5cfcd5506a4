#!/usr/bin/env bash
# scale-bench.sh: boltmesh at scale on emulated hosts. As root, for each N
# of --hosts, builds N network namespaces on a bridge (in a hub namespace),
# each joined to it by a veth pair at MTU 9000 whose both ends tc tbf
# limits to the link rate of that N, so that the links, not this machine's
# two cores, bound the transfers; runs one boltmesh rank per namespace
# (allreduce at each --sizes, barrier, broadcast of 1 MiB) and OpenMPI's
# allreduce (btl tcp) across the same namespaces, samples the machine's
# CPU use during each, and writes one boltmesh-scale/v1 JSON document, a
# table per N, and with --plot SVG charts (busbw over the link rate, and
# 8 B latency, against N). Every namespace and link it made is removed on
# exit, failure included; only addresses inside them receive traffic.
#
#   bench/netns/scale-bench.sh [--hosts "2 4 8 16"] [--rates "2:2gbit 4:1gbit 8:500mbit 16:250mbit"]
#                              [--per-host K] [--placement together|alternate] [--bin BOLTMESH --report SCALEREPORT]
#                              [--sizes 8,64K,1M,16M] [--duration 2s | --iters K] [--spin DUR] [--algorithm A] [--json FILE] [--plot DIR]
#
# --per-host puts K ranks in each namespace (default 1), neighbours over
# shared memory there, each namespace its own host (BOLTMESH_HOST_ID);
# --placement numbers them host by host (together, the default, as
# mpirun's --map-by slot) or one host after another in turn (alternate,
# as --map-by node), for boltmesh and OpenMPI alike. --bin and --report
# take a boltmesh and a scalereport already built (a machine without Go:
# bench/device/kit.sh); otherwise both are built from this checkout.
#
# --rates maps N to its link rate (tc's units); an N without one takes the
# rate of the largest N below it. Each boltmesh case runs for --duration
# (at least 5 timed iterations), or --iters iterations. --spin is passed to every boltmesh rank
# (engine.Options.Spin; the ranks of one N share the machine's cores, which
# a real host would not). --algorithm is passed to every boltmesh rank
# (auto, ring, doubling, halving, ...: boltmesh bench --algorithm).
# Without root it says so and exits 0.
set -euo pipefail

hosts="2 4 8 16" rates="2:2gbit 4:1gbit 8:500mbit 16:250mbit" sizes=8,64K,1M,16M iters="" duration=2s spin="" algorithm="" json="" plot=""
perhost=1 placement=together prebuilt="" report=""
while [[ $# -gt 0 ]]; do
  case $1 in
    --hosts) hosts=$2; shift 2 ;;
    --rates) rates=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --iters) iters=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --spin) spin=$2; shift 2 ;;
    --algorithm) algorithm=$2; shift 2 ;;
    --per-host) perhost=$2; shift 2 ;;
    --placement) placement=$2; shift 2 ;;
    --bin) prebuilt=$2; shift 2 ;;
    --report) report=$2; shift 2 ;;
    --json) json=$2; shift 2 ;;
    --plot) plot=$2; shift 2 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "scale-bench: unknown argument $1" >&2; exit 2 ;;
  esac
done
for n in $hosts; do
  [[ $n =~ ^[0-9]+$ && $n -ge 2 && $n -le 64 ]] || { echo "scale-bench: --hosts: $n is not in [2, 64]" >&2; exit 2; }
done
[[ $perhost =~ ^[0-9]+$ && $perhost -ge 1 && $perhost -le 16 ]] || { echo "scale-bench: --per-host: $perhost is not in [1, 16]" >&2; exit 2; }
[[ $placement == together || $placement == alternate ]] || { echo "scale-bench: --placement: $placement is not together or alternate" >&2; exit 2; }

if [[ $(id -u) -ne 0 ]]; then
  echo "scale-bench: needs root to create network namespaces; skipping"
  exit 0
fi
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"
need mpicc openmpi-bin libopenmpi-dev
need tc iproute2

root=$(cd "$here/../.." && pwd)
tag="bs$$"
work=$(mktemp -d)
bin=${prebuilt:-$work/boltmesh}
net="10.$((($$ % 200) + 20)).$((($$ / 200) % 250))"
ns=()
hub="${tag}hub"

cleanup() {
  remove_netns "${ns[@]}" "$hub"
  rm -rf "$work"
}
trap cleanup EXIT

if [[ -n $prebuilt || -n $report ]]; then
  [[ -x $prebuilt && -x $report ]] || { echo "scale-bench: --bin and --report need each other, and both executable" >&2; exit 2; }
  cp "$report" "$work/scalereport"
else
  (cd "$root" && go build -o "$bin" ./cmd/boltmesh && go build -o "$work/scalereport" ./bench/netns/scalereport)
fi
mpicc -O2 -o "$work/mpi_allreduce" "$here/mpi_allreduce.c"
"$bin" keygen "$work/key" >/dev/null

# rate_of N: the link rate of N hosts.
rate_of() {
  local best="" bn=0 kv k
  for kv in $rates; do
    k=${kv%%:*}
    if ((k <= $1 && k >= bn)); then best=${kv#*:}; bn=$k; fi
  done
  [[ -n $best ]] || { echo "scale-bench: no rate for $1 hosts in --rates" >&2; exit 2; }
  echo "$best"
}

# burst_of RATE: tbf's bucket for RATE, 4 ms of it (the kernel's timer
# ticks at most every 4 ms), at least 64 KiB.
burst_of() {
  local bytes
  bytes=$("$work/scalereport" rate-bytes "$1")
  echo $((bytes / 250 > 65536 ? bytes / 250 : 65536))
}

# build N RATE: N namespaces ${tag}n0.. on the hub's bridge, each link
# limited to RATE both ways.
build() {
  local n=$1 rate=$2 i burst
  burst=$(burst_of "$rate")
  ns=()
  ip netns add "$hub"
  ip -n "$hub" link set lo up
  ip -n "$hub" link add br0 type bridge
  ip -n "$hub" link set br0 mtu 9000 up
  for i in $(seq 0 $((n - 1))); do
    ns+=("${tag}n$i")
    ip netns add "${ns[$i]}"
    ip -n "${ns[$i]}" link set lo up
    ip -n "$hub" link add "h$i" mtu 9000 type veth peer name "v$i" netns "${ns[$i]}"
    ip -n "$hub" link set "h$i" master br0 up
    ip -n "${ns[$i]}" addr add "$net.$((i + 1))/24" dev "v$i"
    ip -n "${ns[$i]}" link set "v$i" mtu 9000 up
    ip netns exec "${ns[$i]}" tc qdisc add dev "v$i" root tbf rate "$rate" burst "$burst" latency 20ms
    ip netns exec "$hub" tc qdisc add dev "h$i" root tbf rate "$rate" burst "$burst" latency 20ms
  done
}

teardown() {
  remove_netns "${ns[@]}" "$hub"
  ns=()
}

# cpu_now: busy and total jiffies of the whole machine.
cpu_now() { awk '/^cpu / { print $2 + $3 + $4 + $7 + $8, $2 + $3 + $4 + $5 + $6 + $7 + $8 }' /proc/stat; }
# cpu_pct BEFORE AFTER: the busy share between two cpu_now readings.
cpu_pct() { awk -v a="$1" -v b="$2" 'BEGIN { split(a, x, " "); split(b, y, " "); if (y[2] > x[2]) printf "%.1f", 100 * (y[1] - x[1]) / (y[2] - x[2]); else print 0 }'; }

# host_of R N: the host (namespace index) of rank R of N hosts, by
# --placement; slot_of R N: its place among its host's ranks.
host_of() { if [[ $placement == alternate ]]; then echo $(($1 % $2)); else echo $(($1 / perhost)); fi; }
slot_of() { if [[ $placement == alternate ]]; then echo $(($1 / $2)); else echo $(($1 % perhost)); fi; }

# boltmesh N SUITE SIZES OUT: one run of rank 0's bench (the others run
# "boltmesh rank") over N hosts of --per-host ranks, with every rank's
# GOMAXPROCS 1 once ranks outnumber the cores; prints the CPU use during
# it.
boltmesh() {
  local n=$1 suite=$2 sz=$3 out=$4 i h peers="" env=(env) world=$(($1 * perhost))
  for i in $(seq 0 $((world - 1))); do peers+="$net.$(($(host_of "$i" "$n") + 1)):$((7710 + $(slot_of "$i" "$n"))),"; done
  peers=${peers%,}
  ((world > $(nproc))) && env+=(GOMAXPROCS=1)
  local flags=(--world "$world" --peers "$peers" --key-file "$work/key" ${spin:+--spin "$spin"})
  local before after
  before=$(cpu_now)
  for i in $(seq 1 $((world - 1))); do
    h=$(host_of "$i" "$n")
    ip netns exec "${ns[$h]}" "${env[@]}" BOLTMESH_HOST_ID="${ns[$h]}" "$bin" rank --rank "$i" "${flags[@]}" &
  done
  ip netns exec "${ns[0]}" "${env[@]}" BOLTMESH_HOST_ID="${ns[0]}" "$bin" bench --rank 0 "${flags[@]}" --suite "$suite" --sizes "$sz" \
    ${iters:+--iters "$iters"} ${algorithm:+--algorithm "$algorithm"} --duration "$duration" --baseline none --progress=false --json "$out" >/dev/null
  wait
  after=$(cpu_now)
  cpu_pct "$before" "$after"
}

# openmpi N OUT: OpenMPI's allreduce across the namespaces (mpirun in
# namespace 0, its daemons started through an "rsh" that enters the
# namespace of the host named); prints the CPU use during it. Its ranks
# yield in their progress loop once they outnumber the cores, as
# OpenMPI does on a node it knows is oversubscribed (here every
# namespace has one slot, so it cannot know).
openmpi() {
  local n=$1 out=$2 i hostsarg="" yield=0 world=$(($1 * perhost)) mapby=slot btl=tcp,self
  ((world > $(nproc))) && yield=1
  [[ $placement == alternate ]] && mapby=node
  ((perhost > 1)) && btl=vader,tcp,self # a host's ranks over shared memory, as boltmesh's
  {
    echo '#!/bin/sh'
    echo 'while [ "${1#-}" != "$1" ]; do shift; done'
    echo 'host=$1; shift'
    echo 'case $host in'
    for i in $(seq 0 $((n - 1))); do echo "  $net.$((i + 1))) ns=${ns[$i]} ;;"; done
    echo '  *) echo "nsrsh: unknown host $host" >&2; exit 1 ;;'
    echo 'esac'
    # Each host its own session and shared-memory directories: the
    # namespaces share /tmp and the hostname, and vader's segments of two
    # hosts would otherwise take the same names.
    echo 'mkdir -p "'"$work"'/ompi-$ns"'
    echo 'exec ip netns exec "$ns" env OMPI_MCA_orte_tmpdir_base="'"$work"'/ompi-$ns" OMPI_MCA_btl_vader_backing_directory="'"$work"'/ompi-$ns" /bin/sh -c "$*"'
  } >"$work/nsrsh"
  chmod +x "$work/nsrsh"
  for i in $(seq 0 $((n - 1))); do hostsarg+="$net.$((i + 1)):$perhost,"; done
  local bytes
  bytes=$("$work/scalereport" sizes "$sizes")
  local before after try
  for try in 1 2 3; do
    before=$(cpu_now)
    ip netns exec "${ns[0]}" env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 \
      mpirun --oversubscribe --bind-to none -np "$world" --map-by "$mapby" -H "${hostsarg%,}" --mca plm_rsh_agent "$work/nsrsh" \
      --mca btl "$btl" --mca btl_tcp_if_include "$net.0/24" --mca oob_tcp_if_include "$net.0/24" --mca mpi_yield_when_idle "$yield" \
      "$work/mpi_allreduce" $bytes >"$out" 2>"$out.err" || true
    after=$(cpu_now)
    # a line per size: bytes p50 algbw busbw [p99], all numbers (mpirun prints
    # its complaints, boxed in dashes, on stdout too: they are dropped
    # when every size's line is there)
    if [[ $(grep -cE '^[0-9.e+-]+( [0-9.e+-]+){3,4}$' "$out") == $(wc -w <<<"$bytes") ]]; then
      grep -E '^[0-9.e+-]+( [0-9.e+-]+){3,4}$' "$out" >"$out.ok" && mv "$out.ok" "$out"
      cpu_pct "$before" "$after"
      return 0
    fi
    echo "scale-bench: OpenMPI at N = $n failed (try $try of 3):" >&2
    sed 's/^/  /' "$out" "$out.err" | head -20 >&2
  done
  rm -f "$out"
  echo 0
}

runs=()
for n in $hosts; do
  rate=$(rate_of "$n")
  echo "== $n hosts, links of $rate (tbf both ways), MTU 9000 ==" >&2
  build "$n" "$rate"
  ar=$(boltmesh "$n" allreduce,barrier "$sizes" "$work/bm-ar-$n.json")
  bc=$(boltmesh "$n" broadcast 1M "$work/bm-bc-$n.json")
  mp=$(openmpi "$n" "$work/mpi-$n.txt")
  mpi_ok=""
  [[ -s $work/mpi-$n.txt ]] && mpi_ok=1
  teardown
  runs+=(--run "hosts=$n,per_host=$perhost,placement=$placement,rate=$rate,cpu=$ar,cpu_bcast=$bc,cpu_mpi=$mp,boltmesh=$work/bm-ar-$n.json,boltmesh=$work/bm-bc-$n.json${mpi_ok:+,openmpi=$work/mpi-$n.txt}")
done
"$work/scalereport" report "${runs[@]}" ${json:+--json "$json"} ${plot:+--plot "$plot"}
