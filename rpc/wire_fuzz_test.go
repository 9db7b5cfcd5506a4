package rpc_test

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/fuzzkit"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/rpc"
)

// FuzzRPCWire: an agent's parsing of RPC requests and replies (spec.md)
// from a peer that sends whatever the fuzzer says. Rank 0 of a 2-rank
// mesh (in this process, kept across iterations) runs an agent; rank 1
// has no agent but the raw transport: a script decoded from the fuzz
// input sends it RPC_REQ frames (any name length, deadline, payload),
// control frames (any tag, id, payload), and answers the calls rank 0's
// agent makes to it with RPC_REPLY frames (right or wrong id, any flags,
// status and payload). Every request must get at most one reply, with the
// status and payload the spec prescribes (and exactly one when it has
// time to); control frames get none; every call rank 0 makes must end
// with the outcome the spec gives its reply, or ErrClosed after the
// peer's goodbye, or its context's error.
func FuzzRPCWire(f *testing.F) {
	var m rpcMesh
	f.Cleanup(m.close)
	f.Add([]byte{})
	f.Add(script(opReq, 0, 0x40, 3, 'a', 'b', 'c'))                // echo
	f.Add(script(opReq, 1, 0x40, 2, 'n', 'o'))                     // fail
	f.Add(script(opReq, 2, 0x40, 1, 'x'))                          // panic
	f.Add(script(opReq, 3, 0x40, 0))                               // big reply
	f.Add(script(opReq, 4, 0x40, 0, opCtl, 4, 0, 0))               // wait, then cancel
	f.Add(script(opReq, 5, 0x40, 0))                               // unknown name
	f.Add(script(opReq, 6, 0x40, 0))                               // name length 0
	f.Add(script(opReq, 7, 0x40, 0))                               // name length past the payload
	f.Add(script(opReq, 0x80, 0x40, 0))                            // above MaxRequestSize
	f.Add(script(opCtl, 1, 0, 0, opCall, 0, opAnswer, 0, 0, 0, 0)) // goodbye, then a call
	f.Add(script(opCall, 0, opAnswer, 0, 0, 0, 2, 'o', 'k'))       // a right reply
	f.Add(script(opCall, 1, opAnswer, 0, 1, 1, 3, 'b', 'a', 'd'))  // error status 1
	f.Add(script(opCall, 1, opAnswer, 0, 1, 5, 3, 1, 2, 3))        // too large, bad payload
	f.Add(script(opCall, 1, opAnswer, 0, 1, 6, 16, 1, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0))
	f.Add(script(opCall, 0, opAnswer, 1, 0, 0, 0))                                 // a reply to another id
	f.Add(script(opCall, 0, opAnswer, 0, 2, 0, 0x80))                              // a reply above MaxReplySize
	f.Add(script(opCall, 0, opAnswer, 0, 1, 0, 1, 'z'))                            // error flag, status 0
	f.Add(script(opCall, 0, opCtl, 1, 0, 0, opAnswer, 0, 0, 0, 0))                 // goodbye before the reply
	f.Add(script(opCtl, 1, 0, 0, opCtl, 5, 0, 0, opCall, 0, opAnswer, 0, 0, 0, 0)) // goodbye, hello, then a call
	f.Add(script(opCtl, 2, 0, 5, 1, 2, 3, 4, 5, opCtl, 3, 1, 0, opReq, 0, 0x40, 0))

	f.Fuzz(func(t *testing.T, data []byte) {
		w, err := m.get()
		if err != nil {
			t.Fatal(err)
		}
		defer fuzzkit.Guard(9*time.Second, func() string { return fmt.Sprintf("script % x", data) })()
		run := &rpcRun{w: w, in: data}
		ctx, cancel := context.WithCancel(context.Background())
		for len(run.in) > 0 && !t.Failed() {
			run.step(t, ctx)
		}
		run.fence(t)
		cancel()
		for _, c := range run.calls {
			c.check(t)
		}
		w.checkReplies(t)
		w.rec.take(func(rpcFrame) bool { return true }) // requests of calls that failed first
		if t.Failed() {
			m.reset()
		}
	})
}

// Script operations (the first byte of each step, modulo opCount).
const (
	opReq    = iota // rank 1 sends rank 0 a request: kind, deadline, args
	opCtl           // rank 1 sends a control frame: which, id, aux, payload
	opCall          // rank 0's agent calls rank 1: kind of name
	opAnswer        // rank 1 answers one of rank 0's calls: which, flags, status, payload
	opFence         // wait until rank 0 has processed every frame sent so far
	opCount
)

// script joins bytes into a fuzz input (for the seeds).
func script(b ...byte) []byte { return b }

// Bounds of the agent of rank 0.
const (
	fuzzMaxRequest = 1024
	fuzzMaxReply   = 1024
	maxErrorText   = 64 << 10 // the agent's bound on an error reply (receive.go)
)

// rpcWorld is the mesh of FuzzRPCWire: rank 0 with its agent, rank 1 with
// a recorder of the RPC frames it receives.
type rpcWorld struct {
	ts    []*engine.NetTransport
	agent *rpc.Agent
	rec   *rpcRecorder
	id    uint64 // request ids of rank 1, unique across iterations
	calls int    // calls rank 0 made, for unique names
	gone  bool   // rank 1 said goodbye, and sent no request or hello since
	// want holds what each request of rank 1 must be answered with.
	want map[uint64]rpcExpect
}

type rpcMesh struct {
	mu sync.Mutex
	w  *rpcWorld
}

func (m *rpcMesh) get() (*rpcWorld, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.w != nil {
		return m.w, nil
	}
	// Over TCP: the fence (rpcRun.fence) orders rank 1's replies before
	// it with a PUT on the same control stream, which between neighbours
	// would be a plain copy into the mapped heap, ordered with nothing.
	ts, err := meshtest.Open(2, engine.Options{Logger: quiet, Spin: -1, SharedMemory: engine.SharedMemoryOff})
	if err != nil {
		return nil, err
	}
	a, err := rpc.NewAgent(ts[0], rpc.Options{Workers: 2, QueueLen: 8, MaxRequestSize: fuzzMaxRequest, MaxReplySize: fuzzMaxReply, Logger: quiet, Handlers: fuzzHandlers()})
	if err != nil {
		meshtest.Close(ts)
		return nil, err
	}
	rec := &rpcRecorder{seen: make(chan struct{}, 1)}
	if err := rpcOf(ts[1]).SetServiceHandler(rec); err != nil {
		meshtest.Close(ts)
		return nil, err
	}
	m.w = &rpcWorld{ts: ts, agent: a, rec: rec, want: make(map[uint64]rpcExpect)}
	return m.w, nil
}

func (m *rpcMesh) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.w == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	m.w.agent.Close(ctx)
	cancel()
	meshtest.Close(m.w.ts)
	m.w = nil
}

func (m *rpcMesh) close() { m.reset() }

// The names rank 0 serves, by the request kind that picks them.
var fuzzNames = []string{"echo", "fail", "panic", "big", "wait"}

func fuzzHandlers() map[string]rpc.Handler {
	return map[string]rpc.Handler{
		"echo":  func(_ context.Context, args []byte) ([]byte, error) { return args, nil },
		"fail":  func(_ context.Context, args []byte) ([]byte, error) { return nil, errors.New(string(args)) },
		"panic": func(_ context.Context, args []byte) ([]byte, error) { panic(string(args)) },
		"big":   func(context.Context, []byte) ([]byte, error) { return make([]byte, 2*fuzzMaxReply), nil },
		"wait": func(ctx context.Context, _ []byte) ([]byte, error) {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(50 * time.Millisecond):
				return nil, errWaited
			}
		},
	}
}

// errWaited is what the "wait" handler returns when neither its deadline
// nor a cancel ended it within 50 ms.
var errWaited = errors.New("waited")

// rpcFrame is one RPC frame rank 1 received.
type rpcFrame struct {
	f plumb.ServiceFrame
	p []byte
}

// rpcRecorder is rank 1's RPC handler: it keeps every frame.
type rpcRecorder struct {
	mu     sync.Mutex
	frames []rpcFrame
	lost   error
	seen   chan struct{} // a frame arrived
}

func (r *rpcRecorder) HandleFrame(_ int, f plumb.ServiceFrame, p plumb.ServicePayload) {
	r.mu.Lock()
	r.frames = append(r.frames, rpcFrame{f, bytes.Clone(p.Bytes())})
	r.mu.Unlock()
	p.Release()
	select {
	case r.seen <- struct{}{}:
	default:
	}
}

func (r *rpcRecorder) ServicePeerLost(_ int, err error) {
	r.mu.Lock()
	r.lost = err
	r.mu.Unlock()
}

// take removes and returns the frames that match.
func (r *rpcRecorder) take(match func(rpcFrame) bool) []rpcFrame {
	r.mu.Lock()
	defer r.mu.Unlock()
	var got, rest []rpcFrame
	for _, fr := range r.frames {
		if match(fr) {
			got = append(got, fr)
		} else {
			rest = append(rest, fr)
		}
	}
	r.frames = rest
	return got
}

// rpcExpect is what a request of rank 1 must be answered with.
type rpcExpect struct {
	none     bool   // no answer at all (a control frame)
	optional bool   // the deadline may pass first: no answer is right too
	busy     bool   // ErrBusy is right too
	status   uint32 // the reply's Aux
	payload  []byte
	wait     bool // the "wait" handler's: errWaited or a context error, as text (or, past the deadline, nothing)
}

// rpcRun is one iteration's script.
type rpcRun struct {
	w     *rpcWorld
	in    []byte
	calls []*rpcCall
}

func (r *rpcRun) u8() byte {
	if len(r.in) == 0 {
		return 0
	}
	b := r.in[0]
	r.in = r.in[1:]
	return b
}

// payload reads a payload: its length byte (with the top bit set, a
// length just above the bound limit, where one applies) and its bytes.
func (r *rpcRun) payload(limit int) []byte {
	n := int(r.u8())
	if n&0x80 != 0 && limit > 0 {
		return bytes.Repeat([]byte{byte(n)}, limit+n&0x7f+1)
	}
	n &= 0x7f
	n = min(n, len(r.in))
	p := bytes.Clone(r.in[:n])
	r.in = r.in[n:]
	return p
}

func (r *rpcRun) step(t *testing.T, ctx context.Context) {
	switch r.u8() % opCount {
	case opReq:
		r.request(t)
	case opCtl:
		r.control(t)
	case opCall:
		r.call(t, ctx)
	case opAnswer:
		r.answer(t)
	case opFence:
		r.fence(t)
	}
}

// request sends a request whose name length and name come from kind:
// one of rank 0's names, an unknown one, 0 or past the payload; the low
// bits of the deadline byte set Aux (1 ms to about 4 min); then args.
func (r *rpcRun) request(t *testing.T) {
	kind, dl := r.u8(), r.u8()
	args := r.payload(0)
	big := kind&0x80 != 0
	var name string
	tag := uint32(0)
	switch k := int(kind&0x7f) % (len(fuzzNames) + 3); {
	case k < len(fuzzNames):
		name = fuzzNames[k]
	case k == len(fuzzNames):
		name = "nobody"
	case k == len(fuzzNames)+1:
		tag = 0
	default:
		tag = uint32(len(args)) + 1 + uint32(dl)
	}
	p := append([]byte(name), args...)
	if name != "" {
		tag = uint32(len(name))
	}
	if big {
		p = append(p, make([]byte, fuzzMaxRequest)...)
	}
	aux := uint32(dl&0x3f+1) << (dl >> 6 * 6) // 1 ms .. 64<<18 ms
	r.w.id++
	id := r.w.id
	r.w.want[id] = expectReply(name, tag, p, aux)
	r.w.gone = false
	if err := rpcOf(r.w.ts[1]).SendFrame(context.Background(), 0, plumb.ServiceFrame{ID: id, Tag: tag, Aux: aux}, p); err != nil {
		t.Fatalf("send request: %v", err)
	}
}

// expectReply is the spec's answer to a request.
func expectReply(name string, tag uint32, p []byte, aux uint32) rpcExpect {
	e := rpcExpect{optional: aux < 3000}
	switch {
	case len(p) > fuzzMaxRequest:
		e.status, e.payload = 5, pair(uint64(len(p)), fuzzMaxRequest)
		return e
	case tag == 0 || int(tag) > len(p):
		e.status = 8
		return e
	case name == "" || name == "nobody":
		e.status = 3
		return e
	}
	e.busy = true
	args := p[len(name):]
	switch name {
	case "echo":
		e.payload = args
	case "fail":
		e.status, e.payload = 1, args
	case "panic":
		e.status, e.payload = 2, args
	case "big":
		e.status, e.payload = 6, pair(2*fuzzMaxReply, fuzzMaxReply)
	case "wait":
		e.status, e.optional, e.wait = 1, true, true
	}
	return e
}

func pair(x, y uint64) []byte {
	return binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(nil, x), y)
}

// control sends a control frame: goodbye, report, verdict, cancel (of the
// latest request), hello, or another tag from the control range.
func (r *rpcRun) control(t *testing.T) {
	which, aux := r.u8(), r.u8()
	p := r.payload(maxErrorText)
	tag := uint32(rpc.CtlBase) + uint32(which)%6
	id := uint64(r.u8())
	if tag == uint32(rpc.CtlCancel) {
		id = r.w.id
	}
	if tag == uint32(rpc.CtlHello) {
		r.w.gone = false // a new agent there
	}
	if tag == uint32(rpc.CtlGoodbye) {
		r.w.gone = true
		for _, c := range r.calls {
			if c.outcome == nil {
				c.outcome = callClosed
			}
		}
	}
	if err := rpcOf(r.w.ts[1]).SendFrame(context.Background(), 0, plumb.ServiceFrame{ID: id, Tag: tag, Aux: uint32(aux)}, p); err != nil {
		t.Fatalf("send control frame: %v", err)
	}
}

// rpcCall is a call rank 0's agent makes to rank 1.
type rpcCall struct {
	c       *rpc.Call
	name    string
	id      uint64 // the request's id, as rank 1 received it
	outcome func(t *testing.T, c *rpcCall, reply []byte, err error)
}

// call makes rank 0 call rank 1 (which has no agent: the script answers)
// and waits until rank 1 has the request.
func (r *rpcRun) call(t *testing.T, ctx context.Context) {
	r.w.calls++
	name := fmt.Sprintf("f%d.%d", r.w.calls, r.u8())
	r.fence(t) // rank 0 knows whether rank 1 is gone
	c := &rpcCall{name: name, c: r.w.agent.Go(ctx, 1, name, []byte("args"))}
	r.calls = append(r.calls, c)
	if r.w.gone {
		c.outcome = callClosed // refused before it is sent
		return
	}
	deadline := time.After(10 * time.Second)
	for {
		got := r.w.rec.take(func(fr rpcFrame) bool {
			return !fr.f.Reply && fr.f.Tag == uint32(len(name)) && string(fr.p) == name+"args"
		})
		if len(got) > 0 {
			c.id = got[0].f.ID
			return
		}
		select {
		case <-r.w.rec.seen:
		case <-c.c.Done():
			_, err := c.c.Wait()
			t.Fatalf("call %s ended before it was sent: %v", name, err)
		case <-deadline:
			t.Fatalf("rank 1 did not receive the request of call %s", name)
		}
	}
}

// answer sends rank 1's reply to one of rank 0's calls (or to an id no
// call has) with the flags, status and payload the script says.
func (r *rpcRun) answer(t *testing.T) {
	which, flags, status := r.u8(), r.u8(), uint32(r.u8())
	p := r.payload(fuzzMaxReply)
	if flags&2 != 0 && len(p) > fuzzMaxReply {
		p = append(p, make([]byte, maxErrorText)...) // past the agent's bound on error texts
	}
	f := plumb.ServiceFrame{Reply: true, Error: flags&1 != 0, Aux: status}
	var c *rpcCall
	if len(r.calls) > 0 {
		c = r.calls[int(which)%len(r.calls)]
		f.ID = c.id
	}
	if c == nil || which&0x80 != 0 {
		c, f.ID = nil, 1<<62+uint64(which) // an id no call of rank 0 has
	}
	if c != nil && c.outcome == nil {
		c.outcome = replyOutcome(f, p)
	}
	if err := rpcOf(r.w.ts[1]).SendFrame(context.Background(), 0, f, p); err != nil {
		t.Fatalf("send reply: %v", err)
	}
}

// replyOutcome is what a call must return given its reply f with p
// (spec.md, "RPC_REPLY").
func replyOutcome(f plumb.ServiceFrame, p []byte) func(*testing.T, *rpcCall, []byte, error) {
	return func(t *testing.T, c *rpcCall, reply []byte, err error) {
		t.Helper()
		want := func(ok bool, what string) {
			if !ok {
				t.Errorf("call %s answered with %+v and %d bytes (% .16x): got %q, %v; want %s", c.name, f, len(p), p, reply, err, what)
			}
		}
		var se *rpc.SizeError
		if !f.Error {
			if len(p) > fuzzMaxReply {
				want(errors.As(err, &se) && *se == rpc.SizeError{What: "reply", Size: len(p), Limit: fuzzMaxReply}, "a reply SizeError")
				return
			}
			want(err == nil && bytes.Equal(reply, p), "the payload")
			return
		}
		if len(p) > maxErrorText {
			want(errors.Is(err, rpc.ErrProtocol), "ErrProtocol")
			return
		}
		var re *rpc.HandlerError
		switch f.Aux {
		case 1, 2:
			want(errors.As(err, &re) && *re == rpc.HandlerError{Rank: 1, Name: c.name, Message: string(p), Panicked: f.Aux == 2}, "a HandlerError")
		case 3:
			want(errors.Is(err, rpc.ErrFunctionNotFound), "ErrFunctionNotFound")
		case 4:
			want(errors.Is(err, rpc.ErrBusy), "ErrBusy")
		case 7:
			want(errors.Is(err, rpc.ErrClosed), "ErrClosed")
		case 5, 6:
			if len(p) != 16 {
				want(errors.Is(err, rpc.ErrProtocol), "ErrProtocol (a size status without two sizes)")
				return
			}
			what := map[uint32]string{5: "request", 6: "reply"}[f.Aux]
			size, limit := binary.LittleEndian.Uint64(p), binary.LittleEndian.Uint64(p[8:])
			want(errors.As(err, &se) && *se == rpc.SizeError{What: what, Size: int(size), Limit: int(limit)}, "a SizeError of the payload's sizes")
		default:
			want(errors.Is(err, rpc.ErrProtocol), "ErrProtocol (an unknown status)")
		}
	}
}

// callClosed is the outcome of a call to a rank whose agent said goodbye.
func callClosed(t *testing.T, c *rpcCall, reply []byte, err error) {
	t.Helper()
	if !errors.Is(err, rpc.ErrClosed) {
		t.Errorf("call %s after rank 1's goodbye: got %q, %v; want ErrClosed", c.name, reply, err)
	}
}

// check waits for the call (whose context is cancelled by now) and
// checks its outcome.
func (c *rpcCall) check(t *testing.T) {
	t.Helper()
	select {
	case <-c.c.Done():
	case <-time.After(10 * time.Second):
		t.Errorf("call %s still pending 10 s after its context ended", c.name)
		return
	}
	reply, err := c.c.Wait()
	if c.outcome != nil {
		c.outcome(t, c, reply, err)
		return
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("call %s, never answered: got %q, %v; want context.Canceled", c.name, reply, err)
	}
}

// fence waits until rank 0 has processed every frame rank 1 sent before:
// on the data stream, a message sent after them has arrived; on the
// control stream, which carries the RPC frames (and may run ahead of the
// data stream), a put sent after them was applied (Quiet). That needs the
// put to be a frame behind them: the mesh is TCP (rpcMesh.get).
func (r *rpcRun) fence(t *testing.T) {
	if err := r.w.ts[1].Send(0, fenceTag, nil); err != nil {
		t.Fatalf("fence: %v", err)
	}
	if _, err := r.w.ts[0].RecvTimeout(1, fenceTag, 10*time.Second); err != nil {
		t.Fatalf("fence: %v", err)
	}
	if err := r.w.ts[1].Put(engine.SymmetricBuffer{Rank: 0, Offset: 0, Len: 1}, []byte{1}); err != nil {
		t.Fatalf("fence: %v", err)
	}
	if err := r.w.ts[1].Quiet(); err != nil {
		t.Fatalf("fence: %v", err)
	}
}

const fenceTag = 77

// checkReplies checks every reply rank 1 has received against what its
// request was owed, and waits (a while) for the replies still owed.
func (w *rpcWorld) checkReplies(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		for _, fr := range w.rec.take(func(fr rpcFrame) bool { return fr.f.Reply }) {
			e, ok := w.want[fr.f.ID]
			delete(w.want, fr.f.ID)
			if !ok {
				t.Errorf("a reply %+v (%q) to no request, or a second one", fr.f, fr.p)
				continue
			}
			e.check(t, fr)
		}
		owed := 0
		for id, e := range w.want {
			switch {
			case e.none:
				delete(w.want, id)
			case !e.optional:
				owed++
			}
		}
		if owed == 0 || t.Failed() {
			return
		}
		if time.Now().After(deadline) {
			t.Errorf("%d requests still unanswered after 10 s", owed)
			return
		}
		select {
		case <-w.rec.seen:
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func (e rpcExpect) check(t *testing.T, fr rpcFrame) {
	t.Helper()
	f := fr.f
	switch {
	case e.none:
		t.Errorf("a control frame was answered: %+v %q", f, fr.p)
	case e.busy && f.Error && f.Aux == 4 && len(fr.p) == 0:
	case f.Error != (e.status != 0) || f.Aux != e.status:
		t.Errorf("request %d answered with %+v %q, want status %d", f.ID, f, fr.p, e.status)
	case e.wait && string(fr.p) != errWaited.Error() && string(fr.p) != context.Canceled.Error() && string(fr.p) != context.DeadlineExceeded.Error():
		t.Errorf("request %d answered with %q, want %q or a context error", f.ID, fr.p, errWaited)
	case !e.wait && !bytes.Equal(fr.p, e.payload):
		t.Errorf("request %d answered with %q, want %q", f.ID, fr.p, e.payload)
	}
}

// rpcOf returns tr's RPC frames, as NewAgent gets them.
func rpcOf(tr *engine.NetTransport) plumb.Service {
	r, ok := plumb.ServiceOf(tr)
	if !ok {
		panic("rpc: no RPC hooks for a *engine.NetTransport")
	}
	return r
}
