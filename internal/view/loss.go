package view

// Loss is the first loss a rank knows of. When a rank dies in the middle
// of a collective call, each survivor fails its call, and a program that
// gives up on the error closes its transport, which tells every peer (a
// goodbye). A survivor that hears such a close before its own connection
// to the dead rank breaks would blame the survivor that closed. So each
// rank keeps the first loss it knows of, and the ranks that closed in
// order after it:
//
//   - a peer whose connection broke without a goodbye (Members.Lost), or
//   - the rank a closing peer's goodbye reports as the first loss it knew
//     of, if none is known yet (Members.Closed);
//
// every goodbye a rank sends reports its own, so the news passes on from
// close to close.
type Loss struct {
	First       int   // the first rank known lost, or -1
	Cause       error // what broke its connection; nil while Reported
	Reported    bool  // First is known only from a goodbye's report
	ClosedAfter []int // the peers that closed in order once First was known, in that order
}

// lost records that rank's connection broke, without a goodbye, of cause.
func (s *Loss) lost(rank int, cause error) {
	switch {
	case s.First < 0:
		s.First, s.Cause = rank, cause
	case s.First == rank && s.Reported:
		s.Cause, s.Reported = cause, false // heard of first, now seen
	}
}

// closed records that rank closed in order; its goodbye reported rank
// reported as the first loss it knew of (-1: none).
func (s *Loss) closed(rank, reported int) {
	if s.First < 0 && reported >= 0 {
		s.First, s.Reported = reported, true
	}
	if s.First >= 0 {
		s.ClosedAfter = append(s.ClosedAfter, rank)
	}
}
