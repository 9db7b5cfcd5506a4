package engine

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/boltmesh/boltmesh/frame"
	"github.com/boltmesh/boltmesh/heap"
	linkshm "github.com/boltmesh/boltmesh/internal/link/shm"
	"github.com/boltmesh/boltmesh/internal/lograte"
	"github.com/boltmesh/boltmesh/internal/plumb"
	"github.com/boltmesh/boltmesh/ioloop"
)

// NetTransport is a transport driven by an ioloop.Loop. As a full mesh
// (Bind, FromListener), each pair of ranks is joined by Options.Streams
// TCP data connections plus one control connection (frame/spec.md,
// "Streams and striping"), and neighbours on one host move their frames
// through shared memory instead (Options.SharedMemory). As a star (CoordinatorListen,
// WorkerDial), each worker has one TCP connection to the coordinator,
// which forwards the frames between workers.
type NetTransport struct {
	rank  int
	world int
	opts  Options
	loop  *ioloop.Loop
	heap  *heap.Heap

	closed   closeState    // Close ran (or runs)
	members  members       // the peers by rank, and who left (view.go)
	progress progress      // what this rank completed, told in GOODBYE
	bar      barrierState  // barrier.go
	pools    pools         // recycled requests
	svc      serviceState  // the service handler, and requests that came before it
	topo     topology      // a star or a full mesh
	door     door          // the listener after formation, and what it refuses
	beat     heartbeatLoop // link_live.go

	grantsDue atomic.Bool // a read upcall recorded a grant (credit.go: noteGrant)

	carrier // the hooks of package collective and of the service, package rpc (plumb.go)
}

// closeState says that Close ran, or runs; once makes it run once.
type closeState struct {
	atomic.Bool
	once sync.Once
}

// progress is what this rank completed, told to its peers in GOODBYE:
// the barriers, and the owned tag range's owner's progress, which the
// engine does not read (lend.go). mu serializes installing the owner.
type progress struct {
	barriers atomic.Uint64            // barriers completed
	owner    atomic.Pointer[ownerRef] // the owner of the owned tag range, once installed
	mu       sync.Mutex
}

// pools recycles the requests of the data path, and numbers them.
type pools struct {
	gets   sync.Pool // *getReq
	rdvs   sync.Pool // *rdvSend
	reqs   sync.Pool // *recvReq
	nextID atomic.Uint64
}

// topology is how the ranks are joined. It is set before the mesh forms,
// but for starReady.
type topology struct {
	star      bool                // a star: rank 0 is the coordinator, the hub of every pair
	hub       *hub                // star worker: the handler of the coordinator stream
	starReady atomic.Bool         // star coordinator: every worker joined; forwarding may start
	loopback  bool                // every rank is reached over loopback (this machine)
	nbr       *linkshm.Neighbours // the ranks on this host, and where they meet this one
	// crowded: more ranks run on this machine than it has cores, and
	// Options.Spin was left to its default (see exchangeMail). Set before
	// the mesh forms from the loopback addresses, or as it forms from the
	// peers' Machine (settleCrowding).
	crowded atomic.Bool
	spin    atomic.Int64 // Options.Spin in nanoseconds, as settled (see spinBudget)
	// defaultSpin: Options.Spin was left 0, so crowding may change it.
	defaultSpin bool
	machine     [frame.MachineIDSize]byte                // this rank's machine; zero: unknown
	sameMachine []atomic.Bool                            // by rank: the peer's HELLO named this machine
	hostIDs     []atomic.Pointer[[frame.HostIDSize]byte] // by rank: the host the peer's HELLO named; nil: none (Topology.Hosts)
	sealCrew    int                                      // sealed links' sealed.Options.Crew (seal.go)
}

// door is the listener after the mesh formed and what it refuses.
type door struct {
	late     *acceptor       // the listener during LateJoinWindow, if this rank accepts
	refusals lograte.Limiter // which refused connections are logged
	keyWarn  sync.Once       // the warning that the mesh has no key
	sealWarn sync.Once       // the warning that a link leaves the host unsealed
}

// heartbeatLoop is the heartbeat goroutine's lifetime.
type heartbeatLoop struct {
	stop chan struct{} // closed to stop the heartbeat goroutine
	done chan struct{} // closed when it has stopped
}

var _ Transport = (*NetTransport)(nil)

func newNetTransport(rank, world int, o Options) *NetTransport {
	t := &NetTransport{rank: rank, world: world, opts: o}
	plumb.Attach(&t.carrier, (*plumbing)(t), (*plumbing)(t))
	t.pools.reqs.New = newRecvReq
	t.pools.gets.New = newGetReq
	t.pools.rdvs.New = newRdvSend
	peers := make([]*peer, world) // peers[rank] is this rank itself
	for r := range peers {
		peers[r] = newPeer(t, r)
	}
	t.members.Start(peers)
	return t
}

// Rank returns this process's rank.
func (t *NetTransport) Rank() int { return t.rank }

// WorldSize returns the number of ranks.
func (t *NetTransport) WorldSize() int { return t.world }

// Options returns the options in force, defaults filled in.
func (t *NetTransport) Options() Options { return t.opts }

// goodbyeWait bounds how long Close tries to tell peers it is leaving and
// waits for their answers.
const goodbyeWait = 200 * time.Millisecond

// Close tells every peer that this rank leaves (a GOODBYE frame, so that
// they can tell an orderly close from a crash), shuts every connection
// down and fails every blocked operation with ErrClosed. It leaks no
// goroutine or file descriptor and is idempotent.
func (t *NetTransport) Close() error {
	var err error
	t.closed.once.Do(func() {
		if t.door.late != nil {
			t.door.late.close()
		}
		t.stopHeartbeat()
		t.sayGoodbye()
		t.closed.Store(true)
		for _, p := range t.view().Peers {
			p.fail(ErrClosed, nil)
		}
		if t.loop != nil {
			err = t.loop.Close()
		}
		if !t.awaitReleased() {
			// Some connection's handler was never told it closed. The
			// ioloop releases every connection it fails, so this is a
			// safety net against a handler or reader that never returns:
			// keep the heap mapped rather than unmap memory a read may
			// still target.
			t.opts.Logger.Warn("boltmesh: a connection was not released at close; the symmetric heap stays mapped", "rank", t.rank)
		} else {
			for _, p := range t.view().Peers {
				if c := p.can(); c.heap != nil {
					c.heap.Close()
				}
				if mb := p.can().mailbox; mb != nil {
					mb.Close()
				}
			}
			if t.heap != nil {
				t.heap.Close()
			}
		}
		if t.topo.nbr != nil {
			t.topo.nbr.Close()
		}
	})
	return err
}

// sayGoodbye sends GOODBYE to every connected peer, on its control and
// data streams (the peer reads each in its own order, and whichever it
// sees end first must not look like a crash), reporting the first loss
// this rank knows of (view.go), and waits for their answers (goodbye.go),
// for at most goodbyeWait in all: a peer whose socket stays full, or that
// does not answer, is given up on.
func (t *NetTransport) sayGoodbye() {
	ctx, cancel := context.WithTimeout(context.Background(), goodbyeWait)
	defer cancel()
	lost := uint32(t.view().Loss.First + 1)
	for _, p := range t.view().Peers {
		if !p.up() {
			continue
		}
		h := frame.Header{Kind: frame.KindGoodbye, Src: uint32(t.rank), Tag: lost, Aux: t.ownerProgress(), Offset: t.progress.barriers.Load()}
		if p.link.ownCtl() {
			p.link.send(laneCtl, h, nil, ctx.Done())
		}
		if p.link.send(laneData, h, nil, ctx.Done()) != nil {
			p.byeAnswer() // not sent: no answer will come
		}
	}
	for _, p := range t.view().Peers {
		if !p.up() {
			continue
		}
		select {
		case <-p.bye.answered:
		case <-ctx.Done():
			return
		}
	}
}

// closeReleaseWait bounds how long Close waits for the event loop to
// release every connection once it has stopped.
const closeReleaseWait = 2 * time.Second

// awaitReleased waits until every peer's connection is released (nobody
// reads into or writes from the heap any more), for at most
// closeReleaseWait, and reports whether they all were.
func (t *NetTransport) awaitReleased() bool {
	timer := time.NewTimer(closeReleaseWait)
	defer timer.Stop()
	for _, p := range t.view().Peers {
		if !p.up() {
			continue
		}
		select {
		case <-p.released:
		case <-timer.C:
			return false
		}
	}
	return true
}
