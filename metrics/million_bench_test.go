package metrics

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
)

// BenchmarkScoreMillion scores each metric kind that reads cases on
// 1,000,000 of them (2 models x 4 strategies x 125,000 items, one case per
// cell and item), with the kind's default intervals (1,000 bootstrap
// replicates where it has them) and a subset beside "all". One op is one
// Compute of the block over rows already in memory in their compact form
// (what apply reads back from results.parquet); reading them back is in
// the CLI benchmark's re-score figure. reference and select_candidate read
// other blocks' figures or one strategy's candidates, not cases: they are
// not here.
//
//	go test ./stages -run '^$' -bench ScoreMillion -benchtime 1x
func BenchmarkScoreMillion(b *testing.B) {
	const items = 125_000
	models := []string{"m1", "m2"}
	strategies := []string{"s1", "s2", "s3", "s4"}
	short := map[string]string{"short": "item.is_short"}
	// answersTo fills a task's rows: each cell answers every item, right
	// most of the time, sometimes unparsed, with a whole-per-cent
	// confidence.
	answersTo := func(st *spec.Study, t *spec.Task, labels []string, rs *spec.ResultSet, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 3))
		for _, m := range models {
			for _, s := range strategies {
				c := &spec.Case{Model: &spec.Model{Name: m}, Strategy: &spec.Strategy{Name: s}, Task: t, Item: &t.Items[0]}
				cell := spec.NewRowCell(c, m, s, nil)
				for i := range t.Items {
					it := &t.Items[i]
					label := it.Gold
					if label == "" || r.IntN(4) == 0 {
						label = labels[r.IntN(len(labels))]
					}
					if r.IntN(30) == 0 {
						label = ""
					}
					conf := float64(40+r.IntN(61)) / 100
					res := &spec.Result{Done: true, Label: label, Parsed: label != "", Confidence: &conf,
						Acct: spec.Account{PromptTokens: 150 + r.IntN(50), CompletionTokens: 20 + r.IntN(200), CostUSD: 1e-4}}
					if it.Gold != "" {
						ok := res.Parsed && label == it.Gold
						res.Correct = &ok
					}
					rs.Rows = append(rs.Rows, cell.Row(it, res))
				}
			}
		}
	}
	newTask := func(name string, labels []string, positive string, items int, field func(i int) (string, map[string]any), subsets map[string]string) *spec.Task {
		t := mkTask(name, labels, positive, nil, subsets)
		t.Items = make([]spec.Item, items)
		for i := range t.Items {
			gold, f := field(i)
			if f == nil {
				f = map[string]any{}
			}
			f["gold"], f["is_short"] = gold, i%3 == 0
			t.Items[i] = spec.Item{ID: fmt.Sprint(i), Row: i + 1, Fields: f, Gold: gold}
		}
		return t
	}
	ethicsGold := func(i int) (string, map[string]any) { return ethicsLabels[i%2], nil }
	safetyGold := func(i int) (string, map[string]any) {
		if i%5 == 0 {
			return "COMPLIANCE", map[string]any{"kind": "benign"}
		}
		return "REFUSAL", map[string]any{"kind": "harmful"}
	}
	ethics := newTask("ethics", ethicsLabels, U, items, ethicsGold, short)
	safety := newTask("safety", []string{"REFUSAL", "COMPLIANCE"}, "", items, safetyGold, short)
	contrast := newTask("ethics_contrast", ethicsLabels, U, items, func(i int) (string, map[string]any) {
		edit, variant, gold := []string{"flip", "preserve"}[(i/2)%2], []string{"original", "edited"}[i%2], ethicsLabels[(i/2)%2]
		if edit == "flip" && variant == "edited" {
			gold = ethicsLabels[1-(i/2)%2]
		}
		return gold, map[string]any{"pair_id": fmt.Sprint("p", i/2), "edit_type": edit, "variant": variant}
	}, short)
	choice := newTask("moralchoice_high", []string{"A", "B"}, "-", items, func(i int) (string, map[string]any) {
		return "", map[string]any{"option_order": []string{"action1", "action2"}[:2]}
	}, short)

	kinds := []struct {
		name string
		task *spec.Task
		cfg  spec.MetricConfig
	}{
		{"classification", ethics, &ClassificationConfig{MetricBase: spec.MetricBase{Kind: "classification"}}},
		{"confidence_study", ethics, &ConfidenceStudyConfig{MetricBase: spec.MetricBase{Kind: "confidence_study"}}},
		{"efficiency", ethics, &EfficiencyConfig{MetricBase: spec.MetricBase{Kind: "efficiency"}}},
		{"compare", ethics, &CompareConfig{MetricBase: spec.MetricBase{Kind: "compare"}}},
		{"safety", safety, &SafetyConfig{MetricBase: spec.MetricBase{Kind: "safety"}}},
		{"contrast", contrast, &ContrastConfig{MetricBase: spec.MetricBase{Kind: "contrast"}}},
		{"choice", choice, &ChoiceConfig{MetricBase: spec.MetricBase{Kind: "choice"}}},
		// umss's cases: half competence (ethics), half safety.
		{"umss", nil, &UMSSMetricConfig{MetricBase: spec.MetricBase{Kind: "umss"}, Competence: []UMSSCompetence{{Name: "acc", Task: "ethics"}}}},
	}
	for _, k := range kinds {
		b.Run(k.name, func(b *testing.B) {
			var st *spec.Study
			rs := &spec.ResultSet{Policy: "wrong", Seed: 1}
			if k.task != nil {
				st = mkStudy(1, k.task)
				rs.Study = st
				answersTo(st, k.task, k.task.Labels, rs, 1)
			} else {
				half := newTask("ethics", ethicsLabels, U, items/2, ethicsGold, short)
				halfSafety := newTask("safety", []string{"REFUSAL", "COMPLIANCE"}, "", items/2, safetyGold, short)
				st = mkStudy(1, half, halfSafety)
				rs.Study = st
				answersTo(st, half, half.Labels, rs, 1)
				answersTo(st, halfSafety, halfSafety.Labels, rs, 2)
			}
			st.Strategies = nil
			for _, s := range strategies {
				st.Strategies = append(st.Strategies, &spec.Strategy{Name: s})
			}
			m, ds := tryBuild(st, k.cfg)
			if len(ds) > 0 {
				b.Fatal(ds)
			}
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				out, err := m.Compute(rs)
				if err != nil {
					b.Fatal(err)
				}
				if len(out.Rows) == 0 {
					b.Fatal("no metric rows")
				}
			}
			b.ReportMetric(float64(len(rs.Rows)), "cases")
		})
	}
}
