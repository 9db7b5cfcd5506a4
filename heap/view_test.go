package heap

import (
	"errors"
	"testing"
)

// TestView: a View shows its heap's size, memory and use, and the zero
// View none.
func TestView(t *testing.T) {
	h, err := New(1 << 16)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	v := h.View()
	b, err := h.Alloc(100, 0)
	if err != nil {
		t.Fatal(err)
	}
	s, err := v.Slice(b.Offset, b.Len)
	if err != nil || len(s) != 100 || v.Size() != h.Size() || len(v.Region()) != int(h.Size()) || v.InUse() != 100 {
		t.Errorf("View: slice %d bytes (%v), size %d, region %d, in use %d", len(s), err, v.Size(), len(v.Region()), v.InUse())
	}
	s[0] = 7
	if h.Region()[b.Offset] != 7 {
		t.Error("a View's slice does not alias the heap")
	}
	var none View
	if _, err := none.Slice(0, 1); !errors.Is(err, ErrClosed) || none.Size() != 0 || none.Region() != nil || none.InUse() != 0 {
		t.Errorf("zero View: %v, %d, %v, %d", err, none.Size(), none.Region(), none.InUse())
	}
}
