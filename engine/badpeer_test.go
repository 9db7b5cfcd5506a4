package engine_test

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
)

// discardLogger keeps the expected refusals out of the test output.
var discardLogger = slog.New(slog.DiscardHandler)

// testMeshID is the HELLO mesh id of a mesh named name. spec.md leaves the
// derivation to the engine; this mirrors Options.meshID, and the raw HMAC
// client below checks it against what a real acceptor sends.
func testMeshID(name string) (id [frame.MeshIDSize]byte) {
	sum := sha256.Sum256([]byte("boltmesh mesh id\x00" + name))
	copy(id[:], sum[:])
	return id
}

// encodeFrame returns a header of kind and flags followed by payload.
func encodeFrame(kind frame.Kind, flags frame.Flags, payload []byte) []byte {
	h := frame.Header{Kind: kind, Flags: flags, Length: uint64(len(payload))}
	var hdr [frame.HeaderSize]byte
	h.Encode(&hdr)
	return append(hdr[:], payload...)
}

// helloPayload encodes a HELLO payload with a fresh nonce.
func helloPayload(t testing.TB, m frame.Hello) []byte {
	t.Helper()
	if _, err := rand.Read(m.Nonce[:]); err != nil {
		t.Fatal(err)
	}
	var p [frame.HelloSize]byte
	m.Encode(&p)
	return p[:]
}

// handshakeMAC is the spec's proof: HMAC-SHA256(key, label || helloD || helloA).
func handshakeMAC(key []byte, label string, helloD, helloA []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(label))
	m.Write(helloD)
	m.Write(helloA)
	return m.Sum(nil)
}

// readFrame reads one frame from c.
func readFrame(c net.Conn) (frame.Header, []byte, error) {
	var hdr [frame.HeaderSize]byte
	if _, err := io.ReadFull(c, hdr[:]); err != nil {
		return frame.Header{}, nil, err
	}
	h, err := frame.Decode(hdr[:], 0)
	if err != nil {
		return h, nil, err
	}
	p := make([]byte, h.Length)
	_, err = io.ReadFull(c, p)
	return h, p, err
}

// rawReply is what a raw client saw.
type rawReply struct {
	local  string        // the client's address, as the acceptor sees it
	reply  []byte        // every byte received until the connection closed
	closed time.Duration // from dialing until the connection closed
}

// rawClient dials addr, writes send and reads until the acceptor closes the
// connection, which must be an orderly close (no reset, no timeout).
func rawClient(addr string, send []byte) (rawReply, error) {
	start := time.Now()
	c, err := net.DialTimeout("tcp", addr, 2*time.Second)
	if err != nil {
		return rawReply{}, err
	}
	defer c.Close()
	r := rawReply{local: c.LocalAddr().String()}
	c.SetDeadline(time.Now().Add(3 * time.Second))
	if len(send) > 0 {
		if _, err := c.Write(send); err != nil {
			return r, err
		}
	}
	r.reply, err = io.ReadAll(c)
	r.closed = time.Since(start)
	if err != nil {
		return r, fmt.Errorf("connection not closed by the acceptor: %w", err)
	}
	return r, nil
}

// requireRefusal checks that reply is what a peer that has not proven the
// key is sent when refused: the acceptor's HELLO|Reply if hello (it goes to
// every well-formed HELLO), then one REJECT with code RejectUnproven and the
// payload "rejected", nothing else; no AUTH, no reason.
func requireRefusal(t *testing.T, what string, reply []byte, hello bool) {
	t.Helper()
	if hello {
		h, err := frame.Decode(reply, 0)
		if err != nil || h.Kind != frame.KindHello || h.Flags != frame.FlagReply || len(reply) < frame.HeaderSize+frame.HelloSize {
			t.Fatalf("%s: reply % x does not open with HELLO|Reply: %v", what, reply, err)
		}
		reply = reply[frame.HeaderSize+frame.HelloSize:]
	}
	h, err := frame.Decode(reply, 0)
	if err != nil {
		t.Fatalf("%s: reply %q is no frame: %v", what, reply, err)
	}
	if h.Kind != frame.KindReject || uint64(len(reply)) != frame.HeaderSize+h.Length {
		t.Fatalf("%s: got %v frame of %d bytes (%d received), want one REJECT", what, h.Kind, h.Length, len(reply))
	}
	if got := string(reply[frame.HeaderSize:]); got != frame.RejectedText || h.Aux != frame.RejectUnproven {
		t.Fatalf("%s: REJECT code %d reason %q before any proof, want code %d and exactly %q", what, h.Aux, got, frame.RejectUnproven, frame.RejectedText)
	}
}

// rejectLog collects what Options.OnReject reports.
type rejectLog struct {
	mu    sync.Mutex
	errs  []error
	taken []bool
}

func (l *rejectLog) add(err error) {
	l.mu.Lock()
	l.errs = append(l.errs, err)
	l.taken = append(l.taken, false)
	l.mu.Unlock()
}

// take waits for a reported refusal that match accepts and marks it taken.
func (l *rejectLog) take(t *testing.T, what string, match func(*engine.HandshakeError) bool) *engine.HandshakeError {
	t.Helper()
	deadline := time.Now().Add(2 * time.Second)
	for {
		l.mu.Lock()
		for i, err := range l.errs {
			var he *engine.HandshakeError
			if l.taken[i] || !errors.As(err, &he) || !match(he) {
				continue
			}
			l.taken[i] = true
			l.mu.Unlock()
			if !errors.Is(err, engine.ErrHandshake) {
				t.Errorf("%s: OnReject got %v, which does not wrap ErrHandshake", what, err)
			}
			return he
		}
		l.mu.Unlock()
		if time.Now().After(deadline) {
			t.Fatalf("%s: no matching refusal reported to OnReject; got %v", what, l.all())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (l *rejectLog) all() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

// untaken returns the reports no take claimed.
func (l *rejectLog) untaken() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	var rest []error
	for i, err := range l.errs {
		if !l.taken[i] {
			rest = append(rest, err)
		}
	}
	return rest
}

// watchListener passes its connections on wrapped so that an acceptor's
// final handshake frame (AUTH|Reply with its proof: the dialer joined) is
// signalled on joined once it is written.
type watchListener struct {
	net.Listener
	joined chan<- struct{}
}

func (l *watchListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &watchConn{Conn: c, joined: l.joined}, nil
}

// watchConn embeds only the net.Conn interface, so net.Buffers writes go
// through its Write; it stays a syscall.Conn for the engine to adopt.
type watchConn struct {
	net.Conn
	joined chan<- struct{}
}

func (c *watchConn) SyscallConn() (syscall.RawConn, error) {
	return c.Conn.(syscall.Conn).SyscallConn()
}

func (c *watchConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if err == nil && len(p) == frame.HeaderSize {
		if h, derr := frame.Decode(p, 0); derr == nil && h.Kind == frame.KindAuth && h.Flags == frame.FlagReply {
			select {
			case c.joined <- struct{}{}:
			default:
			}
		}
	}
	return n, err
}

// startRank runs FromListener in the background. The returned function
// waits for it; the transport is closed at cleanup, which also waits.
func startRank(t *testing.T, rank, world int, ln net.Listener, addrs []string, o engine.Options) func() (*engine.NetTransport, error) {
	t.Helper()
	ch := make(chan struct{})
	var tr *engine.NetTransport
	var err error
	go func() {
		defer close(ch)
		tr, err = engine.FromListener(rank, world, ln, addrs, o)
	}()
	wait := func() (*engine.NetTransport, error) {
		<-ch
		return tr, err
	}
	t.Cleanup(func() {
		if tr, _ := wait(); tr != nil {
			tr.Close()
		}
	})
	return wait
}

// joinAs runs a real participant claiming rank in a world of world with its
// own listener, dialing the lower ranks at addrs, and returns its error.
func joinAs(t *testing.T, rank, world int, addrs []string, o engine.Options) error {
	t.Helper()
	lns, own := listeners(t, 1)
	peers := append([]string(nil), addrs...)
	peers[rank] = own[0]
	tr, err := engine.FromListener(rank, world, lns[0], peers, o)
	if tr != nil {
		tr.Close()
		t.Fatalf("participant claiming rank %d joined the mesh", rank)
	}
	return err
}

func TestBadPeersDuringSetup(t *testing.T) {
	const world = 3
	const hsTimeout = 300 * time.Millisecond
	key := []byte("k1")
	mesh := testMeshID("boltmesh")
	lns, addrs := listeners(t, world)
	opts := func() engine.Options {
		return engine.Options{MeshKey: key, HandshakeTimeout: hsTimeout, DialTimeout: 5 * time.Second, Logger: discardLogger}
	}

	var rejects rejectLog
	joined := make(chan struct{}, world)
	o0 := opts()
	o0.OnReject = rejects.add
	wait0 := startRank(t, 0, world, &watchListener{Listener: lns[0], joined: joined}, addrs, o0)

	// (e) A silent connection, dropped after HandshakeTimeout; it runs while
	// the others are refused.
	type rawResult struct {
		r   rawReply
		err error
	}
	silent := make(chan rawResult, 1)
	go func() {
		r, err := rawClient(addrs[0], nil)
		silent <- rawResult{r, err}
	}()

	// Raw clients refused right after their HELLO (or what stands for it).
	garbage := make([]byte, frame.HeaderSize) // exactly one header's worth: all of it is read
	for i := range garbage {
		garbage[i] = byte(0xA5 ^ i*37)
	}
	badMagic := helloPayload(t, frame.Hello{Version: frame.Version, World: world, Rank: 1, MeshID: mesh})
	copy(badMagic, "BOLTMASH")
	// Every refusal before a proof says exactly "rejected"; a well-formed
	// HELLO is answered with the acceptor's HELLO first (hello).
	cases := []struct {
		name  string
		send  []byte
		hello bool
		rank  int              // the rank rank 0 reports: claimed, or -1
		cause func(error) bool // what HandshakeError.Err must be
	}{
		{"(a) garbage", garbage, false, -1, func(err error) bool {
			var de *frame.DecodeError
			return errors.As(err, &de)
		}},
		{"(b) wrong magic", encodeFrame(frame.KindHello, 0, badMagic), false, -1, func(err error) bool {
			return errors.Is(err, frame.ErrBadMagic)
		}},
		{"(c) wrong version", encodeFrame(frame.KindHello, 0,
			helloPayload(t, frame.Hello{Version: frame.Version + 1, World: world, Rank: 1, MeshID: mesh})), true, 1, func(err error) bool {
			return errors.Is(err, engine.ErrVersion)
		}},
		{"(d) wrong world size", encodeFrame(frame.KindHello, 0,
			helloPayload(t, frame.Hello{Version: frame.Version, World: world + 1, Rank: 1, MeshID: mesh})), true, 1, nil},
		{"claims the acceptor's own rank", encodeFrame(frame.KindHello, 0,
			helloPayload(t, frame.Hello{Version: frame.Version, World: world, Rank: 0, MeshID: mesh})), true, 0, nil},
		{"claims a rank outside the world", encodeFrame(frame.KindHello, 0,
			helloPayload(t, frame.Hello{Version: frame.Version, World: world, Rank: 7, MeshID: mesh})), true, 7, nil},
		{"different mesh id", encodeFrame(frame.KindHello, 0,
			helloPayload(t, frame.Hello{Version: frame.Version, World: world, Rank: 1, MeshID: testMeshID("other")})), true, 1, nil},
	}
	for _, c := range cases {
		r, err := rawClient(addrs[0], c.send)
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		requireRefusal(t, c.name, r.reply, c.hello)
		he := rejects.take(t, c.name, func(he *engine.HandshakeError) bool { return he.Addr == r.local })
		if !he.Local || he.Rank != c.rank {
			t.Errorf("%s: reported %+v, want Local and Rank %d", c.name, he, c.rank)
		}
		if c.cause == nil && he.Err != nil || c.cause != nil && !c.cause(he) {
			t.Errorf("%s: reported cause %v", c.name, he.Err)
		}
	}

	// A raw dialer that follows the spec and proves a wrong key: it is sent
	// the acceptor's HELLO and nothing derived from the key, and then only
	// "rejected".
	t.Run("raw dialer with a wrong proof", func(t *testing.T) {
		c, err := net.DialTimeout("tcp", addrs[0], 2*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(3 * time.Second))
		helloD := helloPayload(t, frame.Hello{Version: frame.Version, World: world, Rank: 2, MeshID: mesh})
		if _, err := c.Write(encodeFrame(frame.KindHello, 0, helloD)); err != nil {
			t.Fatal(err)
		}
		h, helloA, err := readFrame(c)
		if err != nil || h.Kind != frame.KindHello || h.Flags != frame.FlagReply {
			t.Fatalf("want HELLO|Reply, got %v flags %#x: %v", h.Kind, h.Flags, err)
		}
		m, err := frame.DecodeHello(helloA)
		if err != nil || m.Version != frame.Version || m.World != world || m.Rank != 0 || m.MeshID != mesh {
			t.Fatalf("acceptor's HELLO %+v: %v", m, err)
		}
		local := c.LocalAddr().String()
		if _, err := c.Write(encodeFrame(frame.KindAuth, 0, handshakeMAC([]byte("k2"), "boltmesh dialer", helloD, helloA))); err != nil {
			t.Fatal(err)
		}
		rest, err := io.ReadAll(c)
		if err != nil {
			t.Fatalf("connection not closed by the acceptor: %v", err)
		}
		requireRefusal(t, "wrong proof", rest, false)
		he := rejects.take(t, "wrong proof", func(he *engine.HandshakeError) bool { return he.Addr == local })
		if !he.Local || he.Rank != 2 || !errors.Is(he, engine.ErrWrongKey) {
			t.Errorf("reported %+v, want Local, Rank 2, ErrWrongKey", he)
		}
	})

	// (e) The silent connection was closed after the handshake timeout.
	s := <-silent
	if s.err != nil {
		t.Fatalf("(e) silent: %v", s.err)
	}
	if s.r.closed < hsTimeout-50*time.Millisecond || s.r.closed > hsTimeout+2*time.Second {
		t.Errorf("(e) silent connection closed after %v, want about %v", s.r.closed, hsTimeout)
	}
	if len(s.r.reply) > 0 {
		requireRefusal(t, "(e) silent", s.r.reply, false)
	}
	he := rejects.take(t, "(e) silent", func(he *engine.HandshakeError) bool { return he.Addr == s.r.local })
	if !he.Local || he.Rank != -1 || !errors.Is(he, os.ErrDeadlineExceeded) {
		t.Errorf("(e) silent: reported %+v (cause %v), want Local, Rank -1, a deadline error", he, he.Err)
	}

	// (f) A real participant with another key: it proves first (spec step
	// 3), rank 0 refuses its proof, and both sides name ErrWrongKey.
	wrongKey := opts()
	wrongKey.MeshKey = []byte("k2")
	err := joinAs(t, 1, world, addrs, wrongKey)
	if !errors.Is(err, engine.ErrHandshake) || !errors.Is(err, engine.ErrWrongKey) {
		t.Fatalf("(f) wrong key: got %v, want ErrHandshake and ErrWrongKey", err)
	}
	var fe *engine.HandshakeError
	if !errors.As(err, &fe) || fe.Local || fe.Rank != 0 || fe.Reason != frame.RejectedText {
		t.Errorf("(f) wrong key: got %+v, want a *HandshakeError refused by rank 0, saying only %q", fe, frame.RejectedText)
	}
	he = rejects.take(t, "(f) wrong key", func(he *engine.HandshakeError) bool { return he.Rank == 1 })
	if !he.Local || !errors.Is(he, engine.ErrWrongKey) {
		t.Errorf("(f) wrong key: rank 0 reported %+v, want refused by itself (Local) for ErrWrongKey", he)
	}

	// The real rank 1 joins rank 0 (and waits for rank 2).
	wait1 := startRank(t, 1, world, lns[1], addrs, opts())
	select {
	case <-joined:
	case err := <-errAfter(wait1):
		t.Fatalf("rank 1 gave up before joining rank 0: %v", err)
	case <-time.After(2 * time.Second):
		t.Fatal("rank 1 did not join rank 0")
	}

	// (g) A second participant claiming rank 1 is refused by rank 0.
	err = joinAs(t, 1, world, addrs, opts())
	if !errors.Is(err, engine.ErrHandshake) || !errors.Is(err, engine.ErrSlotTaken) {
		t.Fatalf("(g) duplicate rank 1: got %v, want ErrHandshake and ErrSlotTaken", err)
	}
	var ge *engine.HandshakeError
	if !errors.As(err, &ge) || ge.Local {
		t.Errorf("(g) duplicate rank 1: got %v, want a *HandshakeError refused by rank 0", err)
	}
	he = rejects.take(t, "(g) duplicate", func(he *engine.HandshakeError) bool { return he.Rank == 1 })
	if !he.Local || !errors.Is(he, engine.ErrSlotTaken) {
		t.Errorf("(g) duplicate: reported %+v, want Local, ErrSlotTaken", he)
	}

	// The last rank completes the mesh, which works.
	wait2 := startRank(t, 2, world, lns[2], addrs, opts())
	ts := make([]*engine.NetTransport, world)
	for r, wait := range []func() (*engine.NetTransport, error){wait0, wait1, wait2} {
		if ts[r], err = wait(); err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
	watchdog(t, 10*time.Second, ts...)
	if rest := rejects.untaken(); len(rest) > 0 {
		t.Errorf("unexpected refusals: %v", rest)
	}
	var wg sync.WaitGroup
	errs := make([]error, world)
	for r, tr := range ts {
		wg.Go(func() { errs[r] = exchange(tr, 2, 3, 64<<10) })
	}
	wg.Wait()
	for r, err := range errs {
		if err != nil {
			t.Errorf("rank %d: %v", r, err)
		}
	}
	barrierAll(t, ts)
}

// errAfter reports wait's error, once it returns, on a channel.
func errAfter(wait func() (*engine.NetTransport, error)) <-chan error {
	ch := make(chan error, 1)
	go func() {
		_, err := wait()
		ch <- err
	}()
	return ch
}
