package stdnet_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"slices"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/bench/stdnet"
)

// meshes connects n in-process ranks.
func meshes(t *testing.T, n int) []*stdnet.Mesh {
	t.Helper()
	lns := make([]*net.TCPListener, n)
	addrs := make([]string, n)
	for r := range n {
		ln, err := stdnet.Listen("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		lns[r], addrs[r] = ln, ln.Addr().String()
	}
	ms := make([]*stdnet.Mesh, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for r := range n {
		wg.Go(func() { ms[r], errs[r] = stdnet.Connect(r, addrs, lns[r], stdnet.Options{Timeout: 5 * time.Second}) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
		t.Cleanup(func() { ms[r].Close() })
	}
	return ms
}

// each runs f on every rank concurrently and fails on any error.
func each(t *testing.T, ms []*stdnet.Mesh, f func(r int, m *stdnet.Mesh) error) {
	t.Helper()
	errs := make([]error, len(ms))
	var wg sync.WaitGroup
	for r, m := range ms {
		wg.Go(func() { errs[r] = f(r, m) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
}

func TestMessagesAndBarrier(t *testing.T) {
	ms := meshes(t, 3)
	big := bytes.Repeat([]byte("0123456789abcdef"), 1<<16)
	each(t, ms, func(r int, m *stdnet.Mesh) error {
		for k := range 3 {
			to, from := (r+1)%3, (r+2)%3
			n, err := m.Exchange(to, from, big[:len(big)-k], make([]byte, len(big)))
			if err != nil || n != len(big)-k {
				return fmt.Errorf("rank %d: %d bytes, %v", r, n, err)
			}
			if err := m.Barrier(); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestAllReduce(t *testing.T) {
	for _, n := range []int{2, 3, 4} {
		for _, elems := range []int{1, 5, 64 << 10} {
			ms := meshes(t, n)
			each(t, ms, func(r int, m *stdnet.Mesh) error {
				data := make([]float32, elems)
				for i := range data {
					data[i] = float32(r + i%5)
				}
				if err := m.AllReduceSum(data); err != nil {
					return err
				}
				for i, v := range data {
					if want := float32(n*(n-1)/2 + n*(i%5)); v != want {
						return fmt.Errorf("%d ranks, %d elements: rank %d element %d is %v, want %v", n, elems, r, i, v, want)
					}
				}
				return nil
			})
		}
	}
}

func TestPutGet(t *testing.T) {
	ms := meshes(t, 2)
	for _, m := range ms {
		m.Grow(1 << 20)
	}
	src := bytes.Repeat([]byte{7, 8, 9}, 1000)
	if err := ms[0].Put(1, 100, src); err != nil {
		t.Fatal(err)
	}
	if err := ms[0].Quiet(); err != nil {
		t.Fatal(err)
	}
	got := make([]byte, len(src))
	if err := ms[1].Load(100, got); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("after put and quiet: %v", err)
	}
	clear(got)
	if err := ms[0].Get(1, 100, got); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("get: %v", err)
	}
	// Out of bounds: a get fails at once, a put at the next Quiet; the
	// connection stays usable.
	if err := ms[0].Get(1, 1<<20-1, got); !errors.Is(err, stdnet.ErrOutOfBounds) {
		t.Fatalf("out-of-bounds get: %v", err)
	}
	if err := ms[0].Put(1, 1<<20, src); err != nil {
		t.Fatal(err)
	}
	if err := ms[0].Quiet(); !errors.Is(err, stdnet.ErrOutOfBounds) {
		t.Fatalf("quiet after an out-of-bounds put: %v", err)
	}
	if err := ms[0].Get(1, 100, got); err != nil || !bytes.Equal(got, src) {
		t.Fatalf("get after refusals: %v", err)
	}
}

// recorder keeps a copy of everything written to its conn.
type recorder struct {
	net.Conn
	mu  sync.Mutex
	out []byte
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	r.out = append(r.out, p...)
	r.mu.Unlock()
	return r.Conn.Write(p)
}

// recordedHello returns the bytes of a genuine HELLO (rank 1, heap
// channel, with key) that answered another connection's challenge.
func recordedHello(t *testing.T, key []byte) []byte {
	t.Helper()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	rec := &recorder{Conn: b}
	errc := make(chan error, 1)
	go func() { errc <- stdnet.Greet(rec, 1, stdnet.ChanHeap, key) }()
	if _, _, err := stdnet.Check(a, key); err != nil {
		t.Fatalf("the recorded handshake: %v", err)
	}
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	return rec.out
}

// strangers are what the connections TestStrangersDoNotStopTheMesh opens
// to rank r's listener do: nothing, send garbage, answer the challenge
// with the wrong key as another rank, replay a genuine HELLO.
func strangers(t *testing.T, key []byte, r, n int) map[string]func(net.Conn) {
	recorded := recordedHello(t, key)
	return map[string]func(net.Conn){
		"idle":      func(net.Conn) {},
		"garbage":   func(c net.Conn) { c.Write(bytes.Repeat([]byte("GET / HTTP/1.1\r\n"), 8)) },
		"wrong key": func(c net.Conn) { stdnet.Greet(c, (r+1)%n, stdnet.ChanHeap, []byte("wrong")) },
		"replayed": func(c net.Conn) {
			io.ReadFull(c, make([]byte, 56)) // the challenge
			c.Write(recorded)
		},
	}
}

// TestStrangersDoNotStopTheMesh: to every rank's listener, before the
// ranks connect, come an idle connection, garbage, a HELLO with the wrong
// key and a genuine HELLO replayed from another connection. The mesh
// forms and works; each stranger is refused with its own error, and its
// connection closed.
func TestStrangersDoNotStopTheMesh(t *testing.T) {
	const n = 3
	key := []byte("mesh key")
	lns := make([]*net.TCPListener, n)
	addrs := make([]string, n)
	var mu sync.Mutex
	refused := make([][]error, n)
	var conns []net.Conn
	for r := range n {
		ln, err := stdnet.Listen("127.0.0.1")
		if err != nil {
			t.Fatal(err)
		}
		lns[r], addrs[r] = ln, ln.Addr().String()
		for _, do := range strangers(t, key, r, n) {
			c, err := net.Dial("tcp", addrs[r])
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			conns = append(conns, c)
			go do(c)
		}
	}
	ms := make([]*stdnet.Mesh, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	wants := []error{stdnet.ErrHandshake, stdnet.ErrMeshKey, stdnet.ErrReplay}
	refusedAll := func(r int) bool {
		mu.Lock()
		defer mu.Unlock()
		for _, want := range wants {
			if !slices.ContainsFunc(refused[r], func(err error) bool { return errors.Is(err, want) }) {
				return false
			}
		}
		return true
	}
	// The ranks start one after the other, each once it has refused its
	// strangers: until the next rank starts, the mesh cannot form, so the
	// strangers' handshakes end in their refusals rather than in the
	// close that comes with the mesh's formation.
	for r := range n {
		o := stdnet.Options{Key: key, Timeout: 30 * time.Second, HandshakeTimeout: time.Minute, OnReject: func(err error) {
			mu.Lock()
			refused[r] = append(refused[r], err)
			mu.Unlock()
		}}
		wg.Go(func() { ms[r], errs[r] = stdnet.Connect(r, addrs, lns[r], o) })
		for deadline := time.Now().Add(20 * time.Second); r < n-1 && !refusedAll(r) && time.Now().Before(deadline); {
			time.Sleep(time.Millisecond)
		}
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	for _, m := range ms {
		t.Cleanup(func() { m.Close() })
	}
	each(t, ms, func(r int, m *stdnet.Mesh) error { return m.Barrier() })
	// Connect returned as soon as the ranks were in: the strangers still
	// in their handshake were closed then, the others refused before.
	for _, c := range conns {
		c.SetReadDeadline(time.Now().Add(30 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil && !errors.Is(err, syscall.ECONNRESET) {
			t.Errorf("a stranger's connection was not closed: %v", err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// The last rank completes the mesh as it starts: its strangers may be
	// closed before their refusal, so only the others must name each.
	for r, errs := range refused {
		for _, want := range wants {
			if r < n-1 && !slices.ContainsFunc(errs, func(err error) bool { return errors.Is(err, want) }) {
				t.Errorf("rank %d: no refusal with %v among %v", r, want, errs)
			}
		}
		for _, err := range errs {
			if !slices.ContainsFunc(wants, func(want error) bool { return errors.Is(err, want) }) {
				t.Errorf("rank %d: a refusal that no stranger caused: %v", r, err)
			}
		}
	}
}
