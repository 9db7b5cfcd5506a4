package stdnet

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// Channels a dialed connection is for, sent in its HELLO.
const (
	chanMsg  = 0 // two-sided messages; the higher rank dials
	chanHeap = 1 // one-sided requests from the dialer to the acceptor's heap
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
// Every rank must have listened before any rank calls Connect. It gives up
// after timeout.
func Connect(rank int, addrs []string, ln *net.TCPListener, timeout time.Duration) (*Mesh, error) {
	defer ln.Close()
	n := len(addrs)
	if rank < 0 || rank >= n {
		return nil, fmt.Errorf("stdnet: rank %d of %d", rank, n)
	}
	m := &Mesh{rank: rank, world: n, msg: make([]*conn, n), cli: make([]*conn, n), srv: make([]*conn, n), dirty: make([]bool, n)}
	ln.SetDeadline(time.Now().Add(timeout))
	errc := make(chan error, 1)
	go func() { errc <- m.acceptAll(ln, 2*n-2-rank) }()
	err := m.dialAll(addrs, timeout)
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
func (m *Mesh) dialAll(addrs []string, timeout time.Duration) error {
	for r, a := range addrs {
		if r == m.rank {
			continue
		}
		chans := []uint64{chanHeap}
		if r < m.rank {
			chans = append(chans, chanMsg)
		}
		for _, ch := range chans {
			c, err := dial(a, m.rank, ch, timeout)
			if err != nil {
				return fmt.Errorf("stdnet: rank %d dialing rank %d at %s: %w", m.rank, r, a, err)
			}
			m.slot(ch)[r] = c
		}
	}
	return nil
}

func dial(addr string, rank int, ch uint64, timeout time.Duration) (*conn, error) {
	nc, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return nil, err
	}
	c := newConn(nc.(*net.TCPConn))
	if err := c.write(header{kind: kindHello, n: 0, arg: uint64(rank)<<8 | ch}, nil); err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

// acceptAll accepts want connections and files them by their HELLO.
func (m *Mesh) acceptAll(ln *net.TCPListener, want int) error {
	for range want {
		nc, err := ln.AcceptTCP()
		if err != nil {
			return fmt.Errorf("stdnet: rank %d accepting: %w", m.rank, err)
		}
		if err := m.adopt(newConn(nc)); err != nil {
			nc.Close()
			return err
		}
	}
	return nil
}

// adopt reads an accepted connection's HELLO and files it.
func (m *Mesh) adopt(c *conn) error {
	c.c.SetReadDeadline(time.Now().Add(5 * time.Second))
	h, err := c.expect(kindHello)
	c.c.SetReadDeadline(time.Time{})
	if err != nil {
		return fmt.Errorf("stdnet: rank %d: hello: %w", m.rank, err)
	}
	r, ch := int(h.arg>>8), h.arg&0xff
	slot := m.srv
	if ch == chanMsg {
		slot = m.msg
	}
	if r < 0 || r >= m.world || r == m.rank || slot[r] != nil || (ch == chanMsg && r < m.rank) {
		return fmt.Errorf("%w: hello from rank %d channel %d", ErrMismatch, r, ch)
	}
	slot[r] = c
	return nil
}

// slot returns the table a dialed connection of channel ch goes in.
func (m *Mesh) slot(ch uint64) []*conn {
	if ch == chanMsg {
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
