package review

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"
	"strings"

	"github.com/promoral/promoral/internal/wrap"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/stats"
	"github.com/promoral/promoral/runfolder/manifest"
)

// RunDiffOptions adjust a comparison of two run folders.
type RunDiffOptions struct {
	// Seed seeds the paired bootstraps; 0 takes the new run's
	// settings.seed from its manifest (else the old run's, else 1).
	Seed uint64
	// OnlyChanged leaves out the cells where nothing changed.
	OnlyChanged bool
}

// RunComparison is what CompareRuns found.
type RunComparison struct {
	Seed     uint64
	SeedFrom string // where the seed came from, for the reader
	// Metrics are the rows of metrics.parquet that differ, keyed on
	// block, model, strategy, task, subset, factors and metric.
	Metrics []MetricChange
	Cells   []PairedCell
	// Verdicts compare the judges' verdicts case by case
	// (rundiffverdicts.go).
	Verdicts []VerdictCell
	Notes    []string
}

// MetricChange is one row of metrics.parquet in either run.
type MetricChange struct {
	Key      string
	Old, New map[string]any // nil: the row is not in that run
}

// PairedCell compares one model x strategy x task across the two runs on
// the items both scored, each run's answers counted under its own
// policies.
type PairedCell struct {
	Model, Strategy, Task string
	Diff                  stats.Paired
	Holm                  float64
	Flips                 []Flip
	// Dropped counts the new run's answers left out: of an item the old
	// run did not answer, unparsed under an exclude policy, or errored (on
	// either side).
	Dropped int
	// Incomplete: a side's errors policy is incomplete and it has errored
	// cases in this cell, so no paired figure is given.
	Incomplete bool
	Changed    bool
	// Repeats: some item has several samples on a side; an item's score is
	// then its share of right samples, the difference a mean over items
	// with an interval resampling items, and the test a sign test on the
	// items whose score rose or fell (Flips: the items whose score changed).
	Repeats bool
	// MDE is the smallest |difference| the test detects with 80% power
	// at Holm's first level across the cells (rundiffpower.go).
	MDE float64
	pp  stats.PilotPair
}

// Flip is an item whose correctness changed.
type Flip struct {
	Item     string
	NowRight bool
}

// runManifest reads what a run folder's manifest says, if it has one.
func runManifest(dir string) *manifest.Manifest {
	m, err := manifest.Read(dir)
	if err != nil {
		return nil
	}
	return m
}

// metricKey is a metrics.parquet row's key as a string.
func metricKey(r map[string]any, factors []string) string {
	k := fmt.Sprintf("%v/%v/%v/%v/%v", r["block"], r["model"], r["strategy"], r["task"], r["subset"])
	if len(factors) > 0 {
		var fs []string
		for _, f := range factors {
			fs = append(fs, fmt.Sprint(r[f]))
		}
		k += " [" + strings.Join(fs, ",") + "]"
	}
	return k + fmt.Sprintf(" %v", r["metric"])
}

// CompareRuns compares two finished run folders: the metric rows that
// changed, and per model x strategy x task the paired accuracy difference
// on the items both runs scored, with its paired bootstrap interval,
// McNemar's exact p (Holm-adjusted) and the items whose correctness
// flipped.
func CompareRuns(oldDir, newDir string, o RunDiffOptions) (*RunComparison, error) {
	om, nm := runManifest(oldDir), runManifest(newDir)
	c := &RunComparison{Seed: o.Seed, SeedFrom: "given"}
	switch {
	case c.Seed != 0:
	case nm != nil && nm.Seed != 0:
		c.Seed, c.SeedFrom = uint64(nm.Seed), "the new run's settings.seed"
	case om != nil && om.Seed != 0:
		c.Seed, c.SeedFrom = uint64(om.Seed), "the old run's settings.seed"
	default:
		c.Seed, c.SeedFrom = 1, "neither run records one"
	}
	oRows, err1 := parquetio.Read(filepath.Join(oldDir, "metrics.parquet"))
	nRows, err2 := parquetio.Read(filepath.Join(newDir, "metrics.parquet"))
	if err1 == nil && err2 == nil {
		var factors []string
		if nm != nil {
			factors = nm.Factors
		}
		old := map[string]map[string]any{}
		for _, r := range oRows {
			old[metricKey(r, factors)] = r
		}
		seen := map[string]bool{}
		for _, r := range nRows {
			k := metricKey(r, factors)
			seen[k] = true
			if o := old[k]; o == nil || !sameMetric(o, r) {
				c.Metrics = append(c.Metrics, MetricChange{Key: k, Old: old[k], New: r})
			}
		}
		for k, r := range old {
			if !seen[k] {
				c.Metrics = append(c.Metrics, MetricChange{Key: k, Old: r})
			}
		}
		sort.Slice(c.Metrics, func(i, j int) bool { return c.Metrics[i].Key < c.Metrics[j].Key })
	}
	or, err := parquetio.Read(filepath.Join(oldDir, "results.parquet"))
	if err != nil {
		return nil, err
	}
	nr, err := parquetio.Read(filepath.Join(newDir, "results.parquet"))
	if err != nil {
		return nil, err
	}
	c.Verdicts = compareVerdicts(or, nr, om, nm)
	type key struct{ model, strategy, task string }
	type answer struct {
		correct, parsed bool
		errored         bool
	}
	read := func(r map[string]any) answer {
		a := answer{parsed: r["parsed"] == true, errored: r["error"] != nil && r["error"] != ""}
		a.correct, _ = r["correct"].(bool)
		return a
	}
	// Answers pair by item: with repeats, an item's samples on each side
	// make its score (the share right), and the interval resamples items.
	itemKey := func(r map[string]any) string {
		return fmt.Sprint(r["model"], "\x00", r["strategy"], "\x00", r["task"], "\x00", r["item_id"])
	}
	oldAns := map[string][]answer{}
	for _, r := range or {
		if _, ok := r["correct"].(bool); ok || r["error"] != nil {
			oldAns[itemKey(r)] = append(oldAns[itemKey(r)], read(r))
		}
	}
	type side struct{ right, n int }
	type pair struct {
		items    []string
		at       map[string]int
		old, new []side
		dropped  int
		errOld   bool
		errNew   bool
		repeats  bool
		pOld, pN manifest.AnswerPolicy
	}
	pairs := map[key]*pair{}
	var keys []key
	// scored says whether an answer enters the comparison under its run's
	// policy, and whether it counts as correct.
	scored := func(a answer, p manifest.AnswerPolicy) (ok, correct bool) {
		return p.Score(a.errored, a.parsed, a.correct)
	}
	for _, r := range nr {
		if _, ok := r["correct"].(bool); !ok && r["error"] == nil {
			continue // no gold
		}
		k := key{fmt.Sprint(r["model"]), fmt.Sprint(r["strategy"]), fmt.Sprint(r["task"])}
		p := pairs[k]
		if p == nil {
			p = &pair{pOld: manifest.PolicyFor(om, k.task), pN: manifest.PolicyFor(nm, k.task), at: map[string]int{}}
			pairs[k] = p
			keys = append(keys, k)
		}
		ik := itemKey(r)
		olds, ok := oldAns[ik]
		if !ok {
			p.dropped++
			continue
		}
		i, seen := p.at[ik]
		if !seen {
			i = len(p.items)
			p.at[ik] = i
			p.items = append(p.items, fmt.Sprint(r["item_id"]))
			var o side
			for _, oa := range olds {
				p.errOld = p.errOld || oa.errored
				if okO, co := scored(oa, p.pOld); okO {
					o.n++
					if co {
						o.right++
					}
				}
			}
			p.old = append(p.old, o)
			p.new = append(p.new, side{})
		}
		na := read(r)
		p.errNew = p.errNew || na.errored
		okN, cn := scored(na, p.pN)
		if !okN {
			p.dropped++
			continue
		}
		p.new[i].n++
		if cn {
			p.new[i].right++
		}
	}
	cells := make([]stats.PairedCounts, len(keys))
	ids := make([][]string, len(keys))
	for ki, k := range keys {
		p := pairs[k]
		pc := &cells[ki]
		for i, id := range p.items {
			o, n := p.old[i], p.new[i]
			if n.n == 0 {
				continue // every new answer was left out, and counted
			}
			if o.n == 0 {
				p.dropped += n.n // nothing on the old side to pair with
				continue
			}
			ids[ki] = append(ids[ki], id)
			pc.AR, pc.AN, pc.BR, pc.BN = append(pc.AR, o.right), append(pc.AN, o.n), append(pc.BR, n.right), append(pc.BN, n.n)
		}
		pc.Void = (p.errOld && p.pOld.Errors() == spec.ErrorsIncomplete) || (p.errNew && p.pN.Errors() == spec.ErrorsIncomplete)
	}
	diffs, repeats, adj := stats.PairedCells(cells, 1000, c.Seed)
	ps := make([]float64, len(keys)) // the p-values Holm adjusted, for the MDEs
	for ki, k := range keys {
		pc := cells[ki]
		cell := PairedCell{Model: k.model, Strategy: k.strategy, Task: k.task, Dropped: pairs[k].dropped,
			Incomplete: pc.Void, Diff: diffs[ki], Repeats: repeats[ki], Holm: adj[ki]}
		ps[ki] = cell.Diff.McNemarP
		if cell.Incomplete || cell.Diff.N == 0 {
			ps[ki] = math.NaN()
		}
		for j, id := range ids[ki] {
			so, sn := float64(pc.AR[j])/float64(pc.AN[j]), float64(pc.BR[j])/float64(pc.BN[j])
			if so != sn {
				cell.Flips = append(cell.Flips, Flip{Item: id, NowRight: sn > so})
			}
		}
		cell.Changed = len(cell.Flips) > 0 || cell.Incomplete
		cell.pp = stats.PilotPair{ARight: pc.AR, AN: pc.AN, BRight: pc.BR, BN: pc.BN}
		c.Cells = append(c.Cells, cell)
	}
	setMDEs(c.Cells, ps)
	pol := func(m *manifest.Manifest) string {
		var parts []string
		seen := map[string]bool{}
		for _, k := range keys {
			p := manifest.PolicyFor(m, k.task)
			s := fmt.Sprintf("unparsed %s, errors %s", p.Unparsed(), p.Errors())
			if !seen[s] {
				seen[s] = true
				parts = append(parts, s)
			}
		}
		return strings.Join(parts, " / ")
	}
	c.Notes = append(c.Notes, fmt.Sprintf("each run counted under its own policies: old %s; new %s", pol(om), pol(nm)),
		fmt.Sprintf("paired bootstrap seed %d (%s)", c.Seed, c.SeedFrom))
	for _, r := range []struct {
		side string
		m    *manifest.Manifest
	}{{"old", om}, {"new", nm}} {
		if r.m != nil && r.m.Selection.Partial() {
			c.Notes = append(c.Notes, fmt.Sprintf("the %s run covers part of its study (%s): its figures describe those cases only", r.side, r.m.Selection.Describe()))
		}
	}
	return c, nil
}

func sameMetric(a, b map[string]any) bool {
	for _, k := range []string{"value", "n", "status", "unparsed_policy", "errors_policy"} {
		x, y := a[k], b[k]
		xf, okx := x.(float64)
		yf, oky := y.(float64)
		if okx && oky {
			if math.Abs(xf-yf) > 1e-12 {
				return false
			}
			continue
		}
		if fmt.Sprint(x) != fmt.Sprint(y) {
			return false
		}
	}
	return true
}

// Lines formats the comparison for an 80-column terminal; OnlyChanged
// drops the cells where nothing changed. Each metric row and each cell is a
// heading line (its key) with its figures on the lines below.
func (c *RunComparison) Lines(onlyChanged bool) []string {
	var lines []string
	lines = append(lines, fmt.Sprintf("metrics: %d changed (key: block/model/strategy/task/subset/factors metric)", len(c.Metrics)))
	val := func(r map[string]any) string {
		if r == nil {
			return "(none)"
		}
		s := "-"
		if v, ok := r["value"].(float64); ok {
			s = fmt.Sprintf("%.4f", v)
		}
		if st, ok := r["status"].(string); ok && st != "" && st != spec.StatusOK {
			s = st
		}
		return fmt.Sprintf("%s (n %v)", s, r["n"])
	}
	for _, m := range c.Metrics {
		l := fmt.Sprintf("%s -> %s", val(m.Old), val(m.New))
		ov, okO := m.Old["value"].(float64)
		nv, okN := m.New["value"].(float64)
		if okO && okN {
			l += fmt.Sprintf(" (%+.4f)", nv-ov)
		}
		for _, p := range []string{"unparsed_policy", "errors_policy"} {
			if m.Old != nil && m.New != nil && fmt.Sprint(m.Old[p]) != fmt.Sprint(m.New[p]) {
				l += fmt.Sprintf("; %s %v -> %v", p, m.Old[p], m.New[p])
			}
		}
		lines = append(lines, "  "+m.Key)
		lines = append(lines, indentClauses(l, "    ")...)
	}
	lines = append(lines, c.verdictLines(onlyChanged)...)
	lines = append(lines, "", "paired accuracy (new - old) on the items both runs scored:")
	for _, n := range c.Notes {
		lines = append(lines, strings.Split(wrap.Indent("("+n+")", "  ", "   ", width), "\n")...)
	}
	shown := 0
	for _, cell := range c.Cells {
		if onlyChanged && !cell.Changed {
			continue
		}
		shown++
		d := cell.Diff
		lines = append(lines, fmt.Sprintf("  %s / %s / %s", cell.Model, cell.Strategy, cell.Task))
		if cell.Incomplete {
			lines = append(lines, indentClauses(fmt.Sprintf("incomplete: a run has errored cases here under errors: incomplete; n=%d paired", d.N), "    ")...)
			continue
		}
		effect := fmt.Sprintf("    n=%d  %+.4f [%+.4f, %+.4f]", d.N, d.MeanDiff, d.Lo, d.Hi)
		test := fmt.Sprintf("    flips %d->wrong %d->right  McNemar p=%.4g  Holm p=%.4g", d.B, d.C, d.McNemarP, cell.Holm)
		if cell.Repeats {
			effect = fmt.Sprintf("    n=%d items  %+.4f [%+.4f, %+.4f]", d.N, d.MeanDiff, d.Lo, d.Hi)
			test = fmt.Sprintf("    items worse %d, better %d  sign test p=%.4g  Holm p=%.4g", d.B, d.C, d.McNemarP, cell.Holm)
		}
		lines = append(lines, effect+mdeNote(cell), test)
		if cell.Repeats {
			lines = append(lines, indentClauses("(repeats: an item's score is its share of right samples; the interval resamples items)", "    ")...)
		}
		if cell.Dropped > 0 {
			what := spec.Plural(cell.Dropped, "item", "items")
			if cell.Repeats {
				what = spec.Plural(cell.Dropped, "sample", "samples")
			}
			lines = append(lines, indentClauses("("+what+" left out: one run only, excluded unparsed, or errored)", "    ")...)
		}
		if len(cell.Flips) > 0 {
			var fl []string
			for _, f := range cell.Flips {
				dir := "now wrong"
				if f.NowRight {
					dir = "now right"
				}
				fl = append(fl, f.Item+" ("+dir+")")
			}
			more := ""
			if len(fl) > 10 {
				fl, more = fl[:10], fmt.Sprintf(" ... and %d more", len(fl)-10)
			}
			lines = append(lines, strings.Split(wrap.Indent("flipped: "+strings.Join(fl, ", ")+more, "    ", "      ", width), "\n")...)
		}
	}
	switch {
	case len(c.Cells) == 0:
		lines = append(lines, "  (no items scored by both runs)")
	case shown == 0:
		lines = append(lines, fmt.Sprintf("  (no cell changed of %d)", len(c.Cells)))
	case onlyChanged && shown < len(c.Cells):
		lines = append(lines, fmt.Sprintf("  (%d unchanged cells not shown)", len(c.Cells)-shown))
	}
	return lines
}

// width is the terminal width the comparison is laid out for.
const width = 80

// indentClauses breaks a "; "-separated line between its clauses to fit
// width after indent.
func indentClauses(text, indent string) []string {
	ls := wrap.Clauses(text, width-len(indent))
	for i := range ls {
		ls[i] = indent + ls[i]
	}
	return ls
}
