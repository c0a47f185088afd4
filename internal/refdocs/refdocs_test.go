package refdocs

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the generated reference pages")

const root = "../.."

// The reference pages in docs/reference are what the kinds' field specs
// generate today.
func TestDocsUpToDate(t *testing.T) {
	if *update {
		if err := Write(root); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range Stale(root) {
		t.Errorf("%s is stale: run `go run ./cmd/promoral docs` (or go test ./internal/refdocs -update)", filepath.FromSlash(p))
	}
}

// A default:"" tag says what the field's doc says: the doc names the value.
func TestDefaultsAgreeWithDocs(t *testing.T) {
	n := 0
	for _, k := range append(stageKinds(), metricKinds()...) {
		var walk func(prefix string, fs []field)
		walk = func(prefix string, fs []field) {
			for _, f := range fs {
				if f.Default != "" {
					n++
					if !strings.Contains(f.Doc, f.Default) {
						t.Errorf("%s %s%s: default %q is not what its doc says: %q", k.Name, prefix, f.Name, f.Default, f.Doc)
					}
					if len(f.Enum) > 0 && !slices.Contains(f.Enum, f.Default) && !f.Inherited {
						t.Errorf("%s %s%s: default %q is not one of %v", k.Name, prefix, f.Name, f.Default, f.Enum)
					}
				}
				if st, sep := nested(f.Type); st != nil {
					walk(prefix+f.Name+sep, fields(st))
				}
			}
		}
		walk("", fields(k.Config))
	}
	if n == 0 {
		t.Fatal("no field declares a default")
	}
}

// The pages hold every kind and every field the specs declare.
func TestPagesCoverEveryKind(t *testing.T) {
	pages := Pages()
	for path, kinds := range map[string][]kind{"docs/reference/stages.md": stageKinds(), "docs/reference/metrics.md": metricKinds(), "docs/reference/files.md": fileKinds()} {
		text := string(pages[path])
		if len(kinds) < 3 {
			t.Fatalf("%s: only %d kinds registered", path, len(kinds))
		}
		for _, k := range kinds {
			if !strings.Contains(text, "\n## "+k.Name+"\n") && !strings.Contains(text, "\n## "+k.Name+" file\n") {
				t.Errorf("%s: no section for %s", path, k.Name)
			}
			for _, f := range fields(k.Config) {
				if !strings.Contains(text, "| `"+f.Name+"` |") {
					t.Errorf("%s: %s's field %s is missing", path, k.Name, f.Name)
				}
			}
		}
	}
	if !strings.Contains(string(pages["docs/reference/metrics.md"]), "| `bootstrap` | integer |  | `1000` |") {
		t.Error("classification's bootstrap field should show its type and default")
	}
}

// Stale lists the pages under root that differ from what Pages generates
// (or are missing), and the pages whose generated sections are stale.
func Stale(root string) []string {
	out := staleSections(root)
	for p, data := range Pages() {
		old, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(p)))
		if err != nil || !bytes.Equal(old, data) {
			out = append(out, p)
		}
	}
	return out
}
