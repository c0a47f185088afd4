package llm

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"testing"
)

// The canonical form and the params column, written without reflection,
// are what encoding/json writes, over requests that set any mix of the
// fields, with awkward numbers and strings.
func TestTailEncoderIsEncodingJSON(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	strs := []string{"", "x", "\n\n", "<stop>&", "é \u2028 \xff", `"quoted"`}
	floats := []float64{0, 1, 0.7, 1e-7, 2.5e-6, 1e21, 123.456, -0.0, math.SmallestNonzeroFloat64}
	for i := 0; i < 20000; i++ {
		q := Request{Model: strs[r.IntN(len(strs))]}
		if r.IntN(2) == 0 {
			q.Messages = []Message{{Role: "user", Content: strs[r.IntN(len(strs))]}}
		}
		if r.IntN(2) == 0 {
			q.Temperature = fl(floats[r.IntN(len(floats))])
		}
		if r.IntN(2) == 0 {
			q.TopP = fl(r.Float64() * math.Pow(10, float64(r.IntN(30)-15)))
		}
		if r.IntN(2) == 0 {
			q.MaxTokens = r.IntN(5000) - 10
		}
		if r.IntN(3) == 0 {
			q.N = r.IntN(4)
		}
		if r.IntN(3) == 0 {
			q.Stop = strs[:r.IntN(len(strs))]
		}
		if r.IntN(3) == 0 {
			q.Seed = in(r.Int64N(1<<40) - 1<<39)
		}
		if r.IntN(2) == 0 {
			q.Thinking = Thinking{Enabled: r.IntN(2) == 0, Budget: r.IntN(3) * 1024, Effort: strs[r.IntN(len(strs))]}
		}
		q.Logprobs = r.IntN(2) == 0
		if r.IntN(3) == 0 {
			q.Repeat = r.IntN(5)
		}
		if r.IntN(10) == 0 {
			q.Extra = map[string]any{"k": r.IntN(9), "a": []any{"<x>"}}
		}
		want, err := json.Marshal(&q)
		if err != nil {
			t.Fatal(err)
		}
		if got := q.Canonical(); string(got) != string(want) {
			t.Fatalf("request %+v:\n got %s\nwant %s", q, got, want)
		}
		p := q
		p.Messages = nil
		wantP, _ := json.Marshal(&p)
		gotP, ok := q.AppendParams([]byte("x"))
		if ok && string(gotP[1:]) != string(wantP) {
			t.Fatalf("params of %+v:\n got %s\nwant %s", q, gotP[1:], wantP)
		}
		if !ok && len(q.Extra) == 0 {
			t.Fatalf("params of %+v left to reflection", q)
		}
	}
}

// Numbers encoding/json refuses are left to it.
func TestTailEncoderLeavesNonFiniteToJSON(t *testing.T) {
	for _, q := range []Request{{Temperature: fl(math.NaN())}, {TopP: fl(math.Inf(-1))}, {Extra: map[string]any{"a": 1}}} {
		if _, ok := q.AppendParams(nil); ok {
			t.Errorf("%+v: encoded by hand", q)
		}
	}
}

// Messages' JSON taken from the canonical form is MessagesJSON's, HTML's
// characters, escapes that look like theirs and all.
func TestMessagesJSONFromCanonical(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 9))
	parts := []string{"<", ">", "&", `\u003c`, `\\u003c`, `\`, `"`, "a", "é", "\u2028", "\n", "\x01", "\xff", "Confidence: <a number>", "u003c"}
	for i := 0; i < 20000; i++ {
		var msgs []Message
		for j := r.IntN(3); j >= 0; j-- {
			var c, role string
			for k := r.IntN(8); k > 0; k-- {
				c += parts[r.IntN(len(parts))]
			}
			role = []string{"user", "system", "<role>"}[r.IntN(3)]
			msgs = append(msgs, Message{Role: role, Content: c})
		}
		q := Request{Model: "m", Messages: msgs}
		b, from, to := q.AppendCanonicalSpan([]byte("id\x00"))
		if got, want := q.MessagesJSONFrom(b[from:to]), MessagesJSON(msgs); got != want {
			t.Fatalf("messages %q:\n got %s\nwant %s", msgs, got, want)
		}
	}
	var none Request
	b, from, to := none.AppendCanonicalSpan(nil)
	if got := none.MessagesJSONFrom(b[from:to]); got != MessagesJSON(nil) {
		t.Fatalf("nil messages: %s, want %s", got, MessagesJSON(nil))
	}
}
