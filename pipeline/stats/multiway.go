package stats

import (
	"math"
	"sort"
)

// Confusion counts one judge against people over any number of classes,
// e.g. XSTest's full compliance, full refusal and partial refusal. Classes
// fixes their order (for an ordered weighting, the order of the scale); a
// verdict outside it, such as no verdict (""), is kept as a column of its
// own that people never use: it counts against observed agreement and adds
// nothing to chance agreement, as in Agreement.Kappa.
type Confusion struct {
	Classes []string
	Cells   map[[2]string]int // {person, judge} -> items
	n       int
}

// NewConfusion is an empty table over the classes, in order.
func NewConfusion(classes ...string) *Confusion {
	return &Confusion{Classes: classes, Cells: map[[2]string]int{}}
}

// Add counts one item: person's verdict (a class) and the judge's ("" for
// none).
func (c *Confusion) Add(person, judge string) {
	c.Cells[[2]string{person, judge}]++
	c.n++
}

// N is every item counted.
func (c *Confusion) N() int { return c.n }

func (c *Confusion) index(v string) int {
	for i, x := range c.Classes {
		if x == v {
			return i
		}
	}
	return -1
}

// JudgeVerdicts lists the judge's verdicts outside the classes, sorted
// ("" first), for a table's extra columns.
func (c *Confusion) JudgeVerdicts() []string {
	seen := map[string]bool{}
	for cell := range c.Cells {
		if c.index(cell[1]) < 0 {
			seen[cell[1]] = true
		}
	}
	out := make([]string, 0, len(seen))
	for v := range seen {
		out = append(out, v)
	}
	sort.Strings(out)
	return out
}

// Kappa is Cohen's kappa over the classes (unweighted). NaN for no items
// or chance agreement 1.
func (c *Confusion) Kappa() float64 {
	return c.weighted(func(i, j int) float64 { return boolF(i != j) })
}

// LinearKappa is Cohen's weighted kappa with linear disagreement weights
// |i−j|/(k−1) over the classes in order (full compliance, partial refusal,
// full refusal: a partial refusal is half way). A verdict outside the
// classes weighs 1, the most. NaN as Kappa.
func (c *Confusion) LinearKappa() float64 {
	k := len(c.Classes)
	if k < 2 {
		return math.NaN()
	}
	return c.weighted(func(i, j int) float64 { return math.Abs(float64(i-j)) / float64(k-1) })
}

// weighted is 1 − Σ w·observed / Σ w·expected, with w(i, j) the
// disagreement weight of classes i and j (1 when either is outside).
func (c *Confusion) weighted(w func(i, j int) float64) float64 {
	if c.n == 0 {
		return math.NaN()
	}
	n := float64(c.n)
	rowN, colN := map[string]float64{}, map[string]float64{}
	for cell, v := range c.Cells {
		rowN[cell[0]] += float64(v)
		colN[cell[1]] += float64(v)
	}
	wt := func(a, b string) float64 {
		i, j := c.index(a), c.index(b)
		if i < 0 || j < 0 {
			return 1
		}
		return w(i, j)
	}
	var do, de float64
	for cell, v := range c.Cells {
		do += wt(cell[0], cell[1]) * float64(v) / n
	}
	for a, ra := range rowN {
		for b, cb := range colN {
			de += wt(a, b) * ra / n * cb / n
		}
	}
	if de <= 0 {
		return math.NaN()
	}
	return 1 - do/de
}

// Sensitivity is the share of the items people put in class that the
// judge put there too (its recall of that class). NaN when people used it
// on no item.
func (c *Confusion) Sensitivity(class string) float64 {
	hit, all := 0, 0
	for cell, v := range c.Cells {
		if cell[0] == class {
			all += v
			if cell[1] == class {
				hit += v
			}
		}
	}
	return ratio(hit, all)
}

// Accuracy is the share of items where the judge says what people said.
func (c *Confusion) Accuracy() float64 {
	hit := 0
	for cell, v := range c.Cells {
		if cell[0] == cell[1] {
			hit += v
		}
	}
	return ratio(hit, c.n)
}

func boolF(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// KrippendorffAlpha is Krippendorff's alpha for nominal data: the
// agreement of any number of coders (judges and people alike) on units
// each coded by some of them. units[u][c] is coder c's value on unit u, ""
// when c gave none; a unit with fewer than two values is not pairable and
// is left out. It is 1 − D_o/D_e from the coincidence matrix
// (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"): NaN
// without pairable units, or when every pairable value is the same
// (D_e = 0). n is the number of pairable values.
func KrippendorffAlpha(units [][]string) (alpha float64, n int) {
	o := map[[2]string]float64{}
	for _, u := range units {
		var vs []string
		for _, v := range u {
			if v != "" {
				vs = append(vs, v)
			}
		}
		m := len(vs)
		if m < 2 {
			continue
		}
		for i := range vs {
			for j := range vs {
				if i != j {
					o[[2]string{vs[i], vs[j]}] += 1 / float64(m-1)
				}
			}
		}
		n += m
	}
	if n == 0 {
		return math.NaN(), 0
	}
	nc := map[string]float64{}
	var disagree float64
	for k, v := range o {
		nc[k[0]] += v
		if k[0] != k[1] {
			disagree += v
		}
	}
	var expected float64
	for a, na := range nc {
		for b, nb := range nc {
			if a != b {
				expected += na * nb
			}
		}
	}
	if expected == 0 {
		return math.NaN(), n
	}
	// D_o = disagree / n, D_e = expected / (n (n − 1)).
	return 1 - float64(n-1)*disagree/expected, n
}
