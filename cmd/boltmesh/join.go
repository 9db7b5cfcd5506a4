package main

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"

	"github.com/boltmesh/boltmesh/bench"
	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/thunderbolt"
)

// joined is this rank's place in a built mesh.
type joined struct {
	t     *engine.NetTransport
	peers []string
}

// host is this rank's host as the other ranks reach it, where the stdnet
// baseline listens too.
func (j *joined) host() string {
	h, _, err := net.SplitHostPort(j.peers[j.t.Rank()])
	if err != nil || h == "" {
		return "127.0.0.1"
	}
	return h
}

// joinMesh builds this rank's mesh from m: a star through --coordinator,
// else a full mesh straight from the peer list if there is one, else
// through the rendezvous. rln, if not nil, is rank 0's rendezvous (or,
// in a star, coordinator) listener, already open (a local run opens it
// before starting the other ranks).
func joinMesh(f *meshFlags, m membership, opts engine.Options, rln net.Listener) (*joined, error) {
	if f.coordinator != "" {
		return joinStar(f, m, opts, rln)
	}
	rv := rendezvousAddr(f.rendezvous, m, os.Getenv)
	ln, err := net.Listen("tcp", bindAddr(f.bind, m, rv))
	if err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	peers, leave, err := exchangePeers(f, m, ln, rv, opts.MeshKey, rln)
	if err != nil {
		ln.Close()
		return nil, err
	}
	t, err := engine.FromListener(m.rank, m.world, ln, peers, opts)
	leave()
	if err != nil {
		return nil, fmt.Errorf("rank %d of %d joining %v: %w", m.rank, m.world, peers, err)
	}
	return &joined{t: t, peers: peers}, nil
}

// joinChecked is joinMesh followed by checkLinks: the mesh, and how this
// rank reached the others. On an error nothing is left open.
func joinChecked(f *meshFlags, m membership, opts engine.Options, rln net.Listener) (*joined, links, error) {
	j, err := joinMesh(f, m, opts, rln)
	if err != nil {
		return nil, links{}, err
	}
	used, err := checkLinks(f, j)
	if err != nil {
		j.t.Close()
		return nil, links{}, err
	}
	return j, used, nil
}

// joinStar builds this rank's place in a star: rank 0 is the coordinator
// and listens at --coordinator (or on ln), the others dial it. Workers
// need no listener of their own, so they may sit behind NAT.
func joinStar(f *meshFlags, m membership, opts engine.Options, ln net.Listener) (*joined, error) {
	peers := make([]string, m.world)
	peers[0] = f.coordinator
	if m.rank != 0 {
		t, err := engine.WorkerDial(m.rank, m.world, f.coordinator, opts)
		if err != nil {
			return nil, fmt.Errorf("rank %d of %d joining the star at %s: %w", m.rank, m.world, f.coordinator, err)
		}
		return &joined{t: t, peers: peers}, nil
	}
	if ln == nil {
		var err error
		if ln, err = net.Listen("tcp", f.coordinator); err != nil {
			return nil, fmt.Errorf("--coordinator: listening at %s: %w", f.coordinator, err)
		}
	}
	peers[0] = ln.Addr().String()
	t, err := engine.CoordinatorListen(m.world, ln, opts)
	if err != nil {
		return nil, fmt.Errorf("coordinator of %d ranks at %s: %w", m.world, peers[0], err)
	}
	return &joined{t: t, peers: peers}, nil
}

// exchangePeers returns every rank's address: the given list, or the
// rendezvous's (under torchrun maybe through its store: meetAtMaster).
// leave is to be called once the mesh is formed or failed.
func exchangePeers(f *meshFlags, m membership, ln net.Listener, rv string, key []byte, rln net.Listener) (peers []string, leave func(), err error) {
	self := ln.Addr().String()
	nothing := func() {}
	switch {
	case m.peers != nil:
		return m.peers, nothing, nil
	case m.world == 1:
		if rln != nil {
			rln.Close()
		}
		return []string{self}, nothing, nil
	}
	if at, ok := masterStore(f, m, os.Getenv); ok && rln == nil {
		return meetAtMaster(f, m, self, key, at)
	}
	if m.rank != 0 {
		peers, err = joinRendezvous(rv, m.rank, m.world, self, key, f.timeout)
		return peers, nothing, err
	}
	if rln == nil {
		if rln, err = net.Listen("tcp", rendezvousListen(rv, m)); err != nil {
			return nil, nil, fmt.Errorf("rendezvous: rank 0 listening at %s: %w", rendezvousListen(rv, m), err)
		}
	}
	peers, err = serveRendezvous(rln, m.world, self, key, f.timeout)
	return peers, nothing, err
}

// bindAddr is this rank's listen address: --bind, else its entry in the
// peer list, else loopback when the rendezvous is on loopback, else every
// interface (the rendezvous then tells the others the address it was
// reached from).
func bindAddr(bind string, m membership, rv string) string {
	switch {
	case bind != "":
		return bind
	case m.peers != nil:
		return m.peers[m.rank]
	case isLoopback(rv):
		return "127.0.0.1:0"
	}
	return ":0"
}

// isLoopback reports whether addr's host is a loopback address or name.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || ip != nil && ip.IsLoopback()
}

// engineOptions builds rank m's transport options from the flags (the
// mesh key from --key-file or $BOLTMESH_KEY, else a local run's own:
// runKey) and checks them as the engine will, so that a bad value is
// refused before any local rank starts.
func engineOptions(f *meshFlags, m membership) (engine.Options, error) {
	o := engine.Options{DialTimeout: f.timeout, Spin: f.spin, SpinYield: f.spinYield, Streams: f.streams, Congestion: f.congestion}
	var heap int
	var err error
	if o.StripeMin, err = parseSizeFlag("stripe-min", f.stripeMin, "1M"); err != nil {
		return o, err
	}
	if f.singleCopy != "off" {
		if o.SingleCopyMin, err = parseSizeFlag("single-copy-min", f.singleCopy, "256K or off"); err != nil {
			return o, err
		}
	}
	if o.Seal, err = parseSeal(f.seal); err != nil {
		return o, err
	}
	if o.SocketBuffer, err = parseSizeFlag("socket-buffer", f.sockBuf, "4M"); err != nil {
		return o, err
	}
	if heap, err = parseSizeFlag("heap", f.heap, "64M"); err != nil {
		return o, err
	}
	o.HeapSize = uint64(heap)
	if o.MeshKey, err = runKey(f.keyFile, m, os.Getenv); err != nil {
		return o, err
	}
	switch f.transport {
	case transportTCP:
		o.SharedMemory = engine.SharedMemoryOff
	case transportThunderbolt:
		o = thunderbolt.Options(o)
	}
	if err := o.Validate(); err != nil {
		return o, optionFlagErr(f, err)
	}
	return o, nil
}

// optionFlagErr names the flag behind an engine option error.
func optionFlagErr(f *meshFlags, err error) error {
	var oe *engine.OptionError
	switch {
	case errors.Is(err, engine.ErrCongestion):
		return flagErr("congestion", f.congestion, "%v", err)
	case !errors.As(err, &oe):
		return usageErr("%v", err)
	}
	fl, ok := map[string][2]string{
		"Streams":      {"streams", strconv.Itoa(f.streams)},
		"StripeMin":    {"stripe-min", f.stripeMin},
		"SocketBuffer": {"socket-buffer", f.sockBuf},
		"DialTimeout":  {"timeout", f.timeout.String()},
	}[oe.Field]
	if !ok {
		return usageErr("%v", err)
	}
	return flagErr(fl[0], fl[1], "%s %s", oe.Field, oe.Reason)
}

// parseSizeFlag parses --flag's size val, 0 when val is empty; a bad or
// non-positive size is a usage error naming an example.
func parseSizeFlag(flag, val, example string) (int, error) {
	if val == "" {
		return 0, nil
	}
	n, err := bench.ParseSize(val)
	if err != nil || n <= 0 {
		return 0, flagErr(flag, val, "want a positive size such as %s", example)
	}
	return n, nil
}

// --seal's values.
const (
	sealAuto   = "auto"
	sealAlways = "always"
	sealNever  = "never"
)

// parseSeal reads --seal.
func parseSeal(val string) (engine.SealMode, error) {
	switch val {
	case "", sealAuto:
		return engine.SealAuto, nil
	case sealAlways:
		return engine.SealAlways, nil
	case sealNever:
		return engine.SealNever, nil
	}
	return 0, flagErr("seal", val, "want auto, always or never")
}

// warnThunderbolt prints the MTU advice for this machine's Thunderbolt
// interfaces, if any need it.
func warnThunderbolt() {
	links, _ := thunderbolt.Interfaces()
	for _, l := range links {
		if w := thunderbolt.MTUWarning(l); w != "" {
			fmt.Fprintln(os.Stderr, w)
		}
	}
}
