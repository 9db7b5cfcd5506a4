package c10d_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/internal/c10d"
	"github.com/boltmesh/boltmesh/internal/c10d/c10dtest"
)

// fakes are the stores of each protocol and backend the client handles.
var fakes = []struct {
	name string
	o    c10dtest.Options
	want c10d.Protocol
}{
	{"legacy", c10dtest.Options{Protocol: c10d.ProtocolLegacy}, c10d.ProtocolLegacy},
	{"validate", c10dtest.Options{Protocol: c10d.ProtocolValidate}, c10d.ProtocolValidate},
	{"validate-libuv", c10dtest.Options{Protocol: c10d.ProtocolValidate, Libuv: true}, c10d.ProtocolValidate},
}

// probeFast keeps the libuv fake's silent first probe short.
var probeFast = c10d.Options{ProbeTimeout: 300 * time.Millisecond, Timeout: 30 * time.Second}

func startFake(t *testing.T, o c10dtest.Options) *c10dtest.Server {
	t.Helper()
	s, err := c10dtest.Start(o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func dial(t *testing.T, addr string, o c10d.Options) *c10d.Client {
	t.Helper()
	c, err := c10d.Dial(context.Background(), addr, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// TestOperations runs every operation against each fake and checks what
// the store holds afterwards.
func TestOperations(t *testing.T) {
	ctx := context.Background()
	for _, f := range fakes {
		t.Run(f.name, func(t *testing.T) {
			s := startFake(t, f.o)
			c := dial(t, s.Addr(), probeFast)
			if c.Protocol() != f.want {
				t.Fatalf("detected %v, want %v", c.Protocol(), f.want)
			}
			if err := c.Set(ctx, "a", []byte("value a")); err != nil {
				t.Fatal(err)
			}
			if v, err := c.Get(ctx, "a"); err != nil || string(v) != "value a" {
				t.Fatalf("Get(a) = %q, %v", v, err)
			}
			if v, ok := s.Value("a"); !ok || string(v) != "value a" {
				t.Fatalf("the store holds a = %q, %v", v, ok)
			}
			for i, want := range []int64{5, 2} {
				if n, err := c.Add(ctx, "n", []int64{5, -3}[i]); err != nil || n != want {
					t.Fatalf("Add #%d = %d, %v; want %d", i, n, err, want)
				}
			}
			if ok, err := c.Check(ctx, "a", "n"); err != nil || !ok {
				t.Fatalf("Check(a, n) = %v, %v", ok, err)
			}
			if ok, err := c.Check(ctx, "a", "missing"); err != nil || ok {
				t.Fatalf("Check(a, missing) = %v, %v", ok, err)
			}
			if n, err := c.NumKeys(ctx); err != nil || n != 2 {
				t.Fatalf("NumKeys = %d, %v", n, err)
			}
			if ok, err := c.Delete(ctx, "a"); err != nil || !ok {
				t.Fatalf("Delete(a) = %v, %v", ok, err)
			}
			if ok, err := c.Delete(ctx, "a"); err != nil || ok {
				t.Fatalf("Delete(a) again = %v, %v", ok, err)
			}
			if _, ok := s.Value("a"); ok {
				t.Fatal("a is still in the store")
			}
		})
	}
}

// TestGetBlocks: a Get of a key not yet set returns its value once
// another client sets it.
func TestGetBlocks(t *testing.T) {
	for _, f := range fakes {
		t.Run(f.name, func(t *testing.T) {
			s := startFake(t, f.o)
			getter, setter := dial(t, s.Addr(), probeFast), dial(t, s.Addr(), probeFast)
			got := make(chan []byte, 1)
			errc := make(chan error, 1)
			go func() {
				v, err := getter.Get(context.Background(), "late")
				got <- v
				errc <- err
			}()
			if err := setter.Wait(context.Background()); err != nil { // no keys: answered at once
				t.Fatal(err)
			}
			if err := setter.Set(context.Background(), "late", []byte("here")); err != nil {
				t.Fatal(err)
			}
			if v, err := <-got, <-errc; err != nil || string(v) != "here" {
				t.Fatalf("Get = %q, %v", v, err)
			}
		})
	}
}

// TestGetTimeout: a Get whose key never comes fails at its context's
// deadline, and leaves the client broken (the store would still answer
// the WAIT later).
func TestGetTimeout(t *testing.T) {
	s := startFake(t, c10dtest.Options{})
	c := dial(t, s.Addr(), c10d.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	_, err := c.Get(ctx, "never")
	var oe *c10d.OpError
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &oe) || oe.Op != "get" || oe.Key != "never" {
		t.Fatalf("Get = %v, want a get *OpError wrapping context.DeadlineExceeded", err)
	}
	if _, err := c.NumKeys(context.Background()); !errors.Is(err, c10d.ErrBroken) {
		t.Fatalf("NumKeys after the timeout = %v, want ErrBroken", err)
	}
}

// TestOptionTimeout: without a context deadline, Options.Timeout bounds
// the operation.
func TestOptionTimeout(t *testing.T) {
	s := startFake(t, c10dtest.Options{})
	c := dial(t, s.Addr(), c10d.Options{Timeout: 200 * time.Millisecond})
	if err := c.Wait(context.Background(), "never"); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("Wait = %v, want os.ErrDeadlineExceeded", err)
	}
}

// TestCancelAndClose: canceling a Wait's context, or closing the client,
// ends the Wait.
func TestCancelAndClose(t *testing.T) {
	s := startFake(t, c10dtest.Options{})
	c := dial(t, s.Addr(), c10d.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- c.Wait(ctx, "never") }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("canceled Wait = %v, want context.Canceled", err)
	}
	c2 := dial(t, s.Addr(), c10d.Options{})
	go func() { errc <- c2.Wait(context.Background(), "never") }()
	c2.Close() // before the Wait or during it: ErrClosed either way
	if err := <-errc; !errors.Is(err, c10d.ErrClosed) {
		t.Fatalf("Wait on a closed client = %v, want ErrClosed", err)
	}
}

// TestValueLimit: an answer longer than Options.MaxValue is refused with
// ErrTooLong, and so is a key longer than it.
func TestValueLimit(t *testing.T) {
	s := startFake(t, c10dtest.Options{})
	s.Set("big", bytes.Repeat([]byte{'x'}, 100))
	c := dial(t, s.Addr(), c10d.Options{MaxValue: 64})
	if _, err := c.Get(context.Background(), "big"); !errors.Is(err, c10d.ErrTooLong) {
		t.Fatalf("Get(big) = %v, want ErrTooLong", err)
	}
	c = dial(t, s.Addr(), c10d.Options{MaxValue: 64})
	if err := c.Set(context.Background(), string(bytes.Repeat([]byte{'k'}, 65)), nil); !errors.Is(err, c10d.ErrTooLong) {
		t.Fatalf("Set(long key) = %v, want ErrTooLong", err)
	}
	if _, err := c.NumKeys(context.Background()); err != nil {
		t.Fatalf("a request refused before sending broke the client: %v", err)
	}
}

// TestHugeLength: a store that claims a 2^63-byte value is refused at
// once, without allocating it.
func TestHugeLength(t *testing.T) {
	addr := rawStore(t, func(c net.Conn) {
		io.ReadFull(c, make([]byte, 1))                   // the probe: GETNUMKEYS
		c.Write(binary.NativeEndian.AppendUint64(nil, 0)) // no keys
		io.ReadFull(c, make([]byte, 1+8+8+1))             // WAIT 1 key "k"
		c.Write([]byte{0})                                // STOP_WAITING
		io.ReadFull(c, make([]byte, 1+8+1))               // GET "k"
		c.Write(binary.NativeEndian.AppendUint64(nil, 1<<63))
		io.Copy(io.Discard, c)
	})
	c := dial(t, addr, c10d.Options{})
	if _, err := c.Get(context.Background(), "k"); !errors.Is(err, c10d.ErrTooLong) {
		t.Fatalf("Get = %v, want ErrTooLong", err)
	}
}

// TestBadAnswer: a WAIT answered with something else than STOP_WAITING
// is ErrProtocol.
func TestBadAnswer(t *testing.T) {
	addr := rawStore(t, func(c net.Conn) {
		io.ReadFull(c, make([]byte, 1))
		c.Write(binary.NativeEndian.AppendUint64(nil, 3))
		io.ReadFull(c, make([]byte, 1+8+8+1))
		c.Write([]byte{7})
		io.Copy(io.Discard, c)
	})
	c := dial(t, addr, c10d.Options{})
	if err := c.Wait(context.Background(), "k"); !errors.Is(err, c10d.ErrProtocol) {
		t.Fatalf("Wait = %v, want ErrProtocol", err)
	}
}

// TestNotStore: peers that are not stores are ErrNotStore: one that
// speaks first (as boltmesh's rendezvous does), one that stays silent,
// and one that hangs up at once.
func TestNotStore(t *testing.T) {
	for name, serve := range map[string]func(net.Conn){
		"speaks first": func(c net.Conn) { c.Write([]byte(`{"nonce":"00"}` + "\n")); io.Copy(io.Discard, c) },
		"silent":       func(c net.Conn) { io.Copy(io.Discard, c) },
		"hangs up":     func(c net.Conn) {},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := c10d.Dial(context.Background(), rawStore(t, serve), probeFast)
			var oe *c10d.OpError
			if !errors.Is(err, c10d.ErrNotStore) || !errors.As(err, &oe) || oe.Op != "dial" {
				t.Fatalf("Dial = %v, want a dial *OpError wrapping ErrNotStore", err)
			}
		})
	}
}

// TestForcedProtocol: with Options.Protocol set, Dial probes nothing and
// speaks that protocol.
func TestForcedProtocol(t *testing.T) {
	s := startFake(t, c10dtest.Options{Protocol: c10d.ProtocolValidate})
	c := dial(t, s.Addr(), c10d.Options{Protocol: c10d.ProtocolValidate})
	if err := c.Set(context.Background(), "k", []byte("v")); err != nil {
		t.Fatal(err)
	}
	if v, err := c.Get(context.Background(), "k"); err != nil || string(v) != "v" {
		t.Fatalf("Get = %q, %v", v, err)
	}
}

// TestDialRetries: Dial retries a refused connection until its context
// ends, and reaches a store that starts listening meanwhile.
func TestDialRetries(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := c10d.Dial(ctx, addr, c10d.Options{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Dial with nothing listening = %v, want context.DeadlineExceeded", err)
	}
	started := make(chan error, 1)
	go func() {
		time.Sleep(200 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		started <- err
		if err != nil {
			return
		}
		defer ln.Close()
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		io.ReadFull(c, make([]byte, 1))                   // the probe: GETNUMKEYS
		c.Write(binary.NativeEndian.AppendUint64(nil, 0)) // no keys
		io.Copy(io.Discard, c)
	}()
	c, err := c10d.Dial(context.Background(), addr, c10d.Options{Timeout: 30 * time.Second})
	if serr := <-started; serr != nil {
		t.Skipf("the port was taken meanwhile: %v", serr)
	}
	if err != nil {
		t.Fatalf("Dial to a store that starts later: %v", err)
	}
	c.Close()
}

func TestOptionErrors(t *testing.T) {
	for _, c := range []struct {
		o     c10d.Options
		field string
	}{
		{c10d.Options{Timeout: -1}, "Timeout"},
		{c10d.Options{ProbeTimeout: -1}, "ProbeTimeout"},
		{c10d.Options{MaxValue: -1}, "MaxValue"},
		{c10d.Options{MaxValue: c10d.MaxMaxValue + 1}, "MaxValue"},
		{c10d.Options{Protocol: 9}, "Protocol"},
	} {
		_, err := c10d.Dial(context.Background(), "127.0.0.1:1", c.o)
		var oe *c10d.DialOptionError
		if !errors.Is(err, c10d.ErrOption) || !errors.As(err, &oe) || oe.Field != c.field {
			t.Errorf("%+v: %v, want a *DialOptionError for %s", c.o, err, c.field)
		}
	}
}

// rawStore serves one scripted connection at a time on loopback.
func rawStore(t *testing.T, serve func(net.Conn)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() { ln.Close(); <-done })
	go func() {
		defer close(done)
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			serve(c)
			c.Close()
		}
	}()
	return ln.Addr().String()
}
