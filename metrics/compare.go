package metrics

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/stats"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

func init() {
	spec.RegisterMetric(spec.MetricKind{
		Name: "compare",
		Doc: "Paired comparisons of strategies (or models) on the same items: accuracy difference with a paired bootstrap interval, McNemar's exact p, " +
			"and Holm-adjusted p across the whole table (comparisons.csv).",
		New: func() spec.MetricConfig { return &CompareConfig{} },
		Rows: spec.RowsDoc{
			Lead: "Paired comparisons of strategies (or models, `by: model`) on the same items; the row's `strategy` (or `model`) " +
				"reads `b vs a`, and `comparisons.csv` (`<block>_comparisons.csv` for a named block) adds each side's accuracy and the flipped items.",
			Rows: []spec.RowDoc{
				{Names: []string{"paired_diff"}, Def: "accuracy of b − a on the items both answered, with a paired bootstrap interval", N: "items both answered"},
				{Names: []string{"mcnemar_p"}, Def: "McNemar's exact p", N: "items both answered"},
				{Names: []string{"holm_p"}, Def: "Holm-adjusted p across the whole table", N: "items both answered"},
				{Names: []string{"mde"}, Def: "the smallest difference the pair's test detects with 80 % power (also a column beside the " +
					"interval, where `powered` says whether the observed difference reaches it; `no`: the study could not tell a difference " +
					"that small from none). See [below](#power-and-the-minimum-detectable-difference)", N: "items both answered"},
			},
		},
	})
}

// CompareConfig is the YAML of a compare metric block.
type CompareConfig struct {
	spec.MetricBase `yaml:",inline"`
	By              string          `yaml:"by,omitempty" enum:"strategy,model" default:"strategy" doc:"What is compared: strategy (default; within each model and task) or model (within each strategy and task)."`
	Pairs           [][]string      `yaml:"pairs,omitempty" doc:"Pairs [a, b] to compare (the difference is b - a), e.g. [[zero_shot, self_correct]]; default: every pair in order of appearance."`
	ItemKey         string          `yaml:"item_key,omitempty" doc:"Item field that identifies the same item across cells (default: the item id; for re-scored recorded replies e.g. item)."`
	Unparsed        string          `yaml:"unparsed,omitempty" enum:"wrong,exclude" inherit:"settings.unparsed" doc:"wrong (an unparsed answer is wrong) or exclude (items unparsed on either side are left out of that pair); default: the run's settings.unparsed."`
	Bootstrap       *int            `yaml:"bootstrap,omitempty" min:"0" default:"1000" doc:"Bootstrap replicates for the paired 95% interval (items resampled, seeded with settings.seed); default 1000, 0 turns intervals off."`
	Power           *spec.PowerSpec `yaml:"power,omitempty" doc:"What promoral plan assumes of each pair to say which difference the study can detect (its MDE at 80% power); a pilot run (plan --pilot) measures the same. Every field has a default."`
}

type compare struct {
	errs    string
	table   string
	byModel bool
	pairs   [][2]string
	itemKey string
	tasks   map[string]*spec.Task
	policy  string
	reps    int
	name    string
	power   *spec.PowerSpec
}

// Build checks by and the pairs.
func (c *CompareConfig) Build(b *spec.MetricBuild) spec.Metric {
	m := &compare{errs: c.MetricBase.ErrorsPolicy(), table: tableName(&c.MetricBase, "comparisons"), itemKey: c.ItemKey, policy: c.Unparsed, reps: *c.Bootstrap,
		name: cmp.Or(c.Name, c.Kind), power: c.Power}
	m.byModel = c.By == "model"
	for i, p := range c.Pairs {
		if len(p) != 2 || p[0] == p[1] {
			b.Errf(fmt.Sprintf("pairs[%d]", i), "write [a, b] with two different names", "a pair needs two different names")
			continue
		}
		m.pairs = append(m.pairs, [2]string{p[0], p[1]})
	}
	m.tasks = selectTasks(b, func(t *spec.Task) string {
		if t.Spec.Gold == "" {
			return "it has no gold labels"
		}
		return ""
	})
	checkPairNames(b, c.Pairs, m.byModel, m.tasks)
	return m
}

// checkPairNames shouts about a pair naming no model or strategy of the run,
// which would otherwise compare nothing and print nothing. Names reported
// from the data (report_as) are known only when scoring, so tasks with
// report_as are not checked.
func checkPairNames(b *spec.MetricBuild, pairs [][]string, byModel bool, tasks map[string]*spec.Task) {
	for _, t := range tasks {
		if t.Spec.ReportAs != nil {
			return
		}
	}
	known, what := b.Study.StrategyNames(), "strategy"
	if byModel {
		known, what = b.Study.ModelNames(), "model"
	}
	if len(known) == 0 {
		return // a study assembled in code, with nothing declared to check against
	}
	for i, p := range pairs {
		for j, n := range p {
			if !slices.Contains(known, n) {
				b.Errf(fmt.Sprintf("pairs[%d][%d]", i, j), yamlstrict.NameHint(n, known, "name a "+what+" of this run"), "no %s %q", what, n)
			}
		}
	}
}

func (m *compare) key(it *spec.Item) string {
	if m.itemKey == "" {
		return it.ID
	}
	return fieldString(it, m.itemKey)
}

// side is one compared system's answers by item key: with repeats, an
// item's samples, counted right and scored under the unparsed policy.
type side struct {
	cell  *cell
	name  string
	items map[string]*itemScore
	order []string
}

type itemScore struct{ right, scored, samples int }

// UnparsedOverride is the block's unparsed: ("" = the run's).
func (m *compare) UnparsedOverride() string { return m.policy }

// Compute compares every pair within each task x model (or strategy).
func (m *compare) Compute(rs *spec.ResultSet) (*spec.MetricOutput, error) {
	policy := policyOf(m.policy, rs)
	seed := seedOf(rs)
	type group struct{ task, other string }
	sides := map[group][]*side{}
	var groups []group
	for _, c := range groupCells(rs, m.tasks, m.errs) {
		g, name := group{c.Task.Name, c.Model}, c.Strategy
		if m.byModel {
			g, name = group{c.Task.Name, c.Strategy}, c.Model
		}
		if sides[g] == nil {
			groups = append(groups, g)
		}
		s := &side{cell: c, name: name, items: map[string]*itemScore{}}
		for _, r := range c.Rows {
			if r.Item.Gold == "" {
				continue
			}
			k := m.key(r.Item)
			is := s.items[k]
			if is == nil {
				is = &itemScore{}
				s.items[k] = is
				s.order = append(s.order, k)
			}
			is.samples++
			if policy == stats.UnparsedExclude && !r.Parsed() {
				continue
			}
			is.scored++
			if r.Parsed() && r.Label() == r.Item.Gold {
				is.right++
			}
		}
		sides[g] = append(sides[g], s)
	}
	type cmp struct {
		g    group
		a, b *side
		p    stats.Paired
		accA float64
		accB float64
		// repeats: some item has several samples a side (scored per item)
		repeats bool
		pp      stats.PilotPair // the items' counts, for the MDE
	}
	var cmps []cmp
	for _, g := range groups {
		ss := sides[g]
		byName := map[string]*side{}
		for _, s := range ss {
			byName[s.name] = s
		}
		var pairs [][2]*side
		if len(m.pairs) > 0 {
			for _, p := range m.pairs {
				if a, b := byName[p[0]], byName[p[1]]; a != nil && b != nil {
					pairs = append(pairs, [2]*side{a, b})
				}
			}
		} else {
			for i := range ss {
				for j := i + 1; j < len(ss); j++ {
					pairs = append(pairs, [2]*side{ss[i], ss[j]})
				}
			}
		}
		for _, p := range pairs {
			a, b := p[0], p[1]
			// Items pair by key; with repeats an item's score is its
			// share of right samples (repeats.go), else it is right or not.
			var ca, cb []bool
			var ar, an, br, bn []int
			one := true
			for _, k := range a.order {
				ia, ib := a.items[k], b.items[k]
				if ib == nil {
					continue // not answered by both
				}
				if ia.scored == 0 || ib.scored == 0 {
					continue // unparsed under exclude on a side
				}
				one = one && ia.samples == 1 && ib.samples == 1
				ca, cb = append(ca, ia.right == 1), append(cb, ib.right == 1)
				ar, an, br, bn = append(ar, ia.right), append(an, ia.scored), append(br, ib.right), append(bn, ib.scored)
			}
			reps := m.reps
			var pd stats.Paired
			accA, accB := mean(ca), mean(cb)
			if one {
				pd = stats.PairedDiff(ca, cb, max(reps, 1), seed)
			} else {
				pd = stats.PairedItems(ar, an, br, bn, max(reps, 1), seed)
				accA, accB = meanShare(ar, an), meanShare(br, bn)
			}
			if reps == 0 {
				pd.Lo, pd.Hi, pd.CI = math.NaN(), math.NaN(), stats.NoInterval
			}
			cmps = append(cmps, cmp{g: g, a: a, b: b, p: pd, accA: accA, accB: accB, repeats: !one, pp: stats.PilotPair{ARight: ar, AN: an, BRight: br, BN: bn}})
		}
	}
	ps := make([]float64, len(cmps))
	for i, c := range cmps {
		ps[i] = c.p.McNemarP
		if c.p.N == 0 || incomplete(c.a.cell, m.errs) || incomplete(c.b.cell, m.errs) {
			ps[i] = math.NaN() // no shared item, or no figure: not a test
		}
	}
	holm := stats.Holm(ps)
	by, other := "strategy", "model"
	if m.byModel {
		by, other = "model", "strategy"
	}
	t := spec.CSVTable{Name: m.table, Header: []string{"task", "by", other, "a", "b", "status", "n", "accuracy_a", "accuracy_b", "diff",
		"ci_low", "ci_high", "mde", "powered", "a_right_b_wrong", "a_wrong_b_right", "mcnemar_p", "holm_p"}}
	pps := make([]stats.PilotPair, len(cmps))
	for i, c := range cmps {
		pps[i] = c.pp
	}
	mdes := m.mdes(pps, ps)
	out := &spec.MetricOutput{}
	for i, c := range cmps {
		inc := incomplete(c.a.cell, m.errs) || incomplete(c.b.cell, m.errs)
		status := spec.StatusOK
		if inc {
			status = spec.StatusIncomplete
		}
		t.Rows = append(t.Rows, append([]string{c.g.task, by, c.g.other, c.a.name, c.b.name, status, fmtI(c.p.N)},
			withheld(inc, fmtF(c.accA), fmtF(c.accB), fmtF(c.p.MeanDiff), fmtF(c.p.Lo), fmtF(c.p.Hi), fmtF(mdes[i]), powered(c.p.MeanDiff, mdes[i]), fmtI(c.p.B), fmtI(c.p.C), fmtF(ps[i]), fmtF(holm[i]))...))
		label := c.b.name + " vs " + c.a.name
		model, strategy := c.g.other, label
		if m.byModel {
			model, strategy = label, c.g.other
		}
		mk := func(metric string, v float64, ci stats.Interval) spec.MetricRow {
			r := pooledRow([]*cell{c.a.cell, c.b.cell}, model, strategy, c.g.task, metric, v, c.p.N)
			r.Convention = "b − a on the items both answered"
			if c.repeats {
				r.Convention = "b − a on the items both answered, each item scored by its share of right samples (repeats); interval resamples items, p is a sign test on the items whose score rose or fell"
			}
			spec.SetCI(&r, ci)
			return r
		}
		out.Rows = append(out.Rows, mk("paired_diff", c.p.MeanDiff, c.p.CI), mk("mcnemar_p", ps[i], stats.NoInterval), mk("holm_p", holm[i], stats.NoInterval))
		if !inc {
			r := mk("mde", mdes[i], stats.NoInterval)
			r.Convention = mdeConvention
			out.Rows = append(out.Rows, r)
		}
	}
	out.Tables = []spec.CSVTable{t}
	return out, nil
}

// meanShare is the mean over items of right[i]/n[i].
func meanShare(right, n []int) float64 {
	if len(right) == 0 {
		return math.NaN()
	}
	s := 0.0
	for i := range right {
		s += float64(right[i]) / float64(n[i])
	}
	return s / float64(len(right))
}

func mean(b []bool) float64 {
	if len(b) == 0 {
		return math.NaN()
	}
	k := 0
	for _, x := range b {
		if x {
			k++
		}
	}
	return float64(k) / float64(len(b))
}
