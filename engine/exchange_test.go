package engine_test

import (
	"errors"
	"sync"

	"github.com/boltmesh/boltmesh/engine"
)

// exchange makes rank me send msgs messages on each of tags to every other
// rank (and itself), each tag from its own goroutine, while receiving the
// same from everyone, verifying every byte. Sizes go up to max.
func exchange(t engine.Transport, tags, msgs, max int) error {
	me, n := t.Rank(), t.WorldSize()
	var wg sync.WaitGroup
	errc := make(chan error, 2*n*tags)
	for peer := range n {
		for tag := range tags {
			wg.Go(func() { errc <- sendStream(t, me, peer, tag, msgs, max) })
			wg.Go(func() { errc <- recvStream(t, peer, me, tag, msgs, max) })
		}
	}
	wg.Wait()
	close(errc)
	var errs []error
	for err := range errc {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func sendStream(t engine.Transport, from, to, tag, msgs, max int) error {
	for seq := range msgs {
		if err := t.Send(to, tag, pattern(from, to, tag, seq, sizeFor(from, to, tag, seq, max))); err != nil {
			return err
		}
	}
	return nil
}

// recvStream alternates Recv and RecvInto so both paths are exercised.
func recvStream(t engine.Transport, from, to, tag, msgs, max int) error {
	buf := make([]byte, max)
	for seq := range msgs {
		n := sizeFor(from, to, tag, seq, max)
		var got []byte
		if seq%2 == 0 {
			m, err := t.RecvInto(from, tag, buf)
			if err != nil {
				return err
			}
			got = buf[:m]
		} else {
			var err error
			if got, err = t.Recv(from, tag); err != nil {
				return err
			}
		}
		if err := check(got, from, to, tag, seq, n); err != nil {
			return err
		}
	}
	return nil
}
