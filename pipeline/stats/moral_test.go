package stats

import "testing"

func TestChoiceDistribution(t *testing.T) {
	// Parsed: B, A, A (the unparsed "A" is left out) → A 2/3, B 1/3.
	d := ChoiceDistribution([]string{"B", "A", "A", "A"}, []bool{true, true, true, false})
	if len(d) != 2 || d[0].Label != "A" || d[1].Label != "B" {
		t.Fatalf("dist = %+v, want A then B", d)
	}
	eqInt(t, "A count", d[0].Count, 2)
	near(t, "A share", d[0].Share, 2.0/3, tol)
	near(t, "B share", d[1].Share, 1.0/3, tol)
	if len(ChoiceDistribution(nil, nil)) != 0 {
		t.Error("empty input should give an empty distribution")
	}
}

func TestEntropy(t *testing.T) {
	near(t, "even split", ChoiceEntropy([]string{"A", "A", "B", "B"}, nil), 1, tol)
	// 3:1 → −(¾·log2 ¾ + ¼·log2 ¼) = 0.75·0.415037 + 0.25·2 = 0.811278.
	near(t, "3:1", ChoiceEntropy([]string{"A", "A", "A", "B"}, nil), 0.8112781244591328, 1e-12)
	near(t, "one class", ChoiceEntropy([]string{"A", "A"}, nil), 0, 0)
	near(t, "four even", EntropyBits([]int{1, 1, 1, 1}), 2, tol)
	near(t, "zero counts skipped", EntropyBits([]int{2, 0, 2}), 1, tol)
	near(t, "empty", ChoiceEntropy(nil, nil), nan, 0)
	near(t, "all unparsed", ChoiceEntropy([]string{"A"}, []bool{false}), nan, 0)
}

func TestFormAgreement(t *testing.T) {
	answers := [][]string{
		{"a1", "a1", "a1"}, // agree
		{"a1", "a2", "a1"}, // disagree
		{"a1", "", "a1"},   // two answered, agree
		{"a1", "", ""},     // one answered: not counted
		{"a2", "a2"},       // agree
		{},                 // nothing: not counted
	}
	// Counted: 4 items, 3 agree → 3/4.
	a, n := FormAgreement(answers)
	near(t, "agreement", a, 0.75, tol)
	eqInt(t, "n", n, 4)
	a, n = FormAgreement(nil)
	near(t, "empty", a, nan, 0)
	eqInt(t, "empty n", n, 0)
}
