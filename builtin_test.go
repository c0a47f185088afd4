package promoral_test

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/promoral/promoral"
	_ "github.com/promoral/promoral/metrics" // registers the metric kinds
	"github.com/promoral/promoral/pipeline/spec"
	_ "github.com/promoral/promoral/stages"
)

// The built-in quickstart, written out of the binary, loads on its own and
// reads the same files (configs, templates) as the repository's copy: a file
// the quickstart starts to read without being embedded fails here.
func TestBuiltinQuickstartHasEverythingItReads(t *testing.T) {
	root := t.TempDir()
	dir, err := promoral.Extract(root)
	if err != nil {
		t.Fatal(err)
	}
	built, err := spec.LoadWith(promoral.RunFile(dir, "quickstart"), spec.LoadOptions{})
	if err != nil {
		t.Fatalf("the built-in quickstart does not load: %v", err)
	}
	repo, err := spec.LoadWith(filepath.Join("configs", "quickstart.yaml"), spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rel := func(base string, files []string) []string {
		var out []string
		for _, f := range files {
			r, err := filepath.Rel(base, f)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, filepath.ToSlash(r))
		}
		sort.Strings(out)
		return out
	}
	if b, r := rel(dir, built.Files), rel(".", repo.Files); strings.Join(b, "\n") != strings.Join(r, "\n") {
		t.Errorf("files read:\nbuilt in:\n%s\nrepository:\n%s", strings.Join(b, "\n"), strings.Join(r, "\n"))
	}
	if built.NumCases() != repo.NumCases() || built.NumCases() != 100*2+29050 {
		t.Errorf("cases: built in %d, repository %d", built.NumCases(), repo.NumCases())
	}
	// Every dataset a task reads, and the licence notices next to them.
	for _, f := range []string{"data/SOURCES.md", "data/ethics/NOTICE.md", "data/promoral_runs/NOTICE.md", "data/promoral_reference/NOTICE.md"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("licence notice missing: %v", err)
		}
	}
	// Where the run writes (out/quickstart where the user is, not the
	// extraction) is the CLI's choice: TestREADMEQuickstartAnywhere in
	// cmd/promoral checks it.
}

// A second extraction reuses the first; a half-written one left by a killed
// run is ignored.
func TestExtractIsOnceAndWhole(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".builtin-crashed"), 0o755); err != nil {
		t.Fatal(err)
	}
	a, err := promoral.Extract(root)
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(a, "configs", "quickstart.yaml")
	if err := os.WriteFile(marker, []byte("edited"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := promoral.Extract(root)
	if err != nil || a != b {
		t.Fatalf("second extraction: %q, %v (first %q)", b, err, a)
	}
	if data, _ := os.ReadFile(marker); string(data) != "edited" {
		t.Error("the second extraction rewrote the first")
	}
	if !strings.Contains(filepath.Base(a), promoral.Hash()) {
		t.Errorf("folder %q does not carry the content hash %s", a, promoral.Hash())
	}
}
