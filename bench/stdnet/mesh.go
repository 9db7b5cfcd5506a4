package stdnet

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/boltmesh/boltmesh/internal/admit"
)

// Mesh is one rank's connections to every other rank.
type Mesh struct {
	rank, world int
	msg         []*conn // messages, by peer; nil for this rank
	cli         []*conn // this rank's requests to the peer's heap
	srv         []*conn // the peer's requests to this rank's heap
	heap        heapMem
	dirty       []bool // peers with puts not yet fenced
	scratch     []byte // allreduce receive buffer
	barriers    uint64 // barriers completed
	wg          sync.WaitGroup
	closeOnce   sync.Once
}

// DefaultTimeout is Options.Timeout's default.
const DefaultTimeout = 30 * time.Second

// Options say how Connect builds a mesh; the zero value is ready to use.
type Options struct {
	// Key, if set, is the mesh key every connection proves in its HELLO
	// (see Check). Default none: a connection whose HELLO names a rank
	// and channel this rank expects is taken.
	Key []byte
	// Timeout bounds Connect. Default DefaultTimeout.
	Timeout time.Duration
	// HandshakeTimeout bounds each accepted connection's handshake.
	// Default 5 s.
	HandshakeTimeout time.Duration
	// OnReject, if set, is called with every connection refused while the
	// mesh forms: an error wrapping ErrHandshake, ErrMeshKey, ErrReplay or
	// the failed read's error. Refused connections do not stop the mesh
	// from forming.
	OnReject func(error)
}

// Listen listens on host, on an ephemeral port, for the other ranks.
func Listen(host string) (*net.TCPListener, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("stdnet: listen on %s: %w", host, err)
	}
	return ln.(*net.TCPListener), nil
}

// Connect builds rank's mesh: addrs[r] is the address of rank r's
// listener (ln is this rank's, already listening, and closed on return).
// Every rank must have listened before any rank calls Connect. Every
// accepted connection must pass the handshake (see Check) to be taken;
// others are refused and reported to o.OnReject.
func Connect(rank int, addrs []string, ln *net.TCPListener, o Options) (*Mesh, error) {
	n := len(addrs)
	if rank < 0 || rank >= n {
		ln.Close()
		return nil, fmt.Errorf("stdnet: rank %d of %d", rank, n)
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	m := &Mesh{rank: rank, world: n, msg: make([]*conn, n), cli: make([]*conn, n), srv: make([]*conn, n), dirty: make([]bool, n)}
	deadline := time.Now().Add(o.Timeout)
	errc := make(chan error, 1)
	go func() { errc <- m.acceptAll(ln, 2*n-2-rank, deadline, o) }()
	err := m.dialAll(addrs, deadline, o.Key)
	if err != nil {
		ln.Close()
	}
	err = errors.Join(err, <-errc)
	if err != nil {
		m.Close()
		return nil, err
	}
	m.startServers()
	return m, nil
}

// dialAll opens the message connections to the lower ranks and the heap
// connections to every other rank.
func (m *Mesh) dialAll(addrs []string, deadline time.Time, key []byte) error {
	for r, a := range addrs {
		if r == m.rank {
			continue
		}
		chans := []Channel{ChanHeap}
		if r < m.rank {
			chans = append(chans, ChanMsg)
		}
		for _, ch := range chans {
			c, err := dial(a, m.rank, ch, deadline, key)
			if err != nil {
				return fmt.Errorf("stdnet: rank %d dialing rank %d at %s: %w", m.rank, r, a, err)
			}
			m.slot(ch)[r] = c
		}
	}
	return nil
}

func dial(addr string, rank int, ch Channel, deadline time.Time, key []byte) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, time.Until(deadline))
	if err != nil {
		return nil, err
	}
	nc.SetDeadline(deadline)
	if err = Greet(nc, rank, ch, key); err == nil {
		err = nc.SetDeadline(time.Time{})
	}
	if err != nil {
		nc.Close()
		return nil, err
	}
	return newConn(nc.(*net.TCPConn)), nil
}

// peerHello is an accepted connection's HELLO.
type peerHello struct {
	rank int
	ch   Channel
}

// acceptAll takes want connections that pass the handshake and files them
// by their HELLO; it closes ln.
func (m *Mesh) acceptAll(ln *net.TCPListener, want int, deadline time.Time, o Options) error {
	if want == 0 {
		ln.Close()
		return nil
	}
	got := 0
	check := func(c net.Conn) (peerHello, error) {
		r, ch, err := Check(c, o.Key)
		return peerHello{r, ch}, err
	}
	err := admit.Serve(ln, admit.Options{Deadline: deadline, Handshake: o.HandshakeTimeout, OnReject: o.OnReject}, check,
		func(c net.Conn, h peerHello) (bool, error) {
			if err := m.adopt(c.(*net.TCPConn), h); err != nil {
				return false, err
			}
			got++
			return got == want, nil
		})
	if err != nil {
		return fmt.Errorf("stdnet: rank %d: %d of %d connections accepted: %w", m.rank, got, want, err)
	}
	return nil
}

// adopt files an accepted connection by its HELLO, if this rank expects
// it.
func (m *Mesh) adopt(c *net.TCPConn, h peerHello) error {
	slot := m.srv
	switch h.ch {
	case ChanMsg:
		slot = m.msg
	case ChanHeap:
	default:
		return fmt.Errorf("%w: hello for channel %d", ErrHandshake, h.ch)
	}
	if h.rank < 0 || h.rank >= m.world || h.rank == m.rank || slot[h.rank] != nil || (h.ch == ChanMsg && h.rank < m.rank) {
		return fmt.Errorf("%w: hello from rank %d channel %d", ErrHandshake, h.rank, h.ch)
	}
	slot[h.rank] = newConn(c)
	return nil
}

// slot returns the table a dialed connection of channel ch goes in.
func (m *Mesh) slot(ch Channel) []*conn {
	if ch == ChanMsg {
		return m.msg
	}
	return m.cli
}

// Rank returns this rank.
func (m *Mesh) Rank() int { return m.rank }

// Ranks returns the number of ranks.
func (m *Mesh) Ranks() int { return m.world }

// Close closes every connection and waits for the heap servers to exit.
func (m *Mesh) Close() error {
	m.closeOnce.Do(func() {
		for _, cs := range [][]*conn{m.msg, m.cli, m.srv} {
			for _, c := range cs {
				if c != nil {
					c.close()
				}
			}
		}
		m.wg.Wait()
	})
	return nil
}
