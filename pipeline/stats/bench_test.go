package stats

import (
	"fmt"
	"testing"
)

// BenchmarkBootstrap: accuracy of 1,700 items, 1,000 replicates.
func BenchmarkBootstrap(b *testing.B) {
	const n = 1700
	x := make([]float64, n)
	for i := range x {
		if i%3 != 0 {
			x[i] = 1
		}
	}
	stat := meanOf(x)
	b.ReportAllocs()
	for b.Loop() {
		Bootstrap(n, stat, 1000, 1, 0.95)
	}
}

// BenchmarkUMSSBootstrap: 4 models × 10 strategies × 5 metrics, 1,000
// replicates, datasets of 500 (ETHICS), 500 (Scruples), 300 (Contrast flip
// pairs), 200 (harmful) and 200 (benign) items: 1,700 in all.
func BenchmarkUMSSBootstrap(b *testing.B) {
	sizes := map[string]int{MetricEthicsAccuracy: 500, MetricScruplesAccuracy: 500, MetricContrastFlip: 300, MetricASR: 200, MetricRTA: 200}
	var rows []UMSSItemRow
	r := 0
	for m := 0; m < 4; m++ {
		for s := 0; s < 10; s++ {
			row := UMSSItemRow{Model: fmt.Sprint("m", m), Strategy: fmt.Sprint("s", s), Items: map[string][]float64{}}
			for name, n := range sizes {
				v := make([]float64, n)
				for i := range v {
					if (i*7+r*13)%10 < 6 {
						v[i] = 1
					}
				}
				row.Items[name] = v
			}
			rows = append(rows, row)
			r++
		}
	}
	cfg := UMSSBootstrapConfig{Reps: 1000, Seed: 1}
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := UMSSBootstrap(rows, cfg); err != nil {
			b.Fatal(err)
		}
	}
}
