package collective

// PeerReadAgreed reports whether c's ranks agreed that AlgorithmPeerRead
// works between them (in a call that could use it).
func PeerReadAgreed(c *Comm) bool { return c.pr.agreed == prYes }
