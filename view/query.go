package view

import (
	"cmp"
	"fmt"
	"math"
	"net/url"
	"slices"
	"strconv"
	"strings"
)

// A facet is one filter of the list: a name, its values, and each case's
// value. Every case has exactly one value of a facet (subset: any number),
// so the counts of a facet add up to the cases the other filters leave.
type facet struct {
	Name  string
	Title string
	multi bool
	// sorted lists the values by name (the first, "none", stays first).
	sorted bool
	// none: value 0 stands for no value (dictionary facets).
	none bool
	vals func(r *Run) []string
	// codes binds the facet to a run: the value code of case i.
	codes func(r *Run) func(i int) int
	mask  func(r *Run, i int) uint64
}

func dictFacet(name, title, none string, col func(r *Run) []uint16) facet {
	return facet{Name: name, Title: title,
		vals: func(r *Run) []string {
			v := slices.Clone(r.dicts[name].vals)
			v[0] = none
			return v
		},
		sorted: true, none: true,
		codes: func(r *Run) func(int) int {
			c := col(r)
			return func(i int) int { return int(c[i]) }
		}}
}

func fixedFacet(name, title string, vals []string, code func(r *Run, i int) int) facet {
	return facet{Name: name, Title: title, vals: func(*Run) []string { return vals },
		codes: func(r *Run) func(int) int { return func(i int) int { return code(r, i) } }}
}

// outcome is each case's one-word result: errors first, then unparsed
// (whatever the metric's policy makes of it), then right or wrong.
func outcome(r *Run, i int) int {
	switch {
	case r.errc[i] != 0:
		return 4
	case r.parsed[i] != 1:
		return 2
	case r.correct[i] == 1:
		return 0
	case r.correct[i] == 0:
		return 1
	}
	return 3
}

var outcomes = []string{"right", "wrong", "unparsed", "no gold", "error"}

// corrects are the values of the Correct facet: how the run's metric
// counts each case under its task's unparsed and errors policies.
var corrects = []string{"right", "wrong", "unparsed, scored wrong", "left out", "no gold"}

// correctness binds the Correct facet to a run: case i's value. A reply
// without a label is never a wrong label: it is wrong only as unparsed:
// wrong scores it (its own value), and left out under unparsed: exclude,
// as errored cases are under errors: exclude. "wrong" is exactly
// Outcome's "wrong". The policies are the run's, task by task, as the
// paired comparison reads them (Run.scored).
func correctness(r *Run) func(int) int {
	pol := map[uint16]answerPolicy{}
	return func(i int) int {
		if r.gold[i] == 0 {
			return 4
		}
		t := r.task[i]
		p, ok := pol[t]
		if !ok {
			p = r.policy(r.val("task", t))
			pol[t] = p
		}
		errored := r.errc[i] != 0
		ok, right := p.Score(errored, r.parsed[i] == 1, r.correct[i] == 1)
		switch {
		case !ok:
			return 3
		case right:
			return 0
		case r.parsed[i] == 1 && !errored:
			return 1
		}
		return 2
	}
}

// facets in the order the page shows them.
var facets = []facet{
	dictFacet("model", "Model", "(none)", func(r *Run) []uint16 { return r.model }),
	dictFacet("strategy", "Strategy", "(none)", func(r *Run) []uint16 { return r.strategy }),
	dictFacet("task", "Task", "(none)", func(r *Run) []uint16 { return r.task }),
	{Name: "subset", Title: "Subset", multi: true,
		vals: func(r *Run) []string { return r.subsetNames },
		mask: func(r *Run, i int) uint64 { return r.subsets[i] }},
	fixedFacet("outcome", "Outcome", outcomes, outcome),
	fixedFacet("parsed", "Parsed", []string{"parsed", "unparsed", "errored"}, func(r *Run, i int) int {
		switch {
		case r.errc[i] != 0:
			return 2
		case r.parsed[i] == 1:
			return 0
		}
		return 1
	}),
	{Name: "correct", Title: "Correct (as scored)", vals: func(*Run) []string { return corrects }, codes: correctness},
	dictFacet("error", "Error", "none", func(r *Run) []uint16 { return r.errc }),
	dictFacet("verdict", "Judge verdict", "(not judged)", func(r *Run) []uint16 { return r.verdict }),
	fixedFacet("audit", "Audit flag", []string{"flagged", "not flagged", "not judged"}, func(r *Run, i int) int {
		switch r.audit[i] {
		case 1:
			return 0
		case 0:
			return 1
		}
		return 2
	}),
	{Name: "labelled", Title: "Human label", vals: func(*Run) []string { return []string{"labelled", "unlabelled"} },
		codes: func(r *Run) func(int) int {
			r.mu.RLock()
			has := make(map[int32]bool, len(r.labels))
			for i, ls := range r.labels {
				has[i] = len(ls) > 0
			}
			r.mu.RUnlock()
			return func(i int) int {
				if has[int32(i)] {
					return 0
				}
				return 1
			}
		}},
	fixedFacet("truncated", "Cut off", []string{"cut off", "complete"}, func(r *Run, i int) int {
		if r.truncated[i] == 1 {
			return 0
		}
		return 1
	}),
	dictFacet("gold", "Gold", "(no gold)", func(r *Run) []uint16 { return r.gold }),
	dictFacet("label", "Answer", "(none)", func(r *Run) []uint16 { return r.label }),
}

func facetByName(name string) (int, bool) {
	for k, f := range facets {
		if f.Name == name {
			return k, true
		}
	}
	return 0, false
}

// Query is a list request: selected facet values, search words, order and
// page.
type Query struct {
	Sel    map[string][]string
	Q      string
	Sort   string
	Offset int
	Limit  int
}

// ParseQuery reads a query from URL parameters; a facet may repeat (OR).
func ParseQuery(v url.Values) (Query, error) {
	q := Query{Sel: map[string][]string{}, Q: strings.TrimSpace(v.Get("q")), Sort: v.Get("sort"), Limit: 100}
	for k, vals := range v {
		if _, ok := facetByName(k); ok {
			q.Sel[k] = vals
		}
	}
	var err error
	if s := v.Get("offset"); s != "" {
		if q.Offset, err = strconv.Atoi(s); err != nil || q.Offset < 0 {
			return q, fmt.Errorf("offset %q: want a whole number from 0", s)
		}
	}
	if s := v.Get("limit"); s != "" {
		if q.Limit, err = strconv.Atoi(s); err != nil || q.Limit < 1 || q.Limit > 5000 {
			return q, fmt.Errorf("limit %q: want 1 to 5000", s)
		}
	}
	switch q.Sort {
	case "", "conf", "-conf", "tokens", "-tokens", "cost", "-cost":
	default:
		return q, fmt.Errorf("sort %q: want conf, tokens or cost, with - for descending", q.Sort)
	}
	return q, nil
}

// FacetCount is one value of a facet with the cases that have it among
// those the other filters leave.
type FacetCount struct {
	Value    string `json:"value"`
	N        int    `json:"n"`
	Selected bool   `json:"selected,omitempty"`
}

// FacetCounts is one facet as the page shows it.
type FacetCounts struct {
	Name   string       `json:"name"`
	Title  string       `json:"title"`
	Values []FacetCount `json:"values"`
}

// Match is the outcome of a query: the matching cases in order and every
// facet's counts.
type Match struct {
	Cases  []int32
	Facets []FacetCounts
	// Search is "" (no search), "ready", or "indexing" while the word index
	// is not built yet (then Cases ignores the search words).
	Search   string
	Progress float64
}

// Find applies a query. A facet's counts ignore the facet's own
// selection, so the page can show what choosing another value would give.
func (r *Run) Find(q Query) (*Match, error) {
	type sel struct {
		allow []bool
		mask  uint64
		on    bool
	}
	sels := make([]sel, len(facets))
	vals := make([][]string, len(facets))
	for k, f := range facets {
		vals[k] = f.vals(r)
		chosen := q.Sel[f.Name]
		if len(chosen) == 0 {
			continue
		}
		s := sel{on: true, allow: make([]bool, len(vals[k]))}
		for _, c := range chosen {
			found := false
			for j, v := range vals[k] {
				if v == c {
					s.allow[j], found = true, true
					s.mask |= 1 << uint(j)
				}
			}
			if !found {
				// A value this run lacks (a link from another run's report)
				// matches nothing, and says so through the zero count.
				continue
			}
		}
		sels[k] = s
	}
	m := &Match{}
	var words []uint64
	if q.Q != "" {
		if ok, p := r.idx.ready(); ok {
			m.Search = "ready"
			words = r.idx.search(q.Q)
			if words == nil {
				words = make([]uint64, (r.n+63)/64) // only punctuation: nothing matches
			}
		} else {
			m.Search, m.Progress = "indexing", p
		}
	}
	counts := make([][]int, len(facets))
	for k := range facets {
		counts[k] = make([]int, len(vals[k]))
	}
	codes := make([]int, len(facets))
	codeOf := make([]func(int) int, len(facets))
	for k, f := range facets {
		if !f.multi {
			codeOf[k] = f.codes(r)
		}
	}
	searchBit := uint64(1) << uint(len(facets))
	for i := 0; i < r.n; i++ {
		var fail uint64
		for k, f := range facets {
			if f.multi {
				if s := sels[k]; s.on && f.mask(r, i)&s.mask == 0 {
					fail |= 1 << uint(k)
				}
				continue
			}
			c := codeOf[k](i)
			codes[k] = c
			if s := sels[k]; s.on && !s.allow[c] {
				fail |= 1 << uint(k)
			}
		}
		if words != nil && words[i/64]&(1<<(uint(i)%64)) == 0 {
			fail |= searchBit
		}
		if fail&(fail-1) != 0 {
			continue // fails two filters: counts for no facet
		}
		for k, f := range facets {
			if fail != 0 && fail != 1<<uint(k) {
				continue
			}
			if f.multi {
				for mk := f.mask(r, i); mk != 0; mk &= mk - 1 {
					counts[k][trailing(mk)]++
				}
				continue
			}
			counts[k][codes[k]]++
		}
		if fail == 0 {
			m.Cases = append(m.Cases, int32(i))
		}
	}
	for k, f := range facets {
		fc := FacetCounts{Name: f.Name, Title: f.Title, Values: []FacetCount{}}
		for j, v := range vals[k] {
			// A "none" value no case has is noise; every other value stays,
			// with its zero, so the page can say what the filters exclude.
			if counts[k][j] == 0 && j == 0 && f.none && !slices.Contains(q.Sel[f.Name], v) {
				continue
			}
			fc.Values = append(fc.Values, FacetCount{Value: v, N: counts[k][j], Selected: slices.Contains(q.Sel[f.Name], v)})
		}
		if f.sorted && len(fc.Values) > 1 {
			rest := fc.Values
			if fc.Values[0].Value == vals[k][0] {
				rest = fc.Values[1:]
			}
			slices.SortFunc(rest, func(a, b FacetCount) int { return strings.Compare(a.Value, b.Value) })
		}
		m.Facets = append(m.Facets, fc)
	}
	r.sortCases(m.Cases, q.Sort)
	return m, nil
}

func trailing(x uint64) int {
	n := 0
	for x&1 == 0 {
		x >>= 1
		n++
	}
	return n
}

func (r *Run) sortCases(cs []int32, by string) {
	if by == "" {
		return
	}
	desc := strings.HasPrefix(by, "-")
	key := strings.TrimPrefix(by, "-")
	val := func(i int32) float64 {
		switch key {
		case "conf":
			return float64(r.conf[i])
		case "tokens":
			return float64(r.tokens[i])
		}
		return float64(r.cost[i])
	}
	slices.SortStableFunc(cs, func(a, b int32) int {
		va, vb := val(a), val(b)
		// Missing values go last either way.
		if na, nb := math.IsNaN(va), math.IsNaN(vb); na || nb {
			switch {
			case na && nb:
				return 0
			case na:
				return 1
			}
			return -1
		}
		if desc {
			return cmp.Compare(vb, va)
		}
		return cmp.Compare(va, vb)
	})
}

// Row is one case as the list shows it.
type Row struct {
	I         int32    `json:"i"`
	ID        string   `json:"id"`
	Model     string   `json:"model"`
	Strategy  string   `json:"strategy"`
	Task      string   `json:"task"`
	Item      string   `json:"item"`
	Repeat    int32    `json:"repeat,omitempty"` // the case's sample index (repeats: k)
	Base      string   `json:"base"`             // the item id without the answering model and strategy (see baseItem)
	Gold      string   `json:"gold,omitempty"`
	Label     string   `json:"label,omitempty"`
	Conf      *float64 `json:"conf,omitempty"`
	Outcome   string   `json:"outcome"`
	Error     string   `json:"error,omitempty"`
	Verdict   string   `json:"verdict,omitempty"`
	Audit     bool     `json:"audit,omitempty"`
	Labels    []string `json:"labels,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
	Blocked   bool     `json:"blocked,omitempty"`
	Tokens    int32    `json:"tokens"`
	Subsets   []string `json:"subsets,omitempty"`
	Excerpt   string   `json:"excerpt,omitempty"`
}

func (r *Run) row(i int32) Row {
	ii := int(i)
	o := Row{I: i, ID: r.id[i], Model: r.val("model", r.model[i]), Strategy: r.val("strategy", r.strategy[i]),
		Task: r.val("task", r.task[i]), Item: r.item[i], Base: baseItem(r, i), Gold: r.val("gold", r.gold[i]), Label: r.val("label", r.label[i]),
		Outcome: outcomes[outcome(r, ii)], Error: r.val("error", r.errc[i]),
		Audit: r.audit[i] == 1, Truncated: r.truncated[i] == 1, Blocked: r.blocked[i] == 1, Tokens: r.tokens[i],
		Excerpt: r.idx.excerptOf(ii)}
	if r.repeat != nil {
		o.Repeat = r.repeat[i]
	}
	if r.verdict[i] != 0 {
		o.Verdict = r.val("verdict", r.verdict[i])
	}
	if c := r.conf[i]; !math.IsNaN(c) {
		o.Conf = &c
	}
	for _, l := range r.labelsOf(ii) {
		o.Labels = append(o.Labels, l.Label)
	}
	for m := r.subsets[i]; m != 0; m &= m - 1 {
		o.Subsets = append(o.Subsets, r.subsetNames[trailing(m)])
	}
	return o
}
