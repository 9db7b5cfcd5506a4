package bench

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/boltmesh/boltmesh/engine"
)

// Tags of the boltmesh mesh the harness uses: the workload's messages and
// the control messages that keep the ranks in step. Both are user tags,
// far from the ones applications pick.
const (
	tagData    = 0x0be7_0001
	tagControl = 0x0be7_0002
)

// control carries the harness's own messages (config, iteration counts,
// verdicts) over the boltmesh mesh, between the timed loops.
type control struct{ t *engine.NetTransport }

// bcast sends p from rank 0 to every rank and returns it everywhere.
func (c control) bcast(p []byte) ([]byte, error) {
	if c.t.Rank() != 0 {
		b, err := c.t.Recv(0, tagControl)
		if err != nil {
			return nil, fmt.Errorf("bench: control message from rank 0: %w", err)
		}
		return b, nil
	}
	for r := 1; r < c.t.WorldSize(); r++ {
		if err := c.t.Send(r, tagControl, p); err != nil {
			return nil, fmt.Errorf("bench: control message to rank %d: %w", r, err)
		}
	}
	return p, nil
}

// bcastJSON broadcasts v from rank 0 and decodes it into v elsewhere.
func (c control) bcastJSON(v any) error {
	var p []byte
	if c.t.Rank() == 0 {
		var err error
		if p, err = json.Marshal(v); err != nil {
			return fmt.Errorf("bench: encode control message: %w", err)
		}
	}
	p, err := c.bcast(p)
	if err != nil || c.t.Rank() == 0 {
		return err
	}
	if err := json.Unmarshal(p, v); err != nil {
		return fmt.Errorf("bench: decode control message: %w", err)
	}
	return nil
}

// bcastInt broadcasts rank 0's v.
func (c control) bcastInt(v int) (int, error) {
	var b [8]byte
	binary.LittleEndian.PutUint64(b[:], uint64(v))
	p, err := c.bcast(b[:])
	if err == nil && len(p) != 8 {
		err = fmt.Errorf("bench: control integer of %d bytes", len(p))
	}
	if err != nil {
		return 0, err
	}
	return int(binary.LittleEndian.Uint64(p)), nil
}

// gather sends p to rank 0, which returns every rank's (its own first);
// other ranks return nil.
func (c control) gather(p []byte) ([][]byte, error) {
	if c.t.Rank() != 0 {
		if err := c.t.Send(0, tagControl, p); err != nil {
			return nil, fmt.Errorf("bench: control message to rank 0: %w", err)
		}
		return nil, nil
	}
	all := [][]byte{p}
	for r := 1; r < c.t.WorldSize(); r++ {
		b, err := c.t.Recv(r, tagControl)
		if err != nil {
			return nil, fmt.Errorf("bench: control message from rank %d: %w", r, err)
		}
		all = append(all, b)
	}
	return all, nil
}

// allToAll sends an empty message to every other rank and receives one
// from each: on return, every frame another rank sent this one before it
// called allToAll has arrived (frames between two ranks keep their order).
func (c control) allToAll() error {
	for r := range c.t.WorldSize() {
		if r == c.t.Rank() {
			continue
		}
		if err := c.t.Send(r, tagControl, nil); err != nil {
			return fmt.Errorf("bench: control message to rank %d: %w", r, err)
		}
	}
	for r := range c.t.WorldSize() {
		if r == c.t.Rank() {
			continue
		}
		if _, err := c.t.Recv(r, tagControl); err != nil {
			return fmt.Errorf("bench: control message from rank %d: %w", r, err)
		}
	}
	return nil
}

// addrs gathers every rank's address at rank 0 and broadcasts the list:
// every rank returns them all, by rank. A rank that has none (it could
// not listen) passes "", and every rank fails.
func (c control) addrs(addr string) ([]string, error) {
	all, err := c.gather([]byte(addr))
	var list []byte
	if err == nil && all != nil {
		list = joinAddrs(all)
	}
	if err == nil {
		list, err = c.bcast(list)
	}
	if err != nil {
		return nil, err
	}
	addrs := strings.Split(string(list), ",")
	if len(addrs) != c.t.WorldSize() || slices.Contains(addrs, "") {
		return nil, fmt.Errorf("bench: address list %q for %d ranks", list, c.t.WorldSize())
	}
	return addrs, nil
}

// agree combines every rank's failure message ("" for none): every rank
// returns the first non-empty one in rank order, or "".
func (c control) agree(msg string) (string, error) {
	all, err := c.gather([]byte(msg))
	if err != nil {
		return "", err
	}
	verdict := ""
	for _, m := range all {
		if len(m) > 0 {
			verdict = string(m)
			break
		}
	}
	b, err := c.bcast([]byte(verdict))
	return string(b), err
}

// barrier is a boltmesh barrier, which also makes every put issued before
// it visible.
func (c control) barrier() error {
	if err := c.t.Barrier(); err != nil {
		return fmt.Errorf("bench: control barrier: %w", err)
	}
	return nil
}
