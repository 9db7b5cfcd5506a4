package spin

import (
	"runtime"
	"time"
)

// A Pacer paces one spin, the first phase of a wait: the waiter polls
// (its link, a mailbox) and pauses every few polls (PollStep, LookStep);
// each pause reads the clock, ends the spin once it has run its budget
// since bytes last moved (or since it began), and otherwise gives others
// their turn as the machine wants:
//
//   - on a crowded machine (more ranks than cores) every pause yields the
//     P (runtime.Gosched) and the core (Yield), so that the rank waited
//     for gets to run;
//   - elsewhere a spin whose polls are system calls (sockets) yields the
//     P at every pause, so that a goroutine of this process waiting for
//     it (the other end of an exchange in one process, an event loop)
//     runs within one wait; one whose polls cost a load (pipes) only
//     every Every, since a yield with a P idle wakes a thread, which
//     takes a core from the other end of an exchange on the same host;
//   - past give (Options.SpinYield; 0: never) without bytes moving, the
//     core is given up too, every Every at most.
//
// The zero Pacer is not ready: Start it.
type Pacer struct {
	budget, give   time.Duration
	cheap, crowded bool
	started        bool
	start          time.Duration // the clock at the first pause
	quiet          time.Duration // into the spin when bytes last moved
	yielded, gave  time.Duration // into the spin when it last yielded, last gave its core up
}

// Every is how long a spin on cheap polls runs between yields of the P,
// and a spin past its give between givings of its core.
const Every = 10 * time.Microsecond

// Start readies p for a spin of budget without bytes moving, giving the
// core up past give (0: never), whose polls are cheap or not, on a
// crowded machine or not.
func (p *Pacer) Start(budget, give time.Duration, cheap, crowded bool) {
	*p = Pacer{budget: budget, give: give, cheap: cheap, crowded: crowded}
}

// Pause is the spin's pause: moved says whether bytes moved since the
// last one. It reports false once the spin's budget has run out since
// they last did.
func (p *Pacer) Pause(moved bool) bool {
	now := monotime()
	if !p.started {
		p.started, p.start = true, now
	}
	el := now - p.start
	if moved {
		p.quiet = el
	} else if el-p.quiet > p.budget {
		return false
	}
	if p.crowded {
		runtime.Gosched()
		Yield()
		return true
	}
	if yieldDue(p.cheap, el, p.yielded) {
		runtime.Gosched()
		p.yielded = el
	}
	if p.give > 0 && el-p.quiet >= p.give && el-p.gave >= Every {
		giveCore()
		p.gave = el
	}
	return true
}

// yieldDue reports whether a spin whose polls are cheap (or system
// calls), el into its timing and last yielding at yielded, yields at this
// pause.
func yieldDue(cheap bool, el, yielded time.Duration) bool {
	return !cheap || el-yielded >= Every
}

// PollStep is how many polls of a link a spin makes between pauses: 32
// on a link whose polls are cheap on a machine with a core per rank, else
// 8. A poll of a pipe that finds nothing costs little more than a
// cache-line load, a reading of the clock several times that
// (bench/RESULTS.md, "the spin's clock"), so that a wait that ends within
// about a microsecond reads no clock at all; a spin on sockets, or one
// that gives its core up at every pause (crowded), reads it every 8.
func PollStep(cheap, crowded bool) int {
	if cheap && !crowded {
		return 32
	}
	return 8
}

// LookStep is how many looks (loads of shared memory) a spin makes
// between pauses: a few on a crowded machine, where each pause gives the
// core up, 256 elsewhere.
func LookStep(crowded bool) int {
	if crowded {
		return 8
	}
	return 256
}

// giveCore is Yield for a spin past its give.
func giveCore() {
	if testHookGiveCore != nil {
		testHookGiveCore()
	}
	Yield()
}

// testHookGiveCore, set only by tests, is called as giveCore gives the
// core up.
var testHookGiveCore func()

// monotime reads the monotonic clock only (time.Now reads the wall clock
// too).
func monotime() time.Duration { return time.Since(clockEpoch) }

// clockEpoch is monotime's zero.
var clockEpoch = time.Now()

// SetGiveCoreHook has f called each time a spin gives its core up past
// its give, for a test; it returns what undoes it.
func SetGiveCoreHook(f func()) (undo func()) {
	testHookGiveCore = f
	return func() { testHookGiveCore = nil }
}
