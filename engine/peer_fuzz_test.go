package engine_test

import (
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/fuzzkit"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// FuzzPeer and FuzzStar: a real rank's handling of every frame kind from
// an authenticated peer that sends whatever the fuzzer says. The peer is
// a raw rank (rawpeer_fuzz_test.go) that completed the handshake; the
// fuzz input is a script for a small interpreter (peerRun) that sends
// mostly well-formed frames built from what it knows of the rank's state
// (its credit, the rendezvous in progress, the receives and gets the rank
// has posted), some subtly wrong ones (beyond the credit, DATA that no
// receive took or of the wrong length, a CTS for nothing, frames on a
// stripe stream that carries only DATA) and some garbage, and that also
// makes the real rank act (post receives, send, get). Each iteration must
// end, within bounds, with the rank either still working with the raw
// rank (and then nothing it holds for it beyond what it receives: its
// queue is within MaxQueuedBytes, and once drained it holds no credit)
// or having dropped it with a cause that is a protocol error, and then
// only if the script broke the protocol; the receives it posted must get
// the raw rank's messages in order; and its other peer must still work.
//
// FuzzPeer's world is a mesh of real ranks 0 and 1 (2 streams per pair)
// and raw rank 2; the script talks to rank 0. FuzzStar's is a star:
// coordinator 0, real worker 1 and raw worker 2, and the script talks to
// the coordinator and, through it (Dst), to worker 1, whose traffic the
// coordinator must forward, or drop as the spec says, without crashing.

// peerOpts are the real ranks' options: a small window and eager limit
// so that credit, rendezvous and striping are all within a script's
// reach, and a star's coordinator that relays what is longer than 2 KiB
// in parts.
func peerOpts() engine.Options {
	return engine.WithRelayPart(engine.Options{
		MaxQueuedBytes: 64 << 10, EagerMax: 4 << 10, Streams: meshStreams(), StripeMin: 8 << 10,
		MaxFrame: 256 << 10, HeapSize: 1 << 20, MeshKey: rawFuzzKey,
		KeepAlive: 10 * time.Minute, Spin: -1, Logger: discardLogger,
	}, 2<<10)
}

// meshStreams is the number of streams per pair of FuzzPeer's mesh: 2,
// so that stripes are fuzzed too.
func meshStreams() int { return 2 }

// Ranks of the fuzz worlds.
const (
	rawRank   = 2
	peerWorld = 3
)

// rpcReleaser is a real rank's RPC handler: it releases every RPC frame
// at once, so that the raw rank's requests hold no credit.
type rpcReleaser struct{}

func (rpcReleaser) HandleFrame(_ int, _ plumb.ServiceFrame, p plumb.ServicePayload) { p.Release() }
func (rpcReleaser) ServicePeerLost(int, error)                                      {}

// fuzzWorld is a world of real ranks and the raw rank.
type fuzzWorld struct {
	star  bool
	ts    []*engine.NetTransport // the real ranks, 0 and 1
	raw   *rawPeer
	ids   uint64    // the raw rank's request and send ids, unique across iterations
	used  [2]uint64 // the credit the raw rank used at each real rank
	tombs [2]int    // the raw rank's withdrawals on the control stream of sends it never announced, since its last RTS to each real rank: each holds Cost(0) of credit there until an RTS with a higher id comes (match.Tombs)
}

// openFuzzWorld builds a mesh (or a star) of real ranks 0 and 1 and the
// raw rank 2.
func openFuzzWorld(star bool) (*fuzzWorld, error) { return openRawWorld(star, peerOpts()) }

// openRawWorld is openFuzzWorld with the real ranks' options opts (and
// opts.Streams streams per pair in a mesh).
func openRawWorld(star bool, opts engine.Options) (*fuzzWorld, error) {
	lns, addrs := make([]net.Listener, 2), make([]string, peerWorld)
	for i := range lns {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns[i], addrs[i] = ln, ln.Addr().String()
	}
	addrs[rawRank] = "127.0.0.1:1" // the raw rank dials; nobody dials it
	w := &fuzzWorld{star: star, ts: make([]*engine.NetTransport, 2), raw: newRawPeer(rawRank, peerWorld, star)}
	errs := make([]error, 3)
	var wg sync.WaitGroup
	for r := range 2 {
		wg.Go(func() {
			switch {
			case !star:
				w.ts[r], errs[r] = engine.FromListener(r, peerWorld, lns[r], addrs, opts)
			case r == 0:
				lns[1].Close()
				w.ts[r], errs[r] = engine.CoordinatorListen(peerWorld, lns[0], opts)
			default:
				w.ts[r], errs[r] = engine.WorkerDial(r, peerWorld, addrs[0], opts)
			}
		})
	}
	wg.Go(func() { errs[2] = w.joinRaw(addrs, max(opts.Streams, 1)) })
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		w.close()
		return nil, err
	}
	for _, tr := range w.ts {
		if err := hooks(tr).SetServiceHandler(rpcReleaser{}); err != nil {
			w.close()
			return nil, err
		}
	}
	return w, nil
}

// joinRaw joins the raw rank: to both real ranks, streams data streams
// and the control stream each, in a mesh; to the coordinator, and through
// it to worker 1, in a star.
func (w *fuzzWorld) joinRaw(addrs []string, streams int) error {
	rp := w.raw
	if !w.star {
		for r := range 2 {
			var conns []net.Conn
			for s := range streams + 1 { // the last is the control stream
				c, err := rawDial(addrs[r], rawRank, r, peerWorld, s, streams, false)
				if err != nil {
					return err
				}
				conns = append(conns, c)
			}
			if err := rp.add(r, conns); err != nil {
				return err
			}
		}
		return nil
	}
	c, err := rawDial(addrs[0], rawRank, 0, peerWorld, 0, 1, true)
	if err != nil {
		return err
	}
	if err := rp.add(0, []net.Conn{c}); err != nil {
		return err
	}
	// The coordinator's HEARTBEAT says the world is complete: worker 1
	// can be reached through it now.
	if !rp.waitFor(10*time.Second, func() bool { return rp.complete }) {
		return fmt.Errorf("raw worker: the coordinator never said the world is complete: %v", rp.deadErr())
	}
	return rp.grant(1, rawWindow)
}

func (w *fuzzWorld) close() {
	w.raw.close()
	meshtest.Close(w.ts)
}

// fuzzWorlds keeps a world across iterations, building it again after
// one that lost a peer or failed.
type fuzzWorlds struct {
	star bool
	mu   sync.Mutex
	w    *fuzzWorld
}

func (k *fuzzWorlds) get() (*fuzzWorld, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.w == nil {
		w, err := openFuzzWorld(k.star)
		if err != nil {
			return nil, err
		}
		k.w = w
	}
	return k.w, nil
}

func (k *fuzzWorlds) reset() {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.w != nil {
		k.w.close()
		k.w = nil
	}
}

func FuzzPeer(f *testing.F) { fuzzPeer(f, false) }

func FuzzStar(f *testing.F) { fuzzPeer(f, true) }

func fuzzPeer(f *testing.F, star bool) {
	k := &fuzzWorlds{star: star}
	f.Cleanup(k.reset)
	for _, s := range peerSeeds(star) {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, script []byte) {
		w, err := k.get()
		if err != nil {
			t.Fatal(err)
		}
		defer fuzzkit.Guard(9*time.Second, func() string { return fmt.Sprintf("script % x", script) })()
		base := runtime.NumGoroutine()
		keep := false
		defer func() {
			if !keep || t.Failed() {
				k.reset()
			}
		}()
		keep = newPeerRun(w, script).play(t)
		if !keep {
			return
		}
		if err := fuzzkit.WaitGoroutines(base, 5*time.Second); err != nil {
			t.Fatal(err)
		}
	})
}
