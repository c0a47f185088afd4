package spec

import (
	"fmt"
	"strconv"
)

// Repeats: a case may be sampled k times (settings.repeats, a model entry's
// or a strategy's repeats:, the strategy's first). Each repeat is a case of
// its own: a matrix cell of k repeats becomes k cells, one per repeat index,
// next to each other, so the ordinals, the outputs and every count follow
// without a second notion of "case". The repeat index travels into every
// request of the case's strategy graph (llm.Request.Repeat), so each repeat
// has its own journal key: k samples cost k calls, a resume after a kill
// finds each repeat's replies, and raising k later calls only the new
// repeats. Repeat 0 keeps the key (and the case id) it had without repeats,
// so journals written before stay valid. A judge's requests carry no
// repeat: the same answer judged twice is one call.

// RepeatsOf is the number of samples a cell of model m and strategy s takes:
// the strategy's repeats:, else the model's, else settings.repeats, else 1.
// A model that makes no call (provider none: recorded replies) is read
// once: a repeat would read the same reply again.
func (st *Study) RepeatsOf(m *Model, s *Strategy) int {
	switch {
	case m != nil && m.Spec != nil && m.Spec.Provider == "none":
		return 1
	case s != nil && s.Spec != nil && s.Spec.Repeats > 0:
		return s.Spec.Repeats
	case m != nil && m.Spec != nil && m.Spec.Repeats > 0:
		return m.Spec.Repeats
	case st.Run != nil && st.Run.Settings.Repeats > 0:
		return st.Run.Settings.Repeats
	}
	return 1
}

// MaxRepeats is the largest number of samples any cell of the study takes.
func (st *Study) MaxRepeats() int {
	n := 1
	for _, c := range st.Cells {
		n = max(n, c.Repeat+1)
	}
	return n
}

// NumCells is the number of matrix cells, a cell of k repeats counted once.
func (st *Study) NumCells() int {
	n := 0
	for _, c := range st.Cells {
		if c.Repeat == 0 {
			n++
		}
	}
	return n
}

// RepeatsNote is " (k repeats)" or " (1 to k repeats)" when some cell is
// sampled more than once, else "".
func (st *Study) RepeatsNote() string {
	lo, hi := 0, 1
	for i, c := range st.Cells {
		if c.Repeat == 0 {
			k := 1
			for j := i + 1; j < len(st.Cells) && st.Cells[j].Repeat > 0; j++ {
				k++
			}
			if lo == 0 || k < lo {
				lo = k
			}
			hi = max(hi, k)
		}
	}
	switch {
	case hi <= 1:
		return ""
	case lo == hi:
		return fmt.Sprintf(" x %d repeats", hi)
	}
	return fmt.Sprintf(" x %d to %d repeats", lo, hi)
}

// maxRepeats is the largest repeats: a run, a model or a strategy may set
// (the fields' max tags say the same, and the decoder reports a value
// above it with its file, line and field).
const maxRepeats = 1000

// expandRepeats turns every matrix cell into one cell per repeat. A repeats:
// out of range (reported by the decoder) leaves the cells as they are:
// nothing is sized by it.
func expandRepeats(st *Study) {
	n := 0
	for _, c := range st.Cells {
		k := st.RepeatsOf(c.Model, c.Strategy)
		if k > maxRepeats {
			return
		}
		n += k
	}
	if n == len(st.Cells) {
		return
	}
	out := make([]ResolvedCell, 0, n)
	for _, c := range st.Cells {
		k := st.RepeatsOf(c.Model, c.Strategy)
		for r := 0; r < k; r++ {
			rc := c
			rc.Repeat = r
			out = append(out, rc)
		}
	}
	st.Cells = out
}

// caseID is a case's id: model/strategy/task/item, and #r<i> for a repeat
// i > 0.
func caseID(model, strategy, task, item string, repeat int) string {
	id := model + "/" + strategy + "/" + task + "/" + item
	if repeat > 0 {
		id += "#r" + strconv.Itoa(repeat)
	}
	return id
}
