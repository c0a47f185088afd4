package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
)

// pickCase is the case to show: the one asked for, else the first with
// more than one call, else the first.
func (r *run) pickCase(want string) (caseID, why string) {
	if want != "" {
		return want, "chosen with --case"
	}
	for _, x := range r.results {
		if x.Calls > 1 {
			return x.CaseID, fmt.Sprintf("the first case with more than one call (%d calls); pick another with --case CASE_ID", x.Calls)
		}
	}
	if len(r.results) > 0 {
		return r.results[0].CaseID, "the first case; pick another with --case CASE_ID"
	}
	return "", ""
}

// transcriptSection shows every call of one case. An explicit case that
// the run does not have is an error; otherwise a missing calls.parquet
// only leaves the section out.
func (r *run) transcriptSection(want string) (*section, error) {
	caseID, why := r.pickCase(want)
	if caseID == "" {
		return nil, nil
	}
	var res *result
	for i := range r.results {
		if r.results[i].CaseID == caseID {
			res = &r.results[i]
			break
		}
	}
	callsPath := filepath.Join(r.dir, "calls.parquet")
	var calls []call
	if exists(callsPath) {
		var err error
		if calls, err = readCalls(callsPath, caseID); err != nil {
			return nil, err
		}
	}
	if res == nil && len(calls) == 0 {
		if want != "" {
			return nil, fmt.Errorf("no case %q in this run (results.parquet and calls.parquet); case ids look like %s", want, r.exampleCaseID())
		}
		return nil, nil
	}
	tr := &transcript{CaseID: caseID, Why: why}
	if res != nil {
		tr.Outcome = outcomeKVs(res)
		if res.Judge != "" {
			var j map[string]any
			if json.Unmarshal([]byte(res.Judge), &j) == nil {
				for _, k := range slices.Sorted(maps.Keys(j)) {
					tr.Judge = append(tr.Judge, kv{K: k, V: jsonValue(j[k])})
				}
			}
		}
	}
	var shown [][]message // conversations already on the page
	for _, c := range calls {
		var msgs []message
		if c.Messages != "" {
			var raw []struct {
				Role    string `json:"role"`
				Content any    `json:"content"`
			}
			if err := json.Unmarshal([]byte(c.Messages), &raw); err == nil {
				for _, m := range raw {
					msgs = append(msgs, message{Role: m.Role, Content: contentText(m.Content)})
				}
			} else {
				msgs = []message{{Role: "request", Content: c.Messages}}
			}
		}
		t := turn{Stage: c.Stage, Reply: c.Reply, Err: c.Err}
		if c.Attempt > 1 {
			t.Meta = append(t.Meta, fmt.Sprintf("attempt %d", c.Attempt))
		}
		if c.PromptTokens+c.CompletionTokens > 0 {
			m := fmt.Sprintf("%s in · %s out", groupDigits(c.PromptTokens), groupDigits(c.CompletionTokens))
			if c.Thinking > 0 {
				m += fmt.Sprintf(" · %s thinking", groupDigits(c.Thinking))
			}
			t.Meta = append(t.Meta, m)
		}
		if !math.IsNaN(c.LatencyMS) && c.LatencyMS > 0 {
			t.Meta = append(t.Meta, fmtLatency(c.LatencyMS))
		}
		if c.Finish != "" {
			t.Meta = append(t.Meta, "finish: "+c.Finish)
		}
		if c.Cached {
			t.Meta = append(t.Meta, "from the journal")
		}
		// Leave out the messages an earlier turn already showed.
		best := 0
		for _, prev := range shown {
			if len(prev) > best && len(prev) <= len(msgs) && samePrefix(prev, msgs) {
				best = len(prev)
			}
		}
		t.Earlier = best
		t.Msgs = msgs[best:]
		shown = append(shown, append(append([]message(nil), msgs...), message{Role: "assistant", Content: c.Reply}))
		tr.Turns = append(tr.Turns, t)
	}
	s := &section{ID: "case", Title: "Case transcript", Blocks: []any{tr}}
	if len(calls) == 0 {
		s.Blocks = append(s.Blocks, &note{Text: "This case made no model call in this run (for example a re-scored recorded reply), or calls.parquet is missing.", Kind: "info"})
	}
	return s, nil
}

func (r *run) exampleCaseID() string {
	if len(r.results) > 0 {
		return r.results[0].CaseID
	}
	return "model/strategy/task/item"
}

func samePrefix(prefix, msgs []message) bool {
	for i := range prefix {
		if prefix[i] != msgs[i] {
			return false
		}
	}
	return true
}

// contentText flattens a message content (a string, or a list of parts).
func contentText(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return ""
	case []any:
		var parts []string
		for _, p := range x {
			if m, ok := p.(map[string]any); ok {
				if t, ok := m["text"].(string); ok {
					parts = append(parts, t)
					continue
				}
			}
			b, _ := json.Marshal(p)
			parts = append(parts, string(b))
		}
		return strings.Join(parts, "\n")
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func jsonValue(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case nil:
		return "–"
	case float64:
		return trimFloat4(x)
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func trimFloat4(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e12 {
		return fmt.Sprintf("%d", int64(v))
	}
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.4f", v), "0"), ".")
}

func fmtLatency(ms float64) string {
	if ms < 1000 {
		return fmt.Sprintf("%.0f ms", math.Max(ms, 1))
	}
	return fmt.Sprintf("%.1f s", ms/1000)
}

func outcomeKVs(x *result) []kv {
	out := []kv{{K: "Model", V: x.Model}, {K: "Strategy", V: x.Strategy}, {K: "Task", V: x.Task}, {K: "Item", V: x.ItemID}}
	if x.Gold != "" {
		out = append(out, kv{K: "Gold", V: x.Gold})
	}
	label := x.Label
	if label == "" {
		label = "(none)"
	}
	if !x.Parsed {
		label += " · unparsed"
	}
	out = append(out, kv{K: "Answer", V: label})
	if !math.IsNaN(x.Conf) {
		out = append(out, kv{K: "Confidence", V: trimFloat4(x.Conf)})
	}
	if x.Correct != nil {
		v := "no"
		if *x.Correct {
			v = "yes"
		}
		out = append(out, kv{K: "Correct", V: v})
	}
	out = append(out, kv{K: "Calls", V: fmt.Sprint(x.Calls)})
	if x.TotalTokens > 0 {
		out = append(out, kv{K: "Tokens", V: groupDigits(x.TotalTokens)})
	}
	if x.Cost > 0 {
		out = append(out, kv{K: "Cost", V: fmtCost(x.Cost)})
	}
	if x.Err != "" {
		out = append(out, kv{K: "Error", V: x.Err})
	}
	return out
}
