package proflabel

import (
	"bytes"
	"context"
	"runtime/pprof"
	"strings"
	"testing"
)

// TestSaveRestore: Restore gives the goroutine back exactly the labels
// Save found, whatever was set in between, as the goroutine profile shows
// them; and Save allocates nothing.
func TestSaveRestore(t *testing.T) {
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("proflabel-test", "mine")))
	defer pprof.SetGoroutineLabels(context.Background())
	s := Save()
	pprof.SetGoroutineLabels(pprof.WithLabels(context.Background(), pprof.Labels("proflabel-test", "theirs")))
	if Save() == s {
		t.Fatal("Save returned the same after the labels changed")
	}
	Restore(s)
	if Save() != s {
		t.Fatal("Save after Restore differs")
	}
	done := make(chan struct{})
	started := make(chan struct{})
	go func() { close(started); <-done }() // inherits the goroutine's labels
	<-started
	var b bytes.Buffer
	if err := pprof.Lookup("goroutine").WriteTo(&b, 1); err != nil {
		t.Fatal(err)
	}
	close(done)
	if out := b.String(); !strings.Contains(out, `"proflabel-test":"mine"`) || strings.Contains(out, `"proflabel-test":"theirs"`) {
		t.Errorf("after Restore, the goroutine profile shows:\n%s", out)
	}
	if n := testing.AllocsPerRun(100, func() { Restore(Save()) }); n != 0 {
		t.Errorf("Save and Restore: %v allocs, want 0", n)
	}
}
