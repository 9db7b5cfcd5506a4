package collective

import (
	"os"
	"regexp"
	"strconv"
	"testing"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// TestTagSpaceSpec: the collective layer numbers its calls' tags as
// frame/spec.md's "Tag space" says (call k owns tagsPerCall tags from
// ((k-1) mod slots) * tagsPerCall, its abandon the last), in the engine's
// collective tag space; engine's test of the same name pins the rest.
func TestTagSpaceSpec(t *testing.T) {
	b, err := os.ReadFile("../../frame/spec.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`call k owns the (\d+) tags from .*\(\(k − 1\) mod (\d+)\) × (\d+), and its abandon takes the last`).FindSubmatch(b)
	if m == nil {
		t.Fatal(`frame/spec.md's "Tag space" does not say how collective calls own their tags`)
	}
	per, _ := strconv.Atoi(string(m[1]))
	slots, _ := strconv.Atoi(string(m[2]))
	per2, _ := strconv.Atoi(string(m[3]))
	if per != tagsPerCall || per2 != tagsPerCall || slots != collTags/tagsPerCall || collTags != plumb.Tags || abandonStep != tagsPerCall-1 {
		t.Errorf("spec: %d tags per call, %d slots; collective: %d per call, %d slots, %d tags (engine %d), abandon at step %d",
			per, slots, tagsPerCall, collTags/tagsPerCall, collTags, plumb.Tags, abandonStep)
	}
	c := &Comm{} // no transport: it tracks no calls
	for _, k := range []uint32{1, 2, 65536, 65537} {
		c.seq = k - 1
		base := c.begin(kindAllReduce, Float32, Sum)
		c.mu.Unlock()
		if want := (k - 1) % uint32(slots) * uint32(per); base != want {
			t.Errorf("call %d: first tag %d, spec %d", k, base, want)
		}
	}
}
