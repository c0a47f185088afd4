package spec

import "strings"

// A metric kind declares the rows of metrics.parquet it writes, beside the
// code that writes them: the section "The rows, kind by kind" of
// docs/metrics.md is generated from the declarations (internal/refdocs), and
// a test checks every row the kinds write in the test studies against them.

// RowDoc declares rows of one meaning: their metric names, what the value
// is and what its n counts. Def and N are Markdown.
type RowDoc struct {
	// Names are the metric names; a part in angle brackets stands for any
	// non-empty text (share:<option>, sensitivity_<class>).
	Names []string
	Def   string
	N     string
}

// RowsDoc is what a metric kind says about its rows: a lead that holds for
// all of them, the rows, and a note after them (each may be empty).
type RowsDoc struct {
	Lead string
	Rows []RowDoc
	Note string
}

// BlockRows are the rows scoring adds to a block of any kind.
var BlockRows = []RowDoc{
	{Names: []string{"majority_ties"}, Def: "under `reduce: majority`: share of the items whose parsed samples tie between labels (such an item counts as unparsed)", N: "items"},
}

// Declares reports whether metric is one of the names d declares (or a
// name BlockRows declares).
func (d RowsDoc) Declares(metric string) bool {
	for _, rs := range [][]RowDoc{d.Rows, BlockRows} {
		for _, r := range rs {
			for _, n := range r.Names {
				if NameMatches(n, metric) {
					return true
				}
			}
		}
	}
	return false
}

// NameMatches reports whether metric is the declared name, where each part
// of the name in angle brackets stands for any non-empty text.
func NameMatches(name, metric string) bool {
	open := strings.IndexByte(name, '<')
	if open < 0 {
		return name == metric
	}
	end := strings.IndexByte(name[open:], '>')
	if end < 0 {
		return name == metric
	}
	prefix, rest := name[:open], name[open+end+1:]
	if !strings.HasPrefix(metric, prefix) {
		return false
	}
	tail := metric[len(prefix):]
	// The wildcard takes at least one byte; the rest of the name matches
	// from some later position.
	for i := 1; i <= len(tail); i++ {
		if NameMatches(rest, tail[i:]) {
			return true
		}
	}
	return false
}
