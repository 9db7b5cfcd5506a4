#!/usr/bin/env bash
# wg-bench.sh: sealed boltmesh beside boltmesh unsealed through a
# WireGuard tunnel, what a user would otherwise do for a link nobody
# trusts: two network namespaces joined by a veth pair; sealed boltmesh
# (--seal always) runs over the veth, unsealed boltmesh over a WireGuard
# interface in each namespace on top of it, 2 ranks, the same p2p cases
# (8 B ping-pong, 16 MiB stream), rounds interleaved (sealed, wireguard,
# wireguard, sealed). WireGuard is the kernel's where its module loads,
# else wireguard-go (userspace, on a TUN device), as on a kernel
# without the module; the output says which. Needs root; installs
# wireguard-tools and wireguard-go where missing, and skips with a
# message (exit 0) where it cannot.
#
#   bench/netns/wg-bench.sh [--rounds 2] [--sizes 8,16M] [--duration 1s]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"
p2p_args wg-bench 14 "$@"
if [[ $(id -u) -ne 0 ]]; then
  echo "wg-bench: needs root (network namespaces); skipping"
  exit 0
fi
need wg wireguard-tools || { echo "wg-bench: wireguard-tools could not be installed; skipping"; exit 0; }
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
a=bmwg$$a b=bmwg$$b
cleanup() {
  remove_netns "$a" "$b"
  rm -rf "$work" /var/run/wireguard/wg$$a.sock /var/run/wireguard/wg$$b.sock
}
trap cleanup EXIT
(cd "$root" && go build -o "$work/boltmesh" ./cmd/boltmesh)
BOLTMESH_KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export BOLTMESH_KEY

ip netns add "$a"
ip netns add "$b"
ip link add "v$$a" type veth peer name "v$$b"
ip link set "v$$a" netns "$a"
ip link set "v$$b" netns "$b"
ip -n "$a" addr add 10.77.0.1/24 dev "v$$a"
ip -n "$b" addr add 10.77.0.2/24 dev "v$$b"
for ns in "$a" "$b"; do ip -n "$ns" link set lo up; done
ip -n "$a" link set "v$$a" up
ip -n "$b" link set "v$$b" up

# The WireGuard interfaces: the kernel's, else wireguard-go's.
impl=kernel
if ! ip -n "$a" link add "wg$$a" type wireguard 2>/dev/null; then
  need wireguard-go wireguard-go || { echo "wg-bench: no wireguard module, and wireguard-go could not be installed; skipping"; exit 0; }
  impl="wireguard-go $(wireguard-go --version 2>/dev/null | awk '{ print $NF; exit }')"
  ip netns exec "$a" wireguard-go "wg$$a" >/dev/null 2>&1
  ip netns exec "$b" wireguard-go "wg$$b" >/dev/null 2>&1
else
  ip -n "$b" link add "wg$$b" type wireguard
fi
ka=$(wg genkey) kb=$(wg genkey)
pa=$(wg pubkey <<<"$ka") pb=$(wg pubkey <<<"$kb")
echo "$ka" >"$work/a.key"
echo "$kb" >"$work/b.key"
ip netns exec "$a" wg set "wg$$a" private-key "$work/a.key" listen-port 51820 peer "$pb" endpoint 10.77.0.2:51820 allowed-ips 10.88.0.2/32
ip netns exec "$b" wg set "wg$$b" private-key "$work/b.key" listen-port 51820 peer "$pa" endpoint 10.77.0.1:51820 allowed-ips 10.88.0.1/32
ip -n "$a" addr add 10.88.0.1/24 dev "wg$$a"
ip -n "$b" addr add 10.88.0.2/24 dev "wg$$b"
ip -n "$a" link set "wg$$a" up
ip -n "$b" link set "wg$$b" up

# run NAME SEAL NET: one 2-rank p2p bench, rank 0 in namespace a and
# rank 1 in b, at NET.1 and NET.2; prints NAME and boltmesh's lines.
run() {
  local name=$1 seal=$2 net=$3 peers="$3.1:7101,$3.2:7102"
  ip netns exec "$b" "$work/boltmesh" rank --rank 1 --world 2 --peers "$peers" --seal "$seal" --transport tcp >/dev/null 2>&1 &
  local r1=$!
  ip netns exec "$a" "$work/boltmesh" bench --rank 0 --world 2 --peers "$peers" --seal "$seal" --transport tcp --suite p2p \
    --sizes "$sizes" --duration "$duration" --baseline none --progress=false 2>&1 |
    awk -v n="$name" '/^transport:/ { print n ": " $0 } /pingpong|stream/ { print n, $0 }'
  wait "$r1"
}
for r in $(seq 1 "$rounds"); do
  echo "== round $r"
  run sealed always 10.77.0
  run wireguard never 10.88.0
  run wireguard never 10.88.0
  run sealed always 10.77.0
done
echo "(sealed: boltmesh --seal always over the veth; wireguard: boltmesh --seal never through WireGuard ($impl) over the same veth)"
