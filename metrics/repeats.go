package metrics

import (
	"fmt"
	"math"
	"sort"
	"strconv"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/stats"
)

func init() {
	spec.RegisterMetric(spec.MetricKind{
		Name: "repeats",
		Doc: "Run-to-run variance of repeated cases (repeats: k), per task x model x strategy x factors: accuracy per item after the block's reducer " +
			"(reduce: mean by default: each item's share of right samples) with a bootstrap 95% interval that resamples items, not samples " +
			"(the samples of one item are not independent); the per-repeat accuracy's mean, SD (n-1) and range (accuracy_repeat_*; each repeat's " +
			"own accuracy in repeats.csv); flip_rate, the share of items whose answer is not the same in every repeat; and repeats, the samples per item. " +
			"An unparsed sample counts as wrong and as an answer of its own.",
		New: func() spec.MetricConfig { return &RepeatsConfig{} },
		Rows: spec.RowsDoc{
			Lead: "Run-to-run variance of repeated cases, per task × model × strategy × factors; tasks with gold " +
				"labels. An unparsed sample counts as wrong, and as an answer of its own for the flip rate.",
			Rows: []spec.RowDoc{
				{Names: []string{"accuracy"}, Def: "mean over items of each item's score after `reduce:` (`mean`, the default: its share of right samples; " +
					"`majority`, `any`, `all`, `first`: 0 or 1), with a 95% bootstrap interval that resamples items with all their samples", N: "items"},
				{Names: []string{"accuracy_repeat_mean", "accuracy_repeat_sd", "accuracy_repeat_min", "accuracy_repeat_max"},
					Def: "each repeat's own accuracy (in `<block>_repeats.csv`, or `repeats.csv`), their mean, sample SD (n−1; `too_few` below two repeats) and range",
					N:   "repeats"},
				{Names: []string{"flip_rate"}, Def: "share of items whose answer is not the same in every repeat", N: "items with two or more samples"},
				{Names: []string{"repeats"}, Def: "the most samples of one item", N: "items"},
			},
			Note: "With 100 items × 5 repeats whose items differ in difficulty, the item-clustered 95% interval " +
				"covered the true accuracy in 93.8% of 400 simulated studies, where resampling the 500 samples " +
				"as independent covered it in 79.0% (`pipeline/stats/cluster_test.go`).",
		},
	})
}

// RepeatsConfig is the YAML of a repeats metric block.
type RepeatsConfig struct {
	spec.MetricBase `yaml:",inline"`
	Bootstrap       *int `yaml:"bootstrap,omitempty" min:"0" default:"1000" doc:"Bootstrap replicates of the item-clustered 95% interval (seeded with settings.seed); default 1000, 0 turns it off."`
}

type repeatsMetric struct {
	errs   string
	reduce string
	reps   int
	table  string
	tasks  map[string]*spec.Task
}

// Build takes the tasks with gold labels.
func (c *RepeatsConfig) Build(b *spec.MetricBuild) spec.Metric {
	m := &repeatsMetric{errs: c.MetricBase.ErrorsPolicy(), reduce: c.Reduce, reps: *c.Bootstrap, table: tableName(&c.MetricBase, "repeats")}
	if m.reduce == "" || m.reduce == spec.ReduceNone {
		m.reduce = spec.ReduceMean
	}
	m.tasks = selectTasks(b, func(t *spec.Task) string {
		if len(t.Labels) == 0 || t.Spec.Gold == "" {
			return "it has no gold labels to score the repeats against"
		}
		return ""
	})
	return m
}

// ReducesItself: the kind sees every sample and reduces per item itself.
func (m *repeatsMetric) ReducesItself() bool { return true }

// Compute reports each cell's variance between repeats.
func (m *repeatsMetric) Compute(rs *spec.ResultSet) (*spec.MetricOutput, error) {
	out := &spec.MetricOutput{}
	tb := spec.CSVTable{Name: m.table, Header: idHeader(rs, "repeat", "accuracy", "n")}
	for ci, c := range groupCells(rs, m.tasks, m.errs) {
		// The samples of each item, and the rows of each repeat.
		byItem := map[*spec.Item][]*spec.ResultRow{}
		var items []*spec.Item
		byRepeat := map[int][2]int{} // repeat -> right, n
		for _, r := range c.Rows {
			if r.Item.Gold == "" {
				continue
			}
			if _, ok := byItem[r.Item]; !ok {
				items = append(items, r.Item)
			}
			byItem[r.Item] = append(byItem[r.Item], r)
			rn := byRepeat[r.Repeat]
			if ok, _ := r.Correct(); ok {
				rn[0]++
			}
			rn[1]++
			byRepeat[r.Repeat] = rn
		}
		inc := incomplete(c, m.errs)
		// Per item: the reduced score (a share of right samples for mean,
		// 0 or 1 otherwise) and whether its answer changed.
		sums, counts := make([]float64, len(items)), make([]int, len(items))
		flips, multi, k := 0, 0, 0
		for i, it := range items {
			g := byItem[it]
			sort.SliceStable(g, func(a, b int) bool { return g[a].Repeat < g[b].Repeat })
			k = max(k, len(g))
			sums[i], counts[i] = m.itemScore(g)
			if len(g) > 1 {
				multi++
				for _, x := range g[1:] {
					if answerOf(x) != answerOf(g[0]) {
						flips++
						break
					}
				}
			}
		}
		acc, iv := math.NaN(), stats.NoInterval
		if len(items) > 0 {
			reps := m.reps
			acc, iv = stats.ClusterMean(sums, counts, max(reps, 1), seedOf(rs)+uint64(ci), stats.DefaultLevel)
			if reps == 0 {
				iv = stats.NoInterval
			}
		}
		r := row(c, subsetAll, "accuracy", acc, len(items))
		r.Convention = fmt.Sprintf("reduce: %s over each item's samples (unparsed = wrong); 95%% interval resamples items (clustered bootstrap)", m.reduce)
		spec.SetCI(&r, iv)
		out.Rows = append(out.Rows, r)

		repeats := make([]int, 0, len(byRepeat))
		for rep := range byRepeat {
			repeats = append(repeats, rep)
		}
		sort.Ints(repeats)
		per := make([]float64, len(repeats))
		for i, rep := range repeats {
			rn := byRepeat[rep]
			per[i] = float64(rn[0]) / float64(rn[1])
			tb.Rows = append(tb.Rows, append(idCols(c), withheld(inc, strconv.Itoa(rep), fmtF(per[i]), fmtI(rn[1]))...))
		}
		sp := stats.SpreadOf(per)
		for _, x := range []struct {
			name string
			v    float64
			conv string
		}{
			{"accuracy_repeat_mean", sp.Mean, "mean of the per-repeat accuracies (unparsed = wrong); n = repeats"},
			{"accuracy_repeat_sd", sp.SD, "sample standard deviation (n-1) of the per-repeat accuracies; n = repeats"},
			{"accuracy_repeat_min", sp.Min, "lowest per-repeat accuracy; n = repeats"},
			{"accuracy_repeat_max", sp.Max, "highest per-repeat accuracy; n = repeats"},
		} {
			r := row(c, subsetAll, x.name, x.v, sp.N)
			r.Convention = x.conv
			if sp.N < 2 && x.name == "accuracy_repeat_sd" {
				r.Status = spec.StatusTooFew
			}
			out.Rows = append(out.Rows, r)
		}
		fr := row(c, subsetAll, "flip_rate", math.NaN(), multi)
		if multi > 0 {
			fr.Value = float64(flips) / float64(multi)
		}
		fr.Convention = fmt.Sprintf("items whose answer (label, or unparsed) is not the same in every repeat: %d of the %d items with two or more samples", flips, multi)
		out.Rows = append(out.Rows, fr)
		kr := row(c, subsetAll, "repeats", float64(k), len(items))
		kr.Convention = "the most samples of one item; n = items"
		out.Rows = append(out.Rows, kr)
	}
	if len(tb.Rows) > 0 {
		out.Tables = append(out.Tables, tb)
	}
	return out, nil
}

// itemScore is an item's summed score and its weight under the reducer:
// mean weighs every sample, the others make one 0/1 answer of the item.
func (m *repeatsMetric) itemScore(g []*spec.ResultRow) (float64, int) {
	right := 0
	for _, x := range g {
		if ok, _ := x.Correct(); ok {
			right++
		}
	}
	b := func(ok bool) (float64, int) {
		if ok {
			return 1, 1
		}
		return 0, 1
	}
	switch m.reduce {
	case spec.ReduceMean:
		return float64(right), len(g)
	case spec.ReduceAny:
		return b(right > 0)
	case spec.ReduceAll:
		return b(right == len(g))
	case spec.ReduceFirst:
		ok, _ := g[0].Correct()
		return b(ok)
	}
	winner, tie := spec.MajorityLabel(g)
	return b(!tie && winner != "" && winner == g[0].Item.Gold)
}

// answerOf is what a sample answered: its label, or "" when unparsed.
func answerOf(r *spec.ResultRow) string {
	if !r.Parsed() {
		return ""
	}
	return r.Label()
}
