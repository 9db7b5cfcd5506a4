package ioloop_test

import (
	"bytes"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/internal/fuzzkit"
	"github.com/boltmesh/boltmesh/internal/looptest"
	"github.com/boltmesh/boltmesh/ioloop"
	"golang.org/x/sys/unix"
)

// The read state machine fed by arbitrary byte streams. FuzzReadStream
// writes a stream into a socket in pieces cut where the fuzzer says,
// waiting for the loop to have read each piece before the next (so that
// every cut is a read boundary), and then closes its end. Whatever the
// stream and the cuts, and whatever the handler asks for each frame (a
// pooled buffer, a named one, a named one of the wrong length, a discard,
// a pause, a close), the handler must see exactly the frames frame.Decode
// finds in the stream, in order, with their payloads, up to the first
// invalid header or the incomplete last frame; then the connection fails
// once with a *ConnError (the decode error, ErrEOF, or ErrClosed after a
// close) and nothing more is delivered; and no goroutine is left behind.

// fuzzLoopOpts are the loops a stream is read by: tiny staging buffers
// (headers and payloads straddle every refill), direct reads from the
// first byte or never, and a small MaxFrame that headers cross.
var fuzzLoopOpts = []ioloop.Options{
	{StagingSize: 2 * frame.HeaderSize, DirectRead: 1, MaxFrame: 1 << 16},
	{StagingSize: 100, DirectRead: 40, MaxFrame: 1000},
	{StagingSize: 4096, DirectRead: 1 << 20, MaxFrame: 1 << 20},
	{MaxFrame: 1 << 20},
}

// fuzzLoops holds one running loop per entry of fuzzLoopOpts, made on
// first use and closed when the fuzz target ends.
type fuzzLoops struct {
	once  sync.Once
	loops []*ioloop.Loop
	err   error
}

func (fl *fuzzLoops) get(i int) (*ioloop.Loop, error) {
	fl.once.Do(func() {
		for _, o := range fuzzLoopOpts {
			l, err := ioloop.New(o)
			if err != nil {
				fl.err = err
				return
			}
			fl.loops = append(fl.loops, l)
		}
	})
	if fl.err != nil {
		return nil, fl.err
	}
	return fl.loops[i], nil
}

func (fl *fuzzLoops) close() {
	for _, l := range fl.loops {
		l.Close()
	}
}

// Handler choices per frame, from the policy bytes.
const (
	choosePooled = iota
	chooseNamed
	chooseWrongLength // a named buffer of the wrong length: the loop must pool instead
	chooseDiscard
)

// streamHandler does what the policy says for each frame and records
// what it sees.
type streamHandler struct {
	policy []byte

	mu       sync.Mutex
	i        int    // frames chosen so far
	named    []byte // the buffer Payload returned for the frame being read
	discard  bool
	got      []looptest.Frame
	problems []string
	closeErr error
	nClosed  int
	closeAt  int // close the connection after delivering this many frames (0: never)
	closed   chan struct{}
	resumes  sync.WaitGroup
}

func (h *streamHandler) choice(i int) (choose int, pause bool) {
	if len(h.policy) == 0 {
		return choosePooled, false
	}
	b := h.policy[i%len(h.policy)]
	return int(b & 3), b&4 != 0
}

func (h *streamHandler) Payload(c *ioloop.Conn, hd *frame.Header) []byte {
	h.mu.Lock()
	defer h.mu.Unlock()
	ch, _ := h.choice(h.i)
	h.named, h.discard = nil, false
	switch ch {
	case chooseNamed:
		h.named = make([]byte, hd.Length)
	case chooseWrongLength:
		h.named = make([]byte, hd.Length+1)
	case chooseDiscard:
		h.discard = true
		c.Discard()
	}
	return h.named
}

func (h *streamHandler) Deliver(c *ioloop.Conn, hd *frame.Header, payload []byte, bb *ioloop.Buffer) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, pause := h.choice(h.i)
	h.i++
	if h.nClosed > 0 {
		h.problems = append(h.problems, fmt.Sprintf("frame %+v delivered after Closed", *hd))
	}
	f := looptest.Frame{Hdr: *hd}
	switch {
	case h.discard:
		if payload != nil || bb != nil {
			h.problems = append(h.problems, fmt.Sprintf("discarded frame %+v delivered with a payload", *hd))
		}
	case uint64(len(payload)) != hd.Length:
		h.problems = append(h.problems, fmt.Sprintf("frame %+v: payload of %d bytes", *hd, len(payload)))
	case h.named != nil && len(h.named) == len(payload):
		if bb != nil || (len(payload) > 0 && &payload[0] != &h.named[0]) {
			h.problems = append(h.problems, fmt.Sprintf("frame %+v: not delivered into its named buffer", *hd))
		}
		f.Payload = payload
	default:
		if bb == nil || len(bb.B) != len(payload) || (len(payload) > 0 && &payload[0] != &bb.B[0]) {
			h.problems = append(h.problems, fmt.Sprintf("frame %+v: payload is not the pooled buffer's", *hd))
		}
		f.Payload = bytes.Clone(payload)
	}
	if bb != nil {
		ioloop.PutBuffer(bb)
	}
	h.got = append(h.got, f)
	switch {
	case h.closeAt > 0 && len(h.got) == h.closeAt:
		c.Close()
	case pause:
		c.Pause()
		h.resumes.Go(c.Resume)
	}
}

func (h *streamHandler) Closed(_ *ioloop.Conn, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.nClosed++
	if h.nClosed > 1 {
		h.problems = append(h.problems, fmt.Sprintf("Closed called %d times (now with %v)", h.nClosed, err))
		return
	}
	h.closeErr = err
	close(h.closed)
}

// refFrames is what frame.Decode finds in stream under maxFrame: the whole
// frames before the first invalid header (err, the decode error) or the
// incomplete end.
func refFrames(stream []byte, maxFrame uint64) (frames []looptest.Frame, err error) {
	for len(stream) >= frame.HeaderSize {
		h, derr := frame.Decode(stream, maxFrame)
		if derr != nil {
			return frames, derr
		}
		rest := stream[frame.HeaderSize:]
		if uint64(len(rest)) < h.Length {
			break
		}
		frames = append(frames, looptest.Frame{Hdr: h, Payload: rest[:h.Length]})
		stream = rest[h.Length:]
	}
	return frames, nil
}

// cuts turns the fuzzer's split bytes into piece lengths: each byte is a
// piece of 1 to 64 bytes, or, with its top bits set, a larger one.
func cuts(splits []byte) []int {
	var out []int
	for _, b := range splits {
		n := int(b&63) + 1
		if b&0xc0 == 0xc0 {
			n *= 97
		}
		out = append(out, n)
	}
	return out
}

// writeStream writes stream to fd in the pieces cuts gives (the rest in
// one), reading c itself after each piece (with Progress, or Poll when
// lazy) until everything written is read, and then shuts the write side
// down. Reading in this goroutine makes every cut a read boundary without
// waiting for the loop goroutine to wake up.
func writeStream(fd int, c *ioloop.Conn, h *streamHandler, stream []byte, pieces []int, lazy bool) error {
	written := 0
	deadline := time.Now().Add(looptest.WaitTimeout)
	for len(stream) > 0 {
		n := len(stream)
		if len(pieces) > 0 {
			n, pieces = min(n, pieces[0]), pieces[1:]
		}
		for p := stream[:n]; len(p) > 0; {
			m, err := unix.Write(fd, p)
			if err == unix.EINTR {
				continue
			}
			if err != nil {
				return nil // the loop failed the connection and shut it down
			}
			p = p[m:]
		}
		written += n
		stream = stream[n:]
		for c.BytesRead() < uint64(written) {
			if lazy {
				c.Poll()
			} else {
				c.Progress()
			}
			select {
			case <-h.closed:
				return nil
			default:
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("the loop read %d of the %d bytes written in %v", c.BytesRead(), written, looptest.WaitTimeout)
			}
			runtime.Gosched()
		}
	}
	err := unix.Shutdown(fd, unix.SHUT_WR)
	c.Progress()
	return err
}

func FuzzReadStream(f *testing.F) {
	var loops fuzzLoops
	f.Cleanup(loops.close)

	enc := func(h frame.Header, payload []byte) []byte { return looptest.EncodeFrame(h, payload) }
	valid := bytes.Join([][]byte{
		enc(frame.Header{Kind: frame.KindSend, Src: 1, Tag: 7}, []byte("hello")),
		enc(frame.Header{Kind: frame.KindHeartbeat}, nil),
		enc(frame.Header{Kind: frame.KindPut, Flags: frame.FlagMore, Offset: 64}, bytes.Repeat([]byte{0xab}, 300)),
		enc(frame.Header{Kind: frame.KindCredit, Offset: 1 << 20}, nil),
		enc(frame.Header{Kind: frame.KindData, Tag: 3, Aux: 1 << 16, Offset: 9}, bytes.Repeat([]byte{1, 2, 3}, 700)),
	}, nil)
	bad := enc(frame.Header{Kind: 14}, nil)
	f.Add(uint8(0), []byte{}, []byte{}, valid)
	f.Add(uint8(1), []byte{0, 1, 2, 3}, []byte{31, 1, 0, 5, 63}, valid)
	f.Add(uint8(2), []byte{4, 5, 6, 7}, []byte{0xc3, 0xff}, append(valid, bad...))
	f.Add(uint8(3), []byte{1}, []byte{15}, append(bytes.Clone(valid), valid[:50]...))
	f.Add(uint8(0), []byte{3, 3}, []byte{0, 0, 0}, enc(frame.Header{Kind: frame.KindSend, Length: 1 << 17}, nil)[:frame.HeaderSize])
	f.Add(uint8(0x10), []byte{}, []byte{}, enc(frame.Header{Kind: frame.KindSend}, make([]byte, 1001)))
	f.Add(uint8(0x11), []byte{2}, []byte{}, valid)

	f.Fuzz(func(t *testing.T, cfg uint8, policy, splits, stream []byte) {
		li := int(cfg&3) % len(fuzzLoopOpts)
		l, err := loops.get(li)
		if err != nil {
			t.Fatal(err)
		}
		maxFrame := fuzzLoopOpts[li].MaxFrame
		want, decodeErr := refFrames(stream, maxFrame)
		h := &streamHandler{policy: policy, closed: make(chan struct{})}
		if k := int(cfg >> 4); k > 0 && k <= len(want) {
			h.closeAt = k // the handler closes the connection after frame k
			want = want[:k]
		}
		base := runtime.NumGoroutine()
		defer fuzzkit.Guard(3*looptest.WaitTimeout, func() string {
			return fmt.Sprintf("cfg %#x policy % x splits % x stream % x", cfg, policy, splits, stream)
		})()

		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(fds[1])
		c, err := l.Register(fds[0], 1, h)
		if err != nil {
			t.Fatal(err)
		}
		if err := writeStream(fds[1], c, h, stream, cuts(splits), cfg&4 != 0); err != nil {
			c.Close()
			t.Fatal(err)
		}
		select {
		case <-h.closed:
		case <-time.After(looptest.WaitTimeout):
			c.Close()
			t.Fatalf("the connection neither failed nor closed within %v after the stream ended", looptest.WaitTimeout)
		}
		h.resumes.Wait()

		h.mu.Lock()
		defer h.mu.Unlock()
		for _, p := range h.problems {
			t.Error(p)
		}
		checkStreamFrames(t, h.got, want, policy)
		checkStreamEnd(t, h, decodeErr)
		if err := fuzzkit.WaitGoroutines(base, 3*time.Second); err != nil {
			t.Fatal(err)
		}
	})
}

// checkStreamFrames compares what the handler saw with the reference.
func checkStreamFrames(t *testing.T, got, want []looptest.Frame, policy []byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("delivered %d frames, want %d", len(got), len(want))
	}
	h := &streamHandler{policy: policy}
	for i := range want {
		if got[i].Hdr != want[i].Hdr {
			t.Fatalf("frame %d: header %+v, want %+v", i, got[i].Hdr, want[i].Hdr)
		}
		if ch, _ := h.choice(i); ch != chooseDiscard && !bytes.Equal(got[i].Payload, want[i].Payload) {
			t.Fatalf("frame %d (%v, %d bytes): payload differs at byte %d", i, want[i].Hdr.Kind, len(want[i].Payload), looptest.FirstDiff(got[i].Payload, want[i].Payload))
		}
	}
}

// checkStreamEnd checks how the connection ended: closed by the handler,
// failed on the first invalid header, or at the peer's EOF.
func checkStreamEnd(t *testing.T, h *streamHandler, decodeErr error) {
	t.Helper()
	var ce *ioloop.ConnError
	if !errors.As(h.closeErr, &ce) {
		t.Fatalf("Closed with %v (%T), want a *ConnError", h.closeErr, h.closeErr)
	}
	switch {
	case h.closeAt > 0:
		if !errors.Is(h.closeErr, ioloop.ErrClosed) {
			t.Fatalf("closed by the handler, but Closed got %v", h.closeErr)
		}
	case decodeErr != nil:
		var got, want *frame.DecodeError
		errors.As(decodeErr, &want)
		if ce.Op != "decode" || !errors.Is(h.closeErr, ioloop.ErrProtocol) || !errors.As(h.closeErr, &got) || *got != *want {
			t.Fatalf("Closed with %v (op %q), want a decode failure wrapping ErrProtocol and %v", h.closeErr, ce.Op, decodeErr)
		}
	default:
		if ce.Op != "read" || !errors.Is(h.closeErr, ioloop.ErrEOF) {
			t.Fatalf("Closed with %v (op %q), want the peer's EOF", h.closeErr, ce.Op)
		}
	}
}
