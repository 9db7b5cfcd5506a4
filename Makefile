# boltmesh: build, test and benchmark. `make test` is what CI runs.
GO      ?= go
PKGS    := ./...
# Benchmark time per case for `make bench`; BENCHTIME=1x is a smoke run.
BENCHTIME ?= 1s
FUZZTIME  ?= 30s
CROSS   := darwin/arm64 darwin/amd64 freebsd/amd64

.PHONY: all build test vet race allocs cross bench fuzz clean

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

# test: vet, the race-enabled test suite, the allocation tests and the
# cross builds.
test: vet race allocs cross

# cross: macOS and FreeBSD must build and vet (they cannot run here).
cross:
	@for t in $(CROSS); do \
		echo "cross $$t"; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) build $(PKGS) || exit 1; \
		GOOS=$${t%/*} GOARCH=$${t#*/} $(GO) vet $(PKGS) || exit 1; \
	done

# bench: boltmesh against the stdnet baseline (plain net.Conn), ranks as
# processes on loopback: ping-pong latency, streaming bandwidth, one-sided
# put/get, and allreduce (2 and 4 ranks, with bus bandwidth).
bench:
	$(GO) test -run='^$$' -bench='PingPong|Stream|Put|Get' -benchtime=$(BENCHTIME) ./engine
	$(GO) test -run='^$$' -bench='AllReduce' -benchtime=$(BENCHTIME) ./engine/collective

fuzz:
	$(GO) test -run='^$$' -fuzz='^FuzzDecode$$' -fuzztime=$(FUZZTIME) ./frame
	$(GO) test -run='^$$' -fuzz='^FuzzHello$$' -fuzztime=$(FUZZTIME) ./frame

clean:
	$(GO) clean -testcache
