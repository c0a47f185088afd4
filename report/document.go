package report

import (
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"
)

// The report is built once as a document (sections of blocks) and then
// written as HTML and as Markdown, so both always say the same.

type doc struct {
	Title    string
	Subtitle string
	Meta     []kv   // header details
	Cards    []card // the counts
	Hilite   []card // the best of the run, at a glance
	Legend   []swatch
	Sections []*section
	Skipped  []string // figures left out, with why
}

type kv struct{ K, V, Title string }

type card struct {
	Label, Value, Sub string
	Warn              bool
	Swatch            string
}

type swatch struct{ Name, Color string }

type section struct {
	ID, Title, Intro string
	Blocks           []any // *table, *figure, *note, *transcript, *heading
}

type heading struct{ Text, ID string }

type note struct {
	Text string
	Kind string // "info" or "skip"
}

type table struct {
	Title    string
	Caption  string
	Cols     []col
	Rows     []trow
	Collapse string // non-empty: folded under this summary
	Heat     bool   // shade the numeric cells by value
	Compact  bool
	// GroupBy, when > 0, is 1 + the column whose value groups the rows
	// (the task): best values are marked within a group only.
	GroupBy int
}

type col struct {
	Name   string
	Group  string // a header spanning consecutive columns with the same group
	Num    bool
	Better int // +1 higher is better, -1 lower is better, 0 no best
	Title  string
	Wide   bool   // free text that wraps
	Swatch string // a colour dot before the name
}

type trow struct {
	Cells []cell
	Break bool // a rule above (a new model)
	// View is the query of promoral view's case list for this row's cases
	// (viewQuery); the view, serving the report, turns it into a link.
	View string
}

// viewQuery is the query of promoral view's case list for a cell; empty
// arguments are left out.
func viewQuery(model, strategy, task string, more ...string) string {
	v := url.Values{}
	for k, x := range map[string]string{"model": model, "strategy": strategy, "task": task} {
		if x != "" {
			v.Set(k, x)
		}
	}
	for i := 0; i+1 < len(more); i += 2 {
		v.Add(more[i], more[i+1])
	}
	return v.Encode()
}

type cell struct {
	Text   string
	Sub    string  // e.g. the interval, in small type
	V      float64 // the value behind a numeric cell (NaN: none)
	Best   bool
	Bad    bool
	Good   bool
	Swatch string // a colour dot before the text
	Title  string
	Heat   float64 // 0..1 shade (NaN: none)
	Code   bool
}

func txt(s string) cell { return cell{Text: s, V: math.NaN(), Heat: math.NaN()} }

func numCell(v float64, digits int) cell {
	return cell{Text: fmtNum(v, digits), V: v, Heat: math.NaN()}
}

func ciCell(v, lo, hi float64, digits int) cell {
	c := numCell(v, digits)
	if !math.IsNaN(lo) && !math.IsNaN(hi) && !math.IsNaN(v) {
		c.Sub = fmtNum(lo, digits) + "–" + fmtNum(hi, digits)
		c.Title = fmt.Sprintf("95%% interval %s to %s", fmtNum(lo, digits), fmtNum(hi, digits))
	}
	return c
}

func intCell(v float64) cell {
	c := numCell(v, 0)
	if !math.IsNaN(v) {
		c.Text = groupDigits(int64(math.Round(v)))
	}
	return c
}

func modelCell(r *run, model string) cell {
	c := txt(model)
	c.Swatch = r.color(model)
	return c
}

// markBest flags, per column with a direction, the best value, when one
// cell holds it alone: a tie crowns nobody.
func (t *table) markBest() {
	if t.GroupBy > 0 {
		// Best within each group (a task), never across.
		groups := map[string][]int{}
		var order []string
		for i, r := range t.Rows {
			k := ""
			if t.GroupBy-1 < len(r.Cells) {
				k = r.Cells[t.GroupBy-1].Text
			}
			if groups[k] == nil {
				order = append(order, k)
			}
			groups[k] = append(groups[k], i)
		}
		if len(order) > 1 {
			for _, k := range order {
				sub := &table{Cols: t.Cols}
				for _, i := range groups[k] {
					sub.Rows = append(sub.Rows, t.Rows[i])
				}
				sub.markBest()
				for n, i := range groups[k] {
					t.Rows[i] = sub.Rows[n]
				}
			}
			return
		}
	}
	for j, c := range t.Cols {
		if c.Better == 0 {
			continue
		}
		best, n := math.NaN(), 0
		for _, r := range t.Rows {
			if j >= len(r.Cells) {
				continue
			}
			v := r.Cells[j].V
			if math.IsNaN(v) {
				continue
			}
			n++
			if math.IsNaN(best) || (c.Better > 0 && v > best) || (c.Better < 0 && v < best) {
				best = v
			}
		}
		if n < 2 {
			continue
		}
		at := -1
		for i := range t.Rows {
			if j < len(t.Rows[i].Cells) && !math.IsNaN(t.Rows[i].Cells[j].V) && math.Abs(t.Rows[i].Cells[j].V-best) <= 1e-12 {
				if at >= 0 {
					at = -2
					break
				}
				at = i
			}
		}
		if at >= 0 {
			t.Rows[at].Cells[j].Best = true
		}
	}
}

// shade sets Heat on every numeric cell, scaled over the table's range.
func (t *table) shade() {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, r := range t.Rows {
		for j, c := range r.Cells {
			if j < len(t.Cols) && t.Cols[j].Num && !math.IsNaN(c.V) {
				lo, hi = math.Min(lo, c.V), math.Max(hi, c.V)
			}
		}
	}
	if math.IsInf(lo, 0) {
		return
	}
	for i := range t.Rows {
		for j := range t.Rows[i].Cells {
			c := &t.Rows[i].Cells[j]
			if j < len(t.Cols) && t.Cols[j].Num && !math.IsNaN(c.V) {
				if hi > lo {
					c.Heat = (c.V - lo) / (hi - lo)
				} else {
					c.Heat = 0.5
				}
			}
		}
	}
	t.Heat = true
}

type transcript struct {
	CaseID  string
	Why     string
	Outcome []kv
	Turns   []turn
	Judge   []kv
}

type turn struct {
	Stage   string
	Meta    []string
	Earlier int // messages already shown in an earlier turn
	Msgs    []message
	Reply   string
	Err     string
}

type message struct{ Role, Content string }

// ---- formatting ----

func fmtNum(v float64, digits int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "–"
	}
	if digits == 0 {
		return groupDigits(int64(math.Round(v)))
	}
	return strconv.FormatFloat(v, 'f', digits, 64)
}

func fmtSigned(v float64, digits int) string {
	if math.IsNaN(v) {
		return "–"
	}
	s := strconv.FormatFloat(v, 'f', digits, 64)
	if !strings.HasPrefix(s, "-") {
		s = "+" + s
	}
	if strings.Trim(s, "+-0.") == "" {
		s = "±" + strings.TrimLeft(s, "+-")
	}
	return s
}

func fmtP(p float64) string {
	switch {
	case math.IsNaN(p):
		return "–"
	case p < 0.001:
		return "<0.001"
	default:
		return strconv.FormatFloat(p, 'f', 3, 64)
	}
}

func groupDigits(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, ch := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(ch)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

func fmtTokens(n float64) string {
	switch {
	case math.IsNaN(n):
		return "–"
	case n >= 1e9:
		return strconv.FormatFloat(n/1e9, 'f', 2, 64) + " B"
	case n >= 1e6:
		return strconv.FormatFloat(n/1e6, 'f', 2, 64) + " M"
	case n >= 1e4:
		return strconv.FormatFloat(n/1e3, 'f', 1, 64) + " k"
	}
	return groupDigits(int64(math.Round(n)))
}

func fmtCost(c float64) string {
	switch {
	case math.IsNaN(c):
		return "–"
	case c == 0:
		return "$0"
	case c < 1:
		return "$" + strconv.FormatFloat(c, 'f', 4, 64)
	}
	return "$" + strconv.FormatFloat(c, 'f', 2, 64)
}

// clip shortens s to n runes with an ellipsis.
func clip(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return strings.TrimSpace(string(r[:n])) + "…"
}
