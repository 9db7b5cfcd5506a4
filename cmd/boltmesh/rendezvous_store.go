package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/boltmesh/boltmesh/internal/c10d"
)

// The agent-store rendezvous. Under torchrun (static rendezvous, torch
// 1.13's default) the agent itself holds a c10d TCPStore on
// MASTER_ADDR:MASTER_PORT and says so with TORCHELASTIC_USE_AGENT_STORE=True,
// so rank 0 cannot listen there. The ranks then meet through that store:
//
//	every rank r                                        the store
//	listen on an ephemeral port of its own (bindAddr)
//	SET <prefix>rank/<r> = {"world": n, "addr": "host:port"}  ──>
//	GET <prefix>rank/<q>, for every other rank q (blocking)   <──
//	form the mesh (engine.FromListener), then DELETE <prefix>rank/<r>
//
// <prefix> is /boltmesh/<TORCHELASTIC_RUN_ID>/attempt_<TORCHELASTIC_RESTART_COUNT>/,
// so that a restarted attempt never reads a dead attempt's addresses. A
// rank's own host in its address is the one its connection to the store
// leaves from, as in the JSON rendezvous. A rank deletes its entry once
// its mesh is up (or failed): by then every peer it handshook with has
// read it, since a rank reads every entry before it forms its mesh.
//
// The store holds addresses and world sizes only, nothing derived from
// the mesh key. With a key the mesh's own handshake authenticates every
// connection both ways (frame/spec.md, "Handshake"), so whoever can read
// or write the store can learn the ranks' addresses, or make a rank dial
// a wrong one and fail, but can neither take a rank's slot nor learn the
// key (it sees at most a rank's proof, as whoever answers at an address a
// rank dials does: use a random key, boltmesh keygen). Without a key,
// anyone who reaches the ports can join, as with the unkeyed rendezvous.
//
// The same happens without TORCHELASTIC_USE_AGENT_STORE when rank 0 finds
// MASTER_PORT taken by something that answers as a TCPStore: rank 0 asks
// it (c10d.Dial detects a store) when its listen fails with "address in
// use", and every other rank asks it when what it reached at MASTER_PORT
// has not sent rank 0's challenge within storeGrace.

// storeGrace is how long a rank other than 0 waits at MASTER_ADDR:MASTER_PORT
// for rank 0's challenge (which rank 0 sends as soon as it accepts)
// before asking whether a TCPStore holds the port.
const storeGrace = time.Second

// maxStoreEntry bounds a rank's entry read from the store.
const maxStoreEntry = maxHelloLine

// storeEntry is what a rank publishes in the store.
type storeEntry struct {
	World int    `json:"world"`
	Addr  string `json:"addr"`
}

// master is where and how a torchrun rank meets the others.
type master struct {
	addr   string // MASTER_ADDR:MASTER_PORT
	prefix string // storePrefix's
	forced bool   // TORCHELASTIC_USE_AGENT_STORE: the agent holds a store at addr
}

// masterStore returns where this rank may meet through torchrun's store:
// MASTER_ADDR:MASTER_PORT under torchrun when nothing else names the
// rendezvous (--rendezvous, $BOLTMESH_RENDEZVOUS); ok is false otherwise.
func masterStore(f *meshFlags, m membership, getenv func(string) string) (at master, ok bool) {
	if m.source != "torchrun" || m.rendezvous == "" || f.rendezvous != "" || getenv("BOLTMESH_RENDEZVOUS") != "" {
		return master{}, false
	}
	return master{addr: m.rendezvous, prefix: storePrefix(getenv), forced: isTrue(getenv("TORCHELASTIC_USE_AGENT_STORE"))}, true
}

// storePrefix is this run's and attempt's key prefix in the store.
func storePrefix(getenv func(string) string) string {
	run, attempt := getenv("TORCHELASTIC_RUN_ID"), getenv("TORCHELASTIC_RESTART_COUNT")
	if run == "" {
		run = "none" // torchrun's own default run id
	}
	if attempt == "" {
		attempt = "0"
	}
	return "/boltmesh/" + run + "/attempt_" + attempt + "/"
}

// meetAtMaster returns every rank's address, meeting at torchrun's
// MASTER_ADDR:MASTER_PORT: through the store there if at.forced or if
// one answers there, else through the JSON rendezvous. leave is to be
// called once the mesh is formed or failed.
func meetAtMaster(f *meshFlags, m membership, self string, key []byte, at master) (peers []string, leave func(), err error) {
	ctx, cancel := context.WithTimeout(context.Background(), f.timeout)
	defer cancel()
	addr := at.addr
	if at.forced {
		return viaStore(ctx, at, m, self, nil)
	}
	if m.rank == 0 {
		ln, err := net.Listen("tcp", addr)
		if err == nil {
			peers, err := serveRendezvous(ln, m.world, self, key, f.timeout)
			return peers, func() {}, err
		}
		err = fmt.Errorf("rendezvous: rank 0 listening at %s: %w", addr, err)
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, nil, err
		}
		return viaStore(ctx, at, m, self, err)
	}
	deadline, _ := ctx.Deadline()
	peers, err = joinRendezvousAt(addr, m.rank, m.world, self, key, deadline, storeGrace)
	if !errors.Is(err, errSilent) {
		return peers, func() {}, err
	}
	peers, leave, err = viaStore(ctx, at, m, self, nil)
	if !errors.Is(err, c10d.ErrNotStore) {
		return peers, leave, err
	}
	// Silent, yet not a store: a rank 0 slow to send its challenge.
	peers, err = joinRendezvousAt(addr, m.rank, m.world, self, key, deadline, 0)
	return peers, func() {}, err
}

// viaStore runs the store rendezvous with the store at at.addr. why, if
// set, is the error that made rank 0 look for a store there, returned
// with the store's if none answers.
func viaStore(ctx context.Context, at master, m membership, self string, why error) ([]string, func(), error) {
	addr, prefix := at.addr, at.prefix
	st, err := c10d.Dial(ctx, addr, c10d.Options{MaxValue: maxStoreEntry})
	if err != nil {
		if why != nil {
			return nil, nil, fmt.Errorf("%w; and no TCPStore answers there: %w", why, err)
		}
		return nil, nil, fmt.Errorf("rendezvous through the TCPStore at %s: %w", addr, err)
	}
	peers, err := storeRendezvous(ctx, st, prefix, m, self)
	leave := func() {
		ctx, cancel := context.WithTimeout(context.Background(), storeGrace)
		defer cancel()
		// Best effort: a later attempt has a prefix of its own, and a later
		// run in this attempt is only spared a stale address.
		st.Delete(ctx, storeKey(prefix, m.rank))
		st.Close()
	}
	if err != nil {
		leave()
		return nil, nil, fmt.Errorf("rendezvous through the TCPStore at %s: %w", addr, err)
	}
	return peers, leave, nil
}

// storeRendezvous publishes this rank's address self under prefix and
// reads every other rank's, waiting for each until ctx ends.
func storeRendezvous(ctx context.Context, st *c10d.Client, prefix string, m membership, self string) ([]string, error) {
	peers := make([]string, m.world)
	peers[m.rank] = fillHost(self, st.LocalAddr())
	entry, err := json.Marshal(storeEntry{World: m.world, Addr: peers[m.rank]})
	if err != nil {
		return nil, err
	}
	if err := st.Set(ctx, storeKey(prefix, m.rank), entry); err != nil {
		return nil, fmt.Errorf("publishing rank %d's address: %w", m.rank, err)
	}
	for q := range m.world {
		if q == m.rank {
			continue
		}
		v, err := st.Get(ctx, storeKey(prefix, q))
		if err != nil {
			return nil, fmt.Errorf("waiting for rank %d's address: %w", q, err)
		}
		if peers[q], err = checkEntry(v, q, m.world); err != nil {
			return nil, err
		}
	}
	return peers, nil
}

// checkEntry checks rank q's entry in a world of n ranks and returns its
// address.
func checkEntry(v []byte, q, n int) (string, error) {
	var e storeEntry
	if err := json.Unmarshal(v, &e); err != nil {
		return "", fmt.Errorf("%w: rank %d's entry %q: %v", errBadEntry, q, v, err)
	}
	if e.World != n {
		return "", fmt.Errorf("%w: rank %d says the world has %d ranks, this rank says %d", errBadEntry, q, e.World, n)
	}
	if err := checkAddr(e.Addr); err != nil {
		return "", fmt.Errorf("%w: rank %d: %w", errBadEntry, q, err)
	}
	return e.Addr, nil
}

func storeKey(prefix string, rank int) string {
	return prefix + "rank/" + strconv.Itoa(rank)
}

// isTrue reports whether an environment value reads as true.
func isTrue(v string) bool {
	switch strings.TrimSpace(v) {
	case "True", "true", "TRUE", "1":
		return true
	}
	return false
}
