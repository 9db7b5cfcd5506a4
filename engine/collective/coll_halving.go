package collective

import "context"

// halving is Rabenseifner's allreduce: a reduce-scatter by recursive
// halving, then an all-gather by recursive doubling. Like the ring it
// moves 2(n-1)/n of the data per rank, but in 2 log2(n) steps instead
// of 2(n-1); recursive doubling takes log2(n) steps and moves log2(n)
// times the data. In step k of the reduce-scatter, a rank and its
// partner (virtual rank v ^ 2^k) split the range they both hold in two
// halves, each keeps one, sends the other, and reduces the partner's
// copy of its own into it; after log2(p2) steps each holds one fully
// reduced block, which the all-gather, the same steps in reverse, hands
// to every rank. Each block's final value is computed by one rank, and
// each pairwise step is commutative, so every rank ends with the same
// bits. With n not a power of two, the first 2*rem ranks pair up first
// (foldIn), as in doubling.
//
// The nearest partner comes first, when half the message moves, and the
// farthest last, when 1/p2 of it does: the ranks of a host take
// consecutive positions (hosts.go), so the large steps stay on the host
// (shared memory) and the link between hosts carries the least. With 2
// hosts of 4 ranks, each rank sends the other host 1/8 of the message
// each way, where farthest first it sent 1/2 (TestHalvingNearestFirst,
// TestAllReduceByHost).
func (c *Comm) halving(ctx context.Context, tag uint32, dt DType, data []byte, op Op) error {
	p2, rem, done, err := c.foldIn(ctx, tag, dt, data, op)
	if done || err != nil {
		return err
	}
	v := virtualRank(c.position(c.t.Rank()), rem)
	esz := dt.Size()
	lo, hi := 0, len(data)/esz // the range this rank holds, in elements
	var ranges [32][2]int      // the range before each split
	step, k := uint32(2), 0
	for mask := 1; mask < p2; mask *= 2 {
		peer := c.rankAt(realRank(v^mask, rem))
		mid := lo + (hi-lo)/2
		keep, give := [2]int{lo, mid}, [2]int{mid, hi}
		if v&mask != 0 {
			keep, give = give, keep
		}
		in := data[keep[0]*esz : keep[1]*esz]
		buf := c.scratch(len(in))
		c.pipe = pipeState{dt: dt, op: op, dst: in, src: buf}
		err := c.exchangeChunks(ctx, peer, peer, tag+step, data[give[0]*esz:give[1]*esz], buf, esz, c.reduceChunk)
		c.pipe = pipeState{}
		if err != nil {
			return err
		}
		ranges[k] = [2]int{lo, hi}
		lo, hi = keep[0], keep[1]
		step, k = step+1, k+1
	}
	for mask := p2 / 2; mask >= 1; mask /= 2 {
		k--
		peer := c.rankAt(realRank(v^mask, rem))
		whole := ranges[k]
		other := [2]int{hi, whole[1]}
		if lo != whole[0] {
			other = [2]int{whole[0], lo}
		}
		out, in := data[lo*esz:hi*esz], data[other[0]*esz:other[1]*esz]
		m, err := c.exchange(ctx, peer, peer, tag+step, out, in)
		if err == nil {
			err = c.recvCheck(m, len(in), peer)
		}
		if err != nil {
			return err
		}
		lo, hi = whole[0], whole[1]
		step++
	}
	return c.foldOut(ctx, tag, data, rem)
}
