package spec

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// Plural writes a count with its noun in the right number: "1 strategy",
// "2 strategies". many is the plural form.
func Plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// yamlNames lists the names a bare reference can take in dir: its YAML
// files without the extension.
func yamlNames(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		n := e.Name()
		if ext := filepath.Ext(n); !e.IsDir() && (ext == ".yaml" || ext == ".yml") {
			out = append(out, strings.TrimSuffix(n, ext))
		}
	}
	return out
}

// ModelNames, TaskNames and StrategyNames list the names a config may refer
// to, for hints.
func (s *Study) ModelNames() []string {
	out := make([]string, 0, len(s.Models))
	for _, m := range s.Models {
		out = append(out, m.Name)
	}
	return out
}

func (s *Study) TaskNames() []string {
	out := make([]string, 0, len(s.Tasks))
	for _, t := range s.Tasks {
		out = append(out, t.Name)
	}
	return out
}

func (s *Study) StrategyNames() []string {
	out := make([]string, 0, len(s.Strategies))
	for _, x := range s.Strategies {
		out = append(out, x.Name)
	}
	return out
}

// StageNames lists the stages of the strategy being built.
func (b *Build) StageNames() []string {
	out := make([]string, 0, len(b.Names))
	for n := range b.Names {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// fileHint is the hint for a file a config names under base that does not
// exist: the nearest file there when one is near, then otherwise.
func fileHint(base, rel, otherwise string) string {
	var known []string
	filepath.WalkDir(base, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return nil
		}
		if r, err := filepath.Rel(base, p); err == nil {
			known = append(known, filepath.ToSlash(r))
		}
		if len(known) > 10000 {
			return filepath.SkipAll // a config's folder, not a disk
		}
		return nil
	})
	if d := yamlstrict.DidYouMean(filepath.ToSlash(rel), known); d != "" {
		return d + " " + otherwise
	}
	return otherwise
}
