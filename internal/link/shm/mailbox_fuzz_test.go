package shm

import (
	"bytes"
	"encoding/binary"
	"testing"
	"unsafe"
)

// FuzzMailboxTake: whatever bytes a neighbour leaves in its mailbox area,
// take neither panics nor copies outside the destination, and a part it
// returns is the slot's bytes, once: the same gen is never taken twice.
func FuzzMailboxTake(f *testing.F) {
	slot := func(gen uint64, tag, n, meta uint32, data []byte) []byte {
		b := make([]byte, mailSlot)
		binary.LittleEndian.PutUint64(b[offGen:], gen)
		binary.LittleEndian.PutUint32(b[offTag:], tag)
		binary.LittleEndian.PutUint32(b[offLen:], n)
		binary.LittleEndian.PutUint32(b[offMeta:], meta)
		copy(slotData(b, int(min(n, MailboxMax))), data)
		return b
	}
	f.Add(uint32(5), 16, slot(2, 5, 8, 1, []byte("abcdefgh")), slot(0, 0, 0, 0, nil))
	f.Add(uint32(5), 16, slot(3, 5, 8, 1, []byte("abcdefgh")), slot(4, 5, 1<<31, 1, nil))
	f.Add(uint32(9), 4096, slot(2, 8, 8, 1, nil), slot(6, 9, 4096, 2, bytes.Repeat([]byte{7}, 4096)))
	f.Add(uint32(7), 64, slot(2, 7, 40, 1, bytes.Repeat([]byte{3}, 40)), slot(4, 7, 41, 1, bytes.Repeat([]byte{5}, 41)))
	f.Fuzz(func(t *testing.T, tag uint32, dstLen int, s0, s1 []byte) {
		if dstLen < 0 || dstLen > 2*MailboxMax {
			return
		}
		// Page-aligned like the real mapping: uint64 words.
		words := make([]uint64, MailboxSize/8)
		mem := unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), MailboxSize)
		m := NewMailbox(mem, 0, func() {})
		copy(slotOf(m.peer, 0), s0)
		copy(slotOf(m.peer, 1), s1)
		guard := make([]byte, dstLen+64)
		dst := guard[:dstLen]
		n, _, found, closed := m.Take(tag, dst)
		if closed {
			t.Fatal("an open mailbox reported closed")
		}
		if bytes.ContainsFunc(guard[dstLen:], func(r rune) bool { return r != 0 }) {
			t.Fatal("take wrote beyond its destination")
		}
		if !found {
			return
		}
		if n > MailboxMax && bytes.ContainsFunc(dst, func(r rune) bool { return r != 0 }) {
			t.Fatalf("a part of %d bytes, above MailboxMax, was copied", n)
		}
		if n <= dstLen && n <= MailboxMax {
			var from []byte
			for i := range 2 {
				s := slotOf(m.peer, i)
				if m.taken[i] != 0 && binary.LittleEndian.Uint64(s[offGen:]) == m.taken[i] {
					from = slotData(s, n)
				}
			}
			if !bytes.Equal(dst[:n], from) {
				t.Fatal("the part taken is not the slot's bytes")
			}
		}
		first := 0
		if m.taken[1] != 0 {
			first = 1
		}
		before := m.taken[first]
		if _, _, again, _ := m.Take(tag, dst); again && m.taken[first] != before {
			t.Fatal("one slot's gen taken twice")
		}
		if m.taken[first] != before || m.Ready(tag) && m.taken[1-first] != 0 {
			t.Fatal("a part taken is still ready")
		}
	})
}
