package llm

import (
	"encoding/json"
	"testing"
)

func fl(x float64) *float64 { return &x }
func in(x int64) *int64     { return &x }

func TestCanonicalIsExactlyEncodingJSON(t *testing.T) {
	reqs := []Request{
		{},
		{Model: "gpt-4.1", Messages: []Message{{Role: "user", Content: "hi \"there\"\n<b>"}}},
		{Model: "m", Messages: []Message{{Role: "system", Content: "é 😀 \u2028"}, {Role: "user", Content: "x"}},
			Temperature: fl(0.7), TopP: fl(1), MaxTokens: 900, N: 5, Stop: []string{"\n\n"}, Seed: in(3),
			Thinking: Thinking{Enabled: true, Budget: 2048, Effort: "high"}, Logprobs: true, Extra: map[string]any{"b": 1, "a": []any{"x"}}},
		{Model: "m", Messages: []Message{}},
	}
	for i, r := range reqs {
		want, _ := json.Marshal(&r)
		if got := r.Canonical(); string(got) != string(want) {
			t.Errorf("request %d:\n got %s\nwant %s", i, got, want)
		}
	}
}

func FuzzCanonical(f *testing.F) {
	f.Add("m", "hello", 0.5, 10)
	f.Fuzz(func(t *testing.T, model, content string, temp float64, max int) {
		r := Request{Model: model, Messages: []Message{{Role: "user", Content: content}}, Temperature: &temp, MaxTokens: max}
		want, err := json.Marshal(&r)
		if err != nil {
			t.Skip() // NaN/Inf temperatures do not encode
		}
		if got := r.Canonical(); string(got) != string(want) {
			t.Fatalf("got %s want %s", got, want)
		}
	})
}
