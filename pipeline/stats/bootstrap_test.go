package stats

import (
	"math"
	"testing"
)

func meanOf(x []float64) func(idx []int) float64 {
	return func(idx []int) float64 {
		var s float64
		for _, i := range idx {
			s += x[i]
		}
		return s / float64(len(idx))
	}
}

func TestQuantileSortedNumpy(t *testing.T) {
	// numpy.percentile([1,2,3,4,5], [2.5, 97.5]) = [1.1, 4.9]:
	// h = 4·0.025 = 0.1 → 1 + 0.1·(2−1); h = 3.9 → 4 + 0.9·(5−4).
	v := []float64{1, 2, 3, 4, 5}
	near(t, "q.025", quantileSorted(v, 0.025), 1.1, tol)
	near(t, "q.975", quantileSorted(v, 0.975), 4.9, tol)
	near(t, "q0", quantileSorted(v, 0), 1, 0)
	near(t, "q1", quantileSorted(v, 1), 5, 0)
	near(t, "empty", quantileSorted(nil, 0.5), nan, 0)
}

func TestBootstrapEdges(t *testing.T) {
	lo, hi := Bootstrap(0, func([]int) float64 { return 1 }, 100, 1, 0.95)
	near(t, "n=0 lo", lo, nan, 0)
	near(t, "n=0 hi", hi, nan, 0)
	// One item: every resample is {0}, so the interval is the point.
	lo, hi = Bootstrap(1, meanOf([]float64{0.7}), 50, 1, 0.95)
	near(t, "n=1 lo", lo, 0.7, 0)
	near(t, "n=1 hi", hi, 0.7, 0)
	// A constant statistic has a degenerate interval.
	lo, hi = Bootstrap(10, meanOf([]float64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}), 0, 3, 0)
	near(t, "const lo", lo, 1, 0)
	near(t, "const hi", hi, 1, 0)
	// Every replicate NaN → NaN; NaN replicates are otherwise dropped.
	lo, _ = Bootstrap(5, func([]int) float64 { return nan }, 20, 1, 0.95)
	near(t, "all NaN", lo, nan, 0)
	lo, hi = Bootstrap(5, func(idx []int) float64 {
		if idx[0] == 0 {
			return nan
		}
		return 2
	}, 200, 1, 0.95)
	near(t, "some NaN lo", lo, 2, 0)
	near(t, "some NaN hi", hi, 2, 0)
}

func TestBootstrapDeterministicAndSane(t *testing.T) {
	x := make([]float64, 100)
	for i := 0; i < 50; i++ {
		x[i] = 1
	}
	lo1, hi1 := Bootstrap(len(x), meanOf(x), 1000, 42, 0.95)
	lo2, hi2 := Bootstrap(len(x), meanOf(x), 1000, 42, 0.95)
	if lo1 != lo2 || hi1 != hi2 {
		t.Fatalf("same seed gave (%v,%v) then (%v,%v)", lo1, hi1, lo2, hi2)
	}
	lo3, hi3 := Bootstrap(len(x), meanOf(x), 1000, 43, 0.95)
	if lo1 == lo3 && hi1 == hi3 {
		t.Errorf("seeds 42 and 43 gave the same interval (%v,%v); the seed is ignored?", lo1, hi1)
	}
	// Mean of 100 fair 0/1 values: normal theory gives 0.5 ± 1.96·0.05 =
	// [0.402, 0.598]; a percentile bootstrap lands within a couple of
	// hundredths of that.
	if lo1 < 0.37 || lo1 > 0.44 || hi1 < 0.56 || hi1 > 0.63 {
		t.Errorf("interval (%v, %v), want about (0.40, 0.60)", lo1, hi1)
	}
	// A narrower level gives a narrower interval on the same draws.
	lo4, hi4 := Bootstrap(len(x), meanOf(x), 1000, 42, 0.5)
	if !(lo4 > lo1 && hi4 < hi1) {
		t.Errorf("50%% interval (%v,%v) not inside 95%% (%v,%v)", lo4, hi4, lo1, hi1)
	}
}

func TestBootstrapResamplesUniformly(t *testing.T) {
	const n, reps = 4, 5000
	counts := make([]int, n)
	Bootstrap(n, func(idx []int) float64 {
		if len(idx) != n {
			t.Fatalf("len(idx) = %d, want %d", len(idx), n)
		}
		for _, i := range idx {
			counts[i]++
		}
		return 0
	}, reps, 7, 0.95)
	// 20,000 draws, 5,000 expected per index, sd ≈ √(20000·¼·¾) ≈ 61.
	for i, c := range counts {
		if math.Abs(float64(c)-5000) > 400 {
			t.Errorf("index %d drawn %d times, want about 5000", i, c)
		}
	}
}

func TestBootstrapAllocationLight(t *testing.T) {
	x := make([]float64, 200)
	stat := meanOf(x)
	// One generator, one index slice and one results slice, whatever reps
	// is: allocations must not grow with reps or n.
	allocs := testing.AllocsPerRun(5, func() { Bootstrap(len(x), stat, 500, 1, 0.95) })
	if allocs > 5 {
		t.Errorf("Bootstrap allocates %v times per call, want <= 5", allocs)
	}
}

func TestMcNemarExact(t *testing.T) {
	// b=1, c=5: P(X ≤ 1 | n=6) = (1 + 6)/64 → p = 14/64 = 0.21875
	// (scipy.stats.binomtest(1, 6).pvalue = 0.21875).
	near(t, "1,5", McNemarExact(1, 5), 14.0/64, 1e-12)
	near(t, "5,1 symmetric", McNemarExact(5, 1), 14.0/64, 1e-12)
	// b=0, c=10: 2·(1/1024) = 0.001953125.
	near(t, "0,10", McNemarExact(0, 10), 2.0/1024, 1e-12)
	// b=c=3: 2·P(X ≤ 3 | 6) = 2·42/64 > 1 → capped at 1.
	near(t, "3,3", McNemarExact(3, 3), 1, 0)
	near(t, "0,0", McNemarExact(0, 0), 1, 0)
}

func TestPairedDiff(t *testing.T) {
	a := []bool{true, true, true, false, false, true}
	b := []bool{true, false, true, true, true, true}
	// b (A✓ B✗) = item 1 → 1; c (A✗ B✓) = items 3, 4 → 2.
	// MeanDiff = (5/6) − (4/6) = 1/6. McNemar: n = 3, P(X ≤ 1) = 4/8 →
	// p = min(1, 1) = 1.
	p := PairedDiff(a, b, 500, 9)
	eqInt(t, "B", p.B, 1)
	eqInt(t, "C", p.C, 2)
	near(t, "diff", p.MeanDiff, 1.0/6, tol)
	near(t, "p", p.McNemarP, 1, 0)
	if !(p.Lo <= p.MeanDiff && p.MeanDiff <= p.Hi) {
		t.Errorf("interval (%v,%v) misses the point %v", p.Lo, p.Hi, p.MeanDiff)
	}
	// Per-item differences lie in [−1, 1]; six items: the interval is made
	// of sixths.
	if p.Lo < -1 || p.Hi > 1 {
		t.Errorf("interval (%v,%v) out of [-1,1]", p.Lo, p.Hi)
	}
	// Identical systems: no discordant pairs, a degenerate interval at 0.
	p = PairedDiff(a, a, 100, 1)
	near(t, "same diff", p.MeanDiff, 0, 0)
	near(t, "same lo", p.Lo, 0, 0)
	near(t, "same hi", p.Hi, 0, 0)
	near(t, "same p", p.McNemarP, 1, 0)
	// n = 0.
	p = PairedDiff(nil, nil, 100, 1)
	near(t, "empty diff", p.MeanDiff, nan, 0)
	near(t, "empty lo", p.Lo, nan, 0)
	near(t, "empty p", p.McNemarP, 1, 0)
	mustPanic(t, "PairedDiff", func() { PairedDiff(a, b[:2], 10, 1) })
}

func TestHolm(t *testing.T) {
	// Sorted: 0.005·4 = 0.02, 0.01·3 = 0.03, 0.03·2 = 0.06, 0.04·1 = 0.04
	// → running max 0.06. Back in input order: [0.03, 0.06, 0.06, 0.02].
	got := Holm([]float64{0.01, 0.04, 0.03, 0.005})
	for i, w := range []float64{0.03, 0.06, 0.06, 0.02} {
		near(t, "holm", got[i], w, 1e-15)
	}
	// Capped at 1 and kept monotone: 0.5·2 = 1, then max(1, 0.6) = 1.
	got = Holm([]float64{0.6, 0.5})
	near(t, "cap0", got[0], 1, 0)
	near(t, "cap1", got[1], 1, 0)
	// Ties get equal adjusted values: 0.02·2 = 0.04, max(0.04, 0.02) = 0.04.
	got = Holm([]float64{0.02, 0.02})
	near(t, "tie0", got[0], 0.04, 1e-15)
	near(t, "tie1", got[1], 0.04, 1e-15)
	// NaN stays NaN and does not count in m = 2: 0.01·2, 0.04·1.
	got = Holm([]float64{0.01, nan, 0.04})
	near(t, "nan0", got[0], 0.02, 1e-15)
	near(t, "nan1", got[1], nan, 0)
	near(t, "nan2", got[2], 0.04, 1e-15)
	if len(Holm(nil)) != 0 {
		t.Error("Holm(nil) should be empty")
	}
}

// Replicates with no defined statistic are counted, not silently dropped,
// and an interval resting on more than 1 − level of undefined replicates
// is flagged.
func TestIntervalCountsUndefined(t *testing.T) {
	// Two kinds, 1 of kind 0 among 40: a resample lacks it with probability
	// (39/40)^40 ≈ 36%, and the statistic is then undefined.
	ivs := BootstrapCountsIntervals([]int{1, 39}, 2, func(w []int, out []float64) {
		if w[0] > 0 {
			out[0] = float64(w[0])
		}
		out[1] = float64(w[1])
	}, 1000, 1, DefaultLevel)
	if ivs[0].Reps != 1000 || ivs[0].Undefined < 300 || ivs[0].Undefined > 430 || !ivs[0].TooManyUndefined() {
		t.Errorf("undefined: %+v", ivs[0])
	}
	if ivs[1].Undefined != 0 || ivs[1].TooManyUndefined() || ivs[1].Lo > 39 || ivs[1].Hi < 39 {
		t.Errorf("always defined: %+v", ivs[1])
	}
	// The threshold: 50 of 1000 may be undefined for a 95% interval, 51 not.
	for _, c := range []struct {
		undefined int
		too       bool
	}{{0, false}, {50, false}, {51, true}} {
		if got := (Interval{Reps: 1000, Undefined: c.undefined, Level: 0.95}).TooManyUndefined(); got != c.too {
			t.Errorf("%d of 1000 undefined: too many %v, want %v", c.undefined, got, c.too)
		}
	}
	if NoInterval.TooManyUndefined() || !math.IsNaN(NoInterval.Lo) {
		t.Error("no interval is flagged")
	}
	// Bootstrap2 counts the same way.
	iv := Bootstrap2ManyIntervals(1, 39, 1, func(a, b []int, out []float64) {
		if len(a) > 0 && a[0] == 0 {
			out[0] = 1
		}
	}, 200, 1, DefaultLevel)[0]
	if iv.Reps != 200 || iv.Undefined != 0 {
		t.Errorf("Bootstrap2: %+v", iv)
	}
}
