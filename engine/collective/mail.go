package collective

import (
	"context"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/internal/plumb"
)

// An exchange with a neighbour that is both to and from, whose parts are
// at most plumb.MailboxMax bytes, goes through the pair's mailbox
// (internal/link/shm/mailbox.go): this rank's part is written there, and
// the neighbour's waited for there, spinning for the transport's spin
// budget, then asleep: a receive for the step is posted too, and the
// neighbour's writer, seeing this side asleep, rings (a WAKE). The posted
// receive is what fails the exchange as a frame receive would (the
// neighbour gave the call up, is at another step, closed or was lost). A
// frame that arrives for it wins over the mailbox: the neighbour
// exchanged by frames (its in was longer than plumb.MailboxMax), so this
// rank's part follows as a frame too.
//
// On a crowded machine (more ranks than cores) the transport's wait gives
// the core up between looks: a look is a cache line's read, cheap enough
// to share a core with the rank it waits for, which a wake-up per step is
// not.

// mailSite is what a mailbox exchange's wait looks at (plumb.Site)
// and what a look found. A Comm has one, its look made once, so that an
// exchange allocates nothing; its calls take turns.
type mailSite struct {
	c         *Comm
	mb        *shm.Mailbox
	from      int
	tag, meta uint32
	in        []byte
	n         int        // what a look found: the part's length
	got       uint32     // and its meta
	site      plumb.Site // its Look is lookFor, made once; its Wake the mailbox's
}

// lookFor is site's look: up to tries looks for the neighbour's part,
// which is copied into in; with tries 0 only whether it is in. A part of
// another step of the call there instead fails the wait (conflict).
func (s *mailSite) lookFor(tries int) (bool, error) {
	if tries == 0 {
		if s.mb.Ready(s.tag) {
			return true, nil
		}
		return false, s.conflict()
	}
	n, got, found, closed := s.mb.Watch(s.tag, s.in, tries)
	switch {
	case found:
		s.n, s.got = n, got
		return true, nil
	case closed:
		return false, mailClosed(s.from)
	}
	if testHookMail != nil {
		testHookMail(s.c.t.Rank(), hookSpinMissed)
	}
	return false, s.conflict()
}

// conflict returns the error the exchange fails with because the
// neighbour's part of another step is in the mailbox, as the owner of
// the range judges a frame for another step queued while a receive
// waits, or nil.
func (s *mailSite) conflict() error {
	o := s.c.owner
	if o == nil {
		return nil
	}
	other, got, ok := s.mb.Stray(s.tag)
	if !ok || s.mb.Ready(s.tag) {
		// No other part; or the one waited for came too, written before
		// that other (the neighbour went on to its next step after taking
		// this rank's part), after the look that missed it.
		return nil
	}
	return o.Judge(s.from, s.tag, s.meta, plumb.Event{Kind: plumb.Queued, Tag: other, Meta: got})
}

// mail is swap through mb, the mailbox of the pair this rank and
// neighbour peer make.
func (c *Comm) mail(ctx context.Context, peer int, mb *shm.Mailbox, tag uint32, out, in []byte) (int, error) {
	mb.Lock()
	defer mb.Unlock()
	if _, _, err := c.wire.Wait(peer, plumb.Handle{}, plumb.Waiting{How: plumb.All}); err != nil {
		return 0, err // a rank is lost: the call is over, and this rank's part stays out
	}
	asleep, ok := mb.Post(tag, c.meta, out)
	if !ok {
		return 0, mailClosed(peer)
	}
	if asleep {
		mb.Ring(false)
	}
	s := &c.site
	if s.site.Look == nil {
		s.c, s.site.Look = c, s.lookFor
	}
	s.mb, s.from, s.tag, s.meta, s.in, s.site.Wake = mb, peer, tag, c.meta, in, mb.Wake()
	defer func() { s.mb, s.in = nil, nil }()
	_, found, err := c.wire.Wait(peer, plumb.Handle{}, plumb.Waiting{Ctx: ctx, How: plumb.All, Site: &s.site})
	switch {
	case found:
		return mailResult(peer, tag, c.meta, s.n, s.got, in)
	case err != nil:
		// What came since the last look wins: the neighbour, done with
		// the step, may have closed at once.
		if n, got, found, _ := mb.Take(tag, in); found {
			return mailResult(peer, tag, c.meta, n, got, in)
		}
		return 0, err
	}
	n, byFrame, err := c.sleepMail(ctx, s)
	if byFrame && err == nil {
		_, err = c.wire.Send(ctx, peer, tag, c.meta, out, plumb.SendWait)
	}
	return n, err
}

// sleepMail is mail's wait once the spin is over: a receive for the step
// is posted, this side is marked asleep, and it sleeps until the receive
// completes, the part is in, or the wait gives up.
func (c *Comm) sleepMail(ctx context.Context, s *mailSite) (n int, byFrame bool, err error) {
	h, err := c.wire.Post(s.from, s.tag, s.meta, s.in, false)
	if err != nil {
		return 0, false, err
	}
	s.mb.Sleep(true)
	n, found, err := c.wire.Wait(s.from, h, plumb.Waiting{Ctx: ctx, How: plumb.All, Site: &s.site})
	s.mb.Sleep(false)
	if !found {
		return c.mailOr(s, n, err)
	}
	// The part is in the mailbox: take the receive back (unless a frame
	// came for it meanwhile, which wins, or it failed meanwhile: the
	// neighbour closed once done with the step), then the part.
	if testHookMail != nil {
		testHookMail(c.t.Rank(), hookSawPart)
	}
	n, _, err = c.wire.Wait(s.from, h, plumb.Waiting{How: plumb.Now | plumb.All})
	if err != plumb.ErrWithdrawn {
		return c.mailOr(s, n, err)
	}
	m, got, found, shut := s.mb.Take(s.tag, s.in)
	switch {
	case found:
		m, err = mailResult(s.from, s.tag, s.meta, m, got, s.in)
		return m, false, err
	case shut:
		return 0, false, mailClosed(s.from)
	}
	// Rewritten since it was seen: the neighbour gave the call up and went
	// on. The receive says so.
	n, err = c.take(ctx, s.from, s.tag, s.in, plumb.All)
	return n, false, err
}

// mailOr ends an exchange whose posted receive ended with n and err
// (nil: a frame came for it, byFrame): a receive that failed gives way
// to the neighbour's part if it is in the mailbox by now, as a message
// that arrived wins over the neighbour's abandon that came after it, or
// over a give-up that found it already there.
func (c *Comm) mailOr(s *mailSite, n int, err error) (int, bool, error) {
	if err == nil {
		return n, true, nil
	}
	if m, got, found, _ := s.mb.Take(s.tag, s.in); found {
		m, err = mailResult(s.from, s.tag, s.meta, m, got, s.in)
		return m, false, err
	}
	return n, false, err
}

// mailResult checks the neighbour's part taken from the mailbox: n bytes
// with meta got, for a step expecting meta and at most len(in) bytes.
func mailResult(from int, tag, meta uint32, n int, got uint32, in []byte) (int, error) {
	switch {
	case n > len(in):
		return 0, &plumb.CollLengthError{Rank: from, Tag: tag, Want: len(in), Got: n}
	case got != meta:
		return 0, &plumb.CollMismatchError{Rank: from, Tag: tag, Want: meta, Got: got}
	}
	return n, nil
}

// mailClosed is the error of an exchange whose mailbox was closed: this
// transport's Close. (A mailbox outlives its link, as a neighbour's
// mapped heap does, so that the part of a neighbour that closed in order
// right after writing it is still read.)
func mailClosed(peer int) error {
	return &engine.PeerError{Op: opName, Rank: peer, Err: engine.ErrClosed}
}

// testHookMail, if set (by tests, before any transport runs), is called
// by a mailbox exchange's wait at the points named by the hook constants,
// with the rank waiting, to make a race's other side happen there.
var testHookMail func(rank int, at int)

const (
	hookSpinMissed = iota // a look missed
	hookSawPart           // sleepMail: the part is in, the receive not yet withdrawn
)
