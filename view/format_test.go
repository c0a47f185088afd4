package view

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyFolder copies a run folder into a temp folder.
func copyFolder(t *testing.T, src string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A run folder of format 1 (before manifest.json carried format_version)
// opens: every case with its stages and the calls its prompt stages made.
func TestOpensFormat1(t *testing.T) {
	r, err := Open(copyFolder(t, "../runfolder/testdata/format1"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Len() != 12 || r.Name != "toy-run" {
		t.Fatalf("%s: %d cases, want toy-run with 12", r.Name, r.Len())
	}
	for i := 0; i < r.Len(); i++ {
		c, err := r.Case(i)
		if err != nil {
			t.Fatalf("case %d: %v", i, err)
		}
		calls := 0
		for _, s := range c.Steps {
			if s.Calls != nil {
				calls++
			}
		}
		if len(c.Steps) == 0 || calls == 0 {
			t.Errorf("case %d: %d steps, %d with calls", i, len(c.Steps), calls)
		}
	}
}

// A run folder of a later format is refused, naming both versions.
func TestRefusesLaterFormat(t *testing.T) {
	dir := copyFolder(t, "../runfolder/testdata/format1")
	data := `{"run": "toy-run", "format_version": 99, "version": "9.0.0"}`
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir)
	if err == nil || !strings.Contains(err.Error(), "format_version 99") || !strings.Contains(err.Error(), "format 2") {
		t.Fatalf("Open of a format 99 folder: %v", err)
	}
}
