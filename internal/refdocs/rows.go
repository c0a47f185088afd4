package refdocs

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// A section is a generated part of a hand-written page: the text between
// its begin and end markers is what gen returns, the rest of the page is
// left as written.
type section struct {
	Path, Name string
	gen        func() string
}

func sections() []section {
	return []section{{Path: "docs/metrics.md", Name: "rows", gen: rowsSection}}
}

func (s section) markers() (begin, end string) {
	return fmt.Sprintf("<!-- begin generated %s: `go run ./cmd/promoral docs` writes this part from the metric kinds' row declarations (Rows of spec.MetricKind); do not edit -->\n", s.Name),
		fmt.Sprintf("<!-- end generated %s -->\n", s.Name)
}

// splice returns page with the section's part regenerated.
func (s section) splice(page string) (string, error) {
	begin, end := s.markers()
	i := strings.Index(page, begin)
	j := strings.Index(page, end)
	if i < 0 || j < i {
		return "", fmt.Errorf("%s: no generated %s section: the page needs the lines %q and %q around it", s.Path, s.Name, strings.TrimSpace(begin), strings.TrimSpace(end))
	}
	return page[:i+len(begin)] + "\n" + s.gen() + "\n" + page[j:], nil
}

// writeSections regenerates every section under root.
func writeSections(root string) error {
	for _, s := range sections() {
		path := filepath.Join(root, filepath.FromSlash(s.Path))
		old, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		page, err := s.splice(string(old))
		if err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// rowsSection is "The rows, kind by kind": per metric kind its lead, a
// table of the rows it declares (metric, definition, n) and its note.
func rowsSection() string {
	var b strings.Builder
	b.WriteString("Every kind: scoring adds these rows to a block of any kind.\n\n")
	rowTable(&b, blockRows())
	for _, k := range metricRows() {
		fmt.Fprintf(&b, "\n### `%s`\n", k.Name)
		if k.Lead != "" {
			fmt.Fprintf(&b, "\n%s\n", wrap(k.Lead))
		}
		if len(k.Rows) > 0 {
			b.WriteString("\n")
			rowTable(&b, k.Rows)
		}
		if k.Note != "" {
			fmt.Fprintf(&b, "\n%s\n", wrap(k.Note))
		}
	}
	return b.String()
}

func rowTable(b *strings.Builder, rows []rowDoc) {
	b.WriteString("| metric | definition | n |\n| --- | --- | --- |\n")
	for _, r := range rows {
		names := make([]string, len(r.Names))
		for i, n := range r.Names {
			names[i] = "`" + n + "`"
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", strings.Join(names, ", "), mdCell(r.Def), mdCell(r.N))
	}
}

// mdCell makes Markdown safe inside a table cell (keeping its code spans
// and links, unlike cell).
func mdCell(s string) string {
	return strings.ReplaceAll(strings.Join(strings.Fields(s), " "), "|", `\|`)
}

// wrap breaks a paragraph into lines of at most 96 columns.
func wrap(s string) string {
	var b strings.Builder
	col := 0
	for _, w := range strings.Fields(s) {
		switch {
		case col == 0:
		case col+1+len(w) > 96:
			b.WriteString("\n")
			col = 0
		default:
			b.WriteString(" ")
			col++
		}
		b.WriteString(w)
		col += len(w)
	}
	return b.String()
}

// writesRows says whether the metric kind declares rows of metrics.parquet.
func writesRows(kind string) bool {
	for _, k := range metricRows() {
		if k.Name == kind {
			return len(k.Rows) > 0
		}
	}
	return false
}
