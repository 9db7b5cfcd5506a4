package ioloop_test

import (
	"bytes"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

const waitTimeout = 10 * time.Second

// pool is deterministic random data that payloads are cut from.
var pool = func() []byte {
	b := make([]byte, 9<<20)
	rand.NewChaCha8([32]byte{'b', 'o', 'l', 't'}).Read(b)
	return b
}()

// patterned returns n bytes of pool starting at a position derived from
// seed, so that frames of different seeds have different contents.
func patterned(seed uint64, n int) []byte {
	off := int(seed*7919) % (len(pool) - n + 1)
	return pool[off : off+n]
}

// rxFrame is one delivered frame as the test handler saw it.
type rxFrame struct {
	Hdr     frame.Header
	Payload []byte // owned by the test (a copy or a fresh named buffer)
	Named   bool   // delivered into the buffer Payload returned
}

// testHandler records delivered frames and the Closed error. Set the
// configuration fields before Register.
type testHandler struct {
	// named, when set, makes Payload return a fresh buffer of h.Length
	// bytes for the frames it accepts; otherwise pooled buffers are used.
	named func(h *frame.Header) bool
	// onDeliver, when set, runs at the end of Deliver, without h.mu held.
	onDeliver func(c *ioloop.Conn, h *frame.Header, n int)
	// onClosed, when set, runs at the end of Closed, without h.mu held.
	onClosed func(c *ioloop.Conn, err error)

	mu       sync.Mutex
	lastDst  []byte
	frames   []rxFrame
	problems []string
	closeErr error
	nClosed  int
	closed   chan struct{}
	notify   chan struct{}
}

func newTestHandler() *testHandler {
	return &testHandler{closed: make(chan struct{}), notify: make(chan struct{}, 1)}
}

func namedAll(*frame.Header) bool { return true }

func (th *testHandler) Payload(c *ioloop.Conn, h *frame.Header) []byte {
	th.mu.Lock()
	defer th.mu.Unlock()
	if th.named == nil || !th.named(h) {
		th.lastDst = nil
		return nil
	}
	th.lastDst = make([]byte, h.Length)
	return th.lastDst
}

func (th *testHandler) Deliver(c *ioloop.Conn, h *frame.Header, payload []byte, bb *ioloop.Buffer) {
	th.mu.Lock()
	f := rxFrame{Hdr: *h}
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
	if th.onDeliver != nil {
		th.onDeliver(c, h, len(payload))
	}
}

func (th *testHandler) Closed(c *ioloop.Conn, err error) {
	th.mu.Lock()
	th.nClosed++
	if th.nClosed == 1 {
		th.closeErr = err
		close(th.closed)
	} else {
		th.problems = append(th.problems, fmt.Sprintf("Closed called %d times (now with %v)", th.nClosed, err))
	}
	th.mu.Unlock()
	if th.onClosed != nil {
		th.onClosed(c, err)
	}
}

// count returns how many frames were delivered.
func (th *testHandler) count() int {
	th.mu.Lock()
	defer th.mu.Unlock()
	return len(th.frames)
}

// snapshot returns the frames delivered so far.
func (th *testHandler) snapshot() []rxFrame {
	th.mu.Lock()
	defer th.mu.Unlock()
	return append([]rxFrame(nil), th.frames...)
}

// check fails t for every inconsistency the handler noticed.
func (th *testHandler) check(t testing.TB) {
	t.Helper()
	th.mu.Lock()
	defer th.mu.Unlock()
	for _, p := range th.problems {
		t.Error(p)
	}
}

// waitFrames waits until at least n frames were delivered and returns them.
func (th *testHandler) waitFrames(t testing.TB, n int) []rxFrame {
	t.Helper()
	deadline := time.After(waitTimeout)
	for th.count() < n {
		select {
		case <-th.notify:
		case <-time.After(10 * time.Millisecond):
		case <-deadline:
			t.Fatalf("got %d frames, want %d", th.count(), n)
		}
	}
	return th.snapshot()
}

// waitClosed waits for Closed and returns its error.
func (th *testHandler) waitClosed(t testing.TB) error {
	t.Helper()
	select {
	case <-th.closed:
	case <-time.After(waitTimeout):
		t.Fatal("Handler.Closed was not called")
	}
	th.mu.Lock()
	defer th.mu.Unlock()
	return th.closeErr
}

// isClosed reports whether Closed was called.
func (th *testHandler) isClosed() bool {
	select {
	case <-th.closed:
		return true
	default:
		return false
	}
}

// assertFrame checks a delivered frame against the header and payload sent.
func assertFrame(t testing.TB, got rxFrame, want frame.Header, payload []byte, named bool) {
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
			want, firstDiff(got.Payload, payload), len(got.Payload), len(payload))
	}
}

func firstDiff(a, b []byte) int {
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

// assertConnError checks that err is a *ConnError wrapping target.
func assertConnError(t testing.TB, err, target error) *ioloop.ConnError {
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

// leakCheck fails t if goroutines started during the test outlive it. Call
// it first so that its cleanup runs after every other.
func leakCheck(t testing.TB) {
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

// newLoop starts a loop that is closed when the test ends.
func newLoop(t testing.TB, opts ioloop.Options) *ioloop.Loop {
	t.Helper()
	l, err := ioloop.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { closeLoop(t, l) })
	return l
}

// closeLoop closes l but gives up (and fails t) if that hangs, so that a
// deadlocked loop does not hang the whole test binary.
func closeLoop(t testing.TB, l *ioloop.Loop) {
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

// rawFd is a socket the test reads and writes itself (blocking).
type rawFd struct {
	fd   int
	once sync.Once
}

func (r *rawFd) close() { r.once.Do(func() { unix.Close(r.fd) }) }

// write writes all of b.
func (r *rawFd) write(t testing.TB, b []byte) {
	t.Helper()
	for len(b) > 0 {
		n, err := unix.Write(r.fd, b)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			t.Errorf("write: %v", err)
			return
		}
		b = b[n:]
	}
}

// readFull reads exactly len(b) bytes in reads of at most chunk bytes.
func (r *rawFd) readFull(b []byte, chunk int) error {
	for len(b) > 0 {
		n, err := unix.Read(r.fd, b[:min(chunk, len(b))])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("unexpected EOF with %d bytes missing", len(b))
		}
		b = b[n:]
	}
	return nil
}

// readFrame reads one frame from the raw socket.
func (r *rawFd) readFrame(chunk int) (frame.Header, []byte, error) {
	var hb [frame.HeaderSize]byte
	if err := r.readFull(hb[:], chunk); err != nil {
		return frame.Header{}, nil, err
	}
	h, err := frame.Decode(hb[:], 0)
	if err != nil {
		return h, nil, err
	}
	p := make([]byte, h.Length)
	return h, p, r.readFull(p, chunk)
}

// encodeFrame returns header and payload as one byte slice.
func encodeFrame(h frame.Header, payload []byte) []byte {
	h.Length = uint64(len(payload))
	var hb [frame.HeaderSize]byte
	h.Encode(&hb)
	return append(hb[:], payload...)
}

// socketPair returns two connected stream sockets of the given family
// (unix.AF_UNIX or unix.AF_INET for loopback TCP). Neither is closed by the
// helper: one handed to Register belongs to the loop.
func socketPair(t testing.TB, family int) (int, int) {
	t.Helper()
	if family == unix.AF_UNIX {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		return fds[0], fds[1]
	}
	ln, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(ln)
	if err := unix.Bind(ln, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(ln, 1); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(ln)
	if err != nil {
		t.Fatal(err)
	}
	c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.Connect(c, sa); err != nil {
		unix.Close(c)
		t.Fatal(err)
	}
	a, _, err := unix.Accept(ln)
	if err != nil {
		unix.Close(c)
		t.Fatal(err)
	}
	for _, fd := range []int{a, c} {
		unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1)
	}
	return a, c
}

// rawPeer returns a Conn registered on l with handler h and the raw socket
// at its other end, closed when the test ends.
func rawPeer(t testing.TB, l *ioloop.Loop, family, id int, h ioloop.Handler) (*ioloop.Conn, *rawFd) {
	t.Helper()
	if family == familyPipe {
		t.Skip("a pipe has no raw socket to write frames into")
	}
	a, b := socketPair(t, family)
	raw := &rawFd{fd: b}
	t.Cleanup(raw.close)
	c, err := l.Register(a, id, h)
	if err != nil {
		raw.close()
		t.Fatal(err)
	}
	return c, raw
}

// connPair registers both ends of a socket pair on l.
func connPair(t testing.TB, l *ioloop.Loop, family int, ha, hb ioloop.Handler) (*ioloop.Conn, *ioloop.Conn) {
	t.Helper()
	return connPairBuf(t, l, family, 0, ha, hb)
}

// connPairBuf is connPair with the socket buffers of both ends set to
// bufSize bytes (which turns TCP's autotuning off), unless it is 0.
func connPairBuf(t testing.TB, l *ioloop.Loop, family, bufSize int, ha, hb ioloop.Handler) (*ioloop.Conn, *ioloop.Conn) {
	t.Helper()
	if family == familyPipe {
		ring := 64 << 10
		if bufSize > 0 {
			ring = 1 << bits.Len(uint(bufSize-1))
		}
		return pipePair(t, l, ring, ha, hb)
	}
	a, b := socketPair(t, family)
	if bufSize > 0 {
		for _, fd := range []int{a, b} {
			for _, opt := range []int{unix.SO_SNDBUF, unix.SO_RCVBUF} {
				if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, opt, bufSize); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	ca, err := l.Register(a, 1, ha)
	if err != nil {
		unix.Close(b)
		t.Fatal(err)
	}
	cb, err := l.Register(b, 2, hb)
	if err != nil {
		t.Fatal(err)
	}
	return ca, cb
}

func familyName(f int) string {
	switch f {
	case unix.AF_UNIX:
		return "unix"
	case familyPipe:
		return "pipe"
	}
	return "tcp"
}

var families = []int{unix.AF_UNIX, unix.AF_INET, familyPipe}

// familyPipe stands for a pipe in shared memory (RegisterPipe) where a
// test takes a socket family: connPair makes one; rawPeer skips, since a
// pipe has no raw socket to write frames into.
const familyPipe = -1

// pipePair registers both sides of a pipe with rings of ring bytes in
// anonymous shared memory, unmapped once both have released it.
func pipePair(t testing.TB, l *ioloop.Loop, ring int, ha, hb ioloop.Handler) (*ioloop.Conn, *ioloop.Conn) {
	t.Helper()
	return pipePairFilled(t, l, ring, 0, ha, hb)
}

// pipePairFilled is pipePair in memory whose byte i was fill+i*7 (mod
// 256) before InitPipe (fill 0: as mapped), so that no two words of it
// are alike.
func pipePairFilled(t testing.TB, l *ioloop.Loop, ring int, fill byte, ha, hb ioloop.Handler) (*ioloop.Conn, *ioloop.Conn) {
	t.Helper()
	page := unix.Getpagesize()
	size := (ioloop.PipeSize(ring) + page - 1) / page * page
	mem, err := unix.Mmap(-1, 0, size, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_ANON)
	if err != nil {
		t.Fatal(err)
	}
	if fill != 0 {
		for i := range mem {
			mem[i] = fill + byte(i*7)
		}
	}
	if err := ioloop.InitPipe(mem, ring); err != nil {
		t.Fatal(err)
	}
	var refs atomic.Int32
	refs.Store(2)
	release := func() {
		if refs.Add(-1) == 0 {
			unix.Munmap(mem)
		}
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	ca, err := l.RegisterPipe(fds[0], mem, 0, release, 1, ha, nil)
	if err != nil {
		unix.Close(fds[1])
		release()
		t.Fatal(err)
	}
	cb, err := l.RegisterPipe(fds[1], mem, 1, release, 2, hb, nil)
	if err != nil {
		t.Fatal(err)
	}
	return ca, cb
}

// writevLog records the writevs of the hook, per connection id.
type writevLog struct {
	mu    sync.Mutex
	calls []writevCall
}

type writevCall struct{ id, bufs, n int }

// installWritevLog sets the writev hook for the duration of the test. Call
// it before starting the loop; its cleanup must run after the loop closed,
// so call it before newLoop.
func installWritevLog(t testing.TB) *writevLog {
	w := &writevLog{}
	ioloop.SetTestHookWritev(func(id, bufs, n int) {
		w.mu.Lock()
		w.calls = append(w.calls, writevCall{id, bufs, n})
		w.mu.Unlock()
	})
	t.Cleanup(func() { ioloop.SetTestHookWritev(nil) })
	return w
}

// of returns the writevs of connection id recorded so far.
func (w *writevLog) of(id int) []writevCall {
	w.mu.Lock()
	defer w.mu.Unlock()
	var cs []writevCall
	for _, c := range w.calls {
		if c.id == id {
			cs = append(cs, c)
		}
	}
	return cs
}

func (w *writevLog) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	var sb strings.Builder
	for _, c := range w.calls {
		fmt.Fprintf(&sb, "[id %d bufs %d n %d] ", c.id, c.bufs, c.n)
	}
	return sb.String()
}

// waitFor polls cond until it holds or the wait times out.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// nopHandler drops every frame.
type nopHandler struct{}

func (nopHandler) Payload(*ioloop.Conn, *frame.Header) []byte { return nil }
func (nopHandler) Deliver(_ *ioloop.Conn, _ *frame.Header, _ []byte, bb *ioloop.Buffer) {
	if bb != nil {
		ioloop.PutBuffer(bb)
	}
}
func (nopHandler) Closed(*ioloop.Conn, error) {}
