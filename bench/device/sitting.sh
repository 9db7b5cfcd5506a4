#!/usr/bin/env bash
# sitting.sh: the measurements issues 29 (real cores) and 30 (sealed
# links) need from a machine with cores, one PART per call of the device
# tool (each well inside its 10 minutes), written under $OUT (default
# ./out). It runs from the folder bench/device/kit.sh filled, uses only
# what is on the PATH (mpicc and mpirun, python3 with torch, perf), and
# says what it skipped.
#
#   sitting.sh cores       boltmesh cores: N = 2..16 over shm and TCP beside OpenMPI and
#                          Gloo, the ping-pong, boltmesh-cma (--single-copy 256K), 2 rounds
#   sitting.sh algorithms  cores --algorithms doubling,halving,ring at N = 4, 8, 16,
#                          64 KiB to 16 MiB, 2 rounds of 0.5 s a case (issue 29, item 3)
#   sitting.sh seal        seal-sitting.sh: sealed against unsealed, 1 and 4 streams (issue 30)
#   sitting.sh tails       16 ranks, 8 B and 1 KiB allreduce over shm, 3 runs each with the
#                          default spin, --spin 5ms, --spin-yield 10us and --spin-yield 50us,
#                          then stacked.sh (2 ranks on one core), perf sched beside one run where
#                          perf is (issue 29, item 4: are waiting ranks stacked on CPUs?)
#   sitting.sh hosts       scale-bench.sh: 2 emulated hosts (network namespaces, 10 Gbit/s
#                          links) of 8 ranks, numbered alternately and host by host, beside
#                          OpenMPI (issue 29, item 3: collectives in host order); needs root
set -uo pipefail
d=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-$PWD/out}
mkdir -p "$out"
bin=$d/boltmesh
part=${1:-}
log() { echo "sitting: $*" | tee -a "$out/sitting.log" >&2; }
log "$part on $(nproc) cores, $(date -u +%FT%TZ), mpirun: $(command -v mpirun || echo none), perf: $(command -v perf || echo none)"
start=$SECONDS
case $part in
  cores)
    timeout 540 "$bin" cores --anchor "$d/mpi_allreduce.c" --gloo "$d/gloo_allreduce.py" \
      --pingpong-anchor "$d/mpi_pingpong.c" --single-copy 256K --rounds 2 \
      --json "$out/cores.json" --plot "$out/cores-plots" >"$out/cores.txt" 2>"$out/cores.err"
    log "cores: exit $?"
    ;;
  algorithms)
    timeout 540 "$bin" cores --ns 4,8,16 --sizes 64K,256K,1M,4M,16M --algorithms doubling,halving,ring \
      --rounds 2 --duration 500ms --pingpong none --anchor "$d/mpi_allreduce.c" --gloo none \
      --json "$out/algorithms.json" >"$out/algorithms.txt" 2>"$out/algorithms.err"
    log "algorithms: exit $?"
    ;;
  seal)
    timeout 540 "$d/seal-sitting.sh" --bin "$bin" --rounds 1 --streams 4 --sizes 8,1M,16M >"$out/seal.txt" 2>&1
    log "seal: exit $?"
    ;;
  tails)
    for spin in default 5ms yield10us yield50us; do
      flags=()
      case $spin in
        default) ;;
        yield*) flags=(--spin-yield "${spin#yield}") ;;
        *) flags=(--spin "$spin") ;;
      esac
      for r in 1 2 3; do
        echo "== spin $spin, run $r" >>"$out/tails.txt"
        timeout 120 "$bin" bench --ranks 16 --suite allreduce --sizes 8,1K --duration 2s --baseline none \
          --progress=false "${flags[@]}" >>"$out/tails.txt" 2>&1
      done
    done
    for f in "" "--spin-yield 10us"; do
      echo "== stacked $f" >>"$out/tails.txt"
      timeout 60 bash "$d/stacked.sh" --bin "$bin" $f >>"$out/tails.txt" 2>&1
    done
    if command -v perf >/dev/null; then
      timeout 120 perf sched record -o "$out/sched.data" -- "$bin" bench --ranks 16 --suite allreduce \
        --sizes 8 --duration 2s --baseline none --progress=false >"$out/tails-perf.txt" 2>&1
      # Which CPU each thread of the ranks ran on, how often: ranks' threads
      # sharing a CPU while others idle is the state RESULTS.md describes.
      perf sched timehist -i "$out/sched.data" 2>/dev/null |
        awk 'NR > 3 && $3 !~ /idle/ { n[$2 " " $3]++ } END { for (k in n) print n[k], k }' |
        sort -rn | head -80 >"$out/tails-cpus.txt"
      rm -f "$out/sched.data"
    else
      log "tails: no perf on the PATH: no scheduler trace"
    fi
    log "tails: done"
    ;;
  hosts)
    for place in alternate together; do
      timeout 260 bash "$d/scale-bench.sh" --bin "$bin" --report "$d/scalereport" --hosts 2 --rates 2:10gbit \
        --per-host 8 --placement "$place" --sizes 8,64K,1M,16M --duration 1s \
        --json "$out/hosts-$place.json" >"$out/hosts-$place.txt" 2>&1
      log "hosts $place: exit $?"
    done
    ;;
  *)
    sed -n '2,19p' "$0" >&2
    exit 2
    ;;
esac
log "$part took $((SECONDS - start)) s"
