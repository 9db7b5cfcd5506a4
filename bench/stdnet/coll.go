package stdnet

import (
	"encoding/binary"
	"fmt"

	"github.com/boltmesh/boltmesh/engine/collective"
)

// doublingMax is the largest allreduce, in bytes, done by recursive
// doubling (when the world is a power of two); larger ones use the ring.
const doublingMax = 64 << 10

// Barrier is a dissemination barrier over the message connections: in
// round k each rank signals rank+2^k and waits for rank-2^k. Each signal
// carries the barrier's number, which the receiver checks.
func (m *Mesh) Barrier() error {
	m.barriers++
	var out, in [8]byte
	binary.LittleEndian.PutUint64(out[:], m.barriers)
	for k := 1; k < m.world; k <<= 1 {
		to, from := (m.rank+k)%m.world, (m.rank-k+m.world)%m.world
		n, err := m.Exchange(to, from, out[:], in[:])
		if err != nil {
			return fmt.Errorf("stdnet: barrier %d: %w", m.barriers, err)
		}
		if got := binary.LittleEndian.Uint64(in[:]); n != 8 || got != m.barriers {
			return fmt.Errorf("%w: barrier %d got signal %d (%d bytes) from rank %d", ErrMismatch, m.barriers, got, n, from)
		}
	}
	return nil
}

// Broadcast copies root's data to every rank by a binomial tree over
// the message connections, as boltmesh's collective does: each rank
// receives from its parent and sends to its children, largest subtree
// first. A message of another length than data is a mismatch.
func (m *Mesh) Broadcast(root int, data []byte) error {
	n := m.world
	v := (m.rank - root + n) % n // rank relative to root
	mask := 1
	for ; mask < n; mask <<= 1 {
		if v&mask != 0 {
			parent := (v - mask + root) % n
			got, err := m.RecvInto(parent, data)
			if err != nil {
				return fmt.Errorf("stdnet: broadcast from %d: %w", parent, err)
			}
			if got != len(data) {
				return fmt.Errorf("%w: broadcast of %d bytes got %d from rank %d", ErrMismatch, len(data), got, parent)
			}
			break
		}
	}
	for mask >>= 1; mask > 0; mask >>= 1 {
		if v+mask < n {
			if err := m.Send((v+mask+root)%n, data); err != nil {
				return fmt.Errorf("stdnet: broadcast to %d: %w", (v+mask+root)%n, err)
			}
		}
	}
	return nil
}

// AllReduceSum sums data across all ranks in place, with the reduction
// kernel boltmesh uses (so that the comparison is one of transports):
// recursive doubling for small messages in a power-of-two world, a ring
// reduce-scatter and all-gather otherwise. Every rank ends with the same
// bits.
func (m *Mesh) AllReduceSum(data []float32) error {
	n := m.world
	if n == 1 {
		return nil
	}
	if n&(n-1) == 0 && 4*len(data) <= doublingMax {
		return m.doubling(data)
	}
	return m.ring(data)
}

func (m *Mesh) buf(n int) []float32 {
	if cap(m.scratch) < 4*n {
		m.scratch = make([]byte, 4*n)
	}
	f, _ := collective.FromBytes[float32](m.scratch[:4*n])
	return f
}

func (m *Mesh) doubling(data []float32) error {
	buf := m.buf(len(data))
	for mask := 1; mask < m.world; mask <<= 1 {
		peer := m.rank ^ mask
		if err := m.exchangeF32(peer, peer, data, buf); err != nil {
			return err
		}
		collective.Combine(data, buf, collective.Sum)
	}
	return nil
}

// ring reduces segment by segment around the ring, then passes the
// reduced segments around once more.
func (m *Mesh) ring(data []float32) error {
	r, n := m.rank, m.world
	seg := func(i int) []float32 { return data[i*len(data)/n : (i+1)*len(data)/n] }
	right, left := (r+1)%n, (r-1+n)%n
	for s := range n - 1 {
		out, in := seg((r-s+n)%n), seg((r-s-1+n)%n)
		buf := m.buf(len(in))
		if err := m.exchangeF32(right, left, out, buf); err != nil {
			return err
		}
		collective.Combine(in, buf, collective.Sum)
	}
	for s := range n - 1 {
		if err := m.exchangeF32(right, left, seg((r+1-s+n)%n), seg((r-s+n)%n)); err != nil {
			return err
		}
	}
	return nil
}

// exchangeF32 exchanges float32 slices and checks the received length.
func (m *Mesh) exchangeF32(to, from int, out, in []float32) error {
	got, err := m.Exchange(to, from, collective.AsBytes(out), collective.AsBytes(in))
	if err != nil {
		return fmt.Errorf("stdnet: allreduce: %w", err)
	}
	if got != 4*len(in) {
		return fmt.Errorf("%w: allreduce: %d bytes from rank %d, want %d", ErrMismatch, got, from, 4*len(in))
	}
	return nil
}
