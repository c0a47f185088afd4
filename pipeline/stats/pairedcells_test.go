package stats

import (
	"math"
	"testing"
)

// PairedCells compares a cell of single answers answer by answer, a cell
// with several answers an item by items, and leaves a void cell out of the
// Holm adjustment.
func TestPairedCellsPicksTheComparisonAndAdjustsOverCells(t *testing.T) {
	one := PairedCounts{AR: []int{1, 0, 1, 1, 0, 0}, AN: []int{1, 1, 1, 1, 1, 1}, BR: []int{1, 1, 1, 1, 1, 0}, BN: []int{1, 1, 1, 1, 1, 1}}
	rep := PairedCounts{AR: []int{1, 0, 2}, AN: []int{2, 2, 2}, BR: []int{2, 1, 2}, BN: []int{2, 2, 2}}
	void := one
	void.Void = true
	diffs, repeats, holm := PairedCells([]PairedCounts{one, rep, void, {}}, 200, 7)
	want := PairedDiff([]bool{true, false, true, true, false, false}, []bool{true, true, true, true, true, false}, 200, 7)
	if diffs[0] != want || repeats[0] {
		t.Errorf("single answers: %+v (repeats %v), want %+v", diffs[0], repeats[0], want)
	}
	if w := PairedItems(rep.AR, rep.AN, rep.BR, rep.BN, 200, 7); diffs[1] != w || !repeats[1] {
		t.Errorf("repeats: %+v (repeats %v), want %+v", diffs[1], repeats[1], w)
	}
	wantHolm := Holm([]float64{diffs[0].McNemarP, diffs[1].McNemarP, math.NaN(), math.NaN()})
	for k := range holm {
		near(t, "holm", holm[k], wantHolm[k], tol)
	}
	if !math.IsNaN(holm[2]) || !math.IsNaN(holm[3]) || diffs[3].N != 0 {
		t.Errorf("a void or empty cell: holm %v, n %d", holm, diffs[3].N)
	}
}
