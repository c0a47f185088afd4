package stats

import (
	"math"
	"math/rand/v2"
	"testing"
)

// The multinomial replicates must be multinomial: per kind, the mean and
// variance of the drawn counts over many replicates are n·p and n·p·(1−p).
func TestMultinomialDrawsHaveMultinomialMoments(t *testing.T) {
	// Many items per kind: binomials; few: items drawn one by one.
	t.Run("binomials", func(t *testing.T) { multinomialMoments(t, []int{700, 0, 3, 250, 40, 7}, false) })
	t.Run("items", func(t *testing.T) {
		counts := make([]int, 200)
		for k := range counts {
			counts[k] = k % 7
		}
		counts[3] = 90
		multinomialMoments(t, counts, true)
	})
}

func multinomialMoments(t *testing.T, counts []int, byItems bool) {
	m := newMultinomial(counts, 5)
	if (m.kindOf != nil) != byItems {
		t.Fatalf("drawing by items: %v, want %v", m.kindOf != nil, byItems)
	}
	const reps = 20000
	w := make([]int, len(counts))
	sum := make([]float64, len(counts))
	sq := make([]float64, len(counts))
	for b := 0; b < reps; b++ {
		m.draw(w)
		total := 0
		for k, x := range w {
			total += x
			sum[k] += float64(x)
			sq[k] += float64(x) * float64(x)
		}
		if total != m.n {
			t.Fatalf("replicate %d draws %d items, want %d", b, total, m.n)
		}
	}
	n := float64(m.n)
	for k, c := range counts {
		p := float64(c) / n
		mean, v := sum[k]/reps, sq[k]/reps-(sum[k]/reps)*(sum[k]/reps)
		wantV := n * p * (1 - p)
		// The mean of reps draws has standard error sqrt(wantV/reps); the
		// variance estimate is within a few per cent at this many draws.
		if math.Abs(mean-n*p) > 5*math.Sqrt(wantV/reps)+1e-9 {
			t.Errorf("kind %d: mean count %.3f, want %.3f", k, mean, n*p)
		}
		if math.Abs(v-wantV) > 0.06*wantV+1e-9 {
			t.Errorf("kind %d: variance %.3f, want %.3f", k, v, wantV)
		}
	}
}

// agreeMC fails unless an interval computed by resampling counts matches
// the item-level bootstrap's to Monte Carlo error. Each end of a percentile
// interval from B replicates is a 2.5% (97.5%) quantile estimate, whose
// standard error for a roughly normal replicate distribution of spread σ
// is σ·sqrt(q(1−q)/B)/φ(z_q); two independent estimates differ by √2 times
// that. σ is read off the item-level interval.
func agreeMC(t *testing.T, what string, lo, hi, refLo, refHi float64, reps int) bool {
	if t != nil {
		t.Helper()
	}
	sigma := (refHi - refLo) / (2 * 1.959964)
	const q = 0.025
	phi := math.Exp(-1.959964*1.959964/2) / math.Sqrt(2*math.Pi)
	se := math.Sqrt2 * sigma * math.Sqrt(q*(1-q)/float64(reps)) / phi
	tol := 4*se + 1e-12
	ok := math.Abs(lo-refLo) <= tol && math.Abs(hi-refHi) <= tol
	if t != nil {
		t.Logf("%s: dlo %.2f dhi %.2f tol units", what, math.Abs(lo-refLo)/tol, math.Abs(hi-refHi)/tol)
	}
	if !ok && t != nil {
		t.Errorf("%s: counts give [%.5f, %.5f], items give [%.5f, %.5f]; Monte Carlo tolerance %.5f", what, lo, hi, refLo, refHi, tol)
	}
	return ok
}

// answers makes n graded binary answers with confidences on a 0.05 grid.
func answers(n int, seed uint64) (pred, gold []string, parsed []bool, conf []float64) {
	r := rand.New(rand.NewPCG(seed, 3))
	for i := 0; i < n; i++ {
		g := "pos"
		if r.IntN(5) < 2 {
			g = "neg"
		}
		p := g
		if r.IntN(6) == 0 {
			p = map[string]string{"pos": "neg", "neg": "pos"}[g]
		}
		ok := r.IntN(15) != 0
		c := float64(10+r.IntN(11)) / 20
		pred, gold, parsed, conf = append(pred, p), append(gold, g), append(parsed, ok), append(conf, c)
	}
	return
}

// classKinds groups answers into kinds with their counts, as the
// classification metric does.
type classKey struct {
	pred, gold string
	parsed     bool
	conf       float64
}

func TestCountIntervalsAgreeWithItemBootstrap(t *testing.T) {
	bothDrawModes(t, testCountIntervalsAgreeWithItemBootstrap)
}

func testCountIntervalsAgreeWithItemBootstrap(t *testing.T) {
	const n, reps = 600, 4000
	pred, gold, parsed, conf := answers(n, 9)
	var kinds Kinds[classKey]
	for i := range gold {
		kinds.Add(classKey{pred[i], gold[i], parsed[i], conf[i]})
	}
	kp, kg := make([]string, len(kinds.Keys)), make([]string, len(kinds.Keys))
	ko, kc := make([]bool, len(kinds.Keys)), make([]float64, len(kinds.Keys))
	ky := make([]bool, len(kinds.Keys))
	for k, key := range kinds.Keys {
		kp[k], kg[k], ko[k], kc[k], ky[k] = key.pred, key.gold, key.parsed, key.conf, key.parsed && key.pred == key.gold
	}
	if len(kinds.Keys) > 100 {
		t.Fatalf("%d kinds: the fixture should group", len(kinds.Keys))
	}
	correct := make([]bool, len(gold))
	for i := range gold {
		correct[i] = parsed[i] && pred[i] == gold[i]
	}

	type stat struct {
		name   string
		counts func(w []int) float64
		items  func(idx []int) float64
	}
	var bp, bg []string
	var bo []bool
	var bc []float64
	var by []bool
	gather := func(idx []int) {
		bp, bg, bo, bc, by = bp[:0], bg[:0], bo[:0], bc[:0], by[:0]
		for _, i := range idx {
			bp, bg, bo, bc, by = append(bp, pred[i]), append(bg, gold[i]), append(bo, parsed[i]), append(bc, conf[i]), append(by, correct[i])
		}
	}
	stats := []stat{
		{"accuracy", func(w []int) float64 { a, _ := AccuracyW(kp, kg, ko, w, UnparsedWrong); return a },
			func(idx []int) float64 { gather(idx); a, _ := Accuracy(bp, bg, bo, UnparsedWrong); return a }},
		{"accuracy (exclude)", func(w []int) float64 { a, _ := AccuracyW(kp, kg, ko, w, UnparsedExclude); return a },
			func(idx []int) float64 { gather(idx); a, _ := Accuracy(bp, bg, bo, UnparsedExclude); return a }},
		{"f1", func(w []int) float64 { return BinaryPRFW(kp, kg, ko, w, UnparsedWrong, "pos").F1 },
			func(idx []int) float64 { gather(idx); return BinaryPRF(bp, bg, bo, UnparsedWrong, "pos").F1 }},
		{"weighted f1", func(w []int) float64 {
			return MultiClassPRFW(kp, kg, ko, w, UnparsedWrong, []string{"neg", "pos"}).WeightedF1
		}, func(idx []int) float64 {
			gather(idx)
			return MultiClassPRFW(bp, bg, bo, nil, UnparsedWrong, []string{"neg", "pos"}).WeightedF1
		}},
		{"brier", func(w []int) float64 { return BrierW(kc, ky, w) }, func(idx []int) float64 { gather(idx); return BrierW(bc, by, nil) }},
		{"ece", func(w []int) float64 { return ECEW(kc, ky, w, 10) }, func(idx []int) float64 { gather(idx); return ECEW(bc, by, nil, 10) }},
	}
	for _, s := range stats {
		lo, hi := BootstrapCount(kinds.Counts, s.counts, reps, 1, DefaultLevel)
		refLo, refHi := Bootstrap(n, s.items, reps, 1, DefaultLevel)
		agreeMC(t, s.name, lo, hi, refLo, refHi, reps)
		// The point on all items is the same either way.
		if a, b := s.counts(kinds.Counts), s.items(identity(n)); math.Abs(a-b) > 1e-12 {
			t.Errorf("%s: counts give %v, items %v", s.name, a, b)
		}
	}

	// The check can fail: drawing half as many items per replicate widens
	// the intervals by about √2, which it must catch.
	half := func(w []int) float64 {
		h := make([]int, len(w))
		for k := range w {
			h[k] = w[k] / 2
		}
		a, _ := AccuracyW(kp, kg, ko, h, UnparsedWrong)
		return a
	}
	lo, hi := BootstrapCount(kinds.Counts, half, reps, 1, DefaultLevel)
	refLo, refHi := Bootstrap(n, stats[0].items, reps, 1, DefaultLevel)
	if agreeMC(nil, "half", lo, hi, refLo, refHi, reps) {
		t.Errorf("a resample of half the items passed as agreeing: [%v, %v] vs [%v, %v]", lo, hi, refLo, refHi)
	}
}

// bothDrawModes runs check with each way of drawing a multinomial
// replicate, which must both agree with the items: by items (few per kind)
// and by binomials (many).
func bothDrawModes(t *testing.T, check func(t *testing.T)) {
	for _, mode := range []struct {
		name string
		by   int
	}{{"items", 1 << 30}, {"binomials", 0}} {
		t.Run(mode.name, func(t *testing.T) {
			defer func(v int) { byItem = v }(byItem)
			byItem = mode.by
			check(t)
		})
	}
}

func identity(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

func TestPairedDiffCountsAgreeWithItemBootstrap(t *testing.T) {
	bothDrawModes(t, testPairedDiffCountsAgreeWithItemBootstrap)
}

func testPairedDiffCountsAgreeWithItemBootstrap(t *testing.T) {
	const n, reps = 500, 4000
	r := rand.New(rand.NewPCG(4, 4))
	a, b := make([]bool, n), make([]bool, n)
	d := make([]float64, n)
	for i := range a {
		a[i], b[i] = r.IntN(10) < 7, r.IntN(10) < 8
		d[i] = b2f(b[i]) - b2f(a[i])
	}
	p := PairedDiff(a, b, reps, 2)
	refLo, refHi := Bootstrap(n, func(idx []int) float64 {
		s := 0.0
		for _, i := range idx {
			s += d[i]
		}
		return s / float64(len(idx))
	}, reps, 2, DefaultLevel)
	agreeMC(t, "paired diff", p.Lo, p.Hi, refLo, refHi, reps)
}

func TestConfTableCountsAgreeWithItemResample(t *testing.T) {
	bothDrawModes(t, testConfTableCountsAgreeWithItemResample)
}

func testConfTableCountsAgreeWithItemResample(t *testing.T) {
	const reps = 4000
	_, _, parsed, conf := answers(800, 21)
	tb, cells := NewConfTable(conf, parsed) // "right" = parsed: any graded split will do
	var rt ConfTable
	for _, s := range []struct {
		name string
		f    func(*ConfTable) float64
	}{
		{"mean", func(x *ConfTable) float64 { return x.Summary().Mean }},
		{"median", func(x *ConfTable) float64 { return x.Summary().Median }},
		{"above 0.7", func(x *ConfTable) float64 { return x.Above(0.7) }},
		{"spearman", func(x *ConfTable) float64 { return x.Spearman().Rho }},
		{"ece", func(x *ConfTable) float64 { return x.ECE(10) }},
	} {
		lo, hi := BootstrapCount(tb.Cells(), func(w []int) float64 { tb.Reweigh(w, &rt); return s.f(&rt) }, reps, 3, DefaultLevel)
		refLo, refHi := Bootstrap(len(conf), func(idx []int) float64 { tb.Resample(cells, idx, &rt); return s.f(&rt) }, reps, 3, DefaultLevel)
		agreeMC(t, s.name, lo, hi, refLo, refHi, reps)
	}
}

func TestContrastCountsAgreeWithItemBootstrap(t *testing.T) {
	bothDrawModes(t, testContrastCountsAgreeWithItemBootstrap)
}

func testContrastCountsAgreeWithItemBootstrap(t *testing.T) {
	const n, reps = 400, 4000
	r := rand.New(rand.NewPCG(8, 1))
	var pairs []ContrastPair
	var kinds Kinds[ContrastPair]
	for i := 0; i < n; i++ {
		p := ContrastPair{Edit: EditType(r.IntN(2)), OrigGold: "a", EditedGold: "b", OrigParsed: r.IntN(12) != 0, EditedParsed: r.IntN(12) != 0}
		p.OrigPred, p.EditedPred = []string{"a", "b"}[r.IntN(4)/3], []string{"a", "b"}[min(1, r.IntN(4))]
		if p.Edit == EditPreserve {
			p.EditedGold = "a"
		}
		pairs = append(pairs, p)
		kinds.Add(p)
	}
	var buf []ContrastPair
	for _, pol := range []UnparsedPolicy{UnparsedWrong, UnparsedExclude} {
		for _, s := range []struct {
			name string
			f    func(ContrastResult) float64
		}{{"diff", func(c ContrastResult) float64 { return c.Diff }}, {"flip", func(c ContrastResult) float64 { return c.FlipAccuracy }},
			{"preserve", func(c ContrastResult) float64 { return c.PreserveConsistency }}} {
			lo, hi := BootstrapCount(kinds.Counts, func(w []int) float64 { return s.f(ContrastW(kinds.Keys, w, pol)) }, reps, 5, DefaultLevel)
			refLo, refHi := Bootstrap(n, func(idx []int) float64 {
				buf = buf[:0]
				for _, i := range idx {
					buf = append(buf, pairs[i])
				}
				return s.f(Contrast(buf, pol))
			}, reps, 5, DefaultLevel)
			agreeMC(t, s.name+" "+pol.String(), lo, hi, refLo, refHi, reps)
		}
	}
}

func BenchmarkBootstrapCountsMillion(b *testing.B) {
	pred, gold, parsed, conf := answers(1_000_000, 1)
	var kinds Kinds[classKey]
	for i := range gold {
		kinds.Add(classKey{pred[i], gold[i], parsed[i], conf[i]})
	}
	kp, kg := make([]string, len(kinds.Keys)), make([]string, len(kinds.Keys))
	ko := make([]bool, len(kinds.Keys))
	for k, key := range kinds.Keys {
		kp[k], kg[k], ko[k] = key.pred, key.gold, key.parsed
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		BootstrapCount(kinds.Counts, func(w []int) float64 { a, _ := AccuracyW(kp, kg, ko, w, UnparsedWrong); return a }, 1000, 1, DefaultLevel)
	}
}
