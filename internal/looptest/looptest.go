// Package looptest holds what the tests of ioloop and of the Streams
// under its Conns share: a recording Handler, loops that tests close,
// patterned payloads, frame assertions, and pipes in shared memory
// (PipePair) for the tests that run over every kind of stream.
package looptest

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
	"unsafe"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// WaitTimeout bounds every wait of the helpers.
const WaitTimeout = 10 * time.Second

// pool is deterministic random data that payloads are cut from.
var pool = func() []byte {
	b := make([]byte, 9<<20)
	rand.NewChaCha8([32]byte{'b', 'o', 'l', 't'}).Read(b)
	return b
}()

// Patterned returns n bytes of pool starting at a position derived from
// seed, so that frames of different seeds have different contents.
func Patterned(seed uint64, n int) []byte {
	off := int(seed*7919) % (len(pool) - n + 1)
	return pool[off : off+n]
}

// Filled returns n bytes of pool, repeated as needed: a payload longer
// than Patterned can cut.
func Filled(n int) []byte {
	b := make([]byte, n)
	for off := 0; off < n; off += len(pool) {
		copy(b[off:], pool)
	}
	return b
}

// Frame is one delivered frame as the test handler saw it.
type Frame struct {
	Hdr     frame.Header
	Payload []byte // owned by the test (a copy or a fresh named buffer)
	Named   bool   // delivered into the buffer Payload returned
}

// Handler records delivered frames and the Closed error. Set the
// configuration fields before Register.
type Handler struct {
	// Named, when set, makes Payload return a fresh buffer of h.Length
	// bytes for the frames it accepts; otherwise pooled buffers are used.
	Named func(h *frame.Header) bool
	// OnDeliver, when set, runs at the end of Deliver, without h.mu held.
	OnDeliver func(c *ioloop.Conn, h *frame.Header, n int)
	// OnClosed, when set, runs at the end of Closed, without h.mu held.
	OnClosed func(c *ioloop.Conn, err error)

	mu       sync.Mutex
	lastDst  []byte
	frames   []Frame
	problems []string
	closeErr error
	nClosed  int
	closed   chan struct{}
	notify   chan struct{}
}

var _ ioloop.Handler = (*Handler)(nil)

// NewHandler returns a Handler that reads every payload into a pooled
// buffer until Named says otherwise.
func NewHandler() *Handler {
	return &Handler{closed: make(chan struct{}), notify: make(chan struct{}, 1)}
}

// NamedAll, as a Handler's Named, names a buffer for every frame.
func NamedAll(*frame.Header) bool { return true }

// Payload implements ioloop.Handler.
func (th *Handler) Payload(c *ioloop.Conn, h *frame.Header) []byte {
	th.mu.Lock()
	defer th.mu.Unlock()
	if th.Named == nil || !th.Named(h) {
		th.lastDst = nil
		return nil
	}
	th.lastDst = make([]byte, h.Length)
	return th.lastDst
}

// Deliver implements ioloop.Handler: it records the frame and notes what
// does not fit the contract.
func (th *Handler) Deliver(c *ioloop.Conn, h *frame.Header, payload []byte, bb *ioloop.Buffer) {
	th.mu.Lock()
	f := Frame{Hdr: *h}
	switch {
	case uint64(len(payload)) != h.Length:
		th.problems = append(th.problems, fmt.Sprintf("frame %+v: payload of %d bytes", *h, len(payload)))
	case bb == nil:
		if th.lastDst == nil || unsafe.SliceData(payload) != unsafe.SliceData(th.lastDst) {
			th.problems = append(th.problems, fmt.Sprintf("frame %+v: bb nil but payload is not the named buffer", *h))
		}
		f.Payload, f.Named = payload, true
	default:
		if th.lastDst != nil {
			th.problems = append(th.problems, fmt.Sprintf("frame %+v: named buffer ignored", *h))
		}
		if unsafe.SliceData(payload) != unsafe.SliceData(bb.B) || len(payload) != len(bb.B) {
			th.problems = append(th.problems, fmt.Sprintf("frame %+v: payload is not bb.B", *h))
		}
		f.Payload = bytes.Clone(payload)
		if f.Payload == nil {
			f.Payload = []byte{}
		}
		ioloop.PutBuffer(bb)
	}
	th.lastDst = nil
	th.frames = append(th.frames, f)
	th.mu.Unlock()
	select {
	case th.notify <- struct{}{}:
	default:
	}
	if th.OnDeliver != nil {
		th.OnDeliver(c, h, len(payload))
	}
}

// Closed implements ioloop.Handler.
func (th *Handler) Closed(c *ioloop.Conn, err error) {
	th.mu.Lock()
	th.nClosed++
	if th.nClosed == 1 {
		th.closeErr = err
		close(th.closed)
	} else {
		th.problems = append(th.problems, fmt.Sprintf("Closed called %d times (now with %v)", th.nClosed, err))
	}
	th.mu.Unlock()
	if th.OnClosed != nil {
		th.OnClosed(c, err)
	}
}

// Count returns how many frames were delivered.
func (th *Handler) Count() int {
	th.mu.Lock()
	defer th.mu.Unlock()
	return len(th.frames)
}

// Snapshot returns the frames delivered so far.
func (th *Handler) Snapshot() []Frame {
	th.mu.Lock()
	defer th.mu.Unlock()
	return append([]Frame(nil), th.frames...)
}

// Check fails t for every inconsistency the handler noticed.
func (th *Handler) Check(t testing.TB) {
	t.Helper()
	th.mu.Lock()
	defer th.mu.Unlock()
	for _, p := range th.problems {
		t.Error(p)
	}
}

// WaitFrames waits until at least n frames were delivered and returns them.
func (th *Handler) WaitFrames(t testing.TB, n int) []Frame {
	t.Helper()
	deadline := time.After(WaitTimeout)
	for th.Count() < n {
		select {
		case <-th.notify:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("got %d frames, want %d", th.Count(), n)
		}
	}
	return th.Snapshot()
}

// WaitClosed waits for Closed and returns its error.
func (th *Handler) WaitClosed(t testing.TB) error {
	t.Helper()
	select {
	case <-th.closed:
	case <-time.After(WaitTimeout):
		t.Fatal("Handler.Closed was not called")
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	return th.closeErr
}

// Done returns a channel closed once Closed was called.
func (th *Handler) Done() <-chan struct{} { return th.closed }

// Err returns Closed's error, nil before it was called.
func (th *Handler) Err() error {
	th.mu.Lock()
	defer th.mu.Unlock()
	return th.closeErr
}

// IsClosed reports whether Closed was called.
func (th *Handler) IsClosed() bool {
	select {
	case <-th.closed:
		return true
	default:
		return false
	}
}

// AssertFrame checks a delivered frame against the header and payload sent.
func AssertFrame(t testing.TB, got Frame, want frame.Header, payload []byte, named bool) {
	t.Helper()
	want.Length = uint64(len(payload))
	if got.Hdr != want {
		t.Errorf("header = %+v, want %+v", got.Hdr, want)
	}
	if got.Named != named {
		t.Errorf("frame %+v: named = %v, want %v", want, got.Named, named)
	}
	if !bytes.Equal(got.Payload, payload) {
		t.Errorf("frame %+v: payload differs at byte %d (got %d bytes, want %d)",
			want, FirstDiff(got.Payload, payload), len(got.Payload), len(payload))
	}
}

// FirstDiff returns the index of the first byte where a and b differ,
// or the shorter's length.
func FirstDiff(a, b []byte) int {
	if bytes.Equal(a, b) {
		return len(a)
	}
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// AssertConnError checks that err is a *ConnError wrapping target.
func AssertConnError(t testing.TB, err, target error) *ioloop.ConnError {
	t.Helper()
	var ce *ioloop.ConnError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *ConnError", err, err)
	}
	if !errors.Is(err, target) {
		t.Fatalf("error %v does not wrap %v", err, target)
	}
	return ce
}

// LeakCheck fails t if goroutines started during the test outlive it. Call
// it first so that its cleanup runs after every other.
func LeakCheck(t testing.TB) {
	base := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(3 * time.Second)
		for runtime.NumGoroutine() > base {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutines: %d, want at most %d\n%s", runtime.NumGoroutine(), base, buf)
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	})
}

// NewLoop starts a loop that is closed when the test ends.
func NewLoop(t testing.TB, opts ioloop.Options) *ioloop.Loop {
	t.Helper()
	l, err := ioloop.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { CloseLoop(t, l) })
	return l
}

// CloseLoop closes l but gives up (and fails t) if that hangs, so that a
// deadlocked loop does not hang the whole test binary.
func CloseLoop(t testing.TB, l *ioloop.Loop) {
	done := make(chan error, 1)
	go func() { done <- l.Close() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Loop.Close: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Errorf("Loop.Close hung")
	}
}

// EncodeFrame returns header and payload as one byte slice.
func EncodeFrame(h frame.Header, payload []byte) []byte {
	h.Length = uint64(len(payload))
	var hb [frame.HeaderSize]byte
	h.Encode(&hb)
	return append(hb[:], payload...)
}

// WaitFor polls cond until it holds or the wait times out.
func WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(WaitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// NopHandler drops every frame.
type NopHandler struct{}

// Payload implements ioloop.Handler: a pooled buffer.
func (NopHandler) Payload(*ioloop.Conn, *frame.Header) []byte { return nil }

// Deliver implements ioloop.Handler: the buffer goes back.
func (NopHandler) Deliver(_ *ioloop.Conn, _ *frame.Header, _ []byte, bb *ioloop.Buffer) {
	if bb != nil {
		ioloop.PutBuffer(bb)
	}
}

// Closed implements ioloop.Handler.
func (NopHandler) Closed(*ioloop.Conn, error) {}
