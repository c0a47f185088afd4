package engine

import (
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/transport"
)

// Model entries on one key and endpoint share one account; another key,
// endpoint or provider is another account.
func TestAccountsShareByKeyAndEndpoint(t *testing.T) {
	accs := &accounts{o: RateOptions{Share: 3}, m: map[string]*transport.Account{}}
	a := &spec.ModelSpec{Provider: "openai", Model: "gpt-4.1"}
	b := &spec.ModelSpec{Provider: "openai", Model: "gpt-4.1-mini"}
	c := &spec.ModelSpec{Provider: "openai", Model: "gpt-4.1", KeyEnv: "OPENAI_KEY_2"}
	d := &spec.ModelSpec{Provider: "openai-compatible", Model: "x", BaseURL: "https://api.together.xyz/v1/", KeyEnv: "TOGETHER_API_KEY"}
	e := &spec.ModelSpec{Provider: "openai-compatible", Model: "y", BaseURL: "https://api.together.xyz/v1", KeyEnv: "TOGETHER_API_KEY"}
	if accs.get(a) != accs.get(b) {
		t.Error("two models on one key got two accounts")
	}
	if accs.get(a) == accs.get(c) {
		t.Error("two keys share one account")
	}
	if accs.get(d) != accs.get(e) {
		t.Error("a trailing slash split one endpoint into two accounts")
	}
	if accs.get(a) == accs.get(d) || accs.get(a).Share() != 3 {
		t.Error("accounts mixed up, or the shard's share lost")
	}
}

func TestRateStatsText(t *testing.T) {
	for _, tc := range []struct {
		r    RateStats
		want string
	}{
		{RateStats{}, ""},
		{RateStats{RateLimited: 3, Attempts: 1200}, "3 × 429 of 1200 attempts"},
		{RateStats{Limiting: "tokens per minute", Used: 0.981, Share: 1}, "limited by tokens per minute, 98 % of the limit"},
		{RateStats{Limiting: "requests per minute", Used: 0.97, Share: 4, RateLimited: 1, Attempts: 10},
			"limited by requests per minute, 97 % of this shard's 1/4 of the limit; 1 × 429 of 10 attempts"},
	} {
		if got := tc.r.String(); got != tc.want {
			t.Errorf("%+v: %q, want %q", tc.r, got, tc.want)
		}
	}
	if !strings.Contains(RateStats{Limiting: "x", Used: 1}.String(), "100 %") {
		t.Error("a full budget is not 100 %")
	}
}
