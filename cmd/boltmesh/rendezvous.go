package main

import (
	"bufio"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"
)

// The rendezvous: rank 0 listens at a known address; every other rank
// connects, sends its rank and listen address, and receives the address
// list of the whole mesh once every rank has checked in. Messages are JSON
// lines; with a mesh key each carries an HMAC-SHA256 of its content, so a
// stranger cannot hand the ranks a forged peer list.

// hello is what a rank sends rank 0.
type hello struct {
	Rank  int    `json:"rank"`
	World int    `json:"world"`
	Addr  string `json:"addr"`
	MAC   string `json:"mac,omitempty"`
}

// reply is rank 0's answer.
type reply struct {
	Peers []string `json:"peers,omitempty"`
	Error string   `json:"error,omitempty"`
	MAC   string   `json:"mac,omitempty"`
}

func (h hello) content() string { return fmt.Sprintf("hello %d %d %s", h.Rank, h.World, h.Addr) }
func (r reply) content() string { return "peers " + strings.Join(r.Peers, ",") }

// mac authenticates content with key; "" without a key.
func mac(key []byte, content string) string {
	if len(key) == 0 {
		return ""
	}
	h := hmac.New(sha256.New, key)
	h.Write([]byte("boltmesh rendezvous\x00" + content))
	return hex.EncodeToString(h.Sum(nil))
}

func macOK(key []byte, content, got string) bool {
	return hmac.Equal([]byte(mac(key, content)), []byte(got))
}

// serveRendezvous runs rank 0's side on ln (closed on return) and returns
// every rank's address. self is rank 0's own listen address; an
// unspecified host in it, or in a rank's address, is replaced by the
// address the connection was made on.
func serveRendezvous(ln net.Listener, world int, self string, key []byte, timeout time.Duration) ([]string, error) {
	defer ln.Close()
	deadline := time.Now().Add(timeout)
	if tl, ok := ln.(*net.TCPListener); ok {
		tl.SetDeadline(deadline)
	}
	peers := make([]string, world)
	conns := make([]net.Conn, world)
	defer closeAll(conns)
	var lastRefusal error
	for joined := 1; joined < world; {
		c, err := ln.Accept()
		if err != nil {
			return nil, fmt.Errorf("rendezvous at %s: %d of %d ranks joined: %w", ln.Addr(), joined, world, errors.Join(err, lastRefusal))
		}
		h, err := readHello(c, world, key, conns, deadline)
		if err != nil {
			lastRefusal = fmt.Errorf("refused %s: %w", c.RemoteAddr(), err)
			writeReply(c, reply{Error: err.Error()}, key)
			c.Close()
			continue
		}
		conns[h.Rank], peers[h.Rank] = c, fillHost(h.Addr, c.RemoteAddr())
		if joined++; peers[0] == "" {
			peers[0] = fillHost(self, c.LocalAddr())
		}
	}
	if peers[0] == "" {
		peers[0] = self
	}
	return peers, sendPeers(conns, peers, key)
}

// readHello reads and checks one rank's hello.
func readHello(c net.Conn, world int, key []byte, conns []net.Conn, deadline time.Time) (hello, error) {
	d := time.Now().Add(10 * time.Second)
	if deadline.Before(d) {
		d = deadline
	}
	c.SetDeadline(d)
	var h hello
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &h)
	}
	switch {
	case err != nil:
		return h, err
	case !macOK(key, h.content(), h.MAC):
		return h, errors.New("mesh key mismatch")
	case h.World != world:
		return h, fmt.Errorf("rank %d says the world has %d ranks, rank 0 says %d", h.Rank, h.World, world)
	case h.Rank < 1 || h.Rank >= world:
		return h, fmt.Errorf("rank %d is outside 1..%d", h.Rank, world-1)
	case conns[h.Rank] != nil:
		return h, fmt.Errorf("rank %d joined twice", h.Rank)
	}
	return h, nil
}

// sendPeers sends the peer list to every rank.
func sendPeers(conns []net.Conn, peers []string, key []byte) error {
	var errs []error
	for r, c := range conns {
		if c != nil {
			if err := writeReply(c, reply{Peers: peers}, key); err != nil {
				errs = append(errs, fmt.Errorf("rendezvous: sending the peer list to rank %d: %w", r, err))
			}
		}
	}
	return errors.Join(errs...)
}

func writeReply(c net.Conn, r reply, key []byte) error {
	if r.Error == "" {
		r.MAC = mac(key, r.content())
	}
	b, err := json.Marshal(r)
	if err == nil {
		_, err = c.Write(append(b, '\n'))
	}
	return err
}

func closeAll(conns []net.Conn) {
	for _, c := range conns {
		if c != nil {
			c.Close()
		}
	}
}

// joinRendezvous runs a rank's side: it connects to rank 0 at addr
// (retrying until timeout, as rank 0 may start later), sends its own
// address self and returns the mesh's.
func joinRendezvous(addr string, rank, world int, self string, key []byte, timeout time.Duration) ([]string, error) {
	deadline := time.Now().Add(timeout)
	c, err := dialRetry(addr, deadline)
	if err != nil {
		return nil, fmt.Errorf("rendezvous with rank 0 at %s: %w", addr, err)
	}
	defer c.Close()
	c.SetDeadline(deadline)
	h := hello{Rank: rank, World: world, Addr: fillHost(self, c.LocalAddr())}
	h.MAC = mac(key, h.content())
	b, _ := json.Marshal(h)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return nil, fmt.Errorf("rendezvous with rank 0 at %s: %w", addr, err)
	}
	return readReply(c, addr, world, key)
}

func readReply(c net.Conn, addr string, world int, key []byte) ([]string, error) {
	var r reply
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err == nil {
		err = json.Unmarshal(line, &r)
	}
	switch {
	case err != nil:
		return nil, fmt.Errorf("rendezvous with rank 0 at %s: waiting for the peer list: %w", addr, err)
	case r.Error != "":
		return nil, fmt.Errorf("rendezvous: rank 0 at %s refused: %s", addr, r.Error)
	case !macOK(key, r.content(), r.MAC):
		return nil, fmt.Errorf("rendezvous: the peer list from %s fails the mesh key check", addr)
	case len(r.Peers) != world:
		return nil, fmt.Errorf("rendezvous: %d peers from %s for a world of %d", len(r.Peers), addr, world)
	}
	return r.Peers, nil
}

// dialRetry dials addr with backoff until deadline.
func dialRetry(addr string, deadline time.Time) (net.Conn, error) {
	backoff := 10 * time.Millisecond
	for {
		c, err := net.DialTimeout("tcp", addr, max(time.Until(deadline), time.Millisecond))
		if err == nil || time.Now().Add(backoff).After(deadline) {
			return c, err
		}
		time.Sleep(backoff)
		backoff = min(2*backoff, 500*time.Millisecond)
	}
}

// fillHost replaces an empty or unspecified host in addr by the IP of via
// (the local or remote side of a connection that reached the right place).
func fillHost(addr string, via net.Addr) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); host != "" && (ip == nil || !ip.IsUnspecified()) {
		return addr
	}
	if ta, ok := via.(*net.TCPAddr); ok {
		return net.JoinHostPort(ta.IP.String(), port)
	}
	return addr
}
