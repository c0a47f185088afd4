package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// Every statistic of a ConfTable equals the item-level function it stands
// for, on random samples with heavy ties (whole per cents, as stated
// confidences are) and without.
func TestConfTableMatchesItemLevel(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 9))
	for trial := 0; trial < 200; trial++ {
		n := 1 + r.IntN(60)
		conf := make([]float64, n)
		correct := make([]bool, n)
		for i := range conf {
			switch trial % 3 {
			case 0:
				conf[i] = float64(r.IntN(101)) / 100
			case 1:
				conf[i] = float64(5*r.IntN(21)) / 100 // on bin edges often
			default:
				conf[i] = r.Float64()
			}
			if r.IntN(9) == 0 {
				conf[i] = nan
			}
			correct[i] = r.Float64() < conf[i]+0.1
		}
		tb, cells := NewConfTable(conf, correct)
		if len(cells) != n {
			t.Fatalf("cells %d, want %d", len(cells), n)
		}
		d, s := Describe(conf), tb.Summary()
		eqInt(t, "N", s.N, d.N)
		near(t, "brier", tb.Brier(), BrierW(conf, correct, nil), 1e-12)
		for _, x := range [][3]any{{"mean", s.Mean, d.Mean}, {"std", s.Std, d.Std}, {"median", s.Median, d.Median}, {"min", s.Min, d.Min}, {"max", s.Max, d.Max}} {
			near(t, x[0].(string), x[1].(float64), x[2].(float64), 1e-12)
		}
		o, oc := tb.Overconfident(0.7), Overconfident(conf, correct, 0.7)
		near(t, "overconfident rate", o.OverconfidentErrorRate, oc.OverconfidentErrorRate, 1e-12)
		near(t, "share of errors", o.OverconfidentShareOfErrors, oc.OverconfidentShareOfErrors, 1e-12)
		near(t, "confident accuracy", o.ConfidentAccuracy, oc.ConfidentAccuracy, 1e-12)
		sp, spi := tb.Spearman(), Spearman(conf, Bools(correct))
		near(t, "rho", sp.Rho, spi.Rho, 1e-9)
		near(t, "rho p", sp.P, spi.P, 1e-9)
		// Mann–Whitney on the answers that have a confidence.
		var kc []float64
		var kk []bool
		for i, c := range conf {
			if !math.IsNaN(c) {
				kc, kk = append(kc, c), append(kk, correct[i])
			}
		}
		mw, mwi := tb.MannWhitney(), MannWhitneyConfidence(kc, kk)
		near(t, "U", mw.U, mwi.U, 1e-9)
		near(t, "MW p", mw.P, mwi.P, 1e-9)
		near(t, "ECE", tb.ECE(10), ECEW(conf, correct, nil, 10), 1e-12)
		near(t, "ECE 7", tb.ECE(7), ECEW(conf, correct, nil, 7), 1e-12)
		pct := make([]float64, len(kc))
		for i, c := range kc {
			pct[i] = math.Round(c*100*1e9) / 1e9
		}
		for b, x := range tb.StudyBins() {
			y := ConfidenceBins(pct, kk)[b]
			eqInt(t, "study bin n", x.N, y.N)
			near(t, "study bin acc", x.Accuracy, y.Accuracy, 1e-12)
			near(t, "study bin conf", x.MeanConf*100, y.MeanConf, 1e-9)
		}
		// A resample of every item once is the table itself.
		idx := make([]int, n)
		for i := range idx {
			idx[i] = i
		}
		var back ConfTable
		tb.Resample(cells, idx, &back)
		near(t, "resampled ECE", back.ECE(10), tb.ECE(10), 0)
		eqInt(t, "resampled N", back.N(), tb.N())
	}
}

// The study's bin edges hold on the 0–1 scale: 0.2 is in 0–20, 0.21 in
// 21–40, 0.8 in 61–80 and 0.81 in 81–100.
func TestStudyBinEdgesOnUnitScale(t *testing.T) {
	tb, _ := NewConfTable([]float64{0.2, 0.21, 0.8, 0.81, 0, 1}, []bool{true, true, true, true, true, true})
	want := []int{2, 1, 0, 1, 2}
	for i, b := range tb.StudyBins() {
		eqInt(t, "bin n", b.N, want[i])
	}
}

// Without gold, the descriptive statistics still work and the graded ones
// say nothing.
func TestConfTableUngraded(t *testing.T) {
	tb, _ := NewConfTable([]float64{0.9, 0.8, 0.4}, nil)
	near(t, "mean", tb.Summary().Mean, 0.7, 1e-12)
	near(t, "above 0.7", tb.Above(0.7), 2.0/3, 1e-12)
	if tb.Graded {
		t.Error("a table without correctness must not be graded")
	}
}

// BootstrapMany draws what Bootstrap draws: each statistic's interval is
// the one Bootstrap gives alone with the same seed.
func TestBootstrapManyMatchesBootstrap(t *testing.T) {
	x := []float64{1, 4, 2, 8, 5, 7, 3, 9, 0, 6}
	mean := func(idx []int) float64 {
		s := 0.0
		for _, i := range idx {
			s += x[i]
		}
		return s / float64(len(idx))
	}
	maxOf := func(idx []int) float64 {
		m := math.Inf(-1)
		for _, i := range idx {
			m = math.Max(m, x[i])
		}
		return m
	}
	lo, hi := BootstrapMany(len(x), 2, func(idx []int, out []float64) { out[0], out[1] = mean(idx), maxOf(idx) }, 300, 42, 0.95)
	l0, h0 := Bootstrap(len(x), mean, 300, 42, 0.95)
	l1, h1 := Bootstrap(len(x), maxOf, 300, 42, 0.95)
	near(t, "lo mean", lo[0], l0, 0)
	near(t, "hi mean", hi[0], h0, 0)
	near(t, "lo max", lo[1], l1, 0)
	near(t, "hi max", hi[1], h1, 0)
}
