package refdocs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The rows section holds every metric kind, and each kind declares each of
// its names once, each with a definition and an n.
func TestRowsSectionCoversEveryKind(t *testing.T) {
	text := rowsSection()
	kinds := metricRows()
	if len(kinds) < 3 {
		t.Fatalf("only %d metric kinds registered", len(kinds))
	}
	for _, k := range kinds {
		if !strings.Contains(text, "\n### `"+k.Name+"`\n") {
			t.Errorf("no section for %s", k.Name)
		}
		if len(k.Rows) == 0 && k.Lead == "" {
			t.Errorf("%s declares no rows and says nothing of them", k.Name)
		}
		seen := map[string]bool{}
		for _, r := range k.Rows {
			if len(r.Names) == 0 || strings.TrimSpace(r.Def) == "" || strings.TrimSpace(r.N) == "" {
				t.Errorf("%s: row %v lacks a name, a definition or an n", k.Name, r.Names)
			}
			for _, n := range r.Names {
				if seen[n] {
					t.Errorf("%s declares %s twice", k.Name, n)
				}
				seen[n] = true
				if !strings.Contains(text, "`"+n+"`") {
					t.Errorf("%s: %s is not in the section", k.Name, n)
				}
			}
		}
	}
	if !strings.Contains(text, "| `share:<option>` | share of the parsed answers choosing the option") {
		t.Error("choice's share:<option> row should be in its table with its definition")
	}
}

// The generated part of a page is rewritten between its markers, the rest
// is kept as written; a changed part is stale, and a page without the
// markers is an error that names them.
func TestRowsSectionSplice(t *testing.T) {
	s := sections()[0]
	begin, end := s.markers()
	page := "# Metrics\n\nwritten by hand\n\n" + begin + "old text\n" + end + "\nmore by hand\n"
	got, err := s.splice(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "# Metrics\n\nwritten by hand\n\n"+begin) || !strings.HasSuffix(got, end+"\nmore by hand\n") ||
		strings.Contains(got, "old text") || !strings.Contains(got, "### `classification`") {
		t.Errorf("spliced page:\n%s", got)
	}
	if again, _ := s.splice(got); again != got {
		t.Error("splicing twice changes the page")
	}

	root := t.TempDir()
	path := filepath.Join(root, filepath.FromSlash(s.Path))
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		page  string
		stale bool
	}{{got, false}, {page, true}, {"# Metrics\n", true}} {
		if err := os.WriteFile(path, []byte(tc.page), 0o644); err != nil {
			t.Fatal(err)
		}
		if stale := len(staleSections(root)) > 0; stale != tc.stale {
			t.Errorf("stale = %v, want %v for\n%s", stale, tc.stale, tc.page)
		}
	}
	if err := writeSections(root); err == nil || !strings.Contains(err.Error(), s.Path) || !strings.Contains(err.Error(), "end generated rows") {
		t.Errorf("a page without markers: %v", err)
	}
}

// staleSections lists the pages under root whose sections differ from what
// their generators give (or that lack the markers).
func staleSections(root string) []string {
	var out []string
	for _, s := range sections() {
		old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(s.Path)))
		if err != nil {
			out = append(out, s.Path)
			continue
		}
		page, err := s.splice(string(old))
		if err != nil || page != string(old) {
			out = append(out, s.Path)
		}
	}
	return out
}
