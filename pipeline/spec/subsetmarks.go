package spec

// SubsetMarker says which of a task's subsets (task subsets:) each of its
// items is in, as the results read back for scoring recorded it (package
// scoring builds one while it reads results.parquet back).
type SubsetMarker interface {
	// SubsetMark says whether item i is in the named subset; ok is false
	// when there is no usable mark for it.
	SubsetMark(name string, i int) (in, ok bool)
}

// SetSubsetMarks gives the task the subset marks of the results read back
// for scoring (nil: none).
func (t *Task) SetSubsetMarks(m SubsetMarker) { t.marks = m }

// SubsetMark says whether the task's item i is in the named subset, as the
// results read back for scoring recorded it; ok is false when they hold no
// usable mark for it: evaluate the subset's expression then.
func (t *Task) SubsetMark(name string, i int) (in, ok bool) {
	if t.marks == nil {
		return false, false
	}
	return t.marks.SubsetMark(name, i)
}
