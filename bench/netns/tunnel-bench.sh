#!/usr/bin/env bash
# tunnel-bench.sh: sealed boltmesh beside what a user would otherwise do
# for a link nobody trusts: boltmesh unsealed through a TLS tunnel
# (stunnel4, TLS 1.3, TCP_NODELAY on every socket, one tunnel per
# connection), 2 ranks on loopback,
# the same p2p cases (8 B ping-pong, 16 MiB stream) for each, rounds
# interleaved (sealed, tunnel, tunnel, sealed). Installs stunnel4 and
# openssl as root where they are missing; without them it says so and
# exits 0. WireGuard, between two network namespaces: wg-bench.sh.
#
#   bench/netns/tunnel-bench.sh [--rounds 2] [--sizes 8,16M] [--duration 1s]
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=common.sh
. "$here/common.sh"
p2p_args tunnel-bench 11 "$@"
if ! command -v stunnel4 >/dev/null || ! command -v openssl >/dev/null; then
  if [[ $(id -u) -ne 0 ]]; then
    echo "tunnel-bench: needs stunnel4 and openssl, or root to install them; skipping"
    exit 0
  fi
  need stunnel4 stunnel4 || { echo "tunnel-bench: stunnel4 could not be installed; skipping"; exit 0; }
  need openssl openssl || { echo "tunnel-bench: openssl could not be installed; skipping"; exit 0; }
fi
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
(cd "$root" && go build -o "$work/boltmesh" ./cmd/boltmesh)
BOLTMESH_KEY=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
export BOLTMESH_KEY
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=boltmesh-bench \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2>/dev/null

# Ports: rank 0 listens at p0, rank 1 at p1; the tunnel's client end
# (plain) at pc, its server end (TLS) at ps, which forwards to p0.
base=$((20000 + $$ % 20000))
p0=$base p1=$((base + 1)) pc=$((base + 2)) ps=$((base + 3))
cat >"$work/server.conf" <<CONF
foreground = yes
pid =
socket = l:TCP_NODELAY=1
socket = r:TCP_NODELAY=1
[bm]
accept = 127.0.0.1:$ps
connect = 127.0.0.1:$p0
cert = $work/cert.pem
key = $work/key.pem
sslVersion = TLSv1.3
CONF
cat >"$work/client.conf" <<CONF
foreground = yes
pid =
socket = l:TCP_NODELAY=1
socket = r:TCP_NODELAY=1
[bm]
client = yes
accept = 127.0.0.1:$pc
connect = 127.0.0.1:$ps
verifyPeer = yes
CAfile = $work/cert.pem
sslVersion = TLSv1.3
CONF
stunnel4 "$work/server.conf" >"$work/server.log" 2>&1 & pids+=($!)
stunnel4 "$work/client.conf" >"$work/client.log" 2>&1 & pids+=($!)
sleep 0.5

# run NAME SEAL DIAL0: one 2-rank p2p bench, rank 1 dialing rank 0 at
# DIAL0; prints NAME and boltmesh's lines.
run() {
  local name=$1 seal=$2 dial0=$3
  "$work/boltmesh" rank --rank 1 --world 2 --peers "$dial0,127.0.0.1:$p1" --seal "$seal" --transport tcp >/dev/null 2>&1 &
  local r1=$!
  "$work/boltmesh" bench --rank 0 --world 2 --peers "127.0.0.1:$p0,127.0.0.1:$p1" --seal "$seal" --transport tcp --suite p2p \
    --sizes "$sizes" --duration "$duration" --baseline none --progress=false 2>&1 |
    awk -v n="$name" '/^transport:/ { print n ": " $0 } /pingpong|stream/ { print n, $0 }'
  wait "$r1"
}
for r in $(seq 1 "$rounds"); do
  echo "== round $r"
  run sealed always "127.0.0.1:$p0"
  run tunnel never "127.0.0.1:$pc"
  run tunnel never "127.0.0.1:$pc"
  run sealed always "127.0.0.1:$p0"
done
echo "(sealed: boltmesh --seal always, direct; tunnel: boltmesh --seal never through stunnel $(stunnel4 -version 2>&1 | awk '/^stunnel/ { print $2 }'), TLS 1.3)"
