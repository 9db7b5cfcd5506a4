package engine_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/ioloop"
)

// Refusals on the header: a peer that announces a payload it may not send
// (beyond its credit, on a stream or for a receive that does not take it,
// outside the heap, for a get nobody made) costs the receiver no buffer of
// the announced size, only its window's worth of what it sent within its
// credit; one that broke the protocol is dropped, every stream of it at
// once; and the honest ranks go on exchanging meanwhile. The peer is the
// fuzz targets' raw rank (rawpeer_fuzz_test.go), announcing up to MaxFrame.

// Bounds of the over-credit tests: the receivers' window and MaxFrame,
// and what their heap may grow by beyond the window (the target).
const (
	ocWindow   = 8 << 20
	ocMaxFrame = 256 << 20
	ocSlack    = 16 << 20
)

func overCreditOpts() engine.Options {
	o := peerOpts()
	o.MaxQueuedBytes, o.MaxFrame = ocWindow, ocMaxFrame
	return engine.WithRelayPart(o, 0) // parts of engine.RelayPart: 256 MiB in 2 KiB parts take long
}

// ocCase is one frame the raw rank announces to rank 0.
type ocCase struct {
	name    string
	star    bool
	exhaust bool         // the raw rank uses up its credit at rank 0 first
	h       frame.Header // the frame, Length included
	payload []byte       // sent whole after the header (the RTS's)
	body    bool         // h.Length zero bytes follow the header (a frame the rank must read through)
	stream  int          // the raw rank's stream (rawPeer.conn)
	drop    error        // the cause rank 0 drops the raw rank with; nil: it keeps it
}

func overCreditCases() []ocCase {
	var rts [frame.RTSSize]byte
	frame.EncodeRTS(&rts, ocMaxFrame)
	return []ocCase{
		{name: "send", h: frame.Header{Kind: frame.KindSend, Tag: 7, Length: ocMaxFrame}, drop: engine.ErrFlowControl},
		{name: "send-after-window", exhaust: true, h: frame.Header{Kind: frame.KindSend, Tag: 7, Length: 4 << 10}, drop: engine.ErrFlowControl},
		{name: "rts", exhaust: true, h: frame.Header{Kind: frame.KindRTS, Tag: 7, Offset: 1 << 40, Length: frame.RTSSize}, payload: rts[:], drop: engine.ErrFlowControl},
		{name: "rpc-req", exhaust: true, h: frame.Header{Kind: frame.KindRPCReq, Tag: 1, Offset: 1, Length: ocMaxFrame}, stream: ctlStreamIndex, drop: engine.ErrFlowControl},
		{name: "rpc-req-half-window", exhaust: true, h: frame.Header{Kind: frame.KindRPCReq, Tag: 1, Offset: 1, Length: ocWindow/2 - 512}, stream: ctlStreamIndex, drop: engine.ErrFlowControl},
		{name: "data", h: frame.Header{Kind: frame.KindData, Tag: 7, Offset: 99, Aux: 1 << 16, Length: ocMaxFrame}, drop: engine.ErrProtocol},
		{name: "send-on-control", h: frame.Header{Kind: frame.KindSend, Tag: 7, Length: ocMaxFrame}, stream: ctlStreamIndex, drop: engine.ErrProtocol},
		{name: "put", h: frame.Header{Kind: frame.KindPut, Offset: 0, Length: ocMaxFrame}, body: true, stream: ctlStreamIndex},
		{name: "get-reply", h: frame.Header{Kind: frame.KindGetReply, Offset: 12345, Length: ocMaxFrame}, body: true, stream: ctlStreamIndex},
		{name: "star-send", star: true, h: frame.Header{Kind: frame.KindSend, Tag: 7, Length: ocMaxFrame}, drop: engine.ErrFlowControl},
		{name: "star-rpc-req", star: true, exhaust: true, h: frame.Header{Kind: frame.KindRPCReq, Tag: 1, Offset: 1, Length: ocMaxFrame}, drop: engine.ErrFlowControl},
		// Only a star's coordinator sends PART, and only to a worker.
		{name: "part", h: frame.Header{Kind: frame.KindPart, Length: ocMaxFrame}, stream: ctlStreamIndex, drop: engine.ErrProtocol},
		{name: "star-part", star: true, h: frame.Header{Kind: frame.KindPart, Length: ocMaxFrame}, drop: engine.ErrProtocol},
	}
}

func TestOverCreditBounded(t *testing.T) {
	for _, tc := range overCreditCases() {
		t.Run(tc.name, func(t *testing.T) { runOverCredit(t, tc) })
	}
}

func runOverCredit(t *testing.T, tc ocCase) {
	w, ex := honestWorld(t, tc.star, overCreditOpts())

	runtime.GC()
	peak := sampleHeap()
	if tc.exhaust {
		if err := exhaustCredit(w.raw, 0); err != nil {
			t.Fatal(err)
		}
	}
	if err := announce(w.raw, 0, tc.stream, tc.h, tc.payload, tc.body); err != nil && tc.drop == nil {
		t.Fatalf("announcing %v: %v", tc.h.Kind, err)
	}
	if tc.drop != nil {
		checkDropped(t, w, tc)
	} else {
		checkKept(t, w, tc)
	}
	mark := ex.count.Load()
	ex.waitFor(t, mark+200) // the honest pair goes on
	grew := peak.stop()
	t.Logf("%s: heap peak +%d KiB (window %d KiB, %d announced); the honest pair made %d exchanges", tc.name, grew>>10, ocWindow>>10, tc.h.Length, ex.count.Load())
	if grew > ocWindow+ocSlack {
		t.Errorf("rank 0's heap grew by %d MiB at its peak, want at most the window (%d MiB) + %d MiB", grew>>20, ocWindow>>20, ocSlack>>20)
	}
	if err := ex.stop(); err != nil {
		t.Fatal(err)
	}
}

// checkDropped checks that rank 0 dropped the raw rank for tc.drop: every
// connection between them ended, at once.
func checkDropped(t *testing.T, w *fuzzWorld, tc ocCase) {
	t.Helper()
	conns, ended := len(w.raw.streams[0]), 0
	for end := time.Now().Add(10 * time.Second); ended < conns && time.Now().Before(end); time.Sleep(time.Millisecond) {
		w.raw.mu.Lock()
		ended = w.raw.ended[0]
		w.raw.mu.Unlock()
	}
	if ended < conns {
		t.Fatalf("%d of the raw rank's %d connections to rank 0 ended after its %v; want all", ended, conns, tc.h.Kind)
	}
	err := lossOf(w.ts[0], rawRank, 5*time.Second)
	if !errors.Is(err, engine.ErrPeerLost) || !errors.Is(err, tc.drop) {
		t.Fatalf("rank 0's loss of the raw rank: %v; want ErrPeerLost for %v", err, tc.drop)
	}
}

// checkKept checks that rank 0 read the refused frame through and kept
// the raw rank: a PUT is answered with its refusal.
func checkKept(t *testing.T, w *fuzzWorld, tc ocCase) {
	t.Helper()
	if tc.h.Kind == frame.KindPut && !w.raw.putRefused(0) {
		t.Fatalf("no PUT_ACK refusing the PUT of %d bytes (raw rank: %v)", tc.h.Length, w.raw.deadErr())
	}
	// A GET with a fence's id orders what came before it on the control
	// stream: its answer proves the refused payload was read through.
	if err := w.raw.fenceGet(0); err != nil {
		t.Fatal(err)
	}
	if err := engine.PeerLost(w.ts[0], rawRank); err != nil {
		t.Fatalf("rank 0 dropped the raw rank for a frame it must only refuse: %v", err)
	}
}

// lossOf waits up to d for tr to lose rank, and returns the loss, or nil
// if rank is not lost by then.
func lossOf(tr *engine.NetTransport, rank int, d time.Duration) error {
	err := engine.PeerLost(tr, rank)
	for end := time.Now().Add(d); err == nil && time.Now().Before(end); time.Sleep(time.Millisecond) {
		err = engine.PeerLost(tr, rank)
	}
	return err
}

// putRefused waits up to 20 s for a PUT_ACK from rank from that refuses a
// put outside its heap (refusal code 1), and reports whether one came.
func (rp *rawPeer) putRefused(from int) bool {
	return rp.waitFor(20*time.Second, func() bool {
		for _, f := range rp.got {
			if f.h.Kind == frame.KindPutAck && f.h.Flags&frame.FlagError != 0 && f.h.Aux == 1 && rp.origin(from, f.h) == from {
				return true
			}
		}
		return false
	})
}

// fenceGet sends rank to a GET of one byte and waits for its answer.
func (rp *rawPeer) fenceGet(to int) error {
	var p [frame.GetReqSize]byte
	id := uint64(1<<61 | time.Now().UnixNano()&0xffffffff)
	(&frame.GetReq{ID: id, Length: 1}).Encode(&p)
	if err := rp.send(to, ctlStreamIndex, frame.Header{Kind: frame.KindGetReq}, p[:]); err != nil {
		return err
	}
	ok := rp.waitFor(20*time.Second, func() bool {
		for _, f := range rp.got {
			if f.h.Kind == frame.KindGetReply && f.h.Offset == id {
				return true
			}
		}
		return false
	})
	if !ok {
		return fmt.Errorf("rank %d did not answer a GET (raw rank: %v)", to, rp.deadErr())
	}
	return nil
}

// exhaustCredit uses up what is left of the raw rank's credit at rank to
// with eager SENDs on a tag nobody receives (each under the size a
// receiver defers), until not even an RTS fits.
func exhaustCredit(rp *rawPeer, to int) error {
	left := rp.credit(to)
	buf := make([]byte, 16<<10)
	for left >= frame.Cost(0) {
		n := uint64(len(buf))
		for n > 0 && frame.Cost(n) > left {
			n /= 2
		}
		if err := rp.send(to, 0, frame.Header{Kind: frame.KindSend, Tag: 9}, buf[:n]); err != nil {
			return err
		}
		left -= frame.Cost(n)
	}
	return nil
}

// announce writes h to rank to on stream s with its Length as given, then
// payload, or with body h.Length zero bytes, a MiB at a time.
func announce(rp *rawPeer, to, s int, h frame.Header, payload []byte, body bool) error {
	h.Src, h.Dst = uint32(rp.rank), rp.dst(to)
	st := rp.conn(to, s, h)
	if !body {
		return st.write(h, payload)
	}
	var hb [frame.HeaderSize]byte
	h.Encode(&hb)
	st.wmu.Lock()
	defer st.wmu.Unlock()
	st.nc.SetWriteDeadline(time.Now().Add(time.Minute))
	if _, err := st.nc.Write(hb[:]); err != nil {
		return err
	}
	chunk := make([]byte, 1<<20)
	for left := h.Length; left > 0; {
		n := min(left, uint64(len(chunk)))
		if _, err := st.nc.Write(chunk[:n]); err != nil {
			return err
		}
		left -= n
	}
	return nil
}

// honestPair is an honest ping-pong between ranks 0 and 1, every reply
// checked, counting round trips until stop.
type honestPair struct {
	count  atomic.Int64
	cancel context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	err    error
}

// rawWorld opens the fuzz targets' world of two real ranks and the raw
// one (a star if star) with opts, closed at the test's end.
func rawWorld(t *testing.T, star bool, opts engine.Options) *fuzzWorld {
	t.Helper()
	w, err := openRawWorld(star, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.close)
	return w
}

// honestWorld is rawWorld with its real ranks exchanging (startHonest),
// 20 exchanges in.
func honestWorld(t *testing.T, star bool, opts engine.Options) (*fuzzWorld, *honestPair) {
	t.Helper()
	w := rawWorld(t, star, opts)
	ex := startHonest(t, w.ts)
	ex.waitFor(t, 20)
	return w, ex
}

func startHonest(t *testing.T, ts []*engine.NetTransport) *honestPair {
	ctx, cancel := context.WithCancel(context.Background())
	ex := &honestPair{cancel: cancel}
	ex.wg.Go(func() { ex.note(echo(ctx, ts[1], 0)) })
	ex.wg.Go(func() { ex.note(ex.ping(ctx, ts[0], 1)) })
	t.Cleanup(func() { ex.stop() })
	return ex
}

func (ex *honestPair) note(err error) {
	if err != nil && !errors.Is(err, context.Canceled) {
		ex.mu.Lock()
		if ex.err == nil {
			ex.err = err
		}
		ex.mu.Unlock()
		ex.cancel()
	}
}

func (ex *honestPair) ping(ctx context.Context, tr *engine.NetTransport, to int) error {
	msg, got := make([]byte, 1<<10), make([]byte, 1<<10)
	for i := 0; ctx.Err() == nil; i++ {
		floodPayload(msg, i)
		if err := tr.Send(to, 21, msg); err != nil {
			return err
		}
		n, err := tr.RecvIntoContext(ctx, to, 22, got)
		if err != nil {
			return err
		}
		if string(got[:n]) != string(msg) {
			return fmt.Errorf("round trip %d came back altered", i)
		}
		ex.count.Add(1)
	}
	return nil
}

func echo(ctx context.Context, tr *engine.NetTransport, to int) error {
	buf := make([]byte, 1<<10)
	for ctx.Err() == nil {
		n, err := tr.RecvIntoContext(ctx, to, 21, buf)
		if err != nil {
			return err
		}
		if err := tr.Send(to, 22, buf[:n]); err != nil {
			return err
		}
	}
	return nil
}

// waitFor waits until the pair has made n round trips in all.
func (ex *honestPair) waitFor(t *testing.T, n int64) {
	t.Helper()
	for end := time.Now().Add(30 * time.Second); ex.count.Load() < n; time.Sleep(time.Millisecond) {
		ex.mu.Lock()
		err := ex.err
		ex.mu.Unlock()
		if err != nil {
			t.Fatalf("the honest honestPair failed: %v", err)
		}
		if time.Now().After(end) {
			t.Fatalf("the honest pair made %d round trips, not %d, within 30 s", ex.count.Load(), n)
		}
	}
}

func (ex *honestPair) stop() error {
	ex.cancel()
	ex.wg.Wait()
	ex.mu.Lock()
	defer ex.mu.Unlock()
	return ex.err
}

// heapPeak samples the heap in use, every millisecond, from its start.
type heapPeak struct {
	before int64
	peak   atomic.Int64
	done   chan struct{}
	wg     sync.WaitGroup
}

func sampleHeap() *heapPeak {
	h := &heapPeak{before: heapInuse(), done: make(chan struct{})}
	h.peak.Store(h.before)
	h.wg.Go(func() {
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-h.done:
				return
			case <-tick.C:
			}
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			if n := int64(ms.HeapInuse); n > h.peak.Load() {
				h.peak.Store(n)
			}
		}
	})
	return h
}

// stop ends the sampling and returns the peak's growth.
func (h *heapPeak) stop() int64 {
	close(h.done)
	h.wg.Wait()
	return h.peak.Load() - h.before
}

// TestUndecodableFrameLogged: a peer whose bytes do not decode as a frame
// (a kind no version defines) is dropped, every stream of it, and the
// rank says why, once: its loss, with the undecodable frame as the cause.
func TestUndecodableFrameLogged(t *testing.T) {
	rec := &recordLog{}
	opts := overCreditOpts()
	opts.Logger = rec.logger()
	w := rawWorld(t, false, opts)
	var hb [frame.HeaderSize]byte
	(&frame.Header{Kind: 200, Src: rawRank}).Encode(&hb)
	ctl := w.raw.streams[0][len(w.raw.streams[0])-1]
	if err := ctl.writeRaw(hb[:]); err != nil {
		t.Fatal(err)
	}
	checkDropped(t, w, ocCase{h: frame.Header{Kind: 200}, drop: ioloop.ErrProtocol})
	undecodable := func(r slog.Record) bool {
		var peer int64 = -1
		var cause error
		r.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "peer":
				peer = a.Value.Int64()
			case "cause":
				cause, _ = a.Value.Any().(error)
			}
			return true
		})
		var de *frame.DecodeError
		return r.Level == slog.LevelWarn && peer == rawRank && errors.Is(cause, ioloop.ErrProtocol) && errors.As(cause, &de)
	}
	waitUntil(t, func() bool { return rec.count(undecodable) > 0 }, "a warning naming the raw rank and the frame it sent")
	time.Sleep(50 * time.Millisecond) // its other streams' ends come meanwhile
	if n := rec.count(undecodable); n != 1 {
		t.Fatalf("%d warnings of the undecodable frame, want 1", n)
	}
}
