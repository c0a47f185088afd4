package pipeline

import (
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"unicode/utf8"

	"github.com/expr-lang/expr"
)

// TraceStep is one stage run of a case, as results.parquet's trace column
// records it for people reading the run (promoral view): the stage, which
// visit of it this was, what it published (long strings clipped: the
// replies themselves are in calls.parquet) and any notes it left with
// Exec.Note. Judge stages carry the "judge." prefix.
type TraceStep struct {
	Stage string         `json:"stage"`
	Visit int            `json:"visit"`
	Out   map[string]any `json:"out,omitempty"`
	Note  map[string]any `json:"note,omitempty"`
	// Next is where the stage sent the case when it chose ("end" or a
	// stage name); empty when the graph simply went on.
	Next string `json:"next,omitempty"`
	Err  string `json:"error,omitempty"`
}

// traceClip bounds each published string in the trace: the trace says what
// a stage decided, the replies are in calls.parquet, and every byte here is
// held for every case until the run's results are written.
const traceClip = 32

// Note attaches detail to the current stage's entry in the case's trace
// (not its outputs: templates and expressions never see it). Stages use it
// to explain themselves, e.g. why an extraction found no label.
func (x *Exec) Note(key string, v any) {
	if x.note == nil {
		x.note = map[string]any{}
	}
	x.note[key] = v
}

// traceStep records the stage that just ran.
func (x *Exec) traceStep(stage, next string, err error) {
	st := TraceStep{Stage: x.stagePrefix + stage, Visit: x.visits[stage], Note: x.note, Next: next}
	if out, ok := x.stages[stage].(map[string]any); ok && len(out) > 0 {
		st.Out, _ = clipTrace(out).(map[string]any)
	}
	if err != nil {
		st.Err = err.Error()
	}
	x.trace = append(x.trace, st)
	x.note = nil
}

func clipTrace(v any) any {
	switch t := v.(type) {
	case string:
		if len(t) <= traceClip {
			return t
		}
		cut := traceClip
		for cut > 0 && !utf8.RuneStart(t[cut]) {
			cut--
		}
		return fmt.Sprintf("%s…(%d chars)", t[:cut], utf8.RuneCountInString(t))
	case map[string]any:
		m := make(map[string]any, len(t))
		for k, e := range t {
			m[k] = clipTrace(e)
		}
		return m
	case []any:
		return clipList(len(t), func(i int) any { return t[i] })
	case []string:
		return clipList(len(t), func(i int) any { return t[i] })
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return fmt.Sprint(t) // JSON has no NaN
		}
	}
	return v
}

func clipList(n int, at func(int) any) any {
	const keep = 3
	out := make([]any, 0, min(n, keep+1))
	for i := 0; i < n && i < keep; i++ {
		out = append(out, clipTrace(at(i)))
	}
	if n > keep {
		out = append(out, fmt.Sprintf("… (%d more)", n-keep))
	}
	return out
}

// traceJSON is the trace column's value; "" when nothing ran.
func traceJSON(steps ...[]TraceStep) string {
	var all []TraceStep
	for _, s := range steps {
		all = append(all, s...)
	}
	if len(all) == 0 {
		return ""
	}
	b, err := json.Marshal(all)
	if err != nil {
		return jsonString(fmt.Sprintf("trace not recorded: %v", err))
	}
	return string(b)
}

// ReadTrace decodes a trace column value.
func ReadTrace(s string) ([]TraceStep, error) {
	var steps []TraceStep
	if s == "" {
		return nil, nil
	}
	err := json.Unmarshal([]byte(s), &steps)
	return steps, err
}

// subsetNames fills results.parquet's subsets column: the names of the
// task subsets (task subsets:) the case's item belongs to, as a JSON list,
// so a reader can filter by subset without the config. A subset whose
// expression fails on the item is listed as "!name".
type subsetNames struct {
	progs map[*Task][]namedProg
}

func newSubsetNames() *subsetNames { return &subsetNames{progs: map[*Task][]namedProg{}} }

func (s *subsetNames) of(c *Case) any {
	t := c.Task
	progs, ok := s.progs[t]
	if !ok {
		names := make([]string, 0, len(t.Spec.Subsets))
		for n := range t.Spec.Subsets {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if p, err := CompileExpr(t.Spec.Subsets[n], nil, true); err == nil {
				progs = append(progs, namedProg{n, p})
			}
		}
		s.progs[t] = progs
	}
	if len(progs) == 0 {
		return nil
	}
	in := []string{}
	env := map[string]any{"item": c.Item.Fields, "task": map[string]any{"name": t.Name}}
	for _, p := range progs {
		v, err := expr.Run(p.prog, env)
		if err != nil {
			in = append(in, "!"+p.name)
		} else if b, _ := v.(bool); b {
			in = append(in, p.name)
		}
	}
	return jsonString(in)
}
