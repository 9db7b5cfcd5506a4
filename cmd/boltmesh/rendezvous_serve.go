package main

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/boltmesh/boltmesh/internal/admit"
)

// rendezvousHandshake bounds, at rank 0, each connection's challenge and
// hello: how long a stranger that connects and says nothing holds a
// handshake slot.
const rendezvousHandshake = 5 * time.Second

// rendezvousServer is rank 0's side of one rendezvous.
type rendezvousServer struct {
	world     int
	self      string        // rank 0's own listen address
	key       []byte        // the mesh key; nil: none
	timeout   time.Duration // the whole rendezvous
	handshake time.Duration // each connection's challenge and hello; default rendezvousHandshake
	onReject  func(error)   // if set, called with every refused connection's *admit.RejectError
}

// serveRendezvous runs rank 0's side on ln (closed on return) and returns
// every rank's address. self is rank 0's own listen address; an
// unspecified host in it, or in a rank's address, is replaced by the
// address the connection was made on.
func serveRendezvous(ln net.Listener, world int, self string, key []byte, timeout time.Duration) ([]string, error) {
	s := &rendezvousServer{world: world, self: self, key: key, timeout: timeout, onReject: testHookRendezvousReject}
	return s.serve(ln)
}

// testHookRendezvousReject, if set, is serveRendezvous's onReject.
var testHookRendezvousReject func(error)

// serve admits one hello per rank 1..world-1, concurrently, and sends the
// peer list to every rank once all are in.
func (s *rendezvousServer) serve(ln net.Listener) ([]string, error) {
	peers := make([]string, s.world)
	if s.world == 1 {
		ln.Close()
		return []string{s.self}, nil
	}
	conns := make([]net.Conn, s.world)
	hellos := make([]hello, s.world)
	defer closeAll(conns)
	joined := 1
	o := admit.Options{Deadline: time.Now().Add(s.timeout), Handshake: s.handshake, OnReject: s.onReject}
	err := admit.Serve(ln, o, s.readHello, func(c net.Conn, h hello) (bool, error) {
		if conns[h.Rank] != nil {
			err := fmt.Errorf("%w: rank %d joined twice", errBadHello, h.Rank)
			c.SetWriteDeadline(time.Now().Add(time.Second))
			writeLine(c, reply{Error: err.Error()})
			return false, err
		}
		conns[h.Rank], hellos[h.Rank], peers[h.Rank] = c, h, fillHost(h.Addr, c.RemoteAddr())
		if peers[0] == "" {
			peers[0] = fillHost(s.self, c.LocalAddr())
		}
		joined++
		return joined == s.world, nil
	})
	if err != nil {
		return nil, fmt.Errorf("rendezvous at %s: %d of %d ranks joined: %w", ln.Addr(), joined, s.world, err)
	}
	return peers, s.sendPeers(conns, hellos, peers)
}

// readHello challenges a new connection with a fresh nonce and reads and
// checks its hello; a refused one is told why.
func (s *rendezvousServer) readHello(c net.Conn) (hello, error) {
	nonce := newNonce()
	if err := writeLine(c, challenge{Nonce: nonce}); err != nil {
		return hello{}, err
	}
	var h hello
	err := readLine(bufio.NewReader(c), maxHelloLine, &h)
	if err == nil {
		err = s.check(h, nonce)
	}
	if err != nil {
		writeLine(c, reply{Error: err.Error()})
	}
	return h, err
}

// check checks a hello that answers the challenge nonce. A hello
// without a MAC while this run has a key fails with errNoKeyProof, one
// with a MAC while it has none with errUnexpectedKeyProof, one with
// another key's with errMeshKey.
func (s *rendezvousServer) check(h hello, nonce string) error {
	if err := checkMAC(s.key, h.content(), h.MAC); err != nil {
		return fmt.Errorf("the hello of rank %d: %w", h.Rank, err)
	}
	switch {
	case h.Server != nonce:
		return errReplay
	case !isNonce(h.Nonce):
		return fmt.Errorf("%w: no nonce", errBadHello)
	case h.World != s.world:
		return fmt.Errorf("%w: rank %d says the world has %d ranks, rank 0 says %d", errBadHello, h.Rank, h.World, s.world)
	case h.Rank < 1 || h.Rank >= s.world:
		return fmt.Errorf("%w: rank %d is outside 1..%d", errBadHello, h.Rank, s.world-1)
	}
	return checkAddr(h.Addr)
}

// sendPeers sends the peer list to every rank, answering its nonce.
func (s *rendezvousServer) sendPeers(conns []net.Conn, hellos []hello, peers []string) error {
	var errs []error
	for r, c := range conns {
		if c == nil {
			continue
		}
		rp := reply{Peers: peers, Server: hellos[r].Server, Nonce: hellos[r].Nonce}
		rp.MAC = mac(s.key, rp.content())
		c.SetWriteDeadline(time.Now().Add(max(s.handshake, rendezvousHandshake)))
		if err := writeLine(c, rp); err != nil {
			errs = append(errs, fmt.Errorf("rendezvous: sending the peer list to rank %d: %w", r, err))
		}
	}
	return errors.Join(errs...)
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}
