package metrics

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
)

// BenchmarkConfidenceStudyScore scores the confidence study at the size of
// configs/reflection.yaml: 288 conditions (8 models x 12 strategies x 3
// tasks) of about 1,032 answers each, 297,216 cases, with whole-per-cent
// confidences and 1,000 bootstrap replicates per condition. One op is one
// Compute of the block.
func BenchmarkConfidenceStudyScore(b *testing.B) {
	const items, models, strategies = 1032, 8, 12
	r := rand.New(rand.NewPCG(1, 2))
	var tasks []*spec.Task
	for k := 0; k < 3; k++ {
		var its []tItem
		for i := 0; i < items; i++ {
			its = append(its, tItem{id: fmt.Sprint(i), gold: []string{A, U}[i%2]})
		}
		tasks = append(tasks, mkTask(fmt.Sprintf("t%d", k), ethicsLabels, U, its, nil))
	}
	st := mkStudy(1, tasks...)
	var sets []*spec.ResultSet
	for _, task := range tasks {
		var answers []ans
		for m := 0; m < models; m++ {
			for s := 0; s < strategies; s++ {
				for i := 0; i < items; i++ {
					label := task.Items[i].Gold
					if r.IntN(4) == 0 {
						label = []string{A, U}[r.IntN(2)]
					}
					answers = append(answers, ans{model: fmt.Sprint("m", m), strategy: fmt.Sprint("s", s), item: fmt.Sprint(i), label: label,
						conf: float64(40+r.IntN(61)) / 100})
				}
			}
		}
		sets = append(sets, mkRS(st, "wrong", task, answers...))
	}
	rs := merge(sets...)
	m, ds := tryBuild(st, &ConfidenceStudyConfig{MetricBase: spec.MetricBase{Kind: "confidence_study"}})
	if len(ds) > 0 {
		b.Fatal(ds)
	}
	b.ReportMetric(float64(len(rs.Rows)), "cases")
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := m.Compute(rs); err != nil {
			b.Fatal(err)
		}
	}
}
