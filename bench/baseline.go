package bench

import (
	"context"
	"errors"
	"fmt"
	"net"
	netrpc "net/rpc"
	"strings"
	"sync"
	"time"

	"github.com/boltmesh/boltmesh/bench/stdnet"
)

// stdnetTimeout bounds building the stdnet mesh.
const stdnetTimeout = 30 * time.Second

// stdnetHandshake bounds the handshake of each connection to a baseline
// listener: how long a stranger that says nothing keeps one open.
const stdnetHandshake = 5 * time.Second

// testHookListen, if set, is called with every baseline listener's
// address once it listens, before the other ranks learn it.
var testHookListen func(rank int, addr string)

// connectStdnet builds the stdnet mesh: every rank listens on host, the
// addresses go to every rank through rank 0, and the ranks connect,
// proving key (nil: none) on every connection. Connections that fail the
// handshake are refused without disturbing the others.
func (w *world) connectStdnet(host string, key []byte) (*stdnet.Mesh, error) {
	ln, err := stdnet.Listen(host)
	if err != nil {
		return nil, err
	}
	if testHookListen != nil {
		testHookListen(w.ctl.t.Rank(), ln.Addr().String())
	}
	addrs, err := w.ctl.addrs(ln.Addr().String())
	if err != nil {
		ln.Close()
		return nil, err
	}
	return stdnet.Connect(w.ctl.t.Rank(), addrs, ln, stdnet.Options{Key: key, Timeout: stdnetTimeout, HandshakeTimeout: stdnetHandshake})
}

func joinAddrs(all [][]byte) []byte {
	s := make([]string, len(all))
	for i, a := range all {
		s[i] = string(a)
	}
	return []byte(strings.Join(s, ","))
}

// stdEndpoint runs the workloads on the stdnet baseline.
type stdEndpoint struct {
	m   *stdnet.Mesh
	rpc *stdRPC
}

var _ Endpoint = stdEndpoint{}

// Impl implements Endpoint.
func (e stdEndpoint) Impl() string { return ImplStdnet }

// Rank implements Endpoint.
func (e stdEndpoint) Rank() int { return e.m.Rank() }

// Ranks implements Endpoint.
func (e stdEndpoint) Ranks() int { return e.m.Ranks() }

// Send implements Endpoint.
func (e stdEndpoint) Send(to int, p []byte) error { return e.m.Send(to, p) }

// RecvInto implements Endpoint.
func (e stdEndpoint) RecvInto(from int, dst []byte) (int, error) {
	n, err := e.m.RecvInto(from, dst)
	return n, e.check(err)
}

// Barrier implements Endpoint.
func (e stdEndpoint) Barrier() error { return e.check(e.m.Barrier()) }

// AllReduceSum implements Endpoint.
func (e stdEndpoint) AllReduceSum(_ context.Context, data []float32) error {
	return e.check(e.m.AllReduceSum(data))
}

// Broadcast implements Endpoint.
func (e stdEndpoint) Broadcast(_ context.Context, root int, data []byte) error {
	return e.check(e.m.Broadcast(root, data))
}

// check turns a protocol mismatch (bytes other than the expected ones)
// into a data-check failure.
func (e stdEndpoint) check(err error) error {
	if errors.Is(err, stdnet.ErrMismatch) {
		return checkErr(e.m.Rank(), "%v", err)
	}
	return err
}

// NewRegion grows every rank's stdnet heap to size; the region is the
// heap's first size bytes (one region at a time).
func (e stdEndpoint) NewRegion(size int) (Region, error) {
	e.m.Grow(size)
	return stdRegion{e.m, size}, nil
}

// stdRegion is the first n bytes of every rank's stdnet heap.
type stdRegion struct {
	m *stdnet.Mesh
	n int
}

// Put implements Region.
func (r stdRegion) Put(to int, src []byte) error { return r.m.Put(to, 0, src) }

// Get implements Region.
func (r stdRegion) Get(from int, dst []byte) error { return r.m.Get(from, 0, dst) }

// Quiet implements Region.
func (r stdRegion) Quiet() error { return r.m.Quiet() }

// Load implements Region.
func (r stdRegion) Load(dst []byte) error { return r.m.Load(0, dst) }

// Store implements Region.
func (r stdRegion) Store(src []byte) error { return r.m.Store(0, src) }

// Free implements Region.
func (r stdRegion) Free() error { return nil }

// RPC implements Endpoint.
func (e stdEndpoint) RPC() (RPC, error) {
	if err := e.rpc.start(); err != nil {
		return nil, err
	}
	return e.rpc, nil
}

// stdRPC is the baseline's RPC: Go's net/rpc (gob over a plain TCP
// connection), used the ordinary way. Every rank serves netEcho as
// "Bench" on a listener of its own; a rank dials another at its first
// call there and keeps the connection (one per ordered pair of ranks).
// Each connection first passes stdnet's handshake (ChanRPC, with the mesh
// key), so only the mesh's ranks reach the server. Its methods may be
// called from one goroutine at a time.
type stdRPC struct {
	host    string
	key     []byte
	ctl     control
	srv     *netrpc.Server // nil until start
	ln      *net.TCPListener
	addrs   []string
	clients []*netrpc.Client // by rank, dialed on first use
	replies [][]byte         // by rank: the last reply, decoded in place

	mu     sync.Mutex
	conns  []net.Conn // accepted
	closed bool
	wg     sync.WaitGroup // the accept loop and the connections' servers
}

// netEcho is the net/rpc service every rank serves as "Bench".
type netEcho struct{}

// Echo replies with args.
func (netEcho) Echo(args []byte, reply *[]byte) error {
	*reply = args
	return nil
}

// start listens, exchanges the addresses through rank 0 and serves; every
// rank calls it at the same point (the first time only).
func (s *stdRPC) start() error {
	if s.srv != nil {
		return nil
	}
	ln, lerr := stdnet.Listen(s.host)
	addr := ""
	if lerr == nil {
		addr = ln.Addr().String()
		if testHookListen != nil {
			testHookListen(s.ctl.t.Rank(), addr)
		}
	}
	addrs, err := s.ctl.addrs(addr) // even without a listener: the others wait for it
	if err = errors.Join(lerr, err); err != nil {
		if ln != nil {
			ln.Close()
		}
		return fmt.Errorf("net/rpc baseline: %w", err)
	}
	srv := netrpc.NewServer()
	if err := srv.RegisterName("Bench", netEcho{}); err != nil {
		ln.Close()
		return fmt.Errorf("net/rpc baseline: %w", err)
	}
	s.srv, s.ln, s.addrs = srv, ln, addrs
	s.clients, s.replies = make([]*netrpc.Client, len(addrs)), make([][]byte, len(addrs))
	s.wg.Add(1)
	go s.accept()
	return nil
}

// accept serves every connection accepted until the listener closes,
// once it has passed the handshake.
func (s *stdRPC) accept() {
	defer s.wg.Done()
	srv := s.srv
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			c.Close()
			return
		}
		s.conns = append(s.conns, c)
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			if s.admit(c) {
				srv.ServeConn(c)
			}
		}()
	}
}

// admit runs stdnet's handshake on an accepted connection and closes it
// unless it passes as a ChanRPC connection from another rank.
func (s *stdRPC) admit(c net.Conn) bool {
	c.SetDeadline(time.Now().Add(stdnetHandshake))
	r, ch, err := stdnet.Check(c, s.key)
	if err == nil && (ch != stdnet.ChanRPC || r < 0 || r >= len(s.addrs) || r == s.ctl.t.Rank()) {
		err = stdnet.ErrHandshake
	}
	if err == nil {
		err = c.SetDeadline(time.Time{})
	}
	if err != nil {
		c.Close()
		return false
	}
	return true
}

// Echo implements RPC. net/rpc takes no context: ctx is not used. The
// reply is decoded into the previous one's buffer when it is large enough.
func (s *stdRPC) Echo(_ context.Context, to int, args []byte) ([]byte, error) {
	c, err := s.client(to)
	if err == nil {
		err = c.Call("Bench.Echo", args, &s.replies[to])
	}
	if err != nil {
		return nil, fmt.Errorf("net/rpc call to rank %d: %w", to, err)
	}
	return s.replies[to], nil
}

// client returns the connection to rank to's server, dialing it the first
// time.
func (s *stdRPC) client(to int) (*netrpc.Client, error) {
	if to < 0 || to >= len(s.clients) {
		return nil, fmt.Errorf("no rank %d of %d", to, len(s.clients))
	}
	if s.clients[to] == nil {
		nc, err := net.DialTimeout("tcp", s.addrs[to], stdnetTimeout)
		if err != nil {
			return nil, err
		}
		nc.SetDeadline(time.Now().Add(stdnetTimeout))
		if err = stdnet.Greet(nc, s.ctl.t.Rank(), stdnet.ChanRPC, s.key); err == nil {
			err = nc.SetDeadline(time.Time{})
		}
		if err != nil {
			nc.Close()
			return nil, err
		}
		s.clients[to] = netrpc.NewClient(nc)
	}
	return s.clients[to], nil
}

// close stops serving and closes every connection; the run's own
// goroutines are gone when it returns.
func (s *stdRPC) close() {
	if s == nil || s.srv == nil {
		return
	}
	for _, c := range s.clients {
		if c != nil {
			c.Close()
		}
	}
	s.ln.Close()
	s.mu.Lock()
	s.closed = true
	for _, c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	s.srv = nil
}
