package diskspace

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	free, err := Free(dir)
	if err != nil || free == 0 {
		t.Fatalf("Free(%s) = %d, %v", dir, free, err)
	}
	for _, tc := range []struct {
		name string
		need uint64
		err  string
	}{
		{"nothing needed", 0, ""},
		{"less than there is", free / 2, ""},
		{"more than there is", free * 4, fmt.Sprintf("%s has %.1f GB free, and a run needs about %.1f GB", dir, float64(free)/GB, float64(free*4)/GB)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(dir, tc.need)
			switch {
			case tc.err == "" && err != nil:
				t.Fatalf("Check: %v", err)
			case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
				t.Fatalf("Check = %v, want it to say %q", err, tc.err)
			}
		})
	}
	if err := Check(dir+"/missing", 0); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("Check of a missing folder = %v, want it to name the folder", err)
	}
}

func TestWatchWarnsOnceAndKeepsTheLowest(t *testing.T) {
	dir := t.TempDir()
	var lines []string
	logf := func(f string, a ...any) { lines = append(lines, fmt.Sprintf(f, a...)) }

	quiet, err := NewWatch(dir, 0, logf)
	if err != nil {
		t.Fatal(err)
	}
	quiet.Sample()
	if len(lines) != 0 {
		t.Errorf("a watch with room to spare logged %q", lines)
	}

	w, err := NewWatch(dir, math.MaxUint64, logf)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		w.Sample()
	}
	if len(lines) != 1 || !strings.Contains(lines[0], "no space left on device") || !strings.Contains(lines[0], dir) {
		t.Errorf("three samples under the mark logged %q, want one warning naming %s", lines, dir)
	}
	start, low := w.Figures()
	if low > start || low == 0 {
		t.Errorf("figures: start %d, low %d", start, low)
	}
}
