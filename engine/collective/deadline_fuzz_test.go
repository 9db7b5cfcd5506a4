package collective

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math/bits"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/fuzzkit"
	"github.com/boltmesh/boltmesh/internal/meshtest"
)

// FuzzDeadline: the payloads of a deadline allreduce (deadline.go) as a
// rank decodes them from a peer that sends what the fuzzer says. In a
// 2-rank mesh in this process (kept across iterations), one rank runs
// AllReduceDeadline over int32 Sum and the other plays its part by hand
// on the call's tags:
//
//   - as the root, to leaf rank 1: the header (16 bytes: a mask of
//     ranks, then flags) and the result, each of the right or another
//     length, with the call's meta or another, or a header that says the
//     leaf is behind and no result, or an abandon, or nothing;
//   - as leaf rank 1, to root rank 0: the contribution, of the right or
//     another length, with the call's meta or another, late (after the
//     root's result), an abandon, or nothing.
//
// The rank under test must return exactly what the spec of its side
// says: the result and the set of contributors, or the error of the
// first thing wrong (ErrMismatch, ErrLengthMismatch, ErrAbandoned,
// ErrBehind, its context's).
func FuzzDeadline(f *testing.F) {
	var m deadlineMesh
	f.Cleanup(m.close)
	for mode := range uint8(dlModes) {
		f.Add(mode, uint64(3), []byte{1, 2, 3, 4, 5, 6, 7, 8})
		f.Add(mode|0x80, uint64(3), []byte{1, 2, 3, 4, 5, 6, 7, 8})
	}
	f.Add(uint8(dlRight), uint64(1), []byte{9, 9, 9, 9})                   // the leaf left out
	f.Add(uint8(dlRight), uint64(2), []byte{9, 9, 9, 9})                   // a set without the root
	f.Add(uint8(dlRight), uint64(1<<40|3), []byte{9, 9, 9, 9})             // ranks beyond the world
	f.Add(uint8(dlShortHdr), uint64(3), []byte{1, 2, 3, 4})                // a 4-byte header
	f.Add(uint8(dlShortHdr), uint64(3), []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}) // a 9-byte header
	f.Add(uint8(dlWrongMeta|0x80), uint64(0), []byte{1, 2, 3, 4, 1, 1})    // a contribution of another call

	f.Fuzz(func(t *testing.T, mode uint8, mask uint64, raw []byte) {
		w, err := m.get()
		if err != nil {
			t.Fatal(err)
		}
		defer fuzzkit.Guard(9*time.Second, func() string { return fmt.Sprintf("mode %#x mask %#x raw % x", mode, mask, raw) })()
		defer func() { // also after t.Fatal: a failed run leaves the mesh in any state
			w.sync()
			if t.Failed() {
				m.reset()
			}
		}()
		d := &deadlineRun{w: w, mode: mode % dlModes, mask: mask, raw: raw}
		d.data = int32s(raw, 1+len(raw)/4%8)
		if mode&0x80 == 0 {
			d.leafSubject(t)
		} else {
			d.rootSubject(t)
		}
	})
}

// What the hand-played rank sends (mode modulo dlModes).
const (
	dlRight     = iota // the right messages
	dlWrongMeta        // another call's meta
	dlShortHdr         // leaf side: a short contributor set; root side: a short contribution
	dlLongHdr          // a long one
	dlBadData          // leaf side: a result of another length; root side: a late contribution
	dlAbandon          // an abandon instead
	dlNothing          // nothing at all
	dlBehind           // leaf side: a header that says the leaf is behind; root side: as dlRight
	dlModes
)

// deadlineWorld is the mesh and a Comm on each rank; the Comms are kept
// at the same call number, so that a call's tags are the same on both.
type deadlineWorld struct {
	ts    []*engine.NetTransport
	comms [2]*Comm
}

// sync brings both Comms to the call number of the one ahead.
func (w *deadlineWorld) sync() {
	s := max(lastCall(w.comms[0]), lastCall(w.comms[1]))
	for _, c := range w.comms {
		c.seq, c.calls.seq = s, s
	}
}

// lastCall is the number of the last call begun over c's transport, by
// any Comm (calls.next).
func lastCall(c *Comm) uint32 { return c.calls.seq }

type deadlineMesh struct {
	mu sync.Mutex
	k  meshtest.Kept
	w  *deadlineWorld
}

func (m *deadlineMesh) get() (*deadlineWorld, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.w != nil {
		return m.w, nil
	}
	m.k = meshtest.Kept{N: 2, Opts: engine.Options{Logger: slog.New(slog.DiscardHandler), Spin: -1}}
	ts, err := m.k.Get()
	if err != nil {
		return nil, err
	}
	m.w = &deadlineWorld{ts: ts, comms: [2]*Comm{commOf(ts[0], Options{}), commOf(ts[1], Options{})}}
	return m.w, nil
}

func (m *deadlineMesh) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.k.Reset()
	m.w = nil
}

func (m *deadlineMesh) close() { m.reset() }

// int32s makes n int32s out of raw (repeated, or zeros without it).
func int32s(raw []byte, n int) []int32 {
	out := make([]int32, n)
	for i := range out {
		var b [4]byte
		for j := range b {
			if len(raw) > 0 {
				b[j] = raw[(4*i+j)%len(raw)]
			}
		}
		out[i] = int32(binary.LittleEndian.Uint32(b[:]))
	}
	return out
}

// deadlineRun is one iteration.
type deadlineRun struct {
	w    *deadlineWorld
	mode uint8
	mask uint64
	raw  []byte
	data []int32 // the subject's contribution
}

// call is the next call's first tag and meta.
func (d *deadlineRun) call(c *Comm) (seq, tag, meta uint32) {
	seq = lastCall(c) + 1
	if seq == 0 {
		seq = 1
	}
	return seq, ((seq - 1) % (collTags / tagsPerCall)) * tagsPerCall, callMeta(kindAllReduceDeadline, Int32, Sum)
}

// meta returns the meta to send: the call's, or another one.
func (d *deadlineRun) meta(meta uint32) uint32 {
	if d.mode == dlWrongMeta {
		return callMeta(kindAllReduce, Int32, Sum)
	}
	return meta
}

// leafSubject: rank 1 is a leaf under test, rank 0 the root by hand.
func (d *deadlineRun) leafSubject(t *testing.T) {
	w := d.w
	seq, tag, meta := d.call(w.comms[1])
	root := w.ts[0]
	callsOfNet(root).begin(seq)
	defer callsOfNet(root).end(seq)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	if d.mode == dlNothing {
		ctx, cancel = context.WithTimeout(context.Background(), 20*time.Millisecond)
	}
	defer cancel()
	mine := append([]int32(nil), d.data...)
	type result struct {
		got Contributors
		err error
	}
	done := make(chan result, 1)
	go func() {
		got, err := w.comms[1].AllReduceDeadlineBytes(ctx, Int32, AsBytes(mine), Sum, time.Now().Add(time.Second))
		done <- result{got, err}
	}()
	in := make([]byte, 4*len(d.data))
	if n, err := hooksOf(root).Recv(context.Background(), 1, tag, meta, in); err != nil || !bytes.Equal(in[:n], AsBytes(d.data)) {
		t.Fatalf("the leaf's contribution % x: %v", in, err)
	}
	hdr := binary.LittleEndian.AppendUint64(nil, d.mask)
	var flags uint64
	if d.mode == dlBehind {
		flags = flagBehind
	}
	hdr = binary.LittleEndian.AppendUint64(hdr, flags)
	switch d.mode {
	case dlShortHdr:
		hdr = hdr[:len(d.raw)%deadlineHeaderSize]
	case dlLongHdr:
		hdr = append(hdr, d.raw...)
		hdr = append(hdr, 0)
	}
	res := int32s(append([]byte{7}, d.raw...), len(d.data))
	if d.mode == dlBadData {
		res = append(res, 1)
	}
	switch d.mode {
	case dlAbandon:
		callsOfNet(root).abandon(tag+abandonStep, 0)
	case dlNothing:
	case dlBehind:
		sendColl(t, root, 1, tag+1, meta, hdr)
	default:
		sendColl(t, root, 1, tag+1, d.meta(meta), hdr)
		sendColl(t, root, 1, tag+2, d.meta(meta), AsBytes(res))
	}
	r := <-done
	checkLeaf(t, d, hdr, res, mine, r.got, r.err)
}

func sendColl(t *testing.T, tr *engine.NetTransport, to int, tag, meta uint32, p []byte) {
	t.Helper()
	if err := hooksOf(tr).SendMsg(context.Background(), to, tag, meta, p); err != nil {
		t.Fatalf("send to rank %d: %v", to, err)
	}
}

// checkLeaf checks the leaf's outcome: data holds the root's result if
// it returned one.
func checkLeaf(t *testing.T, d *deadlineRun, hdr []byte, result, data []int32, got Contributors, err error) {
	t.Helper()
	want := func(ok bool, what string) {
		if !ok {
			t.Fatalf("leaf, mode %d, set % x: got %+v, %v; want %s", d.mode, hdr, got, err, what)
		}
	}
	switch {
	case d.mode == dlAbandon:
		want(errors.Is(err, ErrAbandoned), "ErrAbandoned")
	case d.mode == dlNothing:
		want(errors.Is(err, context.DeadlineExceeded), "its context's end")
	case d.mode == dlWrongMeta:
		want(errors.Is(err, ErrMismatch), "ErrMismatch")
	case len(hdr) != deadlineHeaderSize:
		want(errors.Is(err, ErrLengthMismatch), "ErrLengthMismatch (the header)")
	case d.mode == dlBehind:
		want(errors.Is(err, ErrBehind), "ErrBehind")
	case d.mask&1 == 0 || d.mask>>2 != 0:
		want(errors.Is(err, ErrMismatch), "ErrMismatch: a set without the root, or with ranks outside the world")
	case d.mode == dlBadData:
		want(errors.Is(err, ErrLengthMismatch), "ErrLengthMismatch (the result)")
	default:
		want(err == nil && got == Contributors{Mask: d.mask, Count: bits.OnesCount64(d.mask)}, "the root's set")
		if !equalInt32s(data, result) {
			t.Fatalf("leaf got result %v, the root sent %v", data, result)
		}
	}
}

func equalInt32s(a, b []int32) bool {
	return len(a) == len(b) && bytes.Equal(AsBytes(a), AsBytes(b))
}

// rootSubject: rank 0 is the root under test, rank 1 a leaf by hand.
func (d *deadlineRun) rootSubject(t *testing.T) {
	w := d.w
	seq, tag, meta := d.call(w.comms[0])
	leaf := w.ts[1]
	callsOfNet(leaf).begin(seq)
	defer callsOfNet(leaf).end(seq)
	mine := append([]int32(nil), d.data...)
	type result struct {
		got Contributors
		err error
	}
	done := make(chan result, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		got, err := w.comms[0].AllReduceDeadlineBytes(ctx, Int32, AsBytes(mine), Sum, time.Now().Add(30*time.Millisecond))
		done <- result{got, err}
	}()
	contrib := int32s(append([]byte{3}, d.raw...), len(d.data))
	p := AsBytes(contrib)
	switch d.mode {
	case dlShortHdr:
		p = p[:len(p)-1-int(d.mask%uint64(len(p)))]
	case dlLongHdr:
		p = append(bytes.Clone(p), 1, 2, 3, 4)
	}
	switch d.mode {
	case dlAbandon:
		callsOfNet(leaf).abandon(tag+abandonStep, 0)
	case dlNothing, dlBadData: // dlBadData: late, after the result
	default:
		sendColl(t, leaf, 0, tag, d.meta(meta), p)
	}
	r := <-done
	// The leaf takes the root's set and result, if it sent them.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hdr, res := make([]byte, deadlineHeaderSize), make([]int32, len(d.data))
	_, herr := hooksOf(leaf).Recv(ctx, 0, tag+1, meta, hdr)
	_, derr := hooksOf(leaf).Recv(ctx, 0, tag+2, meta, AsBytes(res))
	if d.mode == dlBadData {
		sendColl(t, leaf, 0, tag, meta, p) // late: the root must drop it
	}
	checkRoot(t, d, contrib, p, mine, r.got, r.err)
	if r.err == nil && (herr != nil || derr != nil || binary.LittleEndian.Uint64(hdr) != r.got.Mask || binary.LittleEndian.Uint64(hdr[8:]) != 0 || !equalInt32s(res, mine)) {
		t.Fatalf("root returned %+v and %v, the leaf got set % x and %v (%v, %v)", r.got, mine, hdr, res, herr, derr)
	}
	if r.err != nil && !errors.Is(herr, ErrAbandoned) {
		t.Fatalf("root failed (%v), but the leaf's receive of its result got %v, not ErrAbandoned", r.err, herr)
	}
}

// checkRoot checks the root's outcome: data holds its result.
func checkRoot(t *testing.T, d *deadlineRun, contrib []int32, sent []byte, data []int32, got Contributors, err error) {
	t.Helper()
	want := func(ok bool, what string) {
		if !ok {
			t.Fatalf("root, mode %d, contribution of %d bytes: got %+v, %v; want %s", d.mode, len(sent), got, err, what)
		}
	}
	sum := make([]int32, len(d.data))
	for i := range sum {
		sum[i] = d.data[i] + contrib[i]
	}
	switch d.mode {
	case dlAbandon:
		want(errors.Is(err, ErrAbandoned), "ErrAbandoned")
	case dlWrongMeta:
		want(errors.Is(err, ErrMismatch), "ErrMismatch")
	case dlShortHdr, dlLongHdr:
		want(errors.Is(err, ErrLengthMismatch), "ErrLengthMismatch")
	case dlNothing, dlBadData:
		want(err == nil && got == Contributors{Mask: 1, Count: 1}, "the root alone")
		if !equalInt32s(data, d.data) {
			t.Fatalf("root alone: result %v, want its own %v", data, d.data)
		}
	default:
		want(err == nil && got == Contributors{Mask: 3, Count: 2}, "both ranks")
		if !equalInt32s(data, sum) {
			t.Fatalf("root: result %v, want %v", data, sum)
		}
	}
}
