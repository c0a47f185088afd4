package transport

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"testing"

	"github.com/promoral/promoral/pipeline/llm"
)

// A call's journal key is the hash of the model's identity, a zero byte
// and the request's canonical form; the messages taken from that form are
// what llm.MessagesJSON writes, HTML's characters and nil included.
func TestCacheKeyIsIdentityAndCanonicalForm(t *testing.T) {
	for i, req := range []*llm.Request{
		{Model: "gpt", Messages: []llm.Message{{Role: "user", Content: "Scenario: I lied.\n\"Quote\" é"}}},
		{Model: "gpt", Messages: []llm.Message{{Role: "user", Content: "<b>bold</b> & more"}}, MaxTokens: 300},
		{Model: "gpt", Messages: nil},
	} {
		for _, id := range []string{"openai|https://x", "anthropic|"} {
			h := sha256.New()
			h.Write([]byte(id))
			h.Write([]byte{0})
			h.Write(req.Canonical())
			want := hex.EncodeToString(h.Sum(nil))
			if got := CacheKey(id, req); got != want {
				t.Errorf("request %d, %s: CacheKey %s, want %s", i, id, got, want)
			}
			key, msgs := CacheKeyMessages(id, req)
			if key != want || msgs != llm.MessagesJSON(req.Messages) {
				t.Errorf("request %d, %s: CacheKeyMessages (%s, %s), want (%s, %s)", i, id, key, msgs, want, llm.MessagesJSON(req.Messages))
			}
		}
	}
}

type signals struct{ waiting, woken int }

func (s *signals) Waiting() { s.waiting++ }
func (s *signals) Wake()    { s.woken++ }

// Waiting and Wake reach the WaveCall the call's context carries, through
// contexts derived from it, and do nothing on a context without one.
func TestWaveSignalsReachTheCall(t *testing.T) {
	s := &signals{}
	ctx, cancel := context.WithCancel(WithWaveCall(context.Background(), s))
	defer cancel()
	Waiting(ctx)
	Wake(ctx)
	Wake(ctx)
	if s.waiting != 1 || s.woken != 2 {
		t.Errorf("signals %+v, want 1 waiting and 2 woken", *s)
	}
	Waiting(context.Background())
	Wake(context.Background())
}
