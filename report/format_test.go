package report

import (
	"os"
	"testing"
	"time"
)

// A run folder of format 1 (before manifest.json carried format_version)
// gets its report.
func TestReportsFormat1(t *testing.T) {
	src := "../runfolder/testdata/format1"
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	out, err := Generate(dir, Options{Now: func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Sections) == 0 {
		t.Fatal("no sections")
	}
	for _, p := range []string{out.HTML, out.Markdown} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v", p, err)
		}
	}
}
