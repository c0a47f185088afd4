package stats

import (
	"math/rand/v2"

	"gonum.org/v1/gonum/stat/distuv"
)

// Items that fall into a few kinds (a cell of a confusion table, a distinct
// confidence with its outcome) need not be resampled one by one: drawing n
// items with replacement from n items, counts[k] of which are of kind k, is
// drawing one multinomial vector of n trials over the kinds with
// probabilities counts[k]/n. A replicate then costs a binomial draw per
// kind instead of n index draws, and a statistic reads the drawn counts, so
// a million answers in twenty kinds bootstrap as fast as twenty answers.

// multinomial draws multinomial replicates of counts from a PCG seeded as
// every bootstrap here is.
type multinomial struct {
	counts []int
	n      int
	src    *rand.PCG
	// kindOf, when set, lists the kind of each of the n items: a replicate
	// is then n draws of an item, which costs less than a binomial per
	// kind when the items are few for their kinds.
	kindOf []int32
	rnd    *rand.Rand
}

// byItem says when drawing items is cheaper than drawing a binomial per
// kind (a binomial costs about as much as this many uniform draws). Tests
// set it to 0 to make every draw binomial.
var byItem = 16

func newMultinomial(counts []int, seed uint64) *multinomial {
	m := &multinomial{counts: counts, src: rand.NewPCG(seed, pcgStream)}
	for _, c := range counts {
		m.n += c
	}
	if m.n < byItem*len(counts) {
		m.kindOf = make([]int32, 0, m.n)
		for k, c := range counts {
			for range c {
				m.kindOf = append(m.kindOf, int32(k))
			}
		}
		m.rnd = rand.New(m.src)
	}
	return m
}

// draw fills w (len(counts)) with one replicate: n items drawn one by one,
// or by conditional binomials (kind k takes Binomial(trials left,
// counts[k] / count mass left)); both are the multinomial.
func (m *multinomial) draw(w []int) {
	if m.kindOf != nil {
		clear(w)
		for range m.n {
			w[m.kindOf[m.rnd.IntN(m.n)]]++
		}
		return
	}
	left, mass := m.n, m.n
	for k, c := range m.counts {
		switch {
		case left == 0 || c == 0:
			w[k] = 0
		case c >= mass:
			w[k] = left
		default:
			w[k] = m.binomial(left, float64(c)/float64(mass))
		}
		left -= w[k]
		mass -= c
	}
}

func (m *multinomial) binomial(n int, p float64) int {
	x := int(distuv.Binomial{N: float64(n), P: p, Src: m.src}.Rand())
	return min(max(x, 0), n)
}

// BootstrapCountsIntervals is BootstrapManyIntervals over items grouped into kinds:
// counts[k] items are of kind k, and each of reps replicates draws a new
// count per kind (a multinomial resample of all the items, from a PCG
// seeded with seed) for stat to read, which writes its k values into out
// (preset to NaN). It returns the k percentile intervals, each with the
// replicates where its statistic was undefined counted; NaN where there are
// no items or every replicate of a statistic was NaN. The intervals agree
// with the item-level BootstrapManyIntervals' to Monte Carlo error (the draws differ,
// their distribution does not).
func BootstrapCountsIntervals(counts []int, k int, stat func(w []int, out []float64), reps int, seed uint64, level float64) []Interval {
	m := newMultinomial(counts, seed)
	if m.n <= 0 {
		return noIntervals(k)
	}
	reps, level = defaults(reps, level)
	w := make([]int, len(counts))
	return replicateIntervals(k, reps, level, func(out []float64) {
		m.draw(w)
		stat(w, out)
	})
}

// BootstrapCountInterval is BootstrapCountsIntervals for one statistic.
func BootstrapCountInterval(counts []int, stat func(w []int) float64, reps int, seed uint64, level float64) Interval {
	return BootstrapCountsIntervals(counts, 1, func(w []int, out []float64) { out[0] = stat(w) }, reps, seed, level)[0]
}

// Kinds groups items by a comparable key: Add returns an item's kind, and
// Counts the items per kind, kinds in order of first appearance (so the
// same items in the same order give the same resamples).
type Kinds[K comparable] struct {
	index  map[K]int
	Keys   []K
	Counts []int
}

// Add counts one item of kind key and returns the kind's index.
func (t *Kinds[K]) Add(key K) int {
	if t.index == nil {
		t.index = map[K]int{}
	}
	i, ok := t.index[key]
	if !ok {
		i = len(t.Keys)
		t.index[key] = i
		t.Keys = append(t.Keys, key)
		t.Counts = append(t.Counts, 0)
	}
	t.Counts[i]++
	return i
}
