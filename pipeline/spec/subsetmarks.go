package spec

// SubsetMarker says which of a task's subsets (task subsets:) each of its
// items is in, as the results read back for scoring recorded it (package
// scoring builds one while it reads results.parquet back).
type SubsetMarker interface {
	// SubsetMark says whether item i is in the named subset; ok is false
	// when there is no usable mark for it.
	SubsetMark(name string, i int) (in, ok bool)
}

// SubsetMark says whether item i of task t is in the named subset, as the
// results read back for scoring recorded it (Marks); ok is false when they
// hold no usable mark for it: evaluate the subset's expression then.
func (rs *ResultSet) SubsetMark(t *Task, name string, i int) (in, ok bool) {
	m := rs.Marks[t]
	if m == nil {
		return false, false
	}
	return m.SubsetMark(name, i)
}
