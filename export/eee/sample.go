package eee

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// message is one message of a request, as calls.parquet's
// request_messages holds it.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

func messagesOf(s string) []message {
	var ms []message
	json.Unmarshal([]byte(s), &ms)
	return ms
}

// transcript is a case's conversation: the messages of its calls in the
// order they were made, each call's reply after its request, a request
// that continues the conversation so far adding only its new messages.
// turns gives, per stage, the turn index of each of its replies.
func transcript(cs []call) ([]map[string]any, map[string][]int) {
	var out []map[string]any
	turns := map[string][]int{}
	var prev []message
	for _, c := range cs {
		ms := messagesOf(c.messages)
		start := 0
		if len(prev) > 0 && len(ms) >= len(prev) {
			start = len(prev)
			for i := range prev {
				if ms[i] != prev[i] {
					start = 0
					break
				}
			}
		}
		for _, m := range ms[start:] {
			out = append(out, map[string]any{"turn_idx": len(out), "role": m.Role, "content": m.Content})
		}
		reply := map[string]any{"turn_idx": len(out), "role": "assistant", "content": c.text}
		if c.err != "" && c.text == "" {
			reply["content"] = nil
		}
		turns[c.stage] = append(turns[c.stage], len(out))
		out = append(out, reply)
		prev = append(ms, message{Role: "assistant", Content: c.text})
	}
	return out, turns
}

// sample is one case as an EEE instance-level record.
func sample(evalID, modelID string, r row, cs []call) map[string]any {
	own := ownCalls(cs)
	raw := str(r, "item")
	var reference []string
	if g := str(r, "gold"); g != "" {
		reference = []string{g}
	} else {
		reference = []string{}
	}
	input := map[string]any{"raw": raw, "reference": reference}
	if len(own) > 0 {
		var b strings.Builder
		for i, m := range messagesOf(own[0].messages) {
			if i > 0 {
				b.WriteString("\n\n")
			}
			b.WriteString(m.Role + ": " + m.Content)
		}
		input["formatted"] = b.String()
	}
	h := sha256.Sum256([]byte(raw + strings.Join(reference, "\n")))
	s := map[string]any{
		"schema_version":  SchemaVersion,
		"evaluation_id":   evalID,
		"model_id":        modelID,
		"evaluation_name": str(r, "task") + "/" + str(r, "strategy"),
		"sample_id":       str(r, "item_id"),
		"sample_hash":     hex.EncodeToString(h[:]),
		"input":           input,
	}
	multi := len(own) > 1
	turns := map[string][]int{}
	if multi {
		msgs, t := transcript(own)
		s["interaction_type"], s["messages"], s["output"] = "multi_turn", msgs, nil
		turns = t
	} else {
		out := []string{}
		if len(own) == 1 {
			var choices []struct {
				Text string `json:"text"`
			}
			if own[0].choices != "" && json.Unmarshal([]byte(own[0].choices), &choices) == nil && len(choices) > 0 {
				for _, c := range choices {
					out = append(out, c.Text)
				}
			} else {
				out = append(out, own[0].text)
			}
		}
		s["interaction_type"], s["output"], s["messages"] = "single_turn", map[string]any{"raw": out}, nil
	}
	s["answer_attribution"] = attribution(r, multi, turns)
	correct, scored := r["correct"].(bool)
	score := 0.0
	if correct {
		score = 1
	}
	ev := map[string]any{"score": score, "is_correct": correct}
	if multi {
		n := 0
		for _, m := range s["messages"].([]map[string]any) {
			if m["role"] == "assistant" {
				n++
			}
		}
		ev["num_turns"] = n
	}
	s["evaluation"] = ev
	pt, _ := num(r, "prompt_tokens")
	ct, _ := num(r, "completion_tokens")
	tt, _ := num(r, "total_tokens")
	th, _ := num(r, "thinking_tokens")
	var cached int64
	for _, c := range own {
		cached += c.cachedPrompt
	}
	s["token_usage"] = map[string]any{"input_tokens": pt, "output_tokens": ct, "total_tokens": tt,
		"reasoning_tokens": th, "input_tokens_cache_read": cached}
	if e := str(r, "error"); e != "" {
		s["error"] = e
	}
	meta := map[string]string{"case_id": str(r, "case_id"), "strategy": str(r, "strategy")}
	if rep, ok := num(r, "repeat"); ok {
		meta["repeat"] = strconv.FormatInt(rep, 10)
	}
	if !scored {
		why := "no label was read"
		if str(r, "gold") == "" {
			why = "the item has no gold label"
		}
		meta["unscored"] = why + ": score 0 stands for no score"
	}
	if l := str(r, "label"); l != "" {
		meta["label"] = l
	}
	if len(own) == 0 {
		meta["reply"] = "no model call: the strategy read its answer from the item (input.raw)"
	}
	if c, ok := flt(r, "confidence"); ok {
		meta["confidence"] = strconv.FormatFloat(c, 'g', -1, 64)
	}
	if p, ok := r["parsed"].(bool); ok {
		meta["parsed"] = strconv.FormatBool(p)
	}
	for _, k := range []string{"error_class", "kept_from"} {
		if v := str(r, k); v != "" {
			meta[k] = v
		}
	}
	if jt, ok := num(r, "judge_tokens"); ok && jt > 0 {
		meta["judge_tokens"] = strconv.FormatInt(jt, 10)
	}
	s["metadata"] = meta
	return s
}

// attribution is how the case's answer was read: each extract stage that
// read a label, from which reply and by which rule, and the judge's
// verdict for a judged task; the last is the answer the case gave.
func attribution(r row, multi bool, turns map[string][]int) []map[string]any {
	out := []map[string]any{}
	lastLabel := ""
	visits := map[string]int{}
	last := 0
	for _, ts := range turns {
		for _, t := range ts {
			last = max(last, t)
		}
	}
	for _, st := range traceOf(r) {
		label, _ := st.Out["label"].(string)
		if st.Kind != "extract" || label == "" {
			continue
		}
		value := label
		if raw, ok := st.Out["label_raw"].(string); ok && raw != "" {
			value = raw
		}
		method, _ := st.Out["label_rule"].(string)
		if method == "" {
			method = "extract"
		}
		src, _ := st.Note["source"].(string)
		a := map[string]any{"turn_idx": 0, "source": "output.raw", "extracted_value": value, "extraction_method": method, "is_terminal": false}
		switch {
		case strings.HasPrefix(st.Stage, "judge."):
			a["source"], a["extraction_method"], a["turn_idx"] = "judge reply ("+strings.TrimPrefix(st.Stage, "judge.")+")", "llm_judge, "+method, last
		case multi:
			// The stage's reply this visit of the extract read: the
			// source stage's replies are taken in order.
			ts := turns[src]
			i := visits[src]
			visits[src]++
			t := last
			if i < len(ts) {
				t = ts[i]
			} else if len(ts) > 0 {
				t = ts[len(ts)-1]
			}
			a["turn_idx"], a["source"] = t, fmt.Sprintf("messages[%d].content", t)
		}
		out = append(out, a)
		lastLabel = label
	}
	if final := str(r, "label"); final != "" {
		if len(out) == 0 || lastLabel != final {
			// The strategy's output, not the last extract, gave the label.
			t := 0
			if multi {
				t = last
			}
			out = append(out, map[string]any{"turn_idx": t, "source": "outputs.label", "extracted_value": final, "extraction_method": "strategy outputs", "is_terminal": true})
		} else {
			out[len(out)-1]["is_terminal"] = true
		}
	}
	return out
}
