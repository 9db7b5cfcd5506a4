package collective_test

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/boltmesh/boltmesh/engine"
	"github.com/boltmesh/boltmesh/engine/collective"
	"github.com/boltmesh/boltmesh/internal/childproc"
)

// procRanks is the world of TestAllReduceProcesses: rank 0 in the test
// process, the others in child processes.
const procRanks = 4

// procLengths are the element counts every rank reduces, in this order;
// with the default RingMin the small ones take recursive doubling and the
// last one the ring.
var procLengths = []int{0, 1, 7, 1000, 1<<20 + 3}

// Children read their lengths from procLengthsEnv (default procLengths)
// and, when procSkewEnv is set, expect every element off by that much, so
// that they must report a mismatch.
const (
	procLengthsEnv = "BOLTMESH_COLL_TEST_LENGTHS"
	procSkewEnv    = "BOLTMESH_COLL_TEST_SKEW"
)

// procCase is one allreduce of the sequence that every rank runs in the
// same order.
type procCase struct {
	name string
	// run reduces this rank's contribution and compares the result with
	// the reference plus skew: mismatch reports a wrong result, err a
	// failed call (after which the ranks are out of step).
	run func(c *collective.Comm, rank, n int, skew float64) (mismatch, err error)
}

func procCases(lengths []int) []procCase {
	var cases []procCase
	for _, length := range lengths {
		for _, op := range []collective.Op{collective.Sum, collective.Max} {
			cases = append(cases,
				procCaseOf[float32]("float32", op, length),
				procCaseOf[float64]("float64", op, length),
				procCaseOf[int32]("int32", op, length),
				procCaseOf[int64]("int64", op, length))
		}
	}
	return cases
}

func procCaseOf[T collective.Elem](typ string, op collective.Op, length int) procCase {
	name := fmt.Sprintf("%s/%v/len=%d", typ, op, length)
	return procCase{name: name, run: func(c *collective.Comm, rank, n int, skew float64) (error, error) {
		data := make([]T, length)
		for i := range data {
			data[i] = T(contribution(rank, i))
		}
		if err := collective.AllReduce(c, data, op); err != nil {
			return nil, fmt.Errorf("%s: rank %d: %w", name, rank, err)
		}
		for i, got := range data {
			if want := reference(op, n, i) + skew; float64(got) != want {
				return fmt.Errorf("%s: rank %d element %d: got %v, want %v", name, rank, i, got, want), nil
			}
		}
		return nil, nil
	}}
}

// procAllReduceChild is a rank of TestAllReduceProcesses: it runs the
// cases in order, checks every result, and fails if any was wrong.
func procAllReduceChild(rank int, addrs []string, ln net.Listener) error {
	lengths := procLengths
	if s := os.Getenv(procLengthsEnv); s != "" {
		lengths = nil
		for f := range strings.SplitSeq(s, ",") {
			l, err := strconv.Atoi(f)
			if err != nil {
				return err
			}
			lengths = append(lengths, l)
		}
	}
	var skew float64
	if s := os.Getenv(procSkewEnv); s != "" {
		var err error
		if skew, err = strconv.ParseFloat(s, 64); err != nil {
			return err
		}
	}
	tr, err := engine.FromListener(rank, len(addrs), ln, addrs, procOpts)
	if err != nil {
		return err
	}
	defer tr.Close()
	c, err := collective.New(tr, collective.Options{})
	if err != nil {
		return err
	}
	defer c.Close()
	var mismatches []error
	for _, pc := range procCases(lengths) {
		mismatch, err := pc.run(c, rank, len(addrs), skew)
		if err != nil {
			return err
		}
		if mismatch != nil {
			mismatches = append(mismatches, mismatch)
		}
	}
	// Everyone is done before anyone closes.
	if err := tr.Barrier(); err != nil {
		mismatches = append(mismatches, err)
	}
	return errors.Join(mismatches...)
}

// procRank0 joins rank 0 of a mesh whose other ranks are children and
// returns its transport and Comm, closed at cleanup (the transport first,
// so that a call still blocked after a failure returns).
func procRank0(t testing.TB, n int, ln net.Listener, addrs []string) (*engine.NetTransport, *collective.Comm) {
	t.Helper()
	tr, err := engine.FromListener(0, n, ln, addrs, procOpts)
	if err != nil {
		t.Fatal(err)
	}
	c := mustNew(t, tr, collective.Options{})
	t.Cleanup(func() {
		tr.Close()
		c.Close()
	})
	return tr, c
}

// TestAllReduceProcesses runs AllReduce with every rank in its own
// process: float32, float64, int32 and int64, Sum and Max, empty to past
// a million elements. Every rank checks its own result; the children
// report theirs through their exit codes.
func TestAllReduceProcesses(t *testing.T) {
	start := time.Now()
	lns, addrs := procListeners(t, procRanks)
	var children []*procChild
	for r := 1; r < procRanks; r++ {
		children = append(children, procStart(t, "allreduce", r, lns[r], addrs))
	}
	tr, c := procRank0(t, procRanks, lns[0], addrs)
	cases := procCases(procLengths)
	for _, pc := range cases {
		mismatch, err := pc.run(c, 0, procRanks, 0)
		if err != nil {
			t.Fatal(err)
		}
		if mismatch != nil {
			t.Error(mismatch)
		}
	}
	if err := tr.Barrier(); err != nil {
		t.Errorf("final barrier: %v", err)
	}
	procWaitAll(t, children, 30*time.Second)
	t.Logf("%d ranks in %d processes, %d allreduces, %v", procRanks, procRanks, len(cases), time.Since(start).Round(time.Millisecond))
}

// TestAllReduceProcChildMismatchExits checks the checker: a child that
// expects the wrong result must exit non-zero, while the result itself
// (checked by rank 0) is right.
func TestAllReduceProcChildMismatchExits(t *testing.T) {
	const n = 2
	lns, addrs := procListeners(t, n)
	child := procStart(t, "allreduce", 1, lns[1], addrs, procLengthsEnv+"=7", procSkewEnv+"=1")
	tr, c := procRank0(t, n, lns[0], addrs)
	for _, pc := range procCases([]int{7}) {
		mismatch, err := pc.run(c, 0, n, 0)
		if err != nil {
			t.Fatal(err)
		}
		if mismatch != nil {
			t.Error(mismatch)
		}
	}
	if err := tr.Barrier(); err != nil {
		t.Errorf("final barrier: %v", err)
	}
	err := child.WaitFor(30 * time.Second)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 1 {
		t.Fatalf("child expecting wrong results: got %v, want exit status 1", err)
	}
}

// killedWithin bounds how long the surviving ranks may take to give up
// after a rank is killed.
const killedWithin = 10 * time.Second

// TestAllReduceRankKilled kills a rank while the others are in a 16 MiB
// allreduce that needs it: both survivors must fail with ErrPeerLost
// naming that rank, promptly, and leave no goroutine behind. The victim
// is either idle (its transport still reads, so sends to it complete) or
// stopped by SIGSTOP first (so sends to it stall on a full socket).
func TestAllReduceRankKilled(t *testing.T) {
	for _, stop := range []bool{false, true} {
		name := "idle"
		if stop {
			name = "sigstopped"
		}
		t.Run(name, func(t *testing.T) { testRankKilled(t, stop) })
	}
}

func testRankKilled(t *testing.T, sigstop bool) {
	const n, victim, bytes = 3, 2, 16 << 20
	lns, addrs := procListeners(t, n)
	child := procStart(t, "block", victim, lns[victim], addrs)
	ts := make([]*engine.NetTransport, victim)
	errs := make([]error, victim)
	var wg sync.WaitGroup
	for r := range victim {
		wg.Go(func() { ts[r], errs[r] = engine.FromListener(r, n, lns[r], addrs, procOpts) })
	}
	wg.Wait()
	cs := make([]*collective.Comm, victim)
	for r := range victim {
		if errs[r] == nil {
			cs[r] = mustNew(t, ts[r], collective.Options{})
		}
	}
	closeAll := func() {
		for r := range victim {
			if ts[r] != nil {
				ts[r].Close()
			}
		}
		for r := range victim {
			if cs[r] != nil {
				cs[r].Close()
			}
		}
	}
	t.Cleanup(closeAll)
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	if sigstop {
		if err := child.Process.Signal(syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
	}
	type result struct {
		rank int
		err  error
		at   time.Time
	}
	results := make(chan result, victim)
	for r := range victim {
		data := make([]float32, bytes/4)
		for i := range data {
			data[i] = float32(contribution(r, i))
		}
		go func() {
			err := collective.AllReduce(cs[r], data, collective.Sum)
			results <- result{r, err, time.Now()}
		}()
	}
	select {
	case res := <-results:
		t.Fatalf("rank %d's AllReduce returned (%v) while rank %d was alive but absent", res.rank, res.err, victim)
	case <-time.After(300 * time.Millisecond): // well into the transfer
	}
	killed := time.Now()
	if err := child.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	for range victim {
		select {
		case res := <-results:
			took := res.at.Sub(killed)
			if !errors.Is(res.err, engine.ErrPeerLost) {
				t.Fatalf("rank %d: got %v, want ErrPeerLost", res.rank, res.err)
			}
			var pe *engine.PeerError
			if !errors.As(res.err, &pe) || pe.Rank != victim {
				t.Errorf("rank %d: got %v, want a *PeerError for rank %d", res.rank, res.err, victim)
			}
			if took >= killedWithin {
				t.Errorf("rank %d gave up %v after the kill, want < %v", res.rank, took, killedWithin)
			}
			t.Logf("rank %d gave up %v after the kill: %v", res.rank, took.Round(time.Microsecond), res.err)
		case <-time.After(killedWithin):
			t.Fatalf("AllReduce still blocked %v after rank %d was killed", killedWithin, victim)
		}
	}
	if err := child.WaitFor(killedWithin); err == nil {
		t.Error("killed child exited cleanly")
	}
	closeAll()
	goleak.VerifyNone(t, childproc.Lasting...)
}
