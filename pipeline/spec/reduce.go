package spec

// Reducers: a metric block scores every sample of a repeated case
// (reduce: none, the default) or, with reduce:, one answer per item made
// from its k samples, before the block's kind sees the rows. The kind then
// scores reduced rows like any other rows. The reducers themselves run in
// package scoring; this file declares and checks reduce:, and gives the
// kinds that reduce for themselves MajorityLabel.
//
//	majority  the label most samples gave (unparsed samples do not vote); a
//	          tie between labels is no answer (the item counts as unparsed),
//	          and the block reports the share of tied items as majority_ties
//	first     the sample of the lowest repeat
//	any       an item is a hit when any sample is: correct (items with gold),
//	          else the task's positive label; the first such sample
//	all       an item is a hit only when every sample is; the first sample
//	          that is not
//	mean      the per-item mean of a score: only kinds that average scores
//	          themselves take it (the repeats kind)
//
// A reduced row's cost and tokens are its samples' sum (self-consistency
// pays k calls per answer). An item with an errored sample reduces to that
// errored sample, so the block's errors: policy decides about the item.
const (
	ReduceNone     = "none"
	ReduceMajority = "majority"
	ReduceFirst    = "first"
	ReduceAny      = "any"
	ReduceAll      = "all"
	ReduceMean     = "mean"
)

// reducers lists the reduce: values.
var reducers = []string{ReduceNone, ReduceMajority, ReduceMean, ReduceAny, ReduceAll, ReduceFirst}

// OwnReducer is implemented by metric kinds that read the block's reduce:
// themselves (they see every sample); scoring.ComputeScores then leaves
// the rows as they are.
type OwnReducer interface {
	ReducesItself() bool
}

// checkReduce checks a block's reduce: once its metric is built (decoding
// holds it to its enum).
func checkReduce(b *MetricBuild, m Metric) {
	if b.Base.Reduce != ReduceMean {
		return
	}
	if own, ok := m.(OwnReducer); !ok || !own.ReducesItself() {
		b.Errf("reduce", "leave reduce: unset to score every sample (each item then weighs k samples alike), or use kind: repeats, which averages per item",
			"reduce: mean averages a per-item score, which a %s block does not compute", b.Base.Kind)
	}
}

// MajorityLabel is the label most of the parsed samples gave; tie is set
// when two or more labels share the top count (winner is then ""). No
// parsed sample: "", false.
func MajorityLabel(g []*ResultRow) (winner string, tie bool) {
	counts := map[string]int{}
	best := 0
	for _, x := range g {
		if !x.Parsed() {
			continue
		}
		l := x.Label()
		counts[l]++
		best = max(best, counts[l])
	}
	for l, c := range counts {
		if c != best {
			continue
		}
		if winner != "" {
			return "", true
		}
		winner = l
	}
	return winner, false
}
