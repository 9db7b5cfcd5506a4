package engine

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/boltmesh/boltmesh/internal/plumb"
)

// TestTagSpaceSpec pins frame/spec.md's table of the tag space (its
// "Tag space" section) to the constants that implement it, so that the
// layout is written once, there, and a change to either side fails here.
func TestTagSpaceSpec(t *testing.T) {
	rows := specTagRows(t)
	want := []struct {
		owner       string // the start of the row's owner column
		first, last uint32
	}{
		{"the application", 0, TagReservedBase - 1},
		{"`Barrier`", tagBarrier, tagBarrier + 0xff},
		{"collectives", ownedTagBase, ownedTagBase + plumb.Tags - 1},
	}
	if len(rows) != len(want) {
		t.Fatalf("the spec's tag space has %d rows, the engine %d: %+v", len(rows), len(want), rows)
	}
	for i, w := range want {
		r := rows[i]
		if !strings.HasPrefix(r.owner, w.owner) || r.first != w.first || r.last != w.last {
			t.Errorf("row %d: spec %#x-%#x %q; engine %#x-%#x %q", i, r.first, r.last, r.owner, w.first, w.last, w.owner)
		}
	}
	// The collective row's layout (calls of 256 tags) is package
	// collective's, which pins it in its own TestTagSpaceSpec.
}

type specTagRow struct {
	first, last uint32
	owner       string
}

// specTagRows reads the rows of the table in frame/spec.md's "Tag space".
func specTagRows(t *testing.T) []specTagRow {
	t.Helper()
	b, err := os.ReadFile("../frame/spec.md")
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	i := strings.Index(s, "\n## Tag space\n")
	if i < 0 {
		t.Fatal(`frame/spec.md has no "## Tag space" section`)
	}
	s = s[i+1:]
	if j := strings.Index(s[1:], "\n## "); j >= 0 {
		s = s[:j+1]
	}
	row := regexp.MustCompile("(?m)^\\| `0x([0-9A-F]{8})` \\| `0x([0-9A-F]{8})` \\| (.*) \\|$")
	var rows []specTagRow
	for _, m := range row.FindAllStringSubmatch(s, -1) {
		first, _ := strconv.ParseUint(m[1], 16, 32)
		last, _ := strconv.ParseUint(m[2], 16, 32)
		rows = append(rows, specTagRow{uint32(first), uint32(last), m[3]})
	}
	return rows
}
