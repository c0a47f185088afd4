package scoring

import (
	"encoding/json"
	"sort"

	"github.com/promoral/promoral/pipeline/spec"
)

// subsetMarks is, for one task, which of its subsets (task subsets:) each
// item is in, as the subsets column of the results read back for scoring
// recorded it. Those rows were written by this study's apply or taken from
// one with the same results key (same code, task files and data), by the
// same expressions on the same fields, so scoring need not read every
// item's fields back from a large dataset's store to place it again. An
// item without a mark, or one on which a subset's expression failed, is
// evaluated as before (the error needs its message). ReadResultSet keeps
// each task's marks in the result set (spec.ResultSet.Marks).
type subsetMarks struct {
	at    map[string]int // subset name -> its bit set
	known []uint64
	in    [][]uint64
	// lists caches each distinct column value: the subsets listed, or nil
	// when the value cannot be used.
	lists map[string][]int
}

func newSubsetMarks(t *spec.Task) *subsetMarks {
	names := make([]string, 0, len(t.Spec.Subsets))
	for n, src := range t.Spec.Subsets {
		// As the column is written (subsetNames): a subset that does not
		// compile is never listed.
		if _, err := spec.CompileExpr(src, nil, true); err == nil {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	words := (len(t.Items) + 63) / 64
	m := &subsetMarks{at: map[string]int{}, known: make([]uint64, words), lists: map[string][]int{}}
	for i, n := range names {
		m.at[n] = i
		m.in = append(m.in, make([]uint64, words))
	}
	return m
}

// mark records item i's column value.
func (m *subsetMarks) mark(i int, value string) {
	list, seen := m.lists[value]
	if !seen {
		var names []string
		if json.Unmarshal([]byte(value), &names) == nil {
			list = []int{}
			for _, n := range names {
				k, ok := m.at[n]
				if !ok {
					// "!name" (the expression failed) or a subset this
					// task does not declare: not a mark to trust.
					list = nil
					break
				}
				list = append(list, k)
			}
		}
		m.lists[value] = list
	}
	if list == nil {
		return
	}
	word, bit := i/64, uint64(1)<<(i%64)
	for k := range m.in {
		m.in[k][word] &^= bit
	}
	for _, k := range list {
		m.in[k][word] |= bit
	}
	m.known[word] |= bit
}

// SubsetMark says whether the task's item i is in the named subset, as the
// results read back recorded it; ok is false when they hold no usable mark
// for it (spec.SubsetMarker).
func (m *subsetMarks) SubsetMark(name string, i int) (in, ok bool) {
	if i < 0 || i/64 >= len(m.known) {
		return false, false
	}
	k, has := m.at[name]
	word, bit := i/64, uint64(1)<<(i%64)
	if !has || m.known[word]&bit == 0 {
		return false, false
	}
	return m.in[k][word]&bit != 0, true
}
