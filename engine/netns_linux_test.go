package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/boltmesh/boltmesh/engine"
)

// The network-namespace tests run each rank as a child process inside its
// own namespace, on a bridge in a hub namespace. TestNetnsPartition makes
// one rank's link silent (down at both ends: no FIN, no RST, no ICMP) and
// checks that every rank notices within the bound Options.KeepAlive
// promises; TestNetnsSlowLink (netns_slowlink_linux_test.go) checks that a
// slow link loses nobody.
//
// Both re-execute the test binary under `ip netns exec` with
// -test.run=^TestNetnsChild$ and netnsRoleEnv set; the role's script says
// which test the child serves. The child prints "NETNS {json}" lines
// (netnsReport) on stdout; the partition script waits for "go" on stdin
// before the partition phase.
const (
	netnsRoleEnv   = "BOLTMESH_NETNS_ROLE" // "script=S rank=R world=W keepalive=D for=D peers=A,B,C"
	netnsLine      = "NETNS "
	netnsRanks     = 3
	netnsVictim    = netnsRanks - 1 // the rank whose link goes silent
	netnsPort      = 7000
	netnsKeepAlive = 0                       // Options.KeepAlive of the ranks: the default
	netnsLostMax   = 10 * time.Second        // allowed detection time (4.25*KeepAlive plus a wide margin)
	netnsOpLimit   = 30 * time.Second        // a child gives up on a lost-peer operation after this
	netnsPhase     = 1250 * time.Millisecond // the longest gap between heartbeats (default KeepAlive)
	netnsBigSend   = 32 << 20                // larger than any socket buffer: stays unacked
	netnsRecvTag   = 7
	netnsSendTag   = 8
	netnsAfterTag  = 9
)

// netnsReport is one line a child sends to the parent.
type netnsReport struct {
	Rank int
	Step string // "ready", "lost", "survivors", "done" or "error"
	Op   string // for "lost": "recv" or "send"
	Peer int    // for "lost": the peer operated on
	// Lost is errors.Is(err, engine.ErrPeerLost), Silent errors.Is(err,
	// engine.ErrNoHeartbeat); PeerRank is the Rank of the
	// *engine.PeerError in err, or -1.
	Lost     bool
	Silent   bool
	PeerRank int
	Took     time.Duration // from the operation's start to its error
	Err      string
	// For "done" (the slow-link script): messages and bytes this rank
	// received, checked, and its longest wait in one Send.
	Msgs      int
	Bytes     int64
	LongestTx time.Duration
}

// netnsRole is what a child reads from netnsRoleEnv.
type netnsRole struct {
	script      string // "partition" or "slowlink"
	rank, world int
	keepAlive   time.Duration // Options.KeepAlive; 0 is the default
	dur         time.Duration // how long the slow-link script sends
	peers       []string
}

// String formats r as the value of netnsRoleEnv.
func (r netnsRole) String() string {
	return fmt.Sprintf("script=%s rank=%d world=%d keepalive=%v for=%v peers=%s", r.script, r.rank, r.world, r.keepAlive, r.dur, strings.Join(r.peers, ","))
}

// parseNetnsRole parses a netnsRoleEnv value.
func parseNetnsRole(s string) (netnsRole, error) {
	var r netnsRole
	var err error
	seen := 0
	for _, f := range strings.Fields(s) {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return r, fmt.Errorf("bad field %q in %q", f, s)
		}
		switch k {
		case "script":
			r.script = v
		case "for":
			r.dur, err = time.ParseDuration(v)
		case "rank":
			r.rank, err = strconv.Atoi(v)
		case "world":
			r.world, err = strconv.Atoi(v)
		case "keepalive":
			r.keepAlive, err = time.ParseDuration(v)
		case "peers":
			r.peers = strings.Split(v, ",")
		default:
			err = fmt.Errorf("unknown field %q", k)
		}
		if err != nil {
			return r, fmt.Errorf("%s in %q: %w", k, s, err)
		}
		seen++
	}
	if seen != 6 {
		return r, fmt.Errorf("want script, rank, world, keepalive, for and peers in %q", s)
	}
	return r, nil
}

// TestNetnsChild is a rank of TestNetnsPartition or TestNetnsSlowLink; it
// does nothing unless one of them started it.
func TestNetnsChild(t *testing.T) {
	spec := os.Getenv(netnsRoleEnv)
	if spec == "" {
		t.Skip("helper of TestNetnsPartition and TestNetnsSlowLink: runs only as their child process, inside a network namespace")
	}
	out := &netnsOut{w: os.Stdout}
	role, err := parseNetnsRole(spec)
	if err == nil {
		switch role.script {
		case "partition":
			err = runNetnsChild(role, out, os.Stdin)
		case "slowlink":
			err = runSlowLinkChild(role, out)
		default:
			err = fmt.Errorf("unknown script %q", role.script)
		}
	}
	if err != nil {
		out.report(netnsReport{Rank: role.rank, Step: "error", Err: err.Error()})
		t.Fatal(err)
	}
}

// netnsOut writes reports as whole lines from concurrent goroutines.
type netnsOut struct {
	mu sync.Mutex
	w  io.Writer
}

// report writes r as one "NETNS {json}" line.
func (o *netnsOut) report(r netnsReport) {
	b, err := json.Marshal(r)
	if err != nil {
		panic(err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	fmt.Fprintf(o.w, "%s%s\n", netnsLine, b)
}

// runNetnsChild is a child's script: join the mesh, exchange with every
// rank and barrier, report ready, wait for "go" (the victim's link is down
// by then), run the operations that must fail with ErrPeerLost, and, on the
// surviving ranks, check they still talk to each other.
func runNetnsChild(role netnsRole, out *netnsOut, in io.Reader) error {
	tr, err := engine.Bind(role.rank, role.world, role.peers, engine.Options{KeepAlive: role.keepAlive})
	if err != nil {
		return fmt.Errorf("bind: %w", err)
	}
	defer tr.Close()
	if err := exchange(tr, 2, 3, 1<<20); err != nil {
		return fmt.Errorf("exchange before the partition: %w", err)
	}
	if err := tr.Barrier(); err != nil {
		return fmt.Errorf("barrier before the partition: %w", err)
	}
	var big []byte // built now so that it does not delay the timed send
	if role.rank == 1 {
		big = pattern(1, netnsVictim, netnsSendTag, 0, netnsBigSend)
	}
	out.report(netnsReport{Rank: role.rank, Step: "ready"})

	sc := bufio.NewScanner(in)
	if !sc.Scan() || sc.Text() != "go" {
		return fmt.Errorf("waiting for go: got %q, %v", sc.Text(), sc.Err())
	}

	var wg sync.WaitGroup
	lost := func(op string, peer int, f func(ctx context.Context) error) {
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), netnsOpLimit)
			defer cancel()
			start := time.Now()
			err := f(ctx)
			r := netnsReport{Rank: role.rank, Step: "lost", Op: op, Peer: peer, Took: time.Since(start), PeerRank: -1}
			switch {
			case err != nil:
				r.Err = err.Error()
			case op == "send":
				r.Err = "no error: SendContext reached its deadline with part of the message written, and committed the rest"
			default:
				r.Err = "no error"
			}
			r.Lost = errors.Is(err, engine.ErrPeerLost)
			r.Silent = errors.Is(err, engine.ErrNoHeartbeat)
			if pe := (*engine.PeerError)(nil); errors.As(err, &pe) {
				r.PeerRank = pe.Rank
			}
			out.report(r)
		})
	}
	recvFrom := func(peer int) {
		lost("recv", peer, func(ctx context.Context) error {
			_, err := tr.RecvContext(ctx, peer, netnsRecvTag)
			return err
		})
	}
	switch role.rank {
	case 0: // idle connection: nothing unacknowledged
		recvFrom(netnsVictim)
	case 1: // data in flight: keepalive is silent, the heartbeat must tell
		recvFrom(netnsVictim)
		lost("send", netnsVictim, func(ctx context.Context) error {
			return tr.SendContext(ctx, netnsVictim, netnsSendTag, big)
		})
	case netnsVictim:
		for p := range netnsVictim {
			recvFrom(p)
		}
	}
	wg.Wait()
	if role.rank == netnsVictim {
		return nil
	}

	// The survivors 0 and 1 still talk to each other, bytes checked.
	other := 1 - role.rank
	const n = 1 << 20
	errc := make(chan error, 1)
	go func() { errc <- tr.Send(other, netnsAfterTag, pattern(role.rank, other, netnsAfterTag, 0, n)) }()
	got, err := tr.Recv(other, netnsAfterTag)
	if err == nil {
		err = check(got, other, role.rank, netnsAfterTag, 0, n)
	}
	if serr := <-errc; err == nil {
		err = serr
	}
	r := netnsReport{Rank: role.rank, Step: "survivors"}
	if err != nil {
		r.Err = err.Error()
	}
	out.report(r)
	return nil
}

// netnsLab is the namespaces and links of one TestNetnsPartition run.
type netnsLab struct {
	hub      string   // hub namespace, holding the bridge
	bridge   string   // bridge in hub
	ns       []string // rank r's namespace
	hubSide  []string // rank r's veth end on the bridge, in hub
	rankSide []string // rank r's veth end in ns[r]
	addrs    []string // rank r's host:port
}

// ipCmd runs ip with args and fails the test with its output on error.
func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// netnsSubnet picks the third octet of a 10.232.X.0/24 that no address or
// route of this namespace uses. The rank namespaces are private, so a clash
// could only confuse someone reading addresses; avoid it anyway.
func netnsSubnet(t *testing.T, pid int) int {
	used, _ := exec.Command("ip", "-o", "-4", "addr", "show").Output()
	routes, _ := exec.Command("ip", "-4", "route", "show", "table", "all").Output()
	all := string(used) + string(routes)
	for i := range 254 {
		x := 1 + (pid+i)%254
		if !strings.Contains(all, fmt.Sprintf("10.232.%d.", x)) {
			return x
		}
	}
	t.Skip("every 10.232.X.0/24 is in use on this machine")
	return 0
}

// newNetnsLab builds the hub namespace with a bridge and one namespace per
// rank with a veth to the bridge; everything is removed at cleanup.
func newNetnsLab(t *testing.T, ranks int) *netnsLab {
	pid := os.Getpid()
	x := netnsSubnet(t, pid)
	l := &netnsLab{hub: fmt.Sprintf("bmtest%d-hub", pid), bridge: fmt.Sprintf("bm%dbr", pid)}
	for r := range ranks {
		l.ns = append(l.ns, fmt.Sprintf("bmtest%d-r%d", pid, r))
		l.hubSide = append(l.hubSide, fmt.Sprintf("bm%dh%d", pid, r))
		l.rankSide = append(l.rankSide, fmt.Sprintf("bm%dr%d", pid, r))
		l.addrs = append(l.addrs, fmt.Sprintf("10.232.%d.%d:%d", x, r+1, netnsPort))
	}
	t.Cleanup(func() { l.remove(t) })
	ipCmd(t, "netns", "add", l.hub)
	ipCmd(t, "-n", l.hub, "link", "add", l.bridge, "type", "bridge")
	ipCmd(t, "-n", l.hub, "link", "set", l.bridge, "up")
	for r := range ranks {
		ipCmd(t, "netns", "add", l.ns[r])
		// Both ends are created inside their namespaces: deleting the
		// namespaces deletes the pair, and nothing touches this namespace.
		ipCmd(t, "link", "add", l.hubSide[r], "netns", l.hub, "type", "veth", "peer", "name", l.rankSide[r], "netns", l.ns[r])
		ipCmd(t, "-n", l.hub, "link", "set", l.hubSide[r], "master", l.bridge)
		ipCmd(t, "-n", l.hub, "link", "set", l.hubSide[r], "up")
		ipCmd(t, "-n", l.ns[r], "link", "set", "lo", "up")
		ipCmd(t, "-n", l.ns[r], "addr", "add", fmt.Sprintf("10.232.%d.%d/24", x, r+1), "dev", l.rankSide[r])
		ipCmd(t, "-n", l.ns[r], "link", "set", l.rankSide[r], "up")
	}
	return l
}

// remove deletes every namespace and link of l that exists, and reports
// any that survive.
func (l *netnsLab) remove(t *testing.T) {
	names := append([]string{l.hub}, l.ns...)
	for _, ns := range names {
		if exec.Command("ip", "netns", "pids", ns).Run() == nil { // it exists
			if out, err := exec.Command("ip", "netns", "del", ns).CombinedOutput(); err != nil {
				t.Errorf("cleanup: ip netns del %s: %v: %s", ns, err, out)
			}
		}
	}
	// The links lived only in those namespaces; make sure none leaked here.
	for _, dev := range append(append([]string{l.bridge}, l.hubSide...), l.rankSide...) {
		if exec.Command("ip", "link", "show", "dev", dev).Run() == nil {
			if out, err := exec.Command("ip", "link", "del", "dev", dev).CombinedOutput(); err != nil {
				t.Errorf("cleanup: ip link del %s: %v: %s", dev, err, out)
			}
		}
	}
	list, _ := exec.Command("ip", "netns", "list").Output()
	for _, ns := range names {
		for _, line := range strings.Split(string(list), "\n") {
			if f := strings.Fields(line); len(f) > 0 && f[0] == ns {
				t.Errorf("cleanup: namespace %s still exists", ns)
			}
		}
	}
}

// waitIdle waits until no rank has unacknowledged bytes on any connection
// (Send-Q 0 everywhere), so that the connections the partition test calls
// idle are.
func (l *netnsLab) waitIdle(t *testing.T) {
	t.Helper()
	var busy []string
	for start := time.Now(); time.Since(start) < 5*time.Second; time.Sleep(20 * time.Millisecond) {
		busy = busy[:0]
		for _, ns := range l.ns {
			out, err := exec.Command("ip", "netns", "exec", ns, "ss", "-Htn", "state", "established").CombinedOutput()
			if err != nil {
				t.Fatalf("ss in %s: %v: %s", ns, err, out)
			}
			for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
				if f := strings.Fields(line); len(f) >= 4 && f[1] != "0" {
					busy = append(busy, ns+": "+line)
				}
			}
		}
		if len(busy) == 0 {
			return
		}
	}
	t.Fatalf("connections still have unacknowledged bytes after 5 s:\n%s", strings.Join(busy, "\n"))
}

// netnsChild is a running rank: its process, stdin, and reports.
type netnsChild struct {
	rank    int
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	mu      sync.Mutex
	other   []string // output lines that are not reports
	done    chan struct{}
	waitErr error
}

// startNetnsChild runs role (its rank, world and peers taken from l) as
// TestNetnsChild inside the rank's namespace; its reports go to reports.
// The process is killed and reaped at cleanup.
func startNetnsChild(t *testing.T, l *netnsLab, role netnsRole, reports chan<- netnsReport) *netnsChild {
	t.Helper()
	rank := role.rank
	role.world, role.peers = len(l.ns), l.addrs
	cmd := exec.Command("ip", "netns", "exec", l.ns[rank], os.Args[0], "-test.run=^TestNetnsChild$", "-test.count=1", fmt.Sprintf("-test.timeout=%v", role.dur+3*time.Minute))
	cmd.Env = append(os.Environ(), netnsRoleEnv+"="+role.String())
	c := &netnsChild{rank: rank, cmd: cmd, done: make(chan struct{})}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if c.stdin, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		defer close(c.done)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			line := sc.Text()
			if js, ok := strings.CutPrefix(line, netnsLine); ok {
				var r netnsReport
				if err := json.Unmarshal([]byte(js), &r); err == nil {
					reports <- r
					continue
				}
			}
			c.mu.Lock()
			c.other = append(c.other, line)
			c.mu.Unlock()
		}
		c.waitErr = cmd.Wait()
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-c.done
		if t.Failed() {
			c.mu.Lock()
			t.Logf("rank %d output:\n%s", rank, strings.Join(c.other, "\n"))
			c.mu.Unlock()
		}
	})
	return c
}

// requireNetns skips t in -short mode (the test does what why says), when
// not root, or when one of the commands is missing.
func requireNetns(t *testing.T, why string, cmds ...string) {
	t.Helper()
	switch {
	case testing.Short():
		t.Skipf("builds network namespaces and %s; skipped in -short mode", why)
	case os.Geteuid() != 0:
		t.Skip("needs root to create network namespaces, veths and a bridge")
	}
	for _, cmd := range cmds {
		if _, err := exec.LookPath(cmd); err != nil {
			t.Skipf("needs the %s command (iproute2) to build and watch network namespaces", cmd)
		}
	}
}

// TestNetnsPartition checks that a rank whose link goes silent is reported
// lost (ErrPeerLost, cause ErrNoHeartbeat) by every other rank, and itself
// sees them lost, within the bound of the default Options.KeepAlive, both
// on an idle connection and with data in flight, while the other ranks keep
// working.
func TestNetnsPartition(t *testing.T) {
	requireNetns(t, "waits for the silent rank to be dropped", "ip", "ss")
	l := newNetnsLab(t, netnsRanks)
	reports := make(chan netnsReport, 64)
	children := make([]*netnsChild, netnsRanks)
	for r := range netnsRanks {
		children[r] = startNetnsChild(t, l, netnsRole{script: "partition", rank: r, keepAlive: netnsKeepAlive}, reports)
	}
	deadline := time.After(2 * time.Minute)
	// next returns the next report, failing on a child error or timeout.
	next := func(what string) netnsReport {
		t.Helper()
		select {
		case r := <-reports:
			if r.Step == "error" {
				t.Fatalf("rank %d: %s", r.Rank, r.Err)
			}
			return r
		case <-deadline:
			t.Fatalf("timed out waiting for %s", what)
		}
		panic("unreachable")
	}

	// All pairs exchanged checked bytes and passed a barrier.
	for range netnsRanks {
		if r := next("ready"); r.Step != "ready" {
			t.Fatalf("got %+v, want a ready report", r)
		}
	}

	// Let heartbeats pass, a random while, so that the connections are as
	// in a long run: idle, the last thing heard a heartbeat, at any point
	// of its period. Then let the last ACKs arrive (a delayed ACK would
	// leave data unacknowledged): the idle connections must be really idle.
	time.Sleep(time.Second + rand.N(netnsPhase))
	l.waitIdle(t)

	// Silence the victim's link at both ends: nothing is closed, no RST or
	// ICMP reaches anyone, packets just vanish.
	ipCmd(t, "-n", l.hub, "link", "set", l.hubSide[netnsVictim], "down")
	ipCmd(t, "-n", l.ns[netnsVictim], "link", "set", l.rankSide[netnsVictim], "down")
	cut := time.Now()
	for _, c := range children {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatalf("rank %d: %v", c.rank, err)
		}
	}

	type key struct {
		rank int
		op   string
		peer int
	}
	want := map[key]bool{
		{0, "recv", netnsVictim}: true,
		{1, "recv", netnsVictim}: true,
		{1, "send", netnsVictim}: true,
		{netnsVictim, "recv", 0}: true,
		{netnsVictim, "recv", 1}: true,
	}
	survivors := 0
	for len(want) > 0 || survivors < 2 {
		r := next("lost-peer and survivor reports")
		switch r.Step {
		case "lost":
			k := key{r.Rank, r.Op, r.Peer}
			if !want[k] {
				t.Fatalf("unexpected report %+v", r)
			}
			delete(want, k)
			t.Logf("rank %d %s with rank %d: failed after %v (%v after the cut): %s", r.Rank, r.Op, r.Peer, r.Took.Round(time.Millisecond), time.Since(cut).Round(time.Millisecond), r.Err)
			if !r.Lost || !r.Silent {
				t.Errorf("rank %d %s with rank %d: got %q, want ErrPeerLost with cause ErrNoHeartbeat", r.Rank, r.Op, r.Peer, r.Err)
			}
			if r.PeerRank != r.Peer {
				t.Errorf("rank %d %s with rank %d: error names rank %d, want a *PeerError for rank %d", r.Rank, r.Op, r.Peer, r.PeerRank, r.Peer)
			}
			if r.Took > netnsLostMax {
				t.Errorf("rank %d %s with rank %d: took %v, want at most %v (default KeepAlive)", r.Rank, r.Op, r.Peer, r.Took, netnsLostMax)
			}
		case "survivors":
			if r.Err != "" {
				t.Errorf("rank %d with rank %d after the partition: %s", r.Rank, 1-r.Rank, r.Err)
			}
			survivors++
		default:
			t.Fatalf("unexpected report %+v", r)
		}
	}
	for _, c := range children {
		c.stdin.Close()
		select {
		case <-c.done:
			if c.waitErr != nil {
				t.Errorf("rank %d exited: %v", c.rank, c.waitErr)
			}
		case <-deadline:
			t.Fatalf("rank %d did not exit", c.rank)
		}
	}
}
