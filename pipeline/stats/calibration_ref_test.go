package stats

import (
	"math"
	"testing"
)

// brierBoth is the Brier score of p against y as scoring computes it: the
// list form BrierW (bootstrap replicates) and the accumulator BrierAcc (the
// figure itself). It fails t unless the two agree bit for bit.
func brierBoth(t *testing.T, p []float64, y []bool) float64 {
	t.Helper()
	list := BrierW(p, y, nil)
	var acc BrierAcc
	for i := range p {
		acc.Add(p[i], y[i])
	}
	sameFloat(t, "Brier accumulator", acc.Score(), list)
	return list
}

// ecePosBoth is ECEPosW unweighted, checked against the BinAcc scoring
// adds the answers up in.
func ecePosBoth(t *testing.T, p []float64, y []bool, bins int) float64 {
	t.Helper()
	list := ECEPosW(p, y, nil, bins)
	sameFloat(t, "ECEPos accumulator", binAccECE(p, y, bins), list)
	return list
}

// eceBoth is ECEW unweighted, checked against the BinAcc scoring adds the
// answers up in.
func eceBoth(t *testing.T, conf []float64, correct []bool, bins int) float64 {
	t.Helper()
	list := ECEW(conf, correct, nil, bins)
	sameFloat(t, "ECE accumulator", binAccECE(conf, correct, bins), list)
	return list
}

func binAccECE(c []float64, y []bool, bins int) float64 {
	a := NewBinAcc(bins)
	for i := range c {
		a.Add(c[i], y[i])
	}
	return a.ECE()
}

// sameFloat fails unless got and want are the same float64 (NaN equal to
// NaN).
func sameFloat(t *testing.T, name string, got, want float64) {
	t.Helper()
	if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
		t.Errorf("%s = %v, list form %v", name, got, want)
	}
}
