package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/expr-lang/expr"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/transport"
)

// The outputs, judge and item columns, written together into one buffer,
// are each what the encoder writes for that value alone, in every mix of
// present and absent.
func TestResultJSONColumnsAsEncodedAlone(t *testing.T) {
	st := &spec.Study{Run: &spec.RunFile{Name: "r"}, ConfigHash: "h"}
	e := &Engine{study: st, subsets: newSubsetNames()}
	outputs := map[string]any{"label": "acceptable", "confidence": 0.7, "reply": "Final Answer: \"Acceptable\"\n", "n": 3, "list": []any{"a", 1.5, nil}}
	judge := map[string]any{"label": "unsafe", "why": "<b>&</b>"}
	fields := map[string]any{"id": "x1", "scenario": "I helped \u2028 a friend", "label_int": int64(0), "is_short": true, "w": 1e6}
	for mask := 0; mask < 8; mask++ {
		item := &spec.Item{ID: "x1", Fields: map[string]any{}}
		r := &spec.Result{Done: true}
		if mask&1 != 0 {
			r.Outputs = outputs
		}
		if mask&2 != 0 {
			r.Judge = judge
		}
		if mask&4 != 0 {
			item.Fields = fields
		}
		c := &spec.Case{Model: &spec.Model{Name: "m"}, Strategy: &spec.Strategy{Name: "s"}, Task: &spec.Task{Name: "t", Spec: &spec.TaskSpec{}}, Item: item}
		row := e.resultValues(c, r)
		cols := e.baseResultColumns()
		at := func(name string) any {
			for i, col := range cols {
				if col.Name == name {
					return row[i]
				}
			}
			t.Fatalf("no column %s", name)
			return nil
		}
		for _, w := range []struct {
			col string
			v   map[string]any
		}{{"outputs", r.Outputs}, {"judge", r.Judge}, {"item", item.Fields}} {
			var want any
			if len(w.v) > 0 {
				want = string(appendTraceValue(nil, w.v, false))
			}
			if got := at(w.col); got != want {
				t.Errorf("mask %d, %s: %v, want %v", mask, w.col, got, want)
			}
		}
	}
}

// The subsets column, taken from the lists already made for the same
// outcome, is what the expressions give each item, errors included,
// over and over.
func TestSubsetsColumnSameFromItsCache(t *testing.T) {
	task := &spec.Task{Name: "t", Spec: &spec.TaskSpec{Subsets: map[string]string{
		"short": "item.len < 5", "<long>&": "item.len >= 5", "odd": "item.n % 2 == 1", "broken": "item.missing.deeper > 1", "named": `task.name == "t"`,
	}}}
	s := newSubsetNames()
	c := &spec.Case{Task: task}
	slow := func(fields map[string]any) any {
		var in []string
		for _, n := range []string{"<long>&", "broken", "named", "odd", "short"} {
			p, err := spec.CompileExpr(task.Spec.Subsets[n], nil, true)
			if err != nil {
				t.Fatal(err)
			}
			v, err := expr.Run(p, map[string]any{"item": fields, "task": map[string]any{"name": "t"}})
			if err != nil {
				in = append(in, "!"+n)
			} else if b, _ := v.(bool); b {
				in = append(in, n)
			}
		}
		if in == nil {
			in = []string{}
		}
		return spec.JSONString(in)
	}
	for round := 0; round < 3; round++ {
		for i := 0; i < 20; i++ {
			fields := map[string]any{"len": i % 9, "n": i}
			if i%5 == 0 {
				fields["missing"] = map[string]any{"deeper": 2}
			}
			if got, want := s.of(c, fields), slow(fields); got != want {
				t.Fatalf("round %d, item %d: %v, want %v", round, i, got, want)
			}
		}
	}
}

// A call's form (journal key, request_messages, request_params) is what
// the key's definition and encoding/json give, whether the messages are
// taken from the canonical form or, holding HTML's characters or none at
// all, encoded again.
func TestCallFormAsEncodedApart(t *testing.T) {
	m := &spec.Model{Name: "m", Identity: "openai\x00https://x"}
	temp := 0.25
	for i, req := range []*llm.Request{
		{Model: "gpt", Messages: []llm.Message{{Role: "system", Content: "Be brief."}, {Role: "user", Content: "Scenario: I lied.\n\"Quote\" é \u2028"}}},
		{Model: "gpt", Messages: []llm.Message{{Role: "user", Content: "<answer>wrong</answer> & more"}}, Temperature: &temp, MaxTokens: 300},
		{Model: "gpt<&>", Messages: nil, Stop: []string{"</s>"}},
		{Model: "gpt", Messages: []llm.Message{}, Extra: map[string]any{"x": 1}},
	} {
		f := formOf(m, req)
		h := sha256.New()
		h.Write([]byte(m.Identity))
		h.Write([]byte{0})
		h.Write(req.Canonical())
		params := *req
		params.Messages = nil
		want := callForm{key: hex.EncodeToString(h.Sum(nil)), messages: llm.MessagesJSON(req.Messages),
			params: strings.Replace(spec.JSONString(&params), `,"messages":null`, "", 1)}
		if strings.Contains(f.params, "messages") {
			t.Errorf("request %d: request_params %s names the messages", i, f.params)
		}
		if f != want {
			t.Errorf("request %d:\n got %+v\nwant %+v", i, f, want)
		}
		if k := transport.CacheKey(m.Identity, req); k != want.key {
			t.Errorf("request %d: CacheKey %s, want %s", i, k, want.key)
		}
	}
}
