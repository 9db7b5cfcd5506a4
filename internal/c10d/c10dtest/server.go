// Package c10dtest serves a fake c10d TCPStore on loopback, for tests:
// the legacy protocol of torch 1.x-2.0 or the Validate protocol of later
// releases, as package c10d describes them. It is a second reading of
// the same protocol, not torch's server: tests that must hold against
// the real one run against python3-torch.
package c10dtest

import (
	"bufio"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"slices"
	"strconv"
	"sync"

	"github.com/boltmesh/boltmesh/internal/c10d"
)

// maxString bounds the sized strings the fake reads.
const maxString = 1 << 20

// validateMagic is the argument of VALIDATE.
const validateMagic = 0x3C85F7CE

// Query type bytes, by protocol.
var codes = map[c10d.Protocol]map[byte]string{
	c10d.ProtocolLegacy:   {0: "set", 2: "get", 3: "add", 4: "check", 5: "wait", 6: "numkeys", 8: "delete"},
	c10d.ProtocolValidate: {0: "validate", 1: "set", 3: "get", 4: "add", 5: "check", 6: "wait", 7: "numkeys", 8: "delete"},
}

var order = binary.NativeEndian

// Options configure a Server.
type Options struct {
	// Protocol is the protocol served. Default c10d.ProtocolLegacy.
	Protocol c10d.Protocol
	// Libuv, with ProtocolValidate, serves a connection whose first query
	// is not VALIDATE, as torch's libuv backend does; by default the
	// connection is closed, as its classic backend does.
	Libuv bool
}

// Server is a running fake store.
type Server struct {
	o  Options
	ln net.Listener
	wg sync.WaitGroup

	mu      sync.Mutex
	kv      map[string][]byte
	waiters []*waiter
	conns   map[net.Conn]bool
}

// waiter is a WAIT not yet answered.
type waiter struct {
	c    *conn
	keys []string
}

// conn is one client connection; wmu orders its writes.
type conn struct {
	nc  net.Conn
	wmu sync.Mutex
}

func (c *conn) write(b []byte) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	c.nc.Write(b)
}

// Start serves a fake store on a free loopback port.
func Start(o Options) (*Server, error) {
	if o.Protocol == c10d.ProtocolDetect {
		o.Protocol = c10d.ProtocolLegacy
	}
	if codes[o.Protocol] == nil {
		return nil, errors.New("c10dtest: unknown protocol")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{o: o, ln: ln, kv: map[string][]byte{}, conns: map[net.Conn]bool{}}
	s.wg.Go(s.accept)
	return s, nil
}

// Addr returns the store's address.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the store and closes its connections.
func (s *Server) Close() error {
	err := s.ln.Close()
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	s.wg.Wait()
	return err
}

// Value returns key's value and whether it is set.
func (s *Server) Value(key string) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.kv[key]
	return slices.Clone(v), ok
}

// Keys returns the keys set, sorted.
func (s *Server) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.kv))
	for k := range s.kv {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// Set sets key, waking its waiters, as a client's SET would.
func (s *Server) Set(key string, v []byte) {
	s.mu.Lock()
	wake := s.setLocked(key, slices.Clone(v))
	s.mu.Unlock()
	wakeAll(wake)
}

func (s *Server) accept() {
	for {
		nc, err := s.ln.Accept()
		if err != nil {
			return
		}
		s.mu.Lock()
		s.conns[nc] = true
		s.mu.Unlock()
		s.wg.Go(func() { s.serve(&conn{nc: nc}) })
	}
}

// serve answers one connection's queries until it fails or closes.
func (s *Server) serve(c *conn) {
	defer func() {
		s.mu.Lock()
		delete(s.conns, c.nc)
		s.waiters = slices.DeleteFunc(s.waiters, func(w *waiter) bool { return w.c == c })
		s.mu.Unlock()
		c.nc.Close()
	}()
	br := bufio.NewReader(c.nc)
	for first := true; ; first = false {
		t, err := br.ReadByte()
		if err != nil {
			return
		}
		q, ok := codes[s.o.Protocol][t]
		if !ok || first && s.o.Protocol == c10d.ProtocolValidate && !s.o.Libuv && q != "validate" {
			return
		}
		if err := s.query(c, br, q); err != nil {
			return
		}
	}
}

// query reads query q's arguments and answers it.
func (s *Server) query(c *conn, br *bufio.Reader, q string) error {
	switch q {
	case "validate":
		var b [4]byte
		if _, err := io.ReadFull(br, b[:]); err != nil || order.Uint32(b[:]) != validateMagic {
			return errors.New("bad magic")
		}
		return nil
	case "set":
		k, err := readStr(br)
		if err != nil {
			return err
		}
		v, err := readStr(br)
		if err != nil {
			return err
		}
		s.Set(string(k), v)
		return nil
	case "get":
		k, err := readStr(br)
		if err != nil {
			return err
		}
		v, ok := s.Value(string(k))
		if !ok {
			return errors.New("no such key") // torch's server closes the connection too
		}
		c.write(append(order.AppendUint64(nil, uint64(len(v))), v...))
		return nil
	case "add":
		return s.add(c, br)
	case "check", "wait":
		keys, err := readKeys(br)
		if err != nil {
			return err
		}
		s.mu.Lock()
		missing := s.missingLocked(keys)
		if q == "wait" && missing > 0 {
			s.waiters = append(s.waiters, &waiter{c: c, keys: keys})
		}
		s.mu.Unlock()
		if q == "check" || missing == 0 {
			c.write([]byte{byte(min(missing, 1))})
		}
		return nil
	case "numkeys":
		s.mu.Lock()
		n := len(s.kv)
		s.mu.Unlock()
		c.write(order.AppendUint64(nil, uint64(n)))
		return nil
	case "delete":
		k, err := readStr(br)
		if err != nil {
			return err
		}
		s.mu.Lock()
		_, ok := s.kv[string(k)]
		delete(s.kv, string(k))
		s.mu.Unlock()
		n := uint64(0)
		if ok {
			n = 1
		}
		c.write(order.AppendUint64(nil, n))
		return nil
	}
	return errors.New("unknown query")
}

// add serves ADD: the value is kept as decimal text, as torch keeps it.
func (s *Server) add(c *conn, br *bufio.Reader) error {
	k, err := readStr(br)
	if err != nil {
		return err
	}
	var b [8]byte
	if _, err := io.ReadFull(br, b[:]); err != nil {
		return err
	}
	s.mu.Lock()
	sum := int64(order.Uint64(b[:]))
	if old, ok := s.kv[string(k)]; ok {
		n, err := strconv.ParseInt(string(old), 10, 64)
		if err != nil {
			s.mu.Unlock()
			return err
		}
		sum += n
	}
	wake := s.setLocked(string(k), []byte(strconv.FormatInt(sum, 10)))
	s.mu.Unlock()
	c.write(order.AppendUint64(nil, uint64(sum)))
	wakeAll(wake)
	return nil
}

// setLocked sets key and returns the connections whose waits it
// completes, to be answered once s.mu is released.
func (s *Server) setLocked(key string, v []byte) []*conn {
	s.kv[key] = v
	var wake []*conn
	s.waiters = slices.DeleteFunc(s.waiters, func(w *waiter) bool {
		if s.missingLocked(w.keys) > 0 {
			return false
		}
		wake = append(wake, w.c)
		return true
	})
	return wake
}

// wakeAll answers completed waits with STOP_WAITING.
func wakeAll(wake []*conn) {
	for _, c := range wake {
		c.write([]byte{0})
	}
}

func (s *Server) missingLocked(keys []string) int {
	n := 0
	for _, k := range keys {
		if _, ok := s.kv[k]; !ok {
			n++
		}
	}
	return n
}

func readStr(br *bufio.Reader) ([]byte, error) {
	var b [8]byte
	if _, err := io.ReadFull(br, b[:]); err != nil {
		return nil, err
	}
	n := order.Uint64(b[:])
	if n > maxString {
		return nil, errors.New("string too long")
	}
	v := make([]byte, n)
	_, err := io.ReadFull(br, v)
	return v, err
}

func readKeys(br *bufio.Reader) ([]string, error) {
	var b [8]byte
	if _, err := io.ReadFull(br, b[:]); err != nil {
		return nil, err
	}
	n := order.Uint64(b[:])
	if n > 1<<16 {
		return nil, errors.New("too many keys")
	}
	keys := make([]string, n)
	for i := range keys {
		k, err := readStr(br)
		if err != nil {
			return nil, err
		}
		keys[i] = string(k)
	}
	return keys, nil
}
