package rpc

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// The wire format: see spec.md. An RPC_REQ carries the function name
// followed by the arguments, with Tag the name's length and Aux the time
// left until the caller's deadline in milliseconds; an RPC_REPLY carries
// the result, or with the Error flag a status in Aux and its detail. Tags
// from ctlBase up mark control frames between agents instead of calls.

// MaxNameLen is the longest function name, in bytes.
const MaxNameLen = 1<<16 - 1

// Control frames: RPC_REQ frames whose Tag is at least ctlBase.
const (
	ctlBase    = 1 << 16
	ctlGoodbye = ctlBase + 1 // the sender's agent closed: no reply will come
	ctlReport  = ctlBase + 2 // Shutdown: ID round, payload sent and done counts
	ctlVerdict = ctlBase + 3 // Shutdown: ID round, Aux 1 when all are done
	ctlCancel  = ctlBase + 4 // the caller cancelled call ID
	ctlHello   = ctlBase + 5 // the sender's agent is up: its earlier GOODBYE is stale
)

// status is a reply's Aux: why a call failed.
type status uint32

const (
	statusOK              status = 0
	statusError           status = 1 // payload: the handler's error text
	statusPanic           status = 2 // payload: the panic value
	statusNotFound        status = 3
	statusBusy            status = 4
	statusRequestTooLarge status = 5 // payload: size and limit (sizeLen)
	statusReplyTooLarge   status = 6 // payload: size and limit (sizeLen)
	statusClosed          status = 7
	statusBadRequest      status = 8
)

// sizeLen is the payload of the too-large statuses and of ctlReport: two
// little-endian uint64s.
const sizeLen = 16

func putPair(b []byte, x, y uint64) []byte {
	b = binary.LittleEndian.AppendUint64(b, x)
	return binary.LittleEndian.AppendUint64(b, y)
}

func getPair(b []byte) (x, y uint64, ok bool) {
	if len(b) != sizeLen {
		return 0, 0, false
	}
	return binary.LittleEndian.Uint64(b), binary.LittleEndian.Uint64(b[8:]), true
}

// timeoutMillis encodes the time left until a deadline: rounded up, at
// least 1 ms, at most about 49 days. The server's deadline (its arrival
// time plus this) is therefore never before the caller's.
func timeoutMillis(d time.Duration) uint32 {
	ms := d / time.Millisecond
	if d%time.Millisecond > 0 {
		ms++
	}
	return uint32(min(max(ms, 1), math.MaxUint32))
}

// requestFrame is the header of a call's request.
func requestFrame(id uint64, name string, left time.Duration) plumb.ServiceFrame {
	return plumb.ServiceFrame{ID: id, Tag: uint32(len(name)), Aux: timeoutMillis(left)}
}

// replyFrame is the header of a reply with status st.
func replyFrame(id uint64, st status) plumb.ServiceFrame {
	return plumb.ServiceFrame{Reply: true, Error: st != statusOK, ID: id, Aux: uint32(st)}
}
