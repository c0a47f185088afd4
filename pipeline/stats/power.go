package stats

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Power analysis for the paired comparison the compare metric runs: the
// exact McNemar test on one sample per item and side, or, with repeats, the
// exact sign test on the items whose share of right samples rose or fell
// (PairedDiff, PairedItems), each Holm-adjusted across the comparisons.
//
// Both tests see an item as one of three kinds (B better, A better, tied),
// so their power at n items is exact given the chance of each kind
// (SignTestPower). Those chances come from a latent item model (Latent):
// a sample of item i under strategy s is right when
//
//	m_s + σ·(√r·z_i + √(1−r)·e_si) + ε > 0,   z, e, ε independent N(0,1)
//
// z_i is the item's difficulty shared by the strategies, e_si what is
// particular to the strategy on that item, ε the sample's own noise. σ
// (Spread) sets how much items differ (0: every item alike, so a sample is
// a coin of the accuracy; large: every item always right or always wrong),
// r (Share) how much of that the two strategies share. The mean accuracy is
// Φ(m_s / √(1+σ²)), so a strategy's threshold follows from its accuracy.
// The simulated provider draws its answers from the same model.

// Latent is the item model (see above).
type Latent struct {
	Spread float64 // σ ≥ 0
	Share  float64 // r in [0, 1]
}

// PowerAssumptions are what a power analysis assumes about a pair, in
// terms a pilot run measures: the base accuracy of a, the correlation (phi)
// of a's and b's correctness on one item with one sample each, and the
// correlation of two samples of one strategy on one item (consistency).
type PowerAssumptions struct {
	Accuracy    float64
	Correlation float64
	Consistency float64
}

// Default assumptions, used where a study declares none.
const (
	DefaultPowerAccuracy    = 0.75
	DefaultPowerCorrelation = 0.5
	DefaultPowerConsistency = 0.7
	// DefaultPower is the power an MDE is computed at.
	DefaultPower = 0.8
)

// Threshold is the latent threshold m of a strategy whose mean accuracy is acc.
func (l Latent) Threshold(acc float64) float64 {
	return math.Sqrt(1+l.Spread*l.Spread) * normQuantile(acc)
}

// ItemProb is P(right) of one sample of an item at threshold m, shared
// difficulty z and strategy deviation e.
func (l Latent) ItemProb(m, z, e float64) float64 {
	return normCDF(m + l.Spread*(math.Sqrt(l.Share)*z+math.Sqrt(1-l.Share)*e))
}

// LatentOf converts assumptions to the latent model: the consistency fixes
// σ (two samples of one strategy share σ² of a latent variance 1+σ²), the
// correlation the share r. A correlation above the consistency is taken as
// equal to it (r = 1).
func LatentOf(a PowerAssumptions) Latent {
	acc := clampOpen(a.Accuracy)
	lr := latentCorr(a.Consistency, acc)
	lc := latentCorr(a.Correlation, acc)
	if lr >= 0.999 {
		lr = 0.999
	}
	l := Latent{Spread: math.Sqrt(lr / (1 - lr)), Share: 1}
	if lr > 0 && lc < lr {
		l.Share = lc / lr
	}
	return l
}

// PhiOf is the correlation (phi) of two binary outcomes with marginals p1,
// p2 whose latent normals correlate lambda ≥ 0.
func PhiOf(lambda, p1, p2 float64) float64 {
	p11 := biNormUpper(normQuantile(p1), normQuantile(p2), lambda)
	d := math.Sqrt(p1 * (1 - p1) * p2 * (1 - p2))
	if d == 0 {
		return math.NaN()
	}
	return (p11 - p1*p2) / d
}

// latentCorr inverts PhiOf at equal marginals p by bisection; a negative or
// undefined phi gives 0.
func latentCorr(phi, p float64) float64 {
	if !(phi > 0) {
		return 0
	}
	lo, hi := 0.0, 0.9999
	if PhiOf(hi, p, p) <= phi {
		return hi
	}
	for i := 0; i < 50; i++ {
		mid := (lo + hi) / 2
		if PhiOf(mid, p, p) < phi {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// biNormUpper is P(X < a, Y < b) for standard normals correlated
// lambda ≥ 0, through the one-factor form X = √λ·Z + √(1−λ)·U.
func biNormUpper(a, b, lambda float64) float64 {
	if lambda <= 0 {
		return normCDF(a) * normCDF(b)
	}
	s, c := math.Sqrt(lambda), math.Sqrt(1-lambda)
	sum := 0.0
	for i, z := range gridF.x {
		sum += gridF.w[i] * normCDF((a-s*z)/c) * normCDF((b-s*z)/c)
	}
	return sum
}

// Flips is the chance that an item's share of right samples (k a side)
// is higher under b than under a (up) and lower (down), when b's accuracy
// is a's plus delta. k = 0 means unlimited repeats: the item's own
// probabilities decide.
func (l Latent) Flips(acc, delta float64, k int) (up, down float64) {
	acc, accB := clampOpen(acc), clampOpen(acc+delta)
	mA, mB := l.Threshold(acc), l.Threshold(accB)
	if k == 0 {
		if l.Share >= 1 || l.Spread == 0 {
			switch {
			case mB > mA:
				return 1, 0
			case mB < mA:
				return 0, 1
			}
			return 0, 0
		}
		up = normCDF((mB - mA) / (l.Spread * math.Sqrt(2*(1-l.Share))))
		return up, 1 - up
	}
	if k == 1 {
		// one sample a side: a bivariate normal orthant, P(both right)
		lc := l.Spread * l.Spread * l.Share / (1 + l.Spread*l.Spread)
		p11 := biNormUpper(normQuantile(acc), normQuantile(accB), lc)
		return math.Max(accB-p11, 0), math.Max(acc-p11, 0)
	}
	zs, es := gridZ, gridE
	if l.Share >= 1 || l.Spread == 0 {
		es = gridO
	}
	qa, qb := make([]float64, k+1), make([]float64, k+1)
	pm := make([]float64, k+1)
	for zi, z := range zs.x {
		clear(qa)
		clear(qb)
		for ei, e := range es.x {
			w := es.w[ei]
			binomPMF(k, l.ItemProb(mA, z, e), pm)
			for j := range pm {
				qa[j] += w * pm[j]
			}
			binomPMF(k, l.ItemProb(mB, z, e), pm)
			for j := range pm {
				qb[j] += w * pm[j]
			}
		}
		// P(b's count > a's count) given z: cumulate a's.
		cum := 0.0
		u, d := 0.0, 0.0
		for j := 0; j <= k; j++ {
			u += qb[j] * cum // a below j
			cum += qa[j]
		}
		cum = 0
		for j := 0; j <= k; j++ {
			d += qa[j] * cum
			cum += qb[j]
		}
		up += zs.w[zi] * u
		down += zs.w[zi] * d
	}
	return up, down
}

// SignTestPower is the chance that the exact two-sided sign test
// (McNemarExact) on n items rejects at level alpha (p < alpha), when each
// item independently rose with chance up and fell with chance down (tied
// otherwise). The sum runs over the number of untied items within 12
// standard deviations of its mean, so it stays fast for any n.
func SignTestPower(n int, up, down, alpha float64) float64 {
	psi := up + down
	if n <= 0 || psi <= 0 {
		return 0
	}
	// gonum's binomial wants 0 < p < 1
	psi = math.Min(psi, 1-1e-12)
	q := math.Min(math.Max(up/(up+down), 1e-12), 1-1e-12)
	mean, sd := float64(n)*psi, math.Sqrt(float64(n)*psi*(1-psi))
	lo, hi := max(0, int(mean-12*sd-1)), min(n, int(mean+12*sd+1))
	dn := distuv.Binomial{N: float64(n), P: psi}
	power := 0.0
	kc := -1 // the largest min(b, c) that rejects at the current D
	for d := lo; d <= hi; d++ {
		w := dn.Prob(float64(d))
		if d == lo {
			kc = critical(d, alpha, -1)
		} else {
			kc = critical(d, alpha, kc)
		}
		if kc < 0 || w == 0 {
			continue
		}
		c := distuv.Binomial{N: float64(d), P: q}
		// reject when C ≤ kc or C ≥ d − kc
		r := c.CDF(float64(kc))
		if d-kc > kc {
			r += 1 - c.CDF(float64(d-kc-1))
		} else {
			r = 1
		}
		power += w * math.Min(r, 1)
	}
	return math.Min(power, 1)
}

// critical is the largest k with McNemarExact(k, d−k) < alpha, or −1; from
// is a lower bound (the value at d−1, since it never falls as d grows).
func critical(d int, alpha float64, from int) int {
	k := max(from, -1)
	if from < 0 {
		// the first: bisect, p rising with k
		lo, hi := -1, d/2
		for lo < hi {
			mid := (lo + hi + 1) / 2
			if McNemarExact(mid, d-mid) < alpha {
				lo = mid
			} else {
				hi = mid - 1
			}
		}
		return lo
	}
	for k+1 <= d/2 && McNemarExact(k+1, d-k-1) < alpha {
		k++
	}
	return k
}

// PairPower is the power of the paired test on n items with k samples a
// side (k = 1: McNemar) at level alpha, when b's accuracy is acc + delta.
func (l Latent) PairPower(acc, delta float64, n, k int, alpha float64) float64 {
	up, down := l.Flips(acc, delta, k)
	return SignTestPower(n, up, down, alpha)
}

// MDE is the smallest improvement delta of b over a that the paired test on
// n items, k samples a side, detects with the given power at level alpha;
// NaN when even b always right would not be.
func (l Latent) MDE(acc float64, n, k int, alpha, power float64) float64 {
	acc = clampOpen(acc)
	hi := 1 - acc - 1e-6
	if hi <= 0 || l.PairPower(acc, hi, n, k, alpha) < power {
		return math.NaN()
	}
	lo := 0.0
	for i := 0; i < 30 && hi-lo > 1e-5; i++ {
		mid := (lo + hi) / 2
		if l.PairPower(acc, mid, n, k, alpha) >= power {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// ItemsNeeded is the smallest number of items (up to maxN) at which the
// paired test with k samples a side (0: unlimited) detects delta with the
// given power at level alpha; 0 when maxN items are not enough. Power
// wobbles with n (the exact test is discrete), so this is the first n of a
// bisection at which it holds, within a few items of the first n of all.
func (l Latent) ItemsNeeded(acc, delta float64, k int, alpha, power float64, maxN int) int {
	up, down := l.Flips(acc, delta, k)
	ok := func(n int) bool { return SignTestPower(n, up, down, alpha) >= power }
	hi := 8
	for !ok(hi) {
		if hi >= maxN {
			return 0
		}
		hi = min(hi*2, maxN)
	}
	lo := hi / 2
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if ok(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}

// PilotPair is what a pilot run says about one pair: per item the right
// samples and the samples of each side.
type PilotPair struct {
	ARight, AN, BRight, BN []int
}

// Assumptions estimates the pair's assumptions from a pilot: a's mean
// accuracy over items, the phi correlation of a's and b's first samples
// per item, and the phi correlation of two samples of one side on one item
// (pooled over both sides; NaN when no item has two samples).
func (p PilotPair) Assumptions() (PowerAssumptions, bool) {
	n := len(p.ARight)
	if n < 2 {
		return PowerAssumptions{}, false
	}
	var acc, accB float64
	for i := 0; i < n; i++ {
		acc += float64(p.ARight[i]) / float64(p.AN[i])
		accB += float64(p.BRight[i]) / float64(p.BN[i])
	}
	acc /= float64(n)
	accB /= float64(n)
	// Correlation across sides: the items' shares, as a phi of the
	// samples (E[sA·sB] is estimated without bias by the product of the
	// shares, the samples of the two sides being independent given the item).
	var cov float64
	for i := 0; i < n; i++ {
		cov += float64(p.ARight[i])/float64(p.AN[i])*float64(p.BRight[i])/float64(p.BN[i]) - acc*accB
	}
	cov /= float64(n)
	a := PowerAssumptions{Accuracy: acc, Correlation: cov / math.Sqrt(acc*(1-acc)*accB*(1-accB)), Consistency: math.NaN()}
	// Consistency: E[s_j s_l] over pairs of samples of one item and side,
	// Σ right·(right−1) / Σ n·(n−1).
	var pairs, both, mean, cnt float64
	for _, side := range [][2][]int{{p.ARight, p.AN}, {p.BRight, p.BN}} {
		for i := range side[0] {
			r, m := float64(side[0][i]), float64(side[1][i])
			pairs += m * (m - 1)
			both += r * (r - 1)
			mean += r
			cnt += m
		}
	}
	if pairs > 0 {
		mu := mean / cnt
		a.Consistency = (both/pairs - mu*mu) / (mu * (1 - mu))
	}
	return a, true
}

// PairAssumptionsOf are a pair's assumptions measured on its items, with
// fallback's where the items cannot say (no repeats: the consistency; an
// accuracy of 0 or 1: the correlation; a negative correlation counts as 0), and the samples per item a side
// (the smallest count of the two sides, rounded mean over items).
func PairAssumptionsOf(pp PilotPair, fallback PowerAssumptions) (PowerAssumptions, int) {
	a, ok := pp.Assumptions()
	if !ok {
		return fallback, 1
	}
	switch {
	case math.IsNaN(a.Correlation):
		a.Correlation = fallback.Correlation
	case a.Correlation < 0:
		a.Correlation = 0 // the latent model has no negative agreement
	}
	if math.IsNaN(a.Consistency) {
		a.Consistency = fallback.Consistency
	}
	a.Correlation = math.Min(a.Correlation, 0.99)
	a.Consistency = math.Min(math.Max(a.Consistency, a.Correlation), 0.995)
	s := 0
	for i := range pp.AN {
		s += min(pp.AN[i], pp.BN[i])
	}
	k := max(1, int(math.Round(float64(s)/float64(len(pp.AN)))))
	return a, k
}

// binomPMF fills out[0..k] with the Binomial(k, p) probabilities.
func binomPMF(k int, p float64, out []float64) {
	out[0] = 1
	for j := 1; j <= k; j++ {
		out[j] = 0
	}
	for t := 0; t < k; t++ {
		for j := t + 1; j >= 1; j-- {
			out[j] = out[j]*(1-p) + out[j-1]*p
		}
		out[0] *= 1 - p
	}
}

// grid is a quadrature rule for the standard normal: points evenly spaced
// on [−7, 7] with weights φ(x)·h normalised to sum 1 (the trapezoid rule,
// which converges fast for smooth integrands under a normal weight).
type grid struct{ x, w []float64 }

var (
	gridZ = makeGrid(113) // h = 0.125
	gridE = makeGrid(57)  // h = 0.25
	gridF = makeGrid(225)
	gridO = grid{x: []float64{0}, w: []float64{1}}
)

func makeGrid(n int) grid {
	g := grid{x: make([]float64, n), w: make([]float64, n)}
	h := 14 / float64(n-1)
	sum := 0.0
	for i := range g.x {
		x := -7 + float64(i)*h
		g.x[i] = x
		g.w[i] = math.Exp(-x * x / 2)
		sum += g.w[i]
	}
	for i := range g.w {
		g.w[i] /= sum
	}
	return g
}

func normCDF(x float64) float64 { return 0.5 * math.Erfc(-x/math.Sqrt2) }

func normQuantile(p float64) float64 { return -math.Sqrt2 * math.Erfcinv(2*p) }

// NormQuantile is the standard normal quantile function.
func NormQuantile(p float64) float64 { return normQuantile(p) }

// NormCDF is the standard normal distribution function.
func NormCDF(x float64) float64 { return normCDF(x) }

func clampOpen(p float64) float64 { return math.Min(math.Max(p, 1e-6), 1-1e-6) }
