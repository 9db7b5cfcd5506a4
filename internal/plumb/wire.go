package plumb

import (
	"context"
	"time"

	"github.com/boltmesh/boltmesh/internal/link/shm"
)

// Wire is what a transport lends the owner of its lent tag range (package
// collective): Tags tags apart from users' and the barrier's, on which
// every message carries a meta word the owner chooses (it travels in the
// frame header's Aux) and every receive names the meta it expects. The
// transport knows nothing of what the owner builds on them (call
// numbers, exchanges, pieces, how ranks disagree): it sends, posts
// receives, waits, and asks the owner (Owner) at the points where an
// arrival or a receive in the range may have to be dropped or fail.
//
// Tags are relative to the range, in [0, Tags). Every send and receive
// started returns a Handle, finished with exactly one Wait.
type Wire interface {
	// Send sends p to rank to under tag with meta, as m says (SendMode).
	// A handle it returns is finished with Wait.
	Send(ctx context.Context, to int, tag, meta uint32, p []byte, m SendMode) (Handle, error)
	// Post posts a receive from rank from under tag, expecting meta, into
	// dst, and returns without waiting: dst is the transport's until the
	// handle's Wait returns (or, if that returns an error wrapping
	// ErrInFlight, until the message is in or from is lost). A message
	// already queued completes it at once, and so does an error (a
	// queued message longer than dst, from lost, the owner refusing the
	// receive), which Wait returns. With try it takes only a message
	// already queued: if none is, it fails with ErrNotQueued.
	Post(from int, tag, meta uint32, dst []byte, try bool) (Handle, error)
	// Wait finishes h, a send to or a receive from rank peer, as w says
	// (Waiting): a receive's length, a send's 0. For a receive, a message
	// longer than dst fails it with an error wrapping an
	// *engine.TruncatedError, one with another meta with a *MetaError.
	//
	// With w.Site set, Wait also watches what its Look looks at (a
	// neighbour's mailbox): with a zero h it is the wait's spin only,
	// which returns found once Look finds it, or nothing after the spin's
	// budget; with a receive it is the wait's sleep, which returns found
	// (h still posted: finish it with Now) once Look(0) reports it in.
	// With a zero h and no Site it reports only whether an All wait
	// would give up now because a peer is lost (nil otherwise).
	Wait(peer int, h Handle, w Waiting) (n int, found bool, err error)
	// Lend installs the owner that newOwner returns, if none is installed
	// yet, and returns the owner installed: a later call returns the first
	// without calling newOwner, so that every user of one transport shares
	// it. It stays for the transport's life. name is what users call the
	// owner's operations: the Op of the errors the transport reports for
	// the range (a *PeerError's, say).
	Lend(name string, newOwner func() Owner) Owner
	// Tell tells every peer that is up, without waiting, word about tag
	// (an ABANDON frame, on the control stream, so that it overtakes the
	// data in flight); each peer's owner hears it (Judge, Told). A lost
	// peer needs no news.
	Tell(tag uint32, word uint64)
	// Forget drops the messages queued on the n tags from first (first+n
	// at most Tags; all of them: 0, Tags) that the owner no longer wants
	// (Wanted), releasing their credit (a rendezvous sender is told to
	// send nothing), and now and then a neighbour's unwanted mailbox parts.
	Forget(first, n uint32)
	// Hold tells the link of rank that this goroutine polls it (on) while
	// it does something else first, before it waits there (sends a step's
	// data, reduces the piece before), so that what the neighbour
	// publishes meanwhile rings no bell, and reports whether it held it;
	// off ends a hold that held, before any sleep.
	Hold(rank int, on bool) bool
	// Mailbox returns the mailbox of the pair this rank and rank make, if
	// rank is a neighbour whose link has one (engine.Options.SharedMemory),
	// or nil. Both ends of a pair agree, and it does not change once the
	// transport is made.
	Mailbox(rank int) *shm.Mailbox
}

// SendMode is how Wire.Send sends.
type SendMode uint8

const (
	// SendWait returns once p may be reused; no handle. A loss is
	// reported as an All wait reports it: for a call that needs every
	// rank.
	SendWait SendMode = iota
	// SendStart returns without waiting for the bytes to go out (only, if
	// need be, for flow-control credit, until ctx ends): p must stay
	// untouched until the handle's Wait returns. A message above the
	// eager limit waits at the receiver, unread, until a receive takes it;
	// one below it goes as a frame (never by single copy), so that it is
	// finished, or dropped, without the receiver's process running.
	SendStart
	// SendCopy is SendStart that lets a message to a neighbour below the
	// eager limit go by single copy (finished once the neighbour copied
	// it: Handle.Late), for a call that needs every rank: a loss is
	// reported as an All wait reports it.
	SendCopy
	// SendPost sends a short message (at most a quarter of the eager
	// limit) without waiting at all: p is copied; no handle. It fails with
	// ErrNoCredit (engine's) if the receiver holds so much of this rank's
	// that there is no credit left for it.
	SendPost
)

// Waiting says how Wire.Wait waits and gives up. It is small enough to
// travel in registers: a wait is on every step's path.
type Waiting struct {
	Ctx   context.Context // the wait ends when it does; nil: none
	How   How             // All, Now, Poll
	Site  *Site           // what the wait watches besides its handle, or nil
	Until *Until          // a receive's time limits, or nil: none
}

// How is how a wait gives up, a set of flags.
type How uint8

const (
	// All gives up as soon as any peer is lost, or closed leaving the
	// range's receives unanswerable (Judge, Closed), with ErrPeerLost
	// naming the first rank lost: for a call that needs every rank.
	All How = 1 << iota
	// Now gives up at once: a receive is withdrawn (ErrWithdrawn) unless
	// a message claimed it, which is then waited for as Until.InFlight
	// says; a send not yet committed is dropped (no error), one committed
	// is finished in the background.
	Now
	// Poll finishes a send only if it is over, and otherwise returns
	// ErrPending, the handle still live.
	Poll
)

// Site is what a wait watches besides its handle (a neighbour's
// mailbox): Look looks up to tries times for what it waits for and
// reports found, or an error that ends the wait (the mailbox closed, the
// neighbour at another step); Look(0) only reports whether it is in,
// taking nothing. Wake fires when a neighbour tells this side to look
// again.
type Site struct {
	Look func(tries int) (found bool, err error)
	Wake <-chan struct{}
}

// Until is a receive's time limits.
type Until struct {
	// Deadline: the receive gives up then, with engine's ErrTimeout;
	// zero: none.
	Deadline time.Time
	// InFlight: a receive that gives up while its message's bytes are
	// being read in waits for them until then, and then returns an
	// *InFlightError, its buffer still the transport's; zero: it waits
	// for them for as long as they take.
	InFlight time.Time
}

// Handle is a send or receive started by Wire.Send or Wire.Post, to be
// finished by exactly one Wire.Wait (or, for a send, none if it is zero).
// What it refers to is the transport's; the zero Handle is a finished
// send.
type Handle struct{ ref any }

// MakeHandle is a transport's handle for ref; a send that reads its
// buffer late (Late) has a method Late that says so.
func MakeHandle(ref any) Handle { return Handle{ref: ref} }

// Late reports whether h is a send whose receiver reads its buffer when
// it takes the message (a neighbour's single copy), rather than as the
// send starts as a frame's bytes are: its buffer must not be written
// until Wait returns even once the receiver has sent its own part.
func (h Handle) Late() bool {
	l, ok := h.ref.(interface{ Late() bool })
	return ok && l.Late()
}

// Ref returns what h refers to (for the transport).
func (h Handle) Ref() any { return h.ref }

// Live reports whether h refers to anything: a zero handle is finished.
func (h Handle) Live() bool { return h.ref != nil }

// Owner is the lent range's owner (package collective), which the
// transport asks, with the peer's state locked, at the points where an
// arrival or a receive in the range may have to be dropped or fail; it
// knows nothing of what the owner does with the range.
//
//	a message arrives (a frame, an RTS)      -> Wanted: false drops it, its credit
//	                                            released, an RTS answered "send nothing"
//	a receive is posted, nothing queued      -> Judge(Posting), then Judge(Queued) for each
//	                                            message queued on the range's other tags
//	a message is queued, no receive took it  -> Judge(Queued) for each receive waiting on
//	                                            the range's other tags
//	a peer's Tell arrives                    -> Judge(Told) once, then Judge(Posting) for
//	                                            every receive on the range waiting on it
//	this rank closes                         -> Progress, told to the peers in GOODBYE
//	a peer closed, an All wait is under way  -> Judge(Closed) with its Progress
//
// An error from Judge fails the receive (Told's and Closed's: see
// EventKind). Without an owner every arrival is wanted and nothing fails.
type Owner interface {
	// Wanted reports whether a message from rank from on tag is still
	// wanted.
	Wanted(from int, tag uint32) bool
	// Judge returns the error a receive from rank from on tag expecting
	// meta fails with, as e says what happened, or nil.
	Judge(from int, tag, meta uint32, e Event) error
	// Progress is what this rank's GOODBYE tells its peers, and their
	// Judge(Closed) hears.
	Progress() uint32
}

// EventKind is what happened that Owner.Judge judges.
type EventKind uint8

const (
	// Posting: a receive is being posted (or looked at again after a
	// Told); the event carries nothing.
	Posting EventKind = iota
	// Queued: a message on Tag with meta Meta is queued from the peer.
	Queued
	// Told: the peer told Word about Tag (Wire.Tell); the receive's tag
	// and meta are zero, and the error is ignored: the owner notes it,
	// and the receives waiting are judged again (Posting).
	Told
	// Closed: the peer closed in order, its Progress in Word; a non-nil
	// error means the receives of an All wait can no longer complete
	// (the receive's tag and meta are zero).
	Closed
)

// Event is what happened that Owner.Judge judges.
type Event struct {
	Kind EventKind
	Tag  uint32 // Queued, Told
	Meta uint32 // Queued
	Word uint64 // Told, Closed
}

// Tags is the number of tags in the lent range.
const Tags = 1 << 24

// MailboxMax is the longest part of an exchange that goes through a
// neighbour pair's mailbox.
const MailboxMax = shm.MailboxMax
