package collective

// The order of the collectives' steps by host. AllReduce's doubling,
// halving and ring, AllGather's and ReduceScatter's rings, and
// Broadcast's and ReduceTo's trees and chain run over positions rather
// than ranks: the ranks of each host take consecutive positions (hosts in
// the order of their lowest rank, ranks in rank order within one), from
// engine.Topology.Hosts, which every rank of a mesh finds alike.
// Halving's nearest partner, the rings' and the chain's neighbours and
// the folded pairs are then on one host wherever they can be, whatever
// order a launcher numbered the ranks in, and the fewest bytes cross the
// links between hosts (coll_halving.go; tests in hosts_internal_test.go).

// hostOrder returns, for hosts (Topology.Hosts), the rank at each
// position and the position of each rank: nil, nil where that is rank
// order (the ranks of each host already consecutive), or where hosts does
// not cover the world of n ranks.
func hostOrder(hosts []int, n int) (order, at []int) {
	if len(hosts) != n {
		return nil, nil
	}
	count := make([]int, n+1) // ranks per host, then each host's first position
	for _, h := range hosts {
		if h < 0 || h >= n {
			return nil, nil
		}
		count[h+1]++
	}
	for h := 1; h <= n; h++ {
		count[h] += count[h-1]
	}
	order, at = make([]int, n), make([]int, n)
	identity := true
	for r, h := range hosts {
		p := count[h]
		count[h]++
		order[p], at[r] = r, p
		identity = identity && p == r
	}
	if identity {
		return nil, nil
	}
	return order, at
}

// sharedHosts reports whether the world spans several hosts and some host
// holds more than one rank.
func sharedHosts(hosts []int) bool {
	seen := make(map[int]bool, len(hosts))
	shared := false
	for _, h := range hosts {
		shared = shared || seen[h]
		seen[h] = true
	}
	return shared && len(seen) > 1
}

// position is rank r's position in the steps' order; rankAt inverts it.
func (c *Comm) position(r int) int {
	if c.at == nil {
		return r
	}
	return c.at[r]
}

// rankAt is the rank at position p.
func (c *Comm) rankAt(p int) int {
	if c.order == nil {
		return p
	}
	return c.order[p]
}

// fromRoot numbers rank r from root in the steps' order: root is 0, and
// the ranks of each host stay consecutive but for root's host, split
// around it.
func (c *Comm) fromRoot(r, root int) int {
	n := c.t.WorldSize()
	return (c.position(r) - c.position(root) + n) % n
}

// rankFrom is the rank numbered u (mod the world size) from root.
func (c *Comm) rankFrom(u, root int) int {
	n := c.t.WorldSize()
	return c.rankAt(((u+c.position(root))%n + n) % n)
}
