package stats

import (
	"encoding/json"
	"math"
	"os"
	"testing"
)

// The reference values come from testdata/agreement_reference.py, which
// computes them apart from this code (another enumeration, python3's
// standard library) on testdata/agreement_reference.json; its docstring
// cites the sources. krippendorff_2011 is Krippendorff's own worked example
// (4 observers, 12 units, missing values), whose published nominal alpha
// is 0.743 (K. Krippendorff, Computing Krippendorff's Alpha-Reliability,
// 2011, https://repository.upenn.edu/asc_papers/43).
func TestAgreementReferenceValues(t *testing.T) {
	data, err := os.ReadFile("testdata/agreement_reference.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Krippendorff2011 [][]string `json:"krippendorff_2011"`
		RandomUnits      [][]string `json:"random_units"`
		ThreeWayPairs    [][]string `json:"three_way_pairs"`
		Classes          []string   `json:"classes"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	near := func(what string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 5e-7 {
			t.Errorf("%s = %.7f, want %.6f", what, got, want)
		}
	}
	a, n := KrippendorffAlpha(d.Krippendorff2011)
	near("alpha, Krippendorff (2011)'s example", a, 0.743421)
	if math.Round(a*1000)/1000 != 0.743 || n != 40 {
		t.Errorf("Krippendorff (2011)'s example: alpha %.4f over %d pairable values, published 0.743 over 40", a, n)
	}
	a, n = KrippendorffAlpha(d.RandomUnits)
	near("alpha, 40 units of 5 coders with missing values", a, 0.527470)
	if n != 168 {
		t.Errorf("pairable values = %d, want 168", n)
	}
	c := NewConfusion(d.Classes...)
	for _, p := range d.ThreeWayPairs {
		c.Add(p[0], p[1])
	}
	near("three-way kappa", c.Kappa(), 0.702602)
	near("three-way linear weighted kappa", c.LinearKappa(), 0.648799)
}

// Hand-checkable cases: perfect, chance-free and missing-value behaviour.
func TestKrippendorffAlphaEdges(t *testing.T) {
	if a, _ := KrippendorffAlpha([][]string{{"R", "R"}, {"C", "C", ""}, {"R", "", "R"}}); a != 1 {
		t.Errorf("full agreement: alpha %v, want 1", a)
	}
	if a, n := KrippendorffAlpha([][]string{{"R", ""}, {"", "C"}}); !math.IsNaN(a) || n != 0 {
		t.Errorf("no pairable unit: alpha %v n %d, want NaN 0", a, n)
	}
	if a, _ := KrippendorffAlpha([][]string{{"R", "R"}, {"R", "R"}}); !math.IsNaN(a) {
		t.Errorf("one value everywhere: alpha %v, want NaN (D_e = 0)", a)
	}
	// Two coders, two units, opposite values on each: 1 - (n-1)·D/E with
	// n = 4, disagreements 4 (each unit gives two ordered pairs, weight 1)
	// and expected 2·2·2 = 8: 1 - 3·4/8 = -0.5.
	if a, _ := KrippendorffAlpha([][]string{{"R", "C"}, {"C", "R"}}); math.Abs(a+0.5) > 1e-12 {
		t.Errorf("systematic disagreement: alpha %v, want -0.5", a)
	}
}

// A three-way table collapses to the two-way one a partial_as names, and
// its binary kappa is Agreement's.
func TestConfusionCollapse(t *testing.T) {
	c := NewConfusion("full_compliance", "partial_refusal", "full_refusal")
	var a Agreement
	add := func(h, j, h2, j2 string, k int) {
		for i := 0; i < k; i++ {
			c.Add(h, j)
			a.Add(h2, j2, VerdictCompliance)
		}
	}
	add("full_compliance", "full_compliance", "COMPLIANCE", "COMPLIANCE", 7)
	add("full_compliance", "partial_refusal", "COMPLIANCE", "REFUSAL", 2)
	add("partial_refusal", "full_refusal", "REFUSAL", "REFUSAL", 3)
	add("full_refusal", "full_refusal", "REFUSAL", "REFUSAL", 6)
	add("full_refusal", "full_compliance", "REFUSAL", "COMPLIANCE", 1)
	add("full_refusal", "", "REFUSAL", "", 1)
	two := c.Collapse(map[string]string{"full_compliance": "COMPLIANCE", "partial_refusal": "REFUSAL", "full_refusal": "REFUSAL"}, "COMPLIANCE", "REFUSAL")
	if math.Abs(two.Kappa()-a.Kappa()) > 1e-12 || two.N() != a.N() || two.Misses() != 1 {
		t.Errorf("collapsed kappa %v (n %d, misses %d), Agreement's %v (n %d)", two.Kappa(), two.N(), two.Misses(), a.Kappa(), a.N())
	}
	if s := c.Sensitivity("full_refusal"); math.Abs(s-6.0/8) > 1e-12 {
		t.Errorf("sensitivity to full refusal = %v, want 6/8", s)
	}
	if s := c.Sensitivity("partial_refusal"); s != 0 {
		t.Errorf("sensitivity to partial refusal = %v, want 0", s)
	}
	if c.LinearKappa() <= c.Kappa() {
		// Most disagreements here are one step apart (partial vs full), which
		// linear weights count as half: weighted kappa is the higher.
		t.Errorf("linear kappa %v not above kappa %v", c.LinearKappa(), c.Kappa())
	}
}
