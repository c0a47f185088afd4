package transport

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/providers"
)

// rateRun sends total requests through one Transport with no limits set
// against s, at concurrency 64, and returns how many failed and the
// transport's stats.
func rateRun(tb testing.TB, s *limitServer, total int, share int) (failed int64, st Stats) {
	tb.Helper()
	p, err := providers.New(providers.Config{Provider: providers.OpenAI, BaseURL: s.URL(), APIKey: "sk-test", Timeout: 30 * time.Second})
	if err != nil {
		tb.Fatal(err)
	}
	tr := New(p, Options{Concurrency: 64, BaseBackoff: 10 * time.Millisecond, MaxBackoff: time.Second,
		Account: NewAccount(AccountOptions{Probe: true, Share: share})})
	maxTokens := s.maxTokens
	if maxTokens == 0 {
		maxTokens = 100
	}
	var failures atomic.Int64
	var wg sync.WaitGroup
	jobs := make(chan int)
	for range 128 {
		wg.Go(func() {
			for i := range jobs {
				// About 100 prompt tokens, four characters each.
				r := &llm.Request{Model: "gpt-4.1", MaxTokens: maxTokens, Messages: []llm.Message{
					{Role: llm.RoleUser, Content: fmt.Sprintf("%-400s", fmt.Sprint("case ", i))}}}
				if _, err := tr.Do(context.Background(), r, nil); err != nil {
					failures.Add(1)
					tb.Errorf("case %d: %v", i, err)
				}
			}
		})
	}
	for i := range total {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	return failures.Load(), tr.Stats()
}

// With no limits set, the transport learns a server's request and token
// limits from the headers of its replies and keeps within them: no case
// fails, and the 429s are a handful at most, whether the server counts in
// a sliding window or a refilling bucket and whether it counts the
// requests it rejects. Windows are tiny so the test takes a second or two;
// it asserts on counts, never on time.
func TestLearnsLimitsFromHeaders(t *testing.T) {
	for _, tc := range []struct {
		name       string
		bucket     bool
		reqs, toks float64
		dim        int
		refund     bool
	}{
		{"sliding, request-bound", false, 40, 1e6, llm.DimRequests, true},
		{"bucket, request-bound", true, 40, 1e6, llm.DimRequests, true},
		{"sliding, token-bound", false, 1000, 6000, llm.DimTokens, true},
		{"bucket, token-bound", true, 1000, 6000, llm.DimTokens, true},
		// OpenAI's rule: a request counts its prompt and its max_tokens
		// (here 100 + 300, of which the reply writes 12) to the end.
		{"sliding, token-bound, max_tokens kept", false, 1000, 16000, llm.DimTokens, false},
		{"bucket, token-bound, max_tokens kept", true, 1000, 16000, llm.DimTokens, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &limitServer{window: 300 * time.Millisecond, reqs: tc.reqs, toks: tc.toks,
				bucket: tc.bucket, countRejected: true, refund: tc.refund, completion: 40}
			if !tc.refund {
				s.completion, s.maxTokens = 12, 300
			}
			s = newLimitServer(s)
			defer s.Close()
			const total = 200
			failed, st := rateRun(t, s, total, 1)
			_, accepted, rejected := s.utilisation()
			if failed != 0 || accepted != total {
				t.Fatalf("%d failed, server accepted %d of %d", failed, accepted, total)
			}
			if int64(rejected) != st.RateLimited {
				t.Errorf("server sent %d 429s, transport counted %d", rejected, st.RateLimited)
			}
			// The margin and the probe leave room for a few 429s from
			// replies that arrive out of order; not one in every window.
			if rejected > total/20 {
				t.Errorf("%d 429s for %d requests", rejected, total)
			}
			d := st.Account.Dims[tc.dim]
			if d.Learned != map[int]float64{llm.DimRequests: tc.reqs, llm.DimTokens: tc.toks}[tc.dim] {
				t.Errorf("learned limit %v, want %v", d.Learned, tc)
			}
			if d.Window <= 0 || d.Window > 300*time.Millisecond {
				t.Errorf("learned window %v, want within the server's 300ms", d.Window)
			}
			if d.BoundFor == 0 {
				t.Errorf("no request waited for %s: %+v", llm.DimNames[tc.dim], st.Account)
			}
			// The summary names the limit that binds.
			if name, _, ok := st.Account.Limiting(); ok && name != llm.DimNames[tc.dim] {
				t.Errorf("limited by %s, want %s: %+v", name, llm.DimNames[tc.dim], st.Account)
			}
			t.Logf("%d 429s; learned %+v", rejected, d)
		})
	}
}

// A 429 is not a failure: a request keeps waiting out rate limits past
// MaxAttempts, until RateLimitWait; only real errors count towards
// MaxAttempts; a quota 429 stops the model at once.
func TestRateLimitsAreNotFailures(t *testing.T) {
	f := newFake(func(_ context.Context, _ string, call int) (*llm.Response, error) {
		if call <= 7 {
			return nil, err429
		}
		return ok("x"), nil
	})
	s := &sleeper{}
	tr := New(f, Options{MaxAttempts: 2, Sleep: s.Sleep, Rand: constRand(0.5)})
	if _, err := tr.Do(context.Background(), req("a"), nil); err != nil || f.callsOf("a") != 8 {
		t.Fatalf("err = %v after %d calls; want an answer on the 8th", err, f.callsOf("a"))
	}
	if st := tr.Stats(); st.RateLimited != 7 || st.Failed != 0 {
		t.Errorf("stats = %+v", st)
	}
	// Every wait has jitter on top: no two requests told the same
	// Retry-After come back in step.
	for i, w := range s.waits() {
		if w <= 0 {
			t.Errorf("wait %d = %v", i, w)
		}
	}

	f = newFake(func(context.Context, string, int) (*llm.Response, error) { return nil, err429 })
	tr = New(f, Options{MaxAttempts: 2, RateLimitWait: time.Nanosecond, Sleep: (&sleeper{}).Sleep})
	if _, err := tr.Do(context.Background(), req("b"), nil); err == nil || !strings.Contains(err.Error(), "still rate limited when the next try would pass") {
		t.Fatalf("err = %v, want the deadline's", err)
	}

	quota := &llm.Error{Kind: llm.Permanent, Class: llm.ClassQuota, Status: 429, Msg: "quota exhausted"}
	f = newFake(func(context.Context, string, int) (*llm.Response, error) { return nil, quota })
	tr = New(f, Options{Sleep: (&sleeper{}).Sleep})
	_, _ = tr.Do(context.Background(), req("c"), nil)
	if _, err := tr.Do(context.Background(), req("d"), nil); !strings.Contains(fmt.Sprint(err), "stopped") || f.callsOf("c") != 1 {
		t.Fatalf("a quota 429 did not stop the model: %v after %d calls", err, f.callsOf("c"))
	}
}

// Caps pace evenly at 98 % of the cap, charge a request bigger than any
// burst in full, count its tokens as the server does (here one that gives
// back what the reply did not use), and give a rate-limited attempt's
// tokens back.
func TestCaps(t *testing.T) {
	a := NewAccount(AccountOptions{})
	clock := time.Unix(1000, 0)
	a.now = func() time.Time { return clock }
	a.SetCap(llm.DimRequests, 600)
	a.SetCap(llm.DimTokens, 60000)
	a.SetCap(llm.DimTokens, 120000) // the lower cap of two models wins
	a.dims[llm.DimTokens].refunds = true
	charge := func(toks float64) [llm.NumDims]float64 {
		var c [llm.NumDims]float64
		c[llm.DimRequests], c[llm.DimTokens], c[llm.DimOutputTokens] = 1, toks, toks/2
		return c
	}
	try := func(c [llm.NumDims]float64) (time.Duration, int) {
		a.mu.Lock()
		defer a.mu.Unlock()
		w, dim, _ := a.needLocked(clock, &c, &[llm.NumDims]bool{})
		return w, dim
	}
	tk, err := a.acquire(context.Background(), charge(10), 0)
	if err != nil {
		t.Fatal(err)
	}
	// 600/min less the margin: the next request may go 60s/588 later.
	one := 1.0
	perReq := time.Duration(one / (600 * (1 - Margin)) * float64(time.Minute))
	if w, dim := try(charge(1)); dim != llm.DimRequests || w != perReq {
		t.Fatalf("wait %v for %d, want %v for requests", w, dim, perReq)
	}
	// A 10,000-token request is charged in full, not capped at some burst.
	clock = clock.Add(time.Second)
	if w, _ := try(charge(1)); w != 0 {
		t.Fatalf("wait %v, want none", w)
	}
	big, err := a.acquire(context.Background(), charge(10000), 0)
	if err != nil {
		t.Fatal(err)
	}
	wantBig := time.Duration(one * 10000 / (60000 * (1 - Margin)) * float64(time.Minute))
	if w, dim := try(charge(1)); dim != llm.DimTokens || w < wantBig-time.Millisecond || w > wantBig {
		t.Fatalf("wait %v for %d, want %v for tokens", w, dim, wantBig)
	}
	// The reply used 1,000 tokens: 9,000 come back.
	a.settle(big, llm.RateLimits{}, &llm.Usage{PromptTokens: 600, CompletionTokens: 400}, false)
	wantNow := time.Duration(one * 1000 / (60000 * (1 - Margin)) * float64(time.Minute))
	if w, _ := try(charge(1)); w < wantNow-time.Millisecond || w > wantNow+time.Millisecond {
		t.Fatalf("after the refund: wait %v, want %v", w, wantNow)
	}
	// A 429'd attempt spent no tokens.
	a.settle(tk, llm.RateLimits{}, nil, true)
	if st := a.Stats(); st.Dims[llm.DimTokens].Used != 1000 || st.Dims[llm.DimRequests].Used != 2 || st.Dims[llm.DimTokens].Cap != 60000 {
		t.Fatalf("stats = %+v", st.Dims)
	}
}

// A shard takes its share of the learned limit: against a server that
// allows 100 requests per 600 ms window, a process that is one of four
// sends 24.5 per window (a quarter, less the margin), evenly.
func TestShare(t *testing.T) {
	a := NewAccount(AccountOptions{Share: 4})
	clock := time.Unix(1000, 0)
	a.now = func() time.Time { return clock }
	const window = 600 * time.Millisecond
	var c [llm.NumDims]float64
	c[llm.DimRequests] = 1
	var sent []time.Time
	for clock.Before(time.Unix(1000, 0).Add(10 * window)) {
		a.mu.Lock()
		w, _, _ := a.needLocked(clock, &c, &[llm.NumDims]bool{})
		a.mu.Unlock()
		if w > 0 {
			clock = clock.Add(w)
			continue
		}
		tk, err := a.acquire(context.Background(), c, 0)
		if err != nil {
			t.Fatal(err)
		}
		sent = append(sent, clock)
		inWindow := 0
		for _, s := range sent {
			if clock.Sub(s) < window {
				inWindow++
			}
		}
		// The server's word: the other three shards spend the rest.
		var rl llm.RateLimits
		rl.Dims[llm.DimRequests] = llm.RateWindow{Known: true, Limit: 100, Remaining: float64(100 - 4*inWindow), Reset: window}
		a.settle(tk, rl, nil, false)
	}
	most := 0
	for i := range sent {
		n := 0
		for _, s := range sent[i:] {
			if s.Sub(sent[i]) < window {
				n++
			}
		}
		most = max(most, n)
	}
	// Ten windows at 24.5 each, and never more than a quarter in any one.
	if len(sent) < 240 || len(sent) > 250 || most > 25 {
		t.Errorf("sent %d in ten windows, at most %d in one; want about 245, never more than 25", len(sent), most)
	}
	if st := a.Stats(); st.Share != 4 || st.Dims[llm.DimRequests].Budget != 25 || st.Dims[llm.DimRequests].Learned != 100 || st.Dims[llm.DimRequests].Window != window {
		t.Errorf("stats = %+v", st)
	}
}

// A request is charged its prompt, counted with the model's tokenizer
// where there is one, plus the most its samples may write.
func TestEstimateTokens(t *testing.T) {
	r := &llm.Request{Messages: []llm.Message{{Content: strings.Repeat("a", 400)}, {Content: strings.Repeat("b", 400)}}, MaxTokens: 50, N: 4}
	if in, out := estimateTokens(r, nil); in != 200 || out != 200 {
		t.Errorf("four characters a token: %d in, %d out", in, out)
	}
	words := func(s string) int { return len(strings.Fields(s)) }
	r = &llm.Request{Messages: []llm.Message{{Content: "one two three"}}, Thinking: llm.Thinking{Enabled: true, Budget: 1000}}
	if in, out := estimateTokens(r, words); in != 3+4 || out != 512+1000 {
		t.Errorf("with a tokenizer: %d in, %d out", in, out)
	}
	tr := New(multiCall{newFake(nil)}, Options{})
	r.N = 3
	c := tr.charge(r)
	if c[llm.DimRequests] != 3 || c[llm.DimInputTokens] != 3*(13/4) || c[llm.DimOutputTokens] != 3*1512 || c[llm.DimTokens] != 3*(13/4)+3*1512 {
		t.Errorf("three HTTP requests of one sample each: %v", c)
	}
}

// multiCall makes one HTTP request per sample, as Anthropic's provider does.
type multiCall struct{ *fake }

func (m multiCall) HTTPRequests(r *llm.Request) int { return r.Samples() }

// The window is the longest reset stated with budget left, and never more
// than the minute the limits are stated per.
func TestLearnedWindow(t *testing.T) {
	a := NewAccount(AccountOptions{})
	var c [llm.NumDims]float64
	c[llm.DimRequests] = 1
	say := func(remaining float64, reset time.Duration) {
		tk, err := a.acquire(context.Background(), c, 0)
		if err != nil {
			t.Fatal(err)
		}
		var rl llm.RateLimits
		rl.Dims[llm.DimRequests] = llm.RateWindow{Known: true, Limit: 1000, Remaining: remaining, Reset: reset}
		a.settle(tk, rl, nil, false)
	}
	say(999, 60*time.Millisecond)
	say(990, 600*time.Millisecond)
	say(980, 300*time.Millisecond)
	if w := a.Stats().Dims[llm.DimRequests].Window; w != 600*time.Millisecond {
		t.Fatalf("window %v, want the longest reset, 600ms", w)
	}
	say(0, 10*time.Second) // in debt: not a window
	if w := a.Stats().Dims[llm.DimRequests].Window; w != 600*time.Millisecond {
		t.Fatalf("window %v after an empty reply", w)
	}
	a = NewAccount(AccountOptions{})
	say(100, 6*time.Minute)
	if w := a.Stats().Dims[llm.DimRequests].Window; w != time.Minute {
		t.Fatalf("window %v, want a minute at most", w)
	}
}
