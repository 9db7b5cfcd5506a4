package collective

import (
	"context"
	"sync"
	"testing"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/meshtest"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/internal/plumb/plumbtest"
)

// testHooks is a transport's lent range (plumb.Wire) with the operations
// a Comm builds on it, for tests that drive them one at a time with a
// meta of their choosing: each runs as a Comm's does.
type testHooks struct {
	plumb.Wire
	tr *engine.NetTransport
	c  *Comm // a Comm over tr, for its exchanges
}

var testComms sync.Map // *engine.NetTransport -> *testHooks

// hooksOf returns tr's lent range, as New gets it, with its test
// operations.
func hooksOf(tr *engine.NetTransport) *testHooks {
	if h, ok := testComms.Load(tr); ok {
		return h.(*testHooks)
	}
	w, ok := plumb.WireOf(tr)
	if !ok {
		panic("collective: no lent range for a *engine.NetTransport")
	}
	h, _ := testComms.LoadOrStore(tr, &testHooks{Wire: w, tr: tr, c: newComm(tr, w, Options{})})
	return h.(*testHooks)
}

// commOf is New over tr, which cannot fail.
func commOf(tr *engine.NetTransport, opts Options) *Comm {
	w, _ := plumb.WireOf(tr)
	return newComm(tr, w, opts)
}

// callsOfNet returns the tracker of tr's collective calls (calls.go), as
// New installs it, shared with every Comm over tr.
func callsOfNet(tr *engine.NetTransport) *calls {
	return callsOf(hooksOf(tr).Wire, tr.WorldSize())
}

// SendMsg sends p to rank to under tag with meta (plumb.SendWait).
func (h *testHooks) SendMsg(ctx context.Context, to int, tag, meta uint32, p []byte) error {
	_, err := h.Send(ctx, to, tag, meta, p, plumb.SendWait)
	return err
}

// Recv receives from rank from under tag a message with meta, as a
// Comm's recv does.
func (h *testHooks) Recv(ctx context.Context, from int, tag, meta uint32, dst []byte) (int, error) {
	c := h.comm(meta)
	n, err := c.take(ctx, from, tag, dst, plumb.All)
	return n, wireErr(err)
}

// TryRecv is Recv that takes only a message already in.
func (h *testHooks) TryRecv(from int, tag, meta uint32, dst []byte) (int, bool, error) {
	return tryRecvMeta(h.Wire, from, tag, meta, dst)
}

// Exchange is a Comm's exchange with meta.
func (h *testHooks) Exchange(ctx context.Context, to, from int, tag, meta uint32, out, in []byte) (int, error) {
	n, err := h.comm(meta).swap(ctx, to, from, tag, out, in)
	return n, wireErr(err)
}

// ExchangeChunks is a Comm's exchange in pieces with meta.
func (h *testHooks) ExchangeChunks(ctx context.Context, to, from int, tag, meta uint32, out, in []byte, outChunk, inChunk int, onChunk func(off, n int) error) error {
	return wireErr(h.comm(meta).swapChunks(ctx, to, from, tag, out, in, outChunk, inChunk, onChunk))
}

// comm returns the Comm of h's exchanges, its meta set.
func (h *testHooks) comm(meta uint32) *Comm {
	h.c.meta = meta
	return h.c
}

// mailboxPost writes rank tr's part of an exchange on tag with meta into
// its mailbox with rank r, as an exchange does, without waiting for r's.
func mailboxPost(tr *engine.NetTransport, r int, tag, meta uint32, part []byte) {
	mb := hooksOf(tr).Mailbox(r)
	mb.Lock()
	defer mb.Unlock()
	mb.Post(tag, meta, part)
}

// mailboxWrites returns how many parts rank tr wrote into its mailbox
// with rank r, or -1 if r is not a neighbour.
func mailboxWrites(tr *engine.NetTransport, r int) int {
	mb := hooksOf(tr).Mailbox(r)
	if mb == nil {
		return -1
	}
	return int(mb.Writes())
}

// mailboxConflict is what an exchange with rank r on tag expecting meta
// that has not found r's part makes of the other parts in the mailbox.
func mailboxConflict(tr *engine.NetTransport, r int, tag, meta uint32) error {
	h := hooksOf(tr)
	mb := h.Mailbox(r)
	mb.Lock()
	defer mb.Unlock()
	s := mailSite{c: h.c, mb: mb, from: r, tag: tag, meta: meta}
	return s.conflict()
}

// setMailHook makes f run at the points of a mailbox exchange's wait
// named by the hook constants, until the test ends. Set it before the
// transports start.
func setMailHook(tb testing.TB, f func(rank int, at int)) {
	testHookMail = f
	tb.Cleanup(func() { testHookMail = nil })
}

// own installs o as tr's owner of the lent range, before any Comm over
// tr (hooksOf's included) installs its own.
func own(t testing.TB, tr *engine.NetTransport, o plumb.Owner) {
	t.Helper()
	w, _ := plumb.WireOf(tr)
	if got := w.Lend("test", func() plumb.Owner { return o }); got != o {
		t.Fatalf("Lend installed %v, want the test's owner", got)
	}
}

// bareMesh is a mesh of n ranks whose lent ranges have an owner that
// judges nothing (plumbtest.Owner's zero value), as a transport without
// package collective's calls: for tests of exchanges on tags of their
// choosing, outside any call.
func bareMesh(t testing.TB, n int, opts engine.Options) []*engine.NetTransport {
	ts := meshtest.Mesh(t, n, opts)
	bare(t, ts...)
	return ts
}

// bare installs an owner that judges nothing on each of ts.
func bare(t testing.TB, ts ...*engine.NetTransport) {
	for _, tr := range ts {
		own(t, tr, &plumbtest.Owner{})
	}
}

// peerLost returns the error a receive from rank r on tr fails with
// once r is lost or closed, or nil: a try, on a tag nothing uses.
func peerLost(tr *engine.NetTransport, r int) error {
	h := hooksOf(tr)
	hd, err := h.Post(r, plumb.Tags-1, 0, nil, true)
	if err == plumb.ErrNotQueued {
		return nil
	}
	if err == nil {
		_, _, err = h.Wait(r, hd, plumb.Waiting{})
	}
	return err
}
