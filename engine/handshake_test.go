package engine_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
)

// recordLog is a slog.Handler that keeps every record.
type recordLog struct {
	mu   sync.Mutex
	recs []slog.Record
}

func (l *recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *recordLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *recordLog) WithGroup(string) slog.Handler            { return l }
func (l *recordLog) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	l.recs = append(l.recs, r.Clone())
	l.mu.Unlock()
	return nil
}

func (l *recordLog) logger() *slog.Logger { return slog.New(l) }

// count returns how many records match.
func (l *recordLog) count(match func(slog.Record) bool) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, r := range l.recs {
		if match(r) {
			n++
		}
	}
	return n
}

// isNoKeyWarning matches the warning that a mesh has no key.
func isNoKeyWarning(r slog.Record) bool {
	return r.Level == slog.LevelWarn && r.Message == engine.NoKeyWarning
}

// isRefusal matches a record that logs a refused connection: its "err"
// is a *HandshakeError.
func isRefusal(r slog.Record) bool {
	found := false
	r.Attrs(func(a slog.Attr) bool {
		var he *engine.HandshakeError
		if err, ok := a.Value.Any().(error); ok && a.Key == "err" && errors.As(err, &he) {
			found = true
		}
		return !found
	})
	return found
}

// joinRank1 completes a 2-rank mesh whose rank 0 listens at addrs[0] and
// waits for both ranks.
func joinRank1(t *testing.T, addrs []string, o engine.Options, wait0 func() (*engine.NetTransport, error)) {
	t.Helper()
	wait1 := startRank(t, 1, 2, nil, addrs, o)
	for r, wait := range []func() (*engine.NetTransport, error){wait0, wait1} {
		if _, err := wait(); err != nil {
			t.Fatalf("rank %d: %v", r, err)
		}
	}
}

// TestBareHelloGetsNoKeyDerivedBytes: a stranger that sends a valid HELLO
// and then waits is sent the acceptor's HELLO and nothing else until the
// handshake times out: no proof to guess the key from offline.
func TestBareHelloGetsNoKeyDerivedBytes(t *testing.T) {
	lns, addrs := listeners(t, 2)
	lns[1].Close()
	o := engine.Options{MeshKey: []byte("twelve chars"), HandshakeTimeout: 500 * time.Millisecond, Logger: discardLogger}
	wait0 := startRank(t, 0, 2, lns[0], addrs, o)
	hello := encodeFrame(frame.KindHello, 0, helloPayload(t, frame.Hello{Version: frame.Version, World: 2, Rank: 1, MeshID: testMeshID("boltmesh")}))
	r, err := rawClient(addrs[0], hello)
	if err != nil {
		t.Fatal(err)
	}
	h, err := frame.Decode(r.reply, 0)
	if err != nil || h.Kind != frame.KindHello || h.Flags != frame.FlagReply {
		t.Fatalf("reply % x does not open with HELLO|Reply: %v", r.reply, err)
	}
	if len(r.reply) != frame.HeaderSize+frame.HelloSize {
		t.Fatalf("a bare HELLO was sent %d bytes: % x; want the acceptor's HELLO alone (%d bytes)", len(r.reply), r.reply, frame.HeaderSize+frame.HelloSize)
	}
	joinRank1(t, addrs, o, wait0)
}

// TestOlderVersionPeers: version 1 had the acceptor prove first. A
// version 1 dialer is sent this rank's HELLO (whose version tells it why)
// and "rejected", never a proof; a version 1 acceptor is refused by the
// dialer before it proves anything, for ErrVersion.
func TestOlderVersionPeers(t *testing.T) {
	const oldVersion = 1
	key := []byte("k")
	mesh := testMeshID("boltmesh")
	t.Run("dialer", func(t *testing.T) {
		lns, addrs := listeners(t, 2)
		lns[1].Close()
		var rejects rejectLog
		o := engine.Options{MeshKey: key, Logger: discardLogger, OnReject: rejects.add}
		wait0 := startRank(t, 0, 2, lns[0], addrs, o)
		old := encodeFrame(frame.KindHello, 0, helloPayload(t, frame.Hello{Version: oldVersion, World: 2, Rank: 1, MeshID: mesh}))
		r, err := rawClient(addrs[0], old)
		if err != nil {
			t.Fatal(err)
		}
		requireRefusal(t, "version 1 dialer", r.reply, true)
		if m, err := frame.DecodeHello(r.reply[frame.HeaderSize:]); err != nil || m.Version != frame.Version {
			t.Errorf("the HELLO sent to a version 1 dialer says version %d (%v), want %d", m.Version, err, frame.Version)
		}
		he := rejects.take(t, "version 1 dialer", func(he *engine.HandshakeError) bool { return he.Addr == r.local })
		if !he.Local || he.Rank != 1 || !errors.Is(he, engine.ErrVersion) {
			t.Errorf("reported %+v, want Local, Rank 1, ErrVersion", he)
		}
		joinRank1(t, addrs, engine.Options{MeshKey: key, Logger: discardLogger}, wait0)
	})
	t.Run("acceptor", func(t *testing.T) {
		lns, addrs := listeners(t, 2)
		lns[1].Close()
		sent := make(chan []byte, 1) // what the dialer sent after the HELLO exchange
		go func() {
			defer close(sent)
			c, err := lns[0].Accept()
			if err != nil {
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(5 * time.Second))
			_, helloD, err := readFrame(c)
			if err != nil {
				return
			}
			helloA := helloPayload(t, frame.Hello{Version: oldVersion, World: 2, Rank: 0, Streams: 1, MeshID: mesh})
			reply := encodeFrame(frame.KindHello, frame.FlagReply, helloA)
			reply = append(reply, encodeFrame(frame.KindAuth, 0, handshakeMAC(key, "boltmesh acceptor", helloD, helloA))...)
			c.Write(reply)
			rest, _ := io.ReadAll(c)
			sent <- rest
		}()
		_, err := engine.FromListener(1, 2, nil, addrs, engine.Options{MeshKey: key, DialTimeout: 5 * time.Second, Logger: discardLogger})
		var he *engine.HandshakeError
		if !errors.As(err, &he) || !he.Local || he.Rank != 0 || !errors.Is(err, engine.ErrVersion) {
			t.Fatalf("dialing a version 1 acceptor: got %v, want a local *HandshakeError for ErrVersion", err)
		}
		requireRefusal(t, "dialer to a version 1 acceptor", <-sent, false)
	})
}

// TestLockedOutRankLearnsSlotTaken: without a key, a stranger joins as
// rank 1 and the mesh forms with it; the real rank 1, dialing after, is
// told that its place is taken (ErrSlotTaken), not "connection refused".
func TestLockedOutRankLearnsSlotTaken(t *testing.T) {
	t.Setenv("BOLTMESH_KEY", "")
	lns, addrs := listeners(t, 2)
	lns[1].Close()
	o := engine.Options{DialTimeout: 10 * time.Second, Logger: discardLogger}
	wait0 := startRank(t, 0, 2, lns[0], addrs, o)
	rawJoin(t, addrs[0], 1, 2, nil)
	if _, err := wait0(); err != nil {
		t.Fatalf("rank 0 with the stranger as rank 1: %v", err)
	}
	tr, err := engine.FromListener(1, 2, nil, addrs, o)
	if tr != nil {
		tr.Close()
		t.Fatal("the real rank 1 joined a mesh whose rank 1 is taken")
	}
	var he *engine.HandshakeError
	if !errors.Is(err, engine.ErrSlotTaken) || !errors.As(err, &he) || he.Local || he.Rank != 0 {
		t.Fatalf("locked-out rank 1: got %v, want a *HandshakeError from rank 0 for ErrSlotTaken", err)
	}
}

// TestKeylessExposed: the decision behind the no-key warning.
func TestKeylessExposed(t *testing.T) {
	for _, c := range []struct {
		key  string
		addr string
		want bool
	}{
		{"", "127.0.0.1:7000", false},
		{"", "127.3.4.5:7000", false},
		{"", "[::1]:7000", false},
		{"", "localhost:7000", false},
		{"", "0.0.0.0:7000", true},
		{"", "[::]:7000", true},
		{"", ":7000", true},
		{"", "169.254.10.2:7000", true},
		{"", "10.0.0.1:7000", true},
		{"", "node1:7000", true},
		{"k", "0.0.0.0:7000", false},
		{"k", "10.0.0.1:7000", false},
	} {
		if got := engine.KeylessExposed([]byte(c.key), c.addr); got != c.want {
			t.Errorf("key %q, address %s: exposed %v, want %v", c.key, c.addr, got, c.want)
		}
	}
}

// TestNoKeyWarning: ranks that listen on every interface and dial such
// addresses without a key each warn exactly once; with a key, none does.
func TestNoKeyWarning(t *testing.T) {
	t.Setenv("BOLTMESH_KEY", "")
	for _, key := range []string{"", "k"} {
		const world = 3
		lns := make([]net.Listener, world)
		addrs := make([]string, world)
		for r := range lns {
			ln, err := net.Listen("tcp", "0.0.0.0:0")
			if err != nil {
				t.Skipf("cannot listen on 0.0.0.0: %v", err)
			}
			lns[r], addrs[r] = ln, ln.Addr().String() // 0.0.0.0:port, which dials this host
		}
		logs := make([]recordLog, world)
		waits := make([]func() (*engine.NetTransport, error), world)
		for r := range world {
			o := engine.Options{MeshKey: []byte(key), Streams: 2, Logger: logs[r].logger()}
			waits[r] = startRank(t, r, world, lns[r], addrs, o)
		}
		for r, wait := range waits {
			if _, err := wait(); err != nil {
				t.Fatalf("key %q, rank %d: %v", key, r, err)
			}
			want := 0
			if key == "" {
				want = 1
			}
			if n := logs[r].count(isNoKeyWarning); n != want {
				t.Errorf("key %q, rank %d: %d no-key warnings, want %d", key, r, n, want)
			}
		}
	}
}

// TestRefusalLoggingIsRateLimited: a flood of strangers is reported to
// OnReject one by one but logged in a few lines.
func TestRefusalLoggingIsRateLimited(t *testing.T) {
	const strangers = 50
	lns, addrs := listeners(t, 2)
	lns[1].Close()
	var log recordLog
	var rejected atomic.Int64
	o := engine.Options{MeshKey: []byte("k"), Logger: log.logger(), OnReject: func(error) { rejected.Add(1) }}
	start := time.Now()
	wait0 := startRank(t, 0, 2, lns[0], addrs, o)
	garbage := make([]byte, frame.HeaderSize)
	for i := range strangers {
		if _, err := rawClient(addrs[0], garbage); err != nil {
			t.Fatalf("stranger %d: %v", i, err)
		}
	}
	deadline := time.Now().Add(5 * time.Second)
	for rejected.Load() < strangers && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if n := rejected.Load(); n != strangers {
		t.Fatalf("OnReject called %d times for %d strangers", n, strangers)
	}
	limit := engine.RefusalBurst + 1 + int(time.Since(start)/engine.RefusalEvery)
	if n := log.count(isRefusal); n < 1 || n > limit {
		t.Errorf("%d strangers refused: %d log lines, want 1 to %d", strangers, n, limit)
	}
	joinRank1(t, addrs, engine.Options{MeshKey: []byte("k"), Logger: discardLogger}, wait0)
}
