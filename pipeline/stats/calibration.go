package stats

import "math"

// DefaultBins is the number of equal-width calibration bins used when a
// bins argument is <= 0.
const DefaultBins = 10

// BrierW is Brier with item i counted w[i] times (nil: once).
func BrierW(p []float64, y []bool, w []int) float64 {
	mustSameLen("Brier", len(p), len(y))
	mustWeights("Brier", len(p), w)
	var sum float64
	n := 0
	for i, pi := range p {
		c := weight(w, i)
		if math.IsNaN(pi) || c == 0 {
			continue
		}
		d := pi - b2f(y[i])
		sum += float64(c) * d * d
		n += c
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// TopBrierConvention names the top-label Brier on a metric row.
const TopBrierConvention = "top-label: confidence in the chosen answer against whether it is right (1 right, 0 wrong), mean squared difference"

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// PositiveProb turns a stated confidence conf (in [0,1]; divide a 0–100
// confidence by 100 first) in the chosen label of a binary task into the
// probability of the positive class: conf when chosen is positive, 1 − conf
// otherwise. That is the p ECEPosW and BrierW expect.
func PositiveProb(conf float64, chosen, positive string) float64 {
	if chosen == positive {
		return conf
	}
	return 1 - conf
}

// ReliabilityBin is one bin of a reliability diagram. For ECEPosW-style input
// MeanConf is the mean p and Accuracy the share of positives; for ECE-style
// input they are the mean confidence and the share correct. Both are NaN in
// an empty bin (N == 0), which is kept so plots show the gap.
type ReliabilityBin struct {
	Lo, Hi             float64
	N                  int
	MeanConf, Accuracy float64
}

// binEdge is the i-th edge, computed as a division so that for 10 bins it is
// the same float64 as the decimal literal (7.0/10 == 0.7).
func binEdge(i, bins int) float64 { return float64(i) / float64(bins) }

// BinConvention names the binning every ECE in promoral uses unless a
// metric says otherwise: equal-width bins closed on the right, (lo, hi], the
// first also closed on the left so that 0 has a bin. A stated 0.7 therefore
// sits in (0.6, 0.7], with the answers that said 0.61 to 0.7; the reports and
// CSV headers repeat this name next to every ECE.
const BinConvention = "equal-width bins (lo, hi], the first [0, hi]"

// binIndex places p in bin i = (i/bins, (i+1)/bins], bin 0 closed at 0.
// p*bins alone can round across an edge (0.7*10 = 7.000000000000001), so the
// guess is settled against the edges as reported, which is what keeps a
// stated "70%" in (0.6, 0.7]. Values outside [0,1] are clamped into the end
// bins.
func binIndex(p float64, bins int) int {
	if p <= binEdge(1, bins) {
		return 0
	}
	if p >= 1 {
		return bins - 1
	}
	i := int(math.Ceil(p*float64(bins))) - 1
	if i < 0 {
		i = 0
	}
	if i >= bins {
		i = bins - 1
	}
	if i > 0 && p <= binEdge(i, bins) {
		i--
	}
	if i+1 < bins && p > binEdge(i+1, bins) {
		i++
	}
	return i
}

// ReliabilityBins bins conf into bins equal-width bins over [0,1] (bins <= 0
// means DefaultBins) and reports each bin, empty ones included. Items with
// NaN conf are skipped.
func ReliabilityBins(conf []float64, y []bool, bins int) []ReliabilityBin {
	return ReliabilityBinsW(conf, y, nil, bins)
}

// ReliabilityBinsW is ReliabilityBins with item i counted w[i] times (nil:
// once).
func ReliabilityBinsW(conf []float64, y []bool, w []int, bins int) []ReliabilityBin {
	mustSameLen("ReliabilityBins", len(conf), len(y))
	mustWeights("ReliabilityBins", len(conf), w)
	if bins <= 0 {
		bins = DefaultBins
	}
	out := make([]ReliabilityBin, bins)
	sumC := make([]float64, bins)
	sumY := make([]float64, bins)
	for i, c := range conf {
		k := weight(w, i)
		if math.IsNaN(c) || k == 0 {
			continue
		}
		b := binIndex(c, bins)
		out[b].N += k
		if w == nil {
			sumC[b] += c
			sumY[b] += b2f(y[i])
		} else {
			sumC[b] += float64(k) * c
			sumY[b] += float64(k) * b2f(y[i])
		}
	}
	for b := range out {
		out[b].Lo, out[b].Hi = binEdge(b, bins), binEdge(b+1, bins)
		out[b].MeanConf, out[b].Accuracy = math.NaN(), math.NaN()
		if out[b].N > 0 {
			out[b].MeanConf = sumC[b] / float64(out[b].N)
			out[b].Accuracy = sumY[b] / float64(out[b].N)
		}
	}
	return out
}

// ece is Σ_b (n_b/n)·|mean conf_b − mean y_b| over non-empty bins.
func ece(fn string, conf []float64, y []bool, w []int, bins int) float64 {
	mustSameLen(fn, len(conf), len(y))
	return binsECE(ReliabilityBinsW(conf, y, w, bins))
}

// ECEPosW is ECEPos with item i counted w[i] times (nil: once).
func ECEPosW(p []float64, y []bool, w []int, bins int) float64 {
	return ece("ECEPos", p, y, w, bins)
}

// ECEW is ECE with item i counted w[i] times (nil: once).
func ECEW(conf []float64, correct []bool, w []int, bins int) float64 {
	return ece("ECE", conf, correct, w, bins)
}

// BinAcc adds up a reliability diagram one answer at a time, in the order
// given, with the very sums ReliabilityBins makes over a list: a metric can
// bin a million answers without holding them.
type BinAcc struct {
	bins       int
	n          []int
	sumC, sumY []float64
}

// NewBinAcc bins into bins equal-width bins (DefaultBins when <= 0).
func NewBinAcc(bins int) *BinAcc {
	if bins <= 0 {
		bins = DefaultBins
	}
	return &BinAcc{bins: bins, n: make([]int, bins), sumC: make([]float64, bins), sumY: make([]float64, bins)}
}

// Add counts one answer; a NaN confidence is left out.
func (a *BinAcc) Add(c float64, y bool) {
	if math.IsNaN(c) {
		return
	}
	b := binIndex(c, a.bins)
	a.n[b]++
	a.sumC[b] += c
	a.sumY[b] += b2f(y)
}

// Bins are ReliabilityBins of the answers added.
func (a *BinAcc) Bins() []ReliabilityBin {
	out := make([]ReliabilityBin, a.bins)
	for b := range out {
		out[b] = ReliabilityBin{Lo: binEdge(b, a.bins), Hi: binEdge(b+1, a.bins), N: a.n[b], MeanConf: math.NaN(), Accuracy: math.NaN()}
		if a.n[b] > 0 {
			out[b].MeanConf = a.sumC[b] / float64(a.n[b])
			out[b].Accuracy = a.sumY[b] / float64(a.n[b])
		}
	}
	return out
}

// ECE is the expected calibration error of the answers added, as ECEW and
// ECEPosW compute it.
func (a *BinAcc) ECE() float64 {
	return binsECE(a.Bins())
}

// binsECE is the count-weighted mean gap between confidence and accuracy
// over the bins that hold answers; NaN when none does.
func binsECE(bins []ReliabilityBin) float64 {
	var sum float64
	n := 0
	for _, b := range bins {
		if b.N == 0 {
			continue
		}
		sum += float64(b.N) * math.Abs(b.MeanConf-b.Accuracy)
		n += b.N
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

// BrierAcc adds up the Brier score one answer at a time, in the order
// given, as Brier does over a list.
type BrierAcc struct {
	sum float64
	n   int
}

// Add counts one probability with its outcome; NaN is left out.
func (a *BrierAcc) Add(p float64, y bool) {
	if math.IsNaN(p) {
		return
	}
	d := p - b2f(y)
	a.sum += d * d
	a.n++
}

// Score is the Brier score of the answers added (NaN for none).
func (a *BrierAcc) Score() float64 {
	if a.n == 0 {
		return math.NaN()
	}
	return a.sum / float64(a.n)
}
