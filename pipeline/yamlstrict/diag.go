package yamlstrict

import (
	"fmt"
	"sort"
	"strings"
)

// Diag is one problem found in a config, pointing at the file, line and field
// so a user can jump straight to it.
type Diag struct {
	File  string
	Line  int
	Field string // dotted path, e.g. "stages[2].max_visits"
	Msg   string
	Hint  string // what to do about it
}

func (d Diag) Error() string {
	var b strings.Builder
	b.WriteString(d.File)
	if d.Line > 0 {
		fmt.Fprintf(&b, ":%d", d.Line)
	}
	b.WriteString(": ")
	if d.Field != "" {
		fmt.Fprintf(&b, "%s: ", d.Field)
	}
	b.WriteString(d.Msg)
	if d.Hint != "" {
		b.WriteString(" (" + d.Hint + ")")
	}
	return b.String()
}

// Diags collects every problem instead of stopping at the first, so
// `promoral validate` can list them all in one pass.
type Diags []Diag

func (ds *Diags) Add(d Diag) { *ds = append(*ds, d) }

func (ds *Diags) Addf(file string, line int, field, hint, format string, args ...any) {
	ds.Add(Diag{File: file, Line: line, Field: field, Msg: clipMsg(fmt.Sprintf(format, args...)), Hint: hint})
}

// maxDiagMsg bounds one diagnostic's message: a value quoted in it may be
// anything a file holds, megabytes included.
const maxDiagMsg = 4096

func clipMsg(s string) string {
	if len(s) <= maxDiagMsg {
		return s
	}
	cut := strings.ToValidUTF8(s[:maxDiagMsg], "")
	return fmt.Sprintf("%s… (%d more bytes not shown)", cut, len(s)-len(cut))
}

func (ds Diags) Err() error {
	if len(ds) == 0 {
		return nil
	}
	return ds
}

// Error lists every diagnostic, one per line, sorted by file and line.
func (ds Diags) Error() string {
	s := make([]string, 0, len(ds))
	for _, d := range ds.Sorted() {
		s = append(s, d.Error())
	}
	return strings.Join(s, "\n")
}

// Sorted returns the diagnostics ordered by file, then line, without duplicates.
func (ds Diags) Sorted() Diags {
	out := append(Diags(nil), ds...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].File != out[j].File {
			return out[i].File < out[j].File
		}
		return out[i].Line < out[j].Line
	})
	dedup := out[:0]
	seen := map[string]bool{}
	for _, d := range out {
		k := d.Error()
		if !seen[k] {
			seen[k] = true
			dedup = append(dedup, d)
		}
	}
	return dedup
}
