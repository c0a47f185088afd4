package stats

import (
	"math"
	"testing"
)

func TestBrier(t *testing.T) {
	// ((0.9−1)² + (0.2−0)² + (0.5−0)²)/3 = (0.01 + 0.04 + 0.25)/3 = 0.1;
	// the NaN item is skipped.
	near(t, "brier", brierBoth(t, []float64{0.9, 0.2, 0.5, nan}, []bool{true, false, false, true}), 0.1, tol)
	near(t, "empty", brierBoth(t, nil, nil), nan, 0)
	near(t, "all NaN", brierBoth(t, []float64{nan}, []bool{true}), nan, 0)
	mustPanic(t, "Brier", func() { brierBoth(t, []float64{0.5}, nil) })
}

func TestPositiveProb(t *testing.T) {
	near(t, "chose positive", PositiveProb(0.8, "yes", "yes"), 0.8, tol)
	near(t, "chose negative", PositiveProb(0.8, "no", "yes"), 0.2, tol)
}

func TestECEPosHand(t *testing.T) {
	p := []float64{0.05, 0.15, 0.15, 0.95, 1.0}
	y := []bool{false, false, true, true, true}
	// bin 0 {0.05}: |0.05 − 0| = 0.05, weight 1/5 → 0.01
	// bin 1 {0.15, 0.15}: |0.15 − 0.5| = 0.35, weight 2/5 → 0.14
	// bin 9 {0.95, 1.0} (1.0 in the closed last bin): |0.975 − 1| = 0.025,
	// weight 2/5 → 0.01.  ECE = 0.16.
	near(t, "ECEPos", ecePosBoth(t, p, y, 10), 0.16, tol)
	near(t, "default bins", ecePosBoth(t, p, y, 0), 0.16, tol)
	// Perfect calibration: four items at 0.25, one positive → 0.
	near(t, "calibrated", ecePosBoth(t, []float64{0.25, 0.25, 0.25, 0.25}, []bool{true, false, false, false}, 10), 0, tol)
	near(t, "empty", ecePosBoth(t, nil, nil, 10), nan, 0)
	near(t, "all NaN", ecePosBoth(t, []float64{nan, nan}, []bool{true, false}, 10), nan, 0)
}

func TestECETopLabelEdgeValues(t *testing.T) {
	conf := []float64{0.6, 0.7, 0.7, 0.95}
	correct := []bool{true, true, false, true}
	// 0.7 must fall in (0.6, 0.7] although 0.7*10 = 7.000000000000001:
	// bin 5 {0.6 ✓}: |0.6 − 1| = 0.4, ·1/4 = 0.1
	// bin 6 {0.7 ✓, 0.7 ✗}: |0.7 − 0.5| = 0.2, ·2/4 = 0.1
	// bin 9 {0.95 ✓}: 0.05 · 1/4 = 0.0125 → 0.2125.
	near(t, "ECE", eceBoth(t, conf, correct, 10), 0.2125, tol)
	// 5 bins: 0.6 is the top edge of (0.4, 0.6], alone there: 0.1; (0.6,
	// 0.8] holds 0.7, 0.7: 0.1; 0.95: 0.0125 → 0.2125. Left-closed bins
	// would put 0.6 with the 0.7s ([0.6, 0.8): |2/3 − 2/3| = 0) and give
	// 0.0125: the edge convention moves this ECE by 0.2.
	near(t, "ECE 5 bins", eceBoth(t, conf, correct, 5), 0.2125, tol)
	// Off the edge the two conventions agree: 0.61 joins the 0.7s in (0.6,
	// 0.8]: mean conf 0.67, accuracy 2/3 → |0.67 − 2/3|·3/4, plus 0.0125.
	near(t, "ECE 5 bins, off the edge", eceBoth(t, []float64{0.61, 0.7, 0.7, 0.95}, correct, 5), math.Abs(0.67-2.0/3)*3/4+0.0125, 1e-9)
}

func TestBinIndexEdges(t *testing.T) {
	// Every edge k/10 belongs to the bin below it; 0 to the first bin.
	lits := []float64{0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0}
	for i, p := range lits {
		want := max(i-1, 0)
		if got := binIndex(p, 10); got != want {
			t.Errorf("binIndex(%v) = %d, want %d", p, got, want)
		}
	}
	// 0.1*3 in floating point (not as a Go constant, which is exact) is
	// 0.30000000000000004, above 0.3: bin 3. Just above an edge goes up,
	// just below stays. Out of range clamps.
	tenth := 0.1
	cases := map[float64]int{tenth * 3: 3, math.Nextafter(0.3, 0): 2, math.Nextafter(0.3, 1): 3, math.Nextafter(0.9, 0): 8,
		math.Nextafter(0.9, 1): 9, math.Nextafter(0.1, 1): 1, 1e-9: 0, -0.2: 0, 1.5: 9, 0.999: 9}
	for p, want := range cases {
		if got := binIndex(p, 10); got != want {
			t.Errorf("binIndex(%v) = %d, want %d", p, got, want)
		}
	}
	// 15.0/22 times 22 rounds to 14.999..., yet the value is the top edge of
	// bin 14 of 22 (and 7.0/10*10 rounds up past 7 onto bin 7's side).
	if got := binIndex(15.0/22, 22); got != 14 {
		t.Errorf("binIndex(15/22, 22) = %d, want 14", got)
	}
	for b := 2; b <= 40; b++ {
		for k := 1; k <= b; k++ {
			if got := binIndex(float64(k)/float64(b), b); got != k-1 {
				t.Errorf("binIndex(%d/%d, %d) = %d, want %d", k, b, b, got, k-1)
			}
		}
	}
}

func TestReliabilityBins(t *testing.T) {
	b := ReliabilityBins([]float64{0.05, 0.15, 0.15, nan}, []bool{false, false, true, true}, 10)
	if len(b) != 10 {
		t.Fatalf("len = %d, want 10 (empty bins kept)", len(b))
	}
	near(t, "lo3", b[3].Lo, 0.3, 0)
	near(t, "hi3", b[3].Hi, 0.4, 0)
	eqInt(t, "n1", b[1].N, 2)
	near(t, "conf1", b[1].MeanConf, 0.15, tol)
	near(t, "acc1", b[1].Accuracy, 0.5, tol)
	eqInt(t, "empty n", b[5].N, 0)
	near(t, "empty conf", b[5].MeanConf, nan, 0)
	near(t, "empty acc", b[5].Accuracy, nan, 0)
	near(t, "last hi", b[9].Hi, 1, 0)
}

// The accumulators give, bit for bit, what the list functions give.
func TestAccumulatorsMatchTheListFunctions(t *testing.T) {
	conf := []float64{0.1, 0.7, math.NaN(), 0.7000000000000001, 0.05, 1, 0, 0.33, 0.66, 0.95, 0.2, 0.2, 0.4}
	y := []bool{false, true, true, false, false, true, false, true, true, true, false, true, false}
	a := NewBinAcc(10)
	var br BrierAcc
	for i := range conf {
		a.Add(conf[i], y[i])
		br.Add(conf[i], y[i])
	}
	if got, want := a.ECE(), eceBoth(t, conf, y, 10); got != want {
		t.Errorf("ECE %v, list %v", got, want)
	}
	got, want := a.Bins(), ReliabilityBins(conf, y, 10)
	for b := range want {
		g, w := got[b], want[b]
		if g.N != w.N || g.Lo != w.Lo || g.Hi != w.Hi || !(g.MeanConf == w.MeanConf || math.IsNaN(g.MeanConf) && math.IsNaN(w.MeanConf)) ||
			!(g.Accuracy == w.Accuracy || math.IsNaN(g.Accuracy) && math.IsNaN(w.Accuracy)) {
			t.Errorf("bin %d: %+v, list %+v", b, g, w)
		}
	}
	if br.Score() != brierBoth(t, conf, y) {
		t.Errorf("Brier %v, list %v", br.Score(), brierBoth(t, conf, y))
	}
}
