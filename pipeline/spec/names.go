package spec

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
)

// DidYouMean returns `did you mean "x"?` for the known name closest to name,
// or "" when none is close enough to be the name meant. A swap of two
// neighbouring letters counts as one edit, like any other slip of the hand.
func DidYouMean(name string, known []string) string {
	if slices.Contains(known, name) {
		return "" // present, so wrong for another reason than a typo
	}
	best, bestD := "", 1<<30
	for _, k := range known {
		d := typoDistance(strings.ToLower(name), strings.ToLower(k))
		if d < bestD || d == bestD && k < best {
			best, bestD = k, d
		}
	}
	if best == "" || bestD > 3 || bestD >= len(name) {
		return ""
	}
	return fmt.Sprintf("did you mean %q?", best)
}

// NameHint is the hint for a name that matches none of known: the near
// miss when there is one, else otherwise followed by the names there are.
func NameHint(name string, known []string, otherwise string) string {
	if s := DidYouMean(name, known); s != "" {
		return s
	}
	if len(known) == 0 {
		return otherwise
	}
	list := append([]string(nil), known...)
	sort.Strings(list)
	list = slices.Compact(list)
	const show = 12
	more := ""
	if len(list) > show {
		more = fmt.Sprintf(" and %d more", len(list)-show)
		list = list[:show]
	}
	if otherwise != "" {
		otherwise += "; "
	}
	return otherwise + "known: " + strings.Join(list, ", ") + more
}

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

// typoDistance is the optimal-string-alignment distance: insertions,
// deletions, substitutions and adjacent transpositions each cost one.
func typoDistance(a, b string) int {
	ra, rb := []rune(a), []rune(b)
	d := make([][]int, len(ra)+1)
	for i := range d {
		d[i] = make([]int, len(rb)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(ra); i++ {
		for j := 1; j <= len(rb); j++ {
			cost := 1
			if ra[i-1] == rb[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && ra[i-1] == rb[j-2] && ra[i-2] == rb[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(ra)][len(rb)]
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
	if d := DidYouMean(filepath.ToSlash(rel), known); d != "" {
		return d + " " + otherwise
	}
	return otherwise
}
