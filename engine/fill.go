package engine

// Reads in flight. A payload may be read straight into the buffer of a
// request: an eager SEND's into the receive it claimed (matcher.claimed),
// a DATA piece into the receive that took its rendezvous message
// (rdvState.filling, a piece per data lane), a GET_REPLY into its get's
// (oneSided.claimed). From the handler's payload to its arrive, the
// stream's reader writes there. A request whose peer is lost meanwhile
// (or whose transport closes) is not completed by fail, but by the end of
// that read: the frame's arrive, when it came whole (the message or the
// reply is then delivered), or its stream's end, when it did not
// (readEnded, from the link's handler's Closed, which ioloop calls once
// the stream reads nothing more). So no caller sees its buffer written
// after its call returned, nor may it reuse the buffer while a read still
// targets it. The stream that reads a request's payload is one of the
// peer's own, which the peer's loss closes (or, in a star, the
// coordinator's, whose frames from one peer come whole and in order
// before its GONE), so that end comes promptly.

// readEnded ends the read in flight on lane l of p's link, if any: the
// stream that carried lane l ended (err, as the link reports it) with the
// frame's payload not whole. Its request fails with p's loss, or, if p
// is not lost yet (the loss follows: every stream's end loses the peer),
// with err as its cause.
func (p *peer) readEnded(l lane, err error) {
	p.mu.Lock()
	var done *recvReq
	var get *getReq
	switch {
	case l == laneData && p.m.claimed != nil:
		done, p.m.claimed, p.m.freed = p.m.claimed, nil, false
	case l == p.replyLane() && p.one.claimed != nil:
		get, p.one.claimed = p.one.claimed, nil
	case l >= 0 && p.rdv.filling[l] != nil:
		r := p.rdv.filling[l]
		p.rdv.filling[l] = nil
		r.rdv.reading--
		r.rdv.broken = err
		if r.rdv.reading == 0 {
			delete(p.rdv.in, r.rdv.id)
			done = r
		}
	}
	cause := p.readErr(err)
	if get != nil {
		cause.(*PeerError).Op = "get"
	}
	p.mu.Unlock()
	if done != nil {
		done.complete(cause)
	}
	if get != nil {
		get.complete(cause)
	}
}

// readErr is the error of a receive whose payload's read ended
// unfinished: p's loss, or, before p is lost, a loss caused by err (a
// *PeerError either way). p.mu is held.
func (p *peer) readErr(err error) error {
	if p.lost != nil {
		return p.errFor("recv")
	}
	return &PeerError{Op: "recv", Rank: p.rank, Err: ErrPeerLost, Cause: err}
}

// replyLane is the lane that carries p's GET replies: the control lane
// where it is a stream of its own, else the one stream.
func (p *peer) replyLane() lane {
	if p.link.ownCtl() {
		return laneCtl
	}
	return laneData
}
