package stats

import (
	"math"
	"testing"
)

func TestDescribe(t *testing.T) {
	// {10,20,30,40}: mean 25; deviations ±15, ±5 → SS = 2·225 + 2·25 = 500,
	// sample std √(500/3) = 12.9099...; median (20+30)/2 = 25. NaN skipped.
	s := Describe([]float64{40, 10, nan, 30, 20})
	eqInt(t, "N", s.N, 4)
	near(t, "mean", s.Mean, 25, tol)
	near(t, "std", s.Std, math.Sqrt(500.0/3), tol)
	near(t, "median", s.Median, 25, tol)
	near(t, "min", s.Min, 10, 0)
	near(t, "max", s.Max, 40, 0)
	near(t, "odd median", Describe([]float64{5, 1, 3}).Median, 3, 0)
	one := Describe([]float64{7})
	near(t, "n=1 std", one.Std, nan, 0)
	near(t, "n=1 median", one.Median, 7, 0)
	empty := Describe(nil)
	eqInt(t, "empty N", empty.N, 0)
	near(t, "empty mean", empty.Mean, nan, 0)
	near(t, "empty min", empty.Min, nan, 0)
}

func TestConfidenceBins(t *testing.T) {
	conf := []float64{0, 20, 20.5, 21, 40, 40.5, 60, 61, 80, 80.5, 100, nan}
	correct := []bool{false, true, true, true, false, false, false, true, true, true, true, true}
	// 0–20 {0 ✗, 20 ✓}: n 2, acc 1/2, mean 10
	// 21–40 {20.5 ✓, 21 ✓, 40 ✗}: n 3, acc 2/3, mean 81.5/3 (20.5 is above 20)
	// 41–60 {40.5 ✗, 60 ✗}: n 2, acc 0, mean 50.25
	// 61–80 {61 ✓, 80 ✓}: n 2, acc 1, mean 70.5
	// 81–100 {80.5 ✓, 100 ✓}: n 2, acc 1, mean 90.25; the NaN is skipped.
	b := ConfidenceBins(conf, correct)
	// Scoring bins a ConfTable on the 0–1 scale: the same bins.
	unit := make([]float64, len(conf))
	for i, c := range conf {
		unit[i] = c / 100
	}
	tb, _ := NewConfTable(unit, correct)
	tbb := tb.StudyBins()
	want := []struct {
		lo, hi, n int
		acc, mean float64
	}{{0, 20, 2, 0.5, 10}, {21, 40, 3, 2.0 / 3, 81.5 / 3}, {41, 60, 2, 0, 50.25}, {61, 80, 2, 1, 70.5}, {81, 100, 2, 1, 90.25}}
	for i, w := range want {
		eqInt(t, "lo", b[i].Lo, w.lo)
		eqInt(t, "hi", b[i].Hi, w.hi)
		eqInt(t, "n", b[i].N, w.n)
		near(t, "acc", b[i].Accuracy, w.acc, tol)
		near(t, "mean", b[i].MeanConf, w.mean, tol)
		eqInt(t, "table n", tbb[i].N, w.n)
		eqInt(t, "table lo", tbb[i].Lo, w.lo)
		near(t, "table acc", tbb[i].Accuracy, w.acc, tol)
		near(t, "table mean", tbb[i].MeanConf*100, w.mean, 1e-9)
	}
	// Empty bins stay, with NaN.
	b = ConfidenceBins([]float64{90}, []bool{true})
	eqInt(t, "bins", len(b), 5)
	eqInt(t, "empty n", b[0].N, 0)
	near(t, "empty acc", b[0].Accuracy, nan, 0)
	eqInt(t, "bins of nothing", len(ConfidenceBins(nil, nil)), 5)
}

func TestOverconfident(t *testing.T) {
	conf := []float64{0.9, 0.8, 0.71, 0.7, 0.5, 0.3}
	correct := []bool{true, false, false, false, true, false}
	// Wrong: 80, 71, 70, 30 → 4. Confident (> 70, so 70 is not): 90, 80, 71
	// → 3, of which correct 1. Confident and wrong: 80, 71 → 2.
	// Rate over all = 2/6; share of errors = 2/4; confident accuracy = 1/3.
	tb, _ := NewConfTable(conf, correct)
	for name, o := range map[string]Overconfidence{"table": tb.Overconfident(OverconfidenceThreshold), "items": Overconfident(conf, correct, OverconfidenceThreshold)} {
		eqInt(t, name+" N", o.N, 6)
		eqInt(t, name+" NWrong", o.NWrong, 4)
		eqInt(t, name+" NOverconfidentWrong", o.NOverconfidentWrong, 2)
		near(t, name+" rate", o.OverconfidentErrorRate, 2.0/6, tol)
		near(t, name+" share of errors", o.OverconfidentShareOfErrors, 0.5, tol)
		eqInt(t, name+" NConfident", o.NConfident, 3)
		near(t, name+" confident acc", o.ConfidentAccuracy, 1.0/3, tol)
	}
	// No errors: share of errors undefined; no confident answers: NaN.
	o := Overconfident([]float64{0.5}, []bool{true}, 0.7)
	near(t, "no errors", o.OverconfidentShareOfErrors, nan, 0)
	near(t, "no confident", o.ConfidentAccuracy, nan, 0)
	near(t, "rate", o.OverconfidentErrorRate, 0, 0)
	near(t, "empty", Overconfident(nil, nil, 0.7).OverconfidentErrorRate, nan, 0)
}

func TestSpearmanHand(t *testing.T) {
	// x ranks 1..4; y = 0,0,1,1 ties → ranks 1.5,1.5,3.5,3.5. Around the
	// mean 2.5: dx = −1.5,−.5,.5,1.5, dy = −1,−1,1,1; Σdxdy = 4, Σdx² = 5,
	// Σdy² = 4 → ρ = 4/√20 = 0.894427. t = ρ√(2/(1−0.8)) = 2√2 on 2 df,
	// where the t CDF is closed form, two-sided p = 1 − t/√(2+t²) =
	// 1 − √0.8 = 0.105573. scipy.stats.spearmanr gives the same
	// (0.8944271909999159, 0.10557280900008413).
	// The scoring path (ConfTable) and the item-level reference both.
	tb, _ := NewConfTable([]float64{10, 20, 30, 40}, []bool{false, false, true, true})
	for name, c := range map[string]Correlation{"table": tb.Spearman(), "items": Spearman([]float64{10, 20, 30, 40}, []float64{0, 0, 1, 1})} {
		near(t, name+" rho", c.Rho, 2/math.Sqrt(5), 1e-12)
		near(t, name+" p", c.P, 1-math.Sqrt(0.8), 1e-9)
		eqInt(t, name+" n", c.N, 4)
	}
}

func TestSpearmanConfidenceVsCorrect(t *testing.T) {
	// conf ranks [5,3,4,1,2,6]; correct [1,0,1,0,0,1] → ranks [5,2,5,2,2,5].
	// Around 3.5: Σdxdy = 1.5·(1.5+.5+.5+2.5+1.5+2.5) = 13.5, Σdx² = 17.5,
	// Σdy² = 13.5 → ρ = 13.5/√236.25 = 0.878310. p (t = 3.674 on 4 df)
	// taken from scipy 1.10.1 spearmanr: 0.021311641128756696.
	conf := []float64{90, 80, 85, 60, 70, 95, nan}
	correct := []bool{true, false, true, false, false, true, true}
	tb, _ := NewConfTable(conf, correct)
	for name, c := range map[string]Correlation{"table": tb.Spearman(), "items": Spearman(conf, Bools(correct))} {
		near(t, name+" rho", c.Rho, 13.5/math.Sqrt(17.5*13.5), 1e-12)
		near(t, name+" p", c.P, 0.021311641128756696, 1e-9)
		eqInt(t, name+" n (NaN pair dropped)", c.N, 6)
	}
}

func TestSpearmanEdges(t *testing.T) {
	// Every answer correct: correctness is constant → NaN, NaN.
	c := Spearman([]float64{10, 20, 30}, []float64{1, 1, 1})
	near(t, "constant rho", c.Rho, nan, 0)
	near(t, "constant p", c.P, nan, 0)
	tb, _ := NewConfTable([]float64{10, 20, 30}, []bool{true, true, true})
	near(t, "table constant rho", tb.Spearman().Rho, nan, 0)
	near(t, "table constant p", tb.Spearman().P, nan, 0)
	// Perfect monotone: ρ = 1, p = 0.
	c = Spearman([]float64{1, 2, 3, 4}, []float64{2, 4, 6, 8})
	near(t, "perfect rho", c.Rho, 1, tol)
	near(t, "perfect p", c.P, 0, 0)
	// n = 2: ρ defined (−1), no degrees of freedom for p.
	c = Spearman([]float64{1, 2}, []float64{5, 3})
	near(t, "n2 rho", c.Rho, -1, tol)
	near(t, "n2 p", c.P, nan, 0)
	tb, _ = NewConfTable([]float64{1, 2}, []bool{true, false})
	near(t, "table n2 rho", tb.Spearman().Rho, -1, tol)
	near(t, "table n2 p", tb.Spearman().P, nan, 0)
	c = Spearman(nil, nil)
	near(t, "empty", c.Rho, nan, 0)
	tb, _ = NewConfTable(nil, []bool{})
	near(t, "table empty", tb.Spearman().Rho, nan, 0)
}

func TestMannWhitneyHand(t *testing.T) {
	// x = correct {90,80,70}, y = wrong {60,70}. Ranks: 60→1, 70,70→2.5,
	// 80→4, 90→5. R1 = 2.5+4+5 = 11.5, U = 11.5 − 3·4/2 = 5.5. μ = 3.
	// Ties {70,70}: Σ(t³−t) = 6; σ = √(6/12·(6 − 6/20)) = √2.85.
	// z = (5.5 − 3 − 0.5)/√2.85 = 1.184698; p = 1 − Φ(z) ≈ 0.1181 (table).
	// scipy.stats.mannwhitneyu(x, y, alternative="greater",
	// method="asymptotic", use_continuity=True) → (5.5, 0.11806848511082646).
	r := mannWhitneyBoth(t, []float64{90, 80, 70}, []float64{60, 70})
	near(t, "U", r.U, 5.5, tol)
	near(t, "z", r.Z, 2/math.Sqrt(2.85), 1e-12)
	near(t, "p", r.P, 0.11806848511082646, 1e-12)
	eqInt(t, "n1", r.N1, 3)
	eqInt(t, "n2", r.N2, 2)
	// Same data through the confidence/correctness wrapper.
	r2 := MannWhitneyConfidence([]float64{90, 60, 80, 70, 70}, []bool{true, false, true, true, false})
	near(t, "wrapper p", r2.P, r.P, 0)

	// No ties, complete separation: x {3,4,5} > y {1,2}: R1 = 12, U = 6,
	// σ = √(6/12·6) = √3, z = (6 − 3 − 0.5)/√3 = 1.443376;
	// scipy → (6.0, 0.07445733658938286).
	r = mannWhitneyBoth(t, []float64{3, 4, 5}, []float64{1, 2})
	near(t, "U sep", r.U, 6, tol)
	near(t, "z sep", r.Z, 2.5/math.Sqrt(3), 1e-12)
	near(t, "p sep", r.P, 0.07445733658938286, 1e-12)

	// A three-way tie: x {95,90,90,80,70}, y {90,60,50,40}. Ranks 40,50,60
	// → 1,2,3; 70 → 4; 80 → 5; 90×3 → 7; 95 → 9. R1 = 9+7+7+5+4 = 32,
	// U = 32 − 15 = 17, μ = 10, tie term 24, σ = √(20/12·(10 − 24/72)),
	// z = 6.5/σ = 1.619401; scipy → (17.0, 0.05268202643491519).
	r = mannWhitneyBoth(t, []float64{95, 90, 90, 80, 70}, []float64{90, 60, 50, 40})
	near(t, "U tie3", r.U, 17, tol)
	near(t, "z tie3", r.Z, 6.5/math.Sqrt(20.0/12*(10-24.0/72)), 1e-12)
	near(t, "p tie3", r.P, 0.05268202643491519, 1e-12)
}

func TestMannWhitneyEdges(t *testing.T) {
	// Everything tied: U = n1·n2/2 = 3, σ = 0, z = −0.5/0 = −Inf, p = 1,
	// as scipy gives (3.0, 1.0).
	r := mannWhitneyBoth(t, []float64{50, 50}, []float64{50, 50, 50})
	near(t, "U", r.U, 3, 0)
	if !math.IsInf(r.Z, -1) {
		t.Errorf("z = %v, want -Inf", r.Z)
	}
	near(t, "p", r.P, 1, 0)
	// A group empty (all correct): NaN.
	r = MannWhitneyConfidence([]float64{90, 80}, []bool{true, true})
	near(t, "U empty group", r.U, nan, 0)
	near(t, "p empty group", r.P, nan, 0)
	eqInt(t, "n2", r.N2, 0)
	r = mannWhitneyBoth(t, nil, nil)
	near(t, "p empty", r.P, nan, 0)
}

func TestAverageRanks(t *testing.T) {
	out := make([]float64, 5)
	// 3,1,3,2,3 → 1 is rank 1, 2 is rank 2, the three 3s share (3+4+5)/3.
	tie := averageRanks([]float64{3, 1, 3, 2, 3}, out)
	for i, w := range []float64{4, 1, 4, 2, 4} {
		near(t, "rank", out[i], w, 0)
	}
	near(t, "tie term 3³−3", tie, 24, 0)
}
