package match

import "container/heap"

// Tombs are the send ids of a peer's RTSs withdrawn on the control stream
// before the RTS came (withdrawRTS), smallest first; each holds the
// withdrawal's credit. RTS ids grow on data stream 0, so when an RTS with
// id comes, every tombstone below id is of an RTS that was never sent (a
// peer that withdrew what it did not announce): it is dropped and its
// credit freed, so that no tombstone outlives the RTS after it. A peer's
// tombstones are bounded by its credit (each holds frame.Cost(0)). Lock
// rule: guarded by the peer's mu.
type Tombs struct{ h ids }

// Len returns how many tombstones there are.
func (t *Tombs) Len() int { return len(t.h) }

// Add notes a tombstone for id.
func (t *Tombs) Add(id uint64) { heap.Push(&t.h, id) }

// Arrive takes out the tombstones up to id, the send id of an RTS that
// came: it reports how many were below id (never to come) and how many
// were id's own (withdrawn before it came: a peer may withdraw one twice).
func (t *Tombs) Arrive(id uint64) (stale, own int) {
	for len(t.h) > 0 && t.h[0] <= id {
		if heap.Pop(&t.h).(uint64) < id {
			stale++
		} else {
			own++
		}
	}
	return stale, own
}

// ids is a min-heap of send ids (container/heap).
type ids []uint64

func (t ids) Len() int           { return len(t) }
func (t ids) Less(i, j int) bool { return t[i] < t[j] }
func (t ids) Swap(i, j int)      { t[i], t[j] = t[j], t[i] }
func (t *ids) Push(x any)        { *t = append(*t, x.(uint64)) }
func (t *ids) Pop() any {
	old := *t
	x := old[len(old)-1]
	*t = old[:len(old)-1]
	return x
}
