package ioloop_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// TestFailWhileReadFails: a connection that one goroutine fails while
// another is reading it, and whose read then fails too, is still
// released: Handler.Closed is called.
//
// Regression test. Conn.fail releases the connection only if it can take
// the read side; if a reader holds it, the reader releases it as it
// leaves. progress did so only after a clean drain: when the drain itself
// ended in an error (the EOF of a peer that closed, or the read error the
// fail's shutdown causes), its own fail lost the race to the first one
// and did nothing, so the connection was never released. A star worker
// hit it at close: its GOODBYE's writev failed with EPIPE while the loop
// was reading the coordinator's EOF, and NetTransport.Close waited for a
// Closed that never came. Here the hook holds the loop goroutine in read
// while the other goroutine fails the connection.
func TestFailWhileReadFails(t *testing.T) {
	for _, tc := range []struct {
		name string
		fail func(c *ioloop.Conn)
		want error
	}{
		{"close", func(c *ioloop.Conn) { c.Close() }, ioloop.ErrClosed},
		{"send", func(c *ioloop.Conn) { c.Send(&frame.Header{Kind: frame.KindGoodbye}, nil) }, unix.EPIPE},
	} {
		t.Run(tc.name, func(t *testing.T) {
			gate := holdRead(t, 1)
			l := bugLoop(t)
			rx := looptest.NewHandler()
			c, raw := rawPeer(t, l, unix.AF_UNIX, 1, rx)
			gate.armed.Store(true)
			raw.close() // the loop reads the EOF...
			select {
			case <-gate.entered:
			case <-time.After(looptest.WaitTimeout):
				t.Fatal("the loop did not read the connection")
			}
			tc.fail(c)         // ...while this goroutine fails the connection,
			close(gate.resume) // and then sees it.
			if err := rx.WaitClosed(t); !errors.Is(err, tc.want) {
				t.Errorf("Closed with %v, want %v", err, tc.want)
			}
			rx.Check(t)
		})
	}
}

// readGate holds the first read of one connection, once armed, until
// resume is closed.
type readGate struct {
	armed   atomic.Bool
	entered chan struct{}
	resume  chan struct{}
	once    sync.Once
}

// holdRead installs a readGate for connection id as the read hook; call
// it before the loop starts, since the hook is removed after the test's
// later cleanups, the loop's Close among them.
func holdRead(t *testing.T, id int) *readGate {
	g := &readGate{entered: make(chan struct{}), resume: make(chan struct{})}
	ioloop.SetTestHookRead(func(got int) {
		if got == id && g.armed.Load() {
			g.once.Do(func() {
				close(g.entered)
				<-g.resume
			})
		}
	})
	t.Cleanup(func() { ioloop.SetTestHookRead(nil) })
	return g
}
