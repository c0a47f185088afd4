package report

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// leaderboard is every judge of the run in one table, best agreement with
// people first: kappa with its interval, the share of labelled cases it
// gave no verdict on, and what it costs per 1,000 replies; then, per task,
// Krippendorff's alpha over all its judges with and without the people.
func (r *run) leaderboard(keys []judgeKey, rows map[judgeKey]map[string]metric) *table {
	t := &table{Title: "Judge leaderboard", Cols: []col{{Name: "Judge"}, {Name: "Judge model"}, {Name: "Task"},
		{Name: "κ vs people", Num: true, Better: 1, Title: "Cohen's kappa against people's verdicts, 95% bootstrap interval"},
		{Name: "Three-way κ", Num: true, Better: 1, Title: "kappa over full compliance, partial refusal and full refusal, where people gave three-way verdicts"},
		{Name: "No verdict", Num: true, Better: -1, Title: "share of the labelled cases the judge gave no verdict on"},
		{Name: "Cost / 1,000 replies", Num: true, Better: -1, Title: "USD per 1,000 judged replies at the run's prices; – where unknown (recorded verdicts) or counted with the whole judge (its parts)"},
		{Name: "Labelled", Num: true}}}
	order := append([]judgeKey(nil), keys...)
	sort.SliceStable(order, func(i, j int) bool {
		ki, kj := rows[order[i]]["kappa"].Value, rows[order[j]]["kappa"].Value
		if math.IsNaN(ki) != math.IsNaN(kj) {
			return !math.IsNaN(ki)
		}
		return ki > kj
	})
	for _, k := range order {
		m := rows[k]
		get := func(name string) (metric, bool) { x, ok := m[name]; return x, ok }
		kappa, okK := get("kappa")
		k3, ok3 := get("three_way_kappa")
		nv, okN := get("no_verdict_rate")
		cost, okC := get("cost_per_1000")
		name := txt(k.judge)
		name.Title = kappa.Convention
		nvc := numCell(math.NaN(), 0)
		if okN && !math.IsNaN(nv.Value) {
			nvc = numCell(nv.Value, 3)
			nvc.Sub = fmt.Sprintf("%.0f%%", 100*nv.Value)
			nvc.Title = nv.Convention
		}
		cc := valueCell(cost, okC, 2)
		if okC {
			cc.Title = cost.Convention
		}
		t.Rows = append(t.Rows, trow{Cells: []cell{name, txt(k.model), txt(k.task), valueCell(kappa, okK, 3), valueCell(k3, ok3, 3), nvc, cc, nCell(kappa, okK)},
			View: viewQuery("", "", k.task)})
	}
	t.markBest()
	var tasks []string
	alpha := map[string][]string{}
	for _, x := range r.metrics {
		if x.Metric != "alpha" || x.Subset != "all" || math.IsNaN(x.Value) {
			continue
		}
		key := "task " + x.Task + " (block " + x.Block + ")"
		if alpha[key] == nil {
			tasks = append(tasks, key)
		}
		who := "judges alone"
		if x.Strategy == "judges_and_people" {
			who = "judges and people"
		}
		alpha[key] = append(alpha[key], fmt.Sprintf("%s %.3f (%d verdicts)", who, x.Value, x.N))
	}
	var alphas []string
	for _, k := range tasks {
		alphas = append(alphas, k+": "+strings.Join(alpha[k], ", "))
	}
	t.Caption = "Every judge of the run against people, best κ first (a judge measured on several tasks has a row for each). Krippendorff's α (nominal) over all of a task's judges at once"
	if len(alphas) > 0 {
		t.Caption += ": " + strings.Join(alphas, "; ") + "."
	} else {
		t.Caption += " is in metrics.parquet (metric alpha) where a task has two judges or more."
	}
	t.Caption += " The κ of every two judges is in the block's pairs CSV."
	return t
}
