package bench_test

import (
	"bytes"
	"errors"
	"io"
	"net"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/bench"
)

// TestStrangersDoNotAbortTheRun: each listener the stdnet baseline opens
// in a 2-rank run (its mesh's and its net/rpc server's, on both ranks)
// gets an idle connection and one sending garbage as soon as it listens,
// before the ranks learn its address. The run completes with every check
// passed, with a mesh key and without, and every stranger is closed.
func TestStrangersDoNotAbortTheRun(t *testing.T) {
	for name, key := range map[string][]byte{"no key": nil, "key": []byte("mesh key")} {
		t.Run(name, func(t *testing.T) {
			var mu sync.Mutex
			var conns []net.Conn
			listeners := 0
			bench.SetTestHookListen(t, func(rank int, addr string) {
				mu.Lock()
				defer mu.Unlock()
				listeners++
				for _, p := range [][]byte{nil, bytes.Repeat([]byte{0xff}, 100)} {
					c, err := net.Dial("tcp", addr)
					if err != nil {
						t.Error(err)
						return
					}
					c.Write(p)
					conns = append(conns, c)
				}
			})
			rep, errs := runRanksKeyed(t, 2, quickConfig("p2p", "rpc"), key, nil)
			noErrors(t, errs)
			if rep == nil {
				t.Fatal("no report")
			}
			stdnet := 0
			for _, r := range rep.Results {
				if r.Error != "" {
					t.Errorf("%s %s: %s", r.Impl, r.Key(), r.Error)
				}
				if r.Impl == bench.ImplStdnet {
					stdnet++
				}
			}
			mu.Lock()
			defer mu.Unlock()
			if listeners != 4 || stdnet == 0 {
				t.Fatalf("%d baseline listeners, %d stdnet results", listeners, stdnet)
			}
			for _, c := range conns {
				c.SetReadDeadline(time.Now().Add(30 * time.Second))
				if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
					t.Errorf("a stranger's connection was not closed: %v", err)
				}
				c.Close()
			}
		})
	}
}
