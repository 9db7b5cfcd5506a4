// Package plumbtest holds a plumb.Owner for tests of the lent tag range:
// one whose answers the test sets, and which records what it was told.
package plumbtest

import (
	"sync"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// Owner is a plumb.Owner whose answers the test sets before the transport
// runs (Unwanted only while nothing arrives: the owner's answers are read
// under a peer's lock).
type Owner struct {
	Unwanted     map[uint32]bool // tags whose messages are not wanted
	Refused      map[uint32]bool // tags whose receives are refused as posted (ErrRefused)
	ConflictTag  uint32          // a receive on it conflicts with a message queued on ConflictWith (ErrConflict)
	ConflictWith uint32
	Done         uint32 // what Progress reports
	ClosedBelow  uint32 // a peer closed with a progress below it leaves receives unanswerable

	mu       sync.Mutex
	abandons []Abandon
	closed   []uint32
}

// Abandon is a Told the owner heard.
type Abandon struct {
	From int
	Tag  uint32
	Why  uint64
}

var _ plumb.Owner = (*Owner)(nil)

// Wanted implements plumb.Owner.
func (o *Owner) Wanted(_ int, tag uint32) bool { return !o.Unwanted[tag] }

// Judge implements plumb.Owner: a receive from a rank that told anything,
// or on a Refused tag, is refused; ConflictTag conflicts with
// ConflictWith; Told is recorded; Closed below ClosedBelow is an error.
func (o *Owner) Judge(from int, tag, _ uint32, e plumb.Event) error {
	o.mu.Lock()
	defer o.mu.Unlock()
	switch e.Kind {
	case plumb.Posting:
		for _, a := range o.abandons {
			if a.From == from {
				return ErrRefused
			}
		}
		if o.Refused[tag] {
			return ErrRefused
		}
	case plumb.Queued:
		if tag == o.ConflictTag && e.Tag == o.ConflictWith {
			return ErrConflict
		}
	case plumb.Told:
		o.abandons = append(o.abandons, Abandon{from, e.Tag, e.Word})
	case plumb.Closed:
		o.closed = append(o.closed, uint32(e.Word))
		if uint32(e.Word) < o.ClosedBelow {
			return ErrRefused
		}
	}
	return nil
}

// Progress implements plumb.Owner.
func (o *Owner) Progress() uint32 { return o.Done }

// Abandons returns the Tolds the owner heard.
func (o *Owner) Abandons() []Abandon {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]Abandon(nil), o.abandons...)
}

// Closed returns the progress values of the Closed events it judged.
func (o *Owner) Closed() []uint32 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]uint32(nil), o.closed...)
}
