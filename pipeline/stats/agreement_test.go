package stats

import (
	"math"
	"testing"
)

// counts builds an Agreement item by item through Add, so the tests cover
// how verdicts are sorted into cells as well as the formulas.
func counts(tp, fn, missP, fp, tn, missN int) Agreement {
	var a Agreement
	add := func(n int, person, judge string) {
		for i := 0; i < n; i++ {
			a.Add(person, judge, "C")
		}
	}
	add(tp, "C", "C")
	add(fn, "C", "R")
	add(missP, "C", "")
	add(fp, "R", "C")
	add(tn, "R", "R")
	add(missN, "R", "")
	return a
}

// Worked by hand:
//
//	TP 40 FN 10 | FP 5 TN 45 (n 100): accuracy 85/100; sensitivity 40/50;
//	specificity 45/50; people say C on 0.5, the judge on 0.45, so chance
//	agreement 0.5·0.45 + 0.5·0.55 = 0.5 and kappa (0.85 − 0.5)/(1 − 0.5) = 0.7.
//
//	with misses, TP 30 FN 5 miss 15 | FP 4 TN 40 miss 6: accuracy 70/100;
//	sensitivity 30/50 = 0.6; specificity 40/50 = 0.8; the judge says C on
//	0.34 and R on 0.45 (0.21 nothing), chance 0.5·0.34 + 0.5·0.45 = 0.395,
//	kappa 0.305/0.605; as a test for "calls C" the specificity is
//	(40 + 6)/50 = 0.92 (no verdict is not a C call).
func TestAgreementByHand(t *testing.T) {
	for _, c := range []struct {
		name                         string
		a                            Agreement
		acc, sens, spec, kappa, cSpc float64
	}{
		{"plain", counts(40, 10, 0, 5, 45, 0), 0.85, 0.8, 0.9, 0.7, 0.9},
		{"with misses", counts(30, 5, 15, 4, 40, 6), 0.7, 0.6, 0.8, 0.305 / 0.605, 0.92},
		// Perfect agreement on both classes.
		{"perfect", counts(20, 0, 0, 0, 30, 0), 1, 1, 1, 1, 1},
		// A judge that always says C: it agrees exactly as often as chance
		// would (kappa 0), finds every positive and no negative.
		{"always C", counts(30, 0, 0, 70, 0, 0), 0.3, 1, 0, 0, 0},
		// Always R on a mix: kappa 0 again, sensitivity 0, specificity 1.
		{"always R", counts(0, 25, 0, 0, 75, 0), 0.75, 0, 1, 0, 1},
		// People and judge both say R on everything: chance agreement is 1,
		// kappa 0/0; sensitivity has no positive to count.
		{"both constant", counts(0, 0, 0, 0, 12, 0), 1, nan, 1, nan, 1},
		// A judge that never gives a verdict.
		{"never a verdict", counts(0, 0, 4, 0, 0, 6), 0, 0, 0, 0, 1},
		{"empty", Agreement{}, nan, nan, nan, nan, nan},
	} {
		near(t, c.name+" accuracy", c.a.Accuracy(), c.acc, 1e-12)
		near(t, c.name+" sensitivity", c.a.Sensitivity(), c.sens, 1e-12)
		near(t, c.name+" specificity", c.a.Specificity(), c.spec, 1e-12)
		near(t, c.name+" kappa", c.a.Kappa(), c.kappa, 1e-12)
		s, sp := c.a.CallRates()
		near(t, c.name+" call sensitivity", s, c.sens, 1e-12)
		near(t, c.name+" call specificity", sp, c.cSpc, 1e-12)
	}
	a := counts(30, 5, 15, 4, 40, 6)
	eqInt(t, "n", a.N(), 100)
	eqInt(t, "positives", a.Positives(), 50)
	eqInt(t, "negatives", a.Negatives(), 50)
	eqInt(t, "misses", a.MissP+a.MissN, 21)
}

// Rogan–Gladen by hand: observed 0.3 with sensitivity 0.8 and specificity
// 0.9 is (0.3 + 0.9 − 1)/(0.8 + 0.9 − 1) = 0.2/0.7. An observed rate below
// the false-positive rate (0.05 < 0.1) gives a negative estimate, one above
// the sensitivity (0.9 > 0.8) one above 1: both are clamped and say so. A
// judge with sens + spec ≤ 1 (a constant judge: 1 + 0) gives none.
func TestRoganGladenByHand(t *testing.T) {
	for _, c := range []struct {
		obs, sens, spec float64
		raw             float64
		ok              bool
		clamped         float64
		moved           bool
	}{
		{0.3, 0.8, 0.9, 0.2 / 0.7, true, 0.2 / 0.7, false},
		{0.05, 0.8, 0.9, -0.05 / 0.7, true, 0, true},
		{0.9, 0.8, 0.9, 0.8 / 0.7, true, 1, true},
		// A perfect judge changes nothing.
		{0.37, 1, 1, 0.37, true, 0.37, false},
		{0.3, 1, 0, nan, false, nan, false},
		{0.3, 0.4, 0.5, nan, false, nan, false},
		{nan, 0.8, 0.9, nan, false, nan, false},
	} {
		got, ok := RoganGladen(c.obs, c.sens, c.spec)
		if ok != c.ok {
			t.Errorf("RoganGladen(%v, %v, %v) ok = %v, want %v", c.obs, c.sens, c.spec, ok, c.ok)
		}
		near(t, "RoganGladen", got, c.raw, 1e-12)
		if !ok {
			continue
		}
		cl, moved := Clamp01(got)
		near(t, "clamped", cl, c.clamped, 1e-12)
		if moved != c.moved {
			t.Errorf("Clamp01(%v) moved = %v, want %v", got, moved, c.moved)
		}
	}
	// The correction is the inverse of what misclassification does to a
	// true rate p: observed = sens·p + (1 − spec)·(1 − p).
	p, sens, spec := 0.42, 0.87, 0.93
	obs := sens*p + (1-spec)*(1-p)
	got, _ := RoganGladen(obs, sens, spec)
	near(t, "round trip", got, p, 1e-12)
}

func TestBootstrap2(t *testing.T) {
	// Two empty samples give no interval; one empty sample is an empty
	// index slice in every replicate.
	lo, hi, _ := Bootstrap2(0, 0, func(a, b []int) float64 { return 1 }, 100, 1, 0.95)
	near(t, "lo", lo, nan, 0)
	near(t, "hi", hi, nan, 0)
	lo, hi, _ = Bootstrap2(0, 5, func(a, b []int) float64 { return float64(len(a) + len(b)) }, 100, 1, 0.95)
	near(t, "lo", lo, 5, 0)
	near(t, "hi", hi, 5, 0)

	// Each sample's uncertainty shows: a statistic of the second sample
	// alone still gets an interval, and resampling a constant gives none.
	x := []float64{0, 1, 0, 1, 1, 0, 1, 0}
	mean := func(v []float64, idx []int) float64 {
		s := 0.0
		for _, i := range idx {
			s += v[i]
		}
		return s / float64(len(idx))
	}
	ones := []float64{1, 1, 1}
	lo, hi, dropped := Bootstrap2(3, len(x), func(a, b []int) float64 { return mean(ones, a) * mean(x, b) }, 2000, 7, 0.95)
	if !(lo < 0.5 && hi > 0.5 && lo >= 0 && hi <= 1) || dropped != 0 {
		t.Errorf("second sample's interval [%v, %v] (dropped %d), want one around 0.5", lo, hi, dropped)
	}
	lo, hi, _ = Bootstrap2(len(x), 3, func(a, b []int) float64 { return mean(ones, b) }, 500, 7, 0.95)
	near(t, "constant lo", lo, 1, 0)
	near(t, "constant hi", hi, 1, 0)

	// The same seed gives the same interval; NaN replicates are counted.
	f := func(a, b []int) float64 {
		if a[0] == 0 {
			return math.NaN()
		}
		return mean(x, b)
	}
	lo1, hi1, d1 := Bootstrap2(4, len(x), f, 1000, 3, 0.95)
	lo2, hi2, d2 := Bootstrap2(4, len(x), f, 1000, 3, 0.95)
	if lo1 != lo2 || hi1 != hi2 || d1 != d2 {
		t.Errorf("not deterministic: [%v %v] %d vs [%v %v] %d", lo1, hi1, d1, lo2, hi2, d2)
	}
	// About a quarter of replicates start with index 0.
	if d1 < 180 || d1 > 320 {
		t.Errorf("dropped %d of 1000, want about 250", d1)
	}
}

// Bootstrap2Many draws once per replicate for all its statistics: each
// statistic gets the interval Bootstrap2 gives it alone with the same seed,
// and its own count of NaN replicates (a statistic left unwritten is NaN).
func TestBootstrap2Many(t *testing.T) {
	x := []float64{0, 1, 0, 1, 1, 0, 1, 0}
	y := []float64{1, 1, 0, 1}
	mean := func(v []float64, idx []int) float64 {
		s := 0.0
		for _, i := range idx {
			s += v[i]
		}
		return s / float64(len(idx))
	}
	first := func(a, b []int) float64 { return mean(y, a) - mean(x, b) }
	second := func(a, b []int) float64 {
		if a[0] == 0 {
			return math.NaN()
		}
		return mean(x, b)
	}
	lo, hi, dropped := Bootstrap2Many(len(y), len(x), 3, func(a, b []int, out []float64) {
		out[0], out[1] = first(a, b), second(a, b)
	}, 1000, 11, 0.95)
	for j, f := range []func(a, b []int) float64{first, second} {
		l, h, d := Bootstrap2(len(y), len(x), f, 1000, 11, 0.95)
		if lo[j] != l || hi[j] != h || dropped[j] != d {
			t.Errorf("statistic %d: [%v %v] dropped %d, alone [%v %v] dropped %d", j, lo[j], hi[j], dropped[j], l, h, d)
		}
	}
	if dropped[1] == 0 {
		t.Errorf("second statistic dropped no replicate, want about 250")
	}
	near(t, "unwritten lo", lo[2], nan, 0)
	near(t, "unwritten hi", hi[2], nan, 0)
	if dropped[2] != 1000 {
		t.Errorf("unwritten statistic dropped %d, want 1000", dropped[2])
	}
}
