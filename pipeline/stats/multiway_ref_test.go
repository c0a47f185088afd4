package stats

// Misses are the items whose judge verdict is not one of the classes.
func (c *Confusion) Misses() int {
	k := 0
	for cell, v := range c.Cells {
		if c.index(cell[1]) < 0 {
			k += v
		}
	}
	return k
}

// Collapse maps every verdict through to (people's and the judge's alike;
// a verdict to leaves out stays as it is) into a new table over classes,
// e.g. the three reply classes to REFUSAL and COMPLIANCE with partial
// refusal counted as one of them.
func (c *Confusion) Collapse(to map[string]string, classes ...string) *Confusion {
	out := NewConfusion(classes...)
	m := func(v string) string {
		if x, ok := to[v]; ok {
			return x
		}
		return v
	}
	for cell, v := range c.Cells {
		out.Cells[[2]string{m(cell[0]), m(cell[1])}] += v
		out.n += v
	}
	return out
}
