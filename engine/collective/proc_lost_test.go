package collective_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
)

// procVictimEnv tells the ranks of TestAllReduceKilledRankNamed which rank
// the test kills.
const procVictimEnv = "BOLTMESH_COLL_TEST_VICTIM"

// lossLoopLengths are the float32 counts the loop's allreduces take turns
// at: recursive doubling, and the ring in pieces.
var lossLoopLengths = []int{1000, 1 << 18}

// lossLoop runs allreduces on c until one fails, and returns that error.
// After the calls in started, it signals (once) that the loop is running.
func lossLoop(c *collective.Comm, rank int, started int, running func()) error {
	bufs := make([][]float32, len(lossLoopLengths))
	for i, n := range lossLoopLengths {
		bufs[i] = make([]float32, n)
	}
	for i := 0; ; i++ {
		data := bufs[i%len(bufs)]
		for j := range data {
			data[j] = float32(contribution(rank, j))
		}
		if err := collective.AllReduce(c, data, collective.Sum); err != nil {
			return err
		}
		if i+1 == started && running != nil {
			running()
		}
	}
}

// checkLossNamed checks the error of a survivor of a killed victim: it
// must be ErrPeerLost naming the victim, with the ranks that closed after
// it (none of them the victim or this rank) listed apart.
func checkLossNamed(err error, rank, victim, n int) error {
	var pe *engine.PeerError
	if !errors.Is(err, engine.ErrPeerLost) || !errors.As(err, &pe) {
		return fmt.Errorf("rank %d: got %v, want ErrPeerLost", rank, err)
	}
	if pe.Rank != victim {
		return fmt.Errorf("rank %d: the error names rank %d, not the killed rank %d: %v", rank, pe.Rank, victim, err)
	}
	for _, r := range pe.ClosedAfter {
		if r == victim || r == rank || r < 0 || r >= n {
			return fmt.Errorf("rank %d: ClosedAfter %v lists rank %d: %v", rank, pe.ClosedAfter, r, err)
		}
	}
	if slices.Contains(pe.ClosedAfter, victim) {
		return fmt.Errorf("rank %d: ClosedAfter %v lists the killed rank: %v", rank, pe.ClosedAfter, err)
	}
	return nil
}

// procLossChild is a rank of TestAllReduceKilledRankNamed: it runs the
// loss loop until its allreduce fails, checks that the error names the
// victim, and closes its transport at once (telling the others it left),
// as a program that gives up on an error does.
func procLossChild(rank int, addrs []string, ln net.Listener) error {
	victim, err := strconv.Atoi(os.Getenv(procVictimEnv))
	if err != nil {
		return err
	}
	tr, err := engine.FromListener(rank, len(addrs), ln, addrs, procOpts)
	if err != nil {
		return err
	}
	c, err := collective.New(tr, collective.Options{})
	if err != nil {
		tr.Close()
		return err
	}
	err = lossLoop(c, rank, 0, nil)
	tr.Close()
	c.Close()
	return checkLossNamed(err, rank, victim, len(addrs))
}

// TestAllReduceKilledRankNamed: one of 4 ranks (in 4 processes) is
// SIGKILLed while every rank runs allreduces in a loop, and each survivor
// closes its transport as soon as its call fails. A survivor that fails
// later may then see the others' orderly closes as well as the loss: its
// error must still name the killed rank (ErrPeerLost, *engine.PeerError's
// Rank), with the survivors that closed after it in ClosedAfter. Twenty
// rounds, the victim taking turns among ranks 1-3 (rank 0 runs in this
// process, the others in child processes).
func TestAllReduceKilledRankNamed(t *testing.T) {
	const n, rounds = 4, 20
	if testing.Short() {
		t.Skip("20 rounds of 3 child processes")
	}
	for round := range rounds {
		victim := 1 + round%(n-1)
		if err := lossRound(t, n, victim); err != nil {
			t.Errorf("round %d (victim %d): %v", round, victim, err)
		}
	}
}

// lossRound runs one round of TestAllReduceKilledRankNamed and returns
// what went wrong.
func lossRound(t *testing.T, n, victim int) error {
	lns, addrs := procListeners(t, n)
	children := make([]*procChild, n)
	for r := 1; r < n; r++ {
		children[r] = procStart(t, "lossloop", r, lns[r], addrs, procVictimEnv+"="+strconv.Itoa(victim))
	}
	tr, err := engine.FromListener(0, n, lns[0], addrs, procOpts)
	if err != nil {
		return err
	}
	c, err := collective.New(tr, collective.Options{})
	if err != nil {
		tr.Close()
		return err
	}
	running := make(chan struct{})
	res := make(chan error, 1)
	go func() { res <- lossLoop(c, 0, 10, func() { close(running) }) }()
	select {
	case <-running:
	case err := <-res:
		tr.Close()
		return fmt.Errorf("rank 0's loop failed before the kill: %v", err)
	case <-time.After(killedWithin):
		tr.Close()
		return errors.New("rank 0's loop did not get going")
	}
	if err := children[victim].Process.Kill(); err != nil {
		tr.Close()
		return err
	}
	var errs []error
	select {
	case err := <-res:
		tr.Close()
		t.Logf("victim %d: rank 0: %v", victim, err)
		errs = append(errs, checkLossNamed(err, 0, victim, n))
	case <-time.After(killedWithin):
		tr.Close()
		<-res
		errs = append(errs, fmt.Errorf("rank 0 still in its allreduce %v after the kill", killedWithin))
	}
	c.Close()
	for r := 1; r < n; r++ {
		err := children[r].WaitFor(killedWithin)
		if r == victim {
			if err == nil {
				errs = append(errs, errors.New("the killed rank exited cleanly"))
			}
		} else if err != nil {
			errs = append(errs, fmt.Errorf("rank %d (child process): %v", r, err))
		}
	}
	return errors.Join(errs...)
}
