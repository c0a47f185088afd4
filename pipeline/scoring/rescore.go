package scoring

import (
	"fmt"
	"math"
	"os"
	"sort"

	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/spec"
)

// ScoreFromJournal is engine.RescoreFromJournal (every case walked on the
// journal's replies, none sent) followed by the study's metric blocks, in
// memory; misses counts the cases whose replies the journal does not hold.
func ScoreFromJournal(st *spec.Study, journalPath string) (sc *Scores, misses int, err error) {
	res, misses, err := engine.RescoreFromJournal(st, journalPath)
	if err != nil {
		return nil, 0, err
	}
	// A metric kind may write a file of its own (select_candidate's chosen
	// texts): into a folder thrown away after, never the run's.
	tmp, err := os.MkdirTemp("", "promoral-rescore-")
	if err != nil {
		return nil, 0, err
	}
	defer os.RemoveAll(tmp)
	rs := NewResultSet(st, res, tmp)
	rs.Journal = journalPath
	sc, err = ComputeScores(rs)
	return sc, misses, err
}

// ScoreChange is one metric row that differs between two score sets.
type ScoreChange struct {
	Key        string
	Old, New   *spec.MetricRow // nil: the row is not in that set
	ValueDelta float64         // NaN when either side has no value
}

// DiffScores pairs two score sets by row key (block, model, strategy,
// task, subset, factors, metric) and returns the rows whose value, n,
// status or policies differ, or that only one side has, sorted by key.
func DiffScores(old, new *Scores) []ScoreChange {
	idx := map[string]*spec.MetricRow{}
	for i := range old.Rows {
		idx[old.Rows[i].Key()] = &old.Rows[i]
	}
	seen := map[string]bool{}
	var out []ScoreChange
	for i := range new.Rows {
		n := &new.Rows[i]
		k := n.Key()
		seen[k] = true
		o := idx[k]
		if o != nil && sameRow(o, n) {
			continue
		}
		out = append(out, ScoreChange{Key: k, Old: o, New: n, ValueDelta: delta(o, n)})
	}
	for k, o := range idx {
		if !seen[k] {
			out = append(out, ScoreChange{Key: k, Old: o, ValueDelta: math.NaN()})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

func delta(o, n *spec.MetricRow) float64 {
	if o == nil || n == nil || math.IsNaN(o.Value) || math.IsNaN(n.Value) {
		return math.NaN()
	}
	return n.Value - o.Value
}

func sameRow(a, b *spec.MetricRow) bool {
	eq := func(x, y float64) bool { return x == y || (math.IsNaN(x) && math.IsNaN(y)) || math.Abs(x-y) <= 1e-12 }
	return eq(a.Value, b.Value) && a.N == b.N && a.Status == b.Status && a.Unparsed == b.Unparsed && a.Errors == b.Errors
}

// Describe is a change as one line: the row, then old -> new value with n
// and, where they changed, status and policies.
func (c ScoreChange) Describe() string {
	side := func(r *spec.MetricRow) string {
		if r == nil {
			return "(none)"
		}
		v := "-"
		if !math.IsNaN(r.Value) {
			v = fmt.Sprintf("%.4f", r.Value)
		}
		if r.Status != "" && r.Status != spec.StatusOK {
			v = r.Status
		}
		return fmt.Sprintf("%s (n %d)", v, r.N)
	}
	s := fmt.Sprintf("%s: %s -> %s", c.Key, side(c.Old), side(c.New))
	if !math.IsNaN(c.ValueDelta) {
		s += fmt.Sprintf(" %+.4f", c.ValueDelta)
	}
	if c.Old != nil && c.New != nil {
		if c.Old.Unparsed != c.New.Unparsed {
			s += fmt.Sprintf("; unparsed %s -> %s", orDash(c.Old.Unparsed), orDash(c.New.Unparsed))
		}
		if c.Old.Errors != c.New.Errors {
			s += fmt.Sprintf("; errors %s -> %s", orDash(c.Old.Errors), orDash(c.New.Errors))
		}
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
