package spec

// Unpriced reports whether a model that makes calls has no price: its cost
// is unknown, not zero (a scripted model, or one that calls nothing, is
// free).
func (m *Model) Unpriced() bool {
	p := m.Spec.Price
	return p.Input == 0 && p.Output == 0 && m.Spec.Provider != "scripted" && m.Spec.Provider != "simulated" && m.Spec.Provider != "none"
}

// UnpricedNames names the models a study calls that have no price.
func UnpricedNames(st *Study) []string {
	var out []string
	for _, m := range st.CalledModels() {
		if m.Unpriced() {
			out = append(out, m.Name)
		}
	}
	return out
}
