package engine

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/expr-lang/expr"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/spec"
)

// traceClip bounds each published string in the trace: the trace says what
// a stage decided, the replies are in calls.parquet, and every byte here is
// held for every case until the run's results are written.
const traceClip = 32

// traceStep appends the stage that just ran, of the given kind, to the trace, as JSON written
// by hand: it runs for every stage of every case, where encoding/json's
// reflection and a clipped copy of the outputs cost a third of the engine.
func traceStep(x *caseExec, stage, kind, next string, err error) {
	b := x.trace
	if b == nil {
		b = tracePool.Get().([]byte)[:0]
	}
	if len(b) > 0 {
		b = append(b, ',')
	}
	b = append(b, `{"stage":`...)
	b = llm.AppendJSONString(b, x.prefix+stage)
	if kind != "" {
		b = append(b, `,"kind":`...)
		b = llm.AppendJSONString(b, kind)
	}
	b = append(b, `,"visit":`...)
	b = strconv.AppendInt(b, int64(x.visits[stage]), 10)
	if out, ok := x.stages[stage].(map[string]any); ok && len(out) > 0 {
		b = append(b, `,"out":`...)
		b = appendTraceValue(b, out, true)
	}
	if len(x.notes) > 0 {
		b = append(b, `,"note":{`...)
		for i, n := range x.notes {
			if i > 0 {
				b = append(b, ',')
			}
			b = llm.AppendJSONString(b, n.key)
			b = append(b, ':')
			b = appendTraceValue(b, n.v, false)
		}
		b = append(b, '}')
		x.notes = x.notes[:0]
	}
	if next != "" {
		b = append(b, `,"next":`...)
		b = llm.AppendJSONString(b, next)
	}
	if err != nil {
		b = append(b, `,"error":`...)
		b = llm.AppendJSONString(b, err.Error())
	}
	x.trace = append(b, '}')
}

// appendTraceValue writes v as JSON; with clip, long strings and lists are
// cut short.
func appendTraceValue(b []byte, v any, clip bool) []byte {
	switch t := v.(type) {
	case nil:
		return append(b, "null"...)
	case string:
		if clip && len(t) > traceClip {
			cut := traceClip
			for cut > 0 && !utf8.RuneStart(t[cut]) {
				cut--
			}
			// "<start>…(N bytes)", written in place of the closing quote.
			b = llm.AppendJSONString(b, t[:cut])
			b = append(b[:len(b)-1], "…("...)
			b = strconv.AppendInt(b, int64(len(t)), 10)
			return append(b, ` bytes)"`...)
		}
		return llm.AppendJSONString(b, t)
	case bool:
		return strconv.AppendBool(b, t)
	case float64:
		if math.IsNaN(t) || math.IsInf(t, 0) {
			return llm.AppendJSONString(b, fmt.Sprint(t)) // JSON has no NaN
		}
		return strconv.AppendFloat(b, t, 'g', -1, 64)
	case int:
		return strconv.AppendInt(b, int64(t), 10)
	case int64:
		return strconv.AppendInt(b, t, 10)
	case map[string]any:
		var ks [16]string
		keys := ks[:0]
		for k := range t {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = llm.AppendJSONString(b, k)
			b = append(b, ':')
			b = appendTraceValue(b, t[k], clip)
		}
		return append(b, '}')
	case []any:
		return appendTraceList(b, len(t), func(b []byte, i int) []byte { return appendTraceValue(b, t[i], clip) }, clip)
	case []string:
		return appendTraceList(b, len(t), func(b []byte, i int) []byte { return appendTraceValue(b, t[i], clip) }, clip)
	}
	data, err := json.Marshal(v)
	if err != nil {
		return llm.AppendJSONString(b, fmt.Sprint(v))
	}
	return append(b, data...)
}

func appendTraceList(b []byte, n int, elem func([]byte, int) []byte, clip bool) []byte {
	const keep = 3
	b = append(b, '[')
	for i := 0; i < n; i++ {
		if clip && i == keep {
			b = append(b, ',')
			return append(llm.AppendJSONString(b, fmt.Sprintf("… (%d more)", n-keep)), ']')
		}
		if i > 0 {
			b = append(b, ',')
		}
		b = elem(b, i)
	}
	return append(b, ']')
}

// tracePool recycles the buffers cases write their trace into; the trace
// column keeps a copy.
var tracePool = sync.Pool{New: func() any { return make([]byte, 0, 1024) }}

// releaseTrace returns the case's buffer once its trace has been copied.
func releaseTrace(x *caseExec) {
	if x.trace != nil && cap(x.trace) <= 1<<16 {
		tracePool.Put(x.trace[:0])
	}
	x.trace = nil
}

// traceJSON is the trace column's value: the steps of the strategy then of
// the judge; "" when nothing ran.
func traceJSON(parts ...[]byte) string {
	n := 2
	for _, p := range parts {
		n += len(p) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '[')
	for _, p := range parts {
		if len(p) == 0 {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, p...)
	}
	if len(b) == 1 {
		return ""
	}
	return string(append(b, ']'))
}

// subsetNames fills results.parquet's subsets column: the names of the
// task subsets (task subsets:) the case's item belongs to, as a JSON list,
// so a reader can filter by subset without the config. A subset whose
// expression fails on the item is listed as "!name".
type subsetNames struct {
	// mu: rows are made by the workers as cases finish.
	mu    sync.Mutex
	progs map[*spec.Task]*taskSubsets
}

// taskSubsets are a task's compiled subsets and the column's value for
// each outcome seen so far (a few kinds of items give the same lists over
// and over).
type taskSubsets struct {
	progs []spec.NamedProg
	env   map[string]any // the task as the expressions see it
	seen  map[uint64]string
}

func newSubsetNames() *subsetNames { return &subsetNames{progs: map[*spec.Task]*taskSubsets{}} }

// of takes the item's fields from the caller: a large dataset's item
// reads them back from its store, once per case.
func (s *subsetNames) of(c *spec.Case, fields map[string]any) any {
	t := c.Task
	s.mu.Lock()
	ts, ok := s.progs[t]
	if !ok {
		ts = &taskSubsets{env: map[string]any{"name": t.Name}, seen: map[uint64]string{}}
		names := make([]string, 0, len(t.Spec.Subsets))
		for n := range t.Spec.Subsets {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if p, err := spec.CompileExpr(t.Spec.Subsets[n], nil, true); err == nil {
				ts.progs = append(ts.progs, spec.NamedProg{Name: n, Prog: p})
			}
		}
		s.progs[t] = ts
	}
	s.mu.Unlock()
	if len(ts.progs) == 0 {
		return nil
	}
	env := map[string]any{"item": fields, "task": ts.env}
	if len(ts.progs) > 32 {
		in := []string{}
		for _, p := range ts.progs {
			v, err := expr.Run(p.Prog, env)
			if err != nil {
				in = append(in, "!"+p.Name)
			} else if b, _ := v.(bool); b {
				in = append(in, p.Name)
			}
		}
		return spec.JSONString(in)
	}
	// Two bits a subset: in it, or its expression failed.
	var key uint64
	for i, p := range ts.progs {
		v, err := expr.Run(p.Prog, env)
		if err != nil {
			key |= 2 << (2 * i)
		} else if b, _ := v.(bool); b {
			key |= 1 << (2 * i)
		}
	}
	s.mu.Lock()
	js, ok := ts.seen[key]
	s.mu.Unlock()
	if ok {
		return js
	}
	in := []string{}
	for i, p := range ts.progs {
		switch key >> (2 * i) & 3 {
		case 2:
			in = append(in, "!"+p.Name)
		case 1:
			in = append(in, p.Name)
		}
	}
	js = spec.JSONString(in)
	s.mu.Lock()
	ts.seen[key] = js
	s.mu.Unlock()
	return js
}
