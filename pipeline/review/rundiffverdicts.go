package review

import (
	"fmt"
	"sort"
	"strings"

	"github.com/promoral/promoral/internal/wrap"
	"github.com/promoral/promoral/runfolder/manifest"
)

// Judges' verdicts across two runs: when a finished run is judged again
// with another judge (apply with the task's judge changed re-runs only the
// judge's calls), what changed is first of all the verdicts. Every judged
// case of both runs is compared on its label.

// VerdictCell is one model x strategy x task: the judged cases both runs
// have, and those whose verdict changed.
type VerdictCell struct {
	Model, Strategy, Task string
	Judges                [2]string      // the judge of each run (strategy, and model when it calls one)
	N                     int            // judged cases in both runs
	Moves                 map[string]int // "OLD -> NEW" -> cases ("none" for no verdict)
	Changed               []VerdictFlip
}

// VerdictFlip is a case whose verdict changed.
type VerdictFlip struct{ Item, Old, New string }

func verdictOf(r map[string]any) string {
	if s, ok := r["label"].(string); ok && s != "" {
		return s
	}
	return "none"
}

// judged says whether a results row went through a judge.
func judged(r map[string]any) bool {
	s, ok := r["judge"].(string)
	return ok && s != "" && s != "null"
}

// compareVerdicts pairs the judged cases of two runs' results rows.
func compareVerdicts(oldRows, newRows []map[string]any, om, nm *manifest.Manifest) []VerdictCell {
	old := map[string]map[string]any{}
	for _, r := range oldRows {
		if judged(r) {
			old[fmt.Sprint(r["case_id"])] = r
		}
	}
	type key struct{ model, strategy, task string }
	cells := map[key]*VerdictCell{}
	var keys []key
	for _, r := range newRows {
		o := old[fmt.Sprint(r["case_id"])]
		if o == nil || !judged(r) {
			continue
		}
		k := key{fmt.Sprint(r["model"]), fmt.Sprint(r["strategy"]), fmt.Sprint(r["task"])}
		c := cells[k]
		if c == nil {
			c = &VerdictCell{Model: k.model, Strategy: k.strategy, Task: k.task, Moves: map[string]int{},
				Judges: [2]string{judgeOfTask(om, k.task), judgeOfTask(nm, k.task)}}
			cells[k] = c
			keys = append(keys, k)
		}
		c.N++
		a, b := verdictOf(o), verdictOf(r)
		c.Moves[a+" -> "+b]++
		if a != b {
			c.Changed = append(c.Changed, VerdictFlip{Item: fmt.Sprint(r["item_id"]), Old: a, New: b})
		}
	}
	out := make([]VerdictCell, 0, len(keys))
	for _, k := range keys {
		c := cells[k]
		sort.Slice(c.Changed, func(i, j int) bool { return c.Changed[i].Item < c.Changed[j].Item })
		out = append(out, *c)
	}
	return out
}

// judgeOfTask names a task's judge as a run's manifest records it ("" when
// it does not).
func judgeOfTask(m *manifest.Manifest, task string) string {
	if m == nil {
		return ""
	}
	for _, t := range m.Tasks {
		if t.Name == task && t.Judge != "" {
			return t.Judge
		}
	}
	return ""
}

// verdictLines formats the verdict comparison.
func (c *RunComparison) verdictLines(onlyChanged bool) []string {
	if len(c.Verdicts) == 0 {
		return nil
	}
	lines := []string{"", "judges' verdicts (the case's label) on the judged cases both runs have:"}
	for _, v := range c.Verdicts {
		if onlyChanged && len(v.Changed) == 0 {
			continue
		}
		head := fmt.Sprintf("  %s / %s / %s", v.Model, v.Strategy, v.Task)
		if v.Judges[0] != v.Judges[1] && v.Judges[0] != "" && v.Judges[1] != "" {
			head += fmt.Sprintf(" (judge %s -> %s)", v.Judges[0], v.Judges[1])
		}
		lines = append(lines, head)
		lines = append(lines, fmt.Sprintf("    %d of %d verdicts changed", len(v.Changed), v.N))
		moves := make([]string, 0, len(v.Moves))
		for m := range v.Moves {
			moves = append(moves, m)
		}
		sort.Strings(moves)
		var parts []string
		for _, m := range moves {
			parts = append(parts, fmt.Sprintf("%s %d", m, v.Moves[m]))
		}
		lines = append(lines, indentClauses(strings.Join(parts, "; "), "    ")...)
		if len(v.Changed) > 0 {
			var fl []string
			for _, f := range v.Changed {
				fl = append(fl, f.Item+" ("+f.Old+" -> "+f.New+")")
			}
			more := ""
			if len(fl) > 10 {
				fl, more = fl[:10], fmt.Sprintf(" ... and %d more", len(fl)-10)
			}
			lines = append(lines, strings.Split(wrap.Indent("changed: "+strings.Join(fl, ", ")+more, "    ", "      ", width), "\n")...)
		}
	}
	return lines
}
