package providers

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/fake"
	"github.com/promoral/promoral/pipeline/llm"
)

func echoReply(c fake.Call) []string {
	var out []string
	for k := range max(c.N, 1) {
		out = append(out, fmt.Sprintf("Answer: %d to %q", k, c.Last()))
	}
	return out
}

var batchProviders = []struct{ provider, model string }{
	{OpenAI, "gpt-4.1"}, {Anthropic, "claude-sonnet-4-5"}, {Gemini, "gemini-2.5-pro"},
}

func newBatchTest(t *testing.T, provider string) (*fake.Server, llm.Provider, llm.Batcher) {
	t.Helper()
	srv := fake.New(provider, echoReply)
	t.Cleanup(srv.Close)
	p, err := New(Config{Provider: provider, BaseURL: srv.BaseURL(), APIKey: testKey, KeyVar: "TEST_KEY", Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return srv, p, p.(llm.Batcher)
}

func batchReqs(model string, n int) []*llm.Request {
	var reqs []*llm.Request
	for i := range n {
		r := &llm.Request{Model: model, MaxTokens: 50, Messages: []llm.Message{
			{Role: llm.RoleSystem, Content: "Be brief."}, {Role: llm.RoleUser, Content: fmt.Sprintf("question %d", i)}}}
		if i == 1 {
			r.N = 3
		}
		reqs = append(reqs, r)
	}
	return reqs
}

// submit encodes and submits reqs as one job named name; ids are name-i.
func submit(t *testing.T, b llm.Batcher, name string, reqs []*llm.Request) (string, map[string]*llm.Request) {
	t.Helper()
	var lines []llm.BatchLine
	byID := map[string]*llm.Request{}
	for i, r := range reqs {
		id := fmt.Sprintf("%s-%d", name, i)
		l, err := b.BatchLine(id, r)
		if err != nil {
			t.Fatal(err)
		}
		if l.Size <= 0 || l.Samples != r.Samples() {
			t.Fatalf("line %s: size %d samples %d", id, l.Size, l.Samples)
		}
		lines = append(lines, l)
		byID[id] = r
	}
	id, err := b.SubmitBatch(context.Background(), name, lines)
	if err != nil {
		t.Fatal(err)
	}
	return id, byID
}

func waitEnded(t *testing.T, b llm.Batcher, id string) (*llm.BatchState, []string) {
	t.Helper()
	var states []string
	for range 50 {
		st, err := b.BatchStatus(context.Background(), id)
		if err != nil {
			t.Fatal(err)
		}
		if len(states) == 0 || states[len(states)-1] != st.State {
			states = append(states, st.State)
		}
		if st.Ended {
			return st, states
		}
	}
	t.Fatalf("job %s never ended: %v", id, states)
	return nil, nil
}

func results(t *testing.T, b llm.Batcher, id string, byID map[string]*llm.Request) (map[string]llm.BatchResult, []string) {
	t.Helper()
	got := map[string]llm.BatchResult{}
	var order []string
	err := b.BatchResults(context.Background(), id, func(cid string) *llm.Request { return byID[cid] }, func(r llm.BatchResult) error {
		if _, dup := got[r.ID]; dup {
			t.Errorf("result %s delivered twice", r.ID)
		}
		got[r.ID] = r
		order = append(order, r.ID)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return got, order
}

// A job goes through its states, and every line's reply equals what the
// same request gets live, whatever order the results come back in.
func TestBatchRoundTripEqualsLive(t *testing.T) {
	for _, bp := range batchProviders {
		t.Run(bp.provider, func(t *testing.T) {
			srv, p, b := newBatchTest(t, bp.provider)
			reqs := batchReqs(bp.model, 12)
			id, byID := submit(t, b, "pmtest01", reqs)
			st, states := waitEnded(t, b, id)
			if st.State != llm.BatchCompleted {
				t.Fatalf("ended %s (%v)", st.State, states)
			}
			if bp.provider == OpenAI {
				want := []string{"validating", "in_progress", "finalizing", "completed"}
				if !reflect.DeepEqual(states, want) {
					t.Errorf("states %v, want %v", states, want)
				}
			}
			got, order := results(t, b, id, byID)
			if len(got) != len(reqs) {
				t.Fatalf("%d results for %d requests", len(got), len(reqs))
			}
			sorted := true
			for i := 1; i < len(order); i++ {
				sorted = sorted && order[i-1] < order[i]
			}
			if sorted {
				t.Error("results came back in submission order; the fake should shuffle them")
			}
			for cid, r := range byID {
				res := got[cid]
				if res.Err != nil {
					t.Fatalf("%s: %v", cid, res.Err)
				}
				live, err := p.Complete(context.Background(), r)
				if err != nil {
					t.Fatal(err)
				}
				live.RateLimits = llm.RateLimits{} // what the live reply's headers said of the account
				if !reflect.DeepEqual(res.Resp, live) {
					t.Errorf("%s: batch reply %+v, live reply %+v", cid, res.Resp, live)
				}
			}
			lines := srv.Lines()
			wantLines := len(reqs)
			if bp.provider == Anthropic {
				wantLines += 2 // n=3 is three lines
			}
			if len(lines) != wantLines {
				t.Errorf("the server accepted %d lines, want %d", len(lines), wantLines)
			}
		})
	}
}

// Per-line errors are classified like live HTTP failures; expired jobs
// leave lines unanswered (absent or transient), which go out again.
func TestBatchLineErrorsAndExpiry(t *testing.T) {
	for _, bp := range batchProviders {
		t.Run(bp.provider, func(t *testing.T) {
			srv, _, b := newBatchTest(t, bp.provider)
			srv.Fault = func(c fake.Call, id string) (int, string) {
				switch c.Last() {
				case "question 2":
					return 400, "bad request " + testKey
				case "question 3":
					return 500, "overloaded"
				}
				return 0, ""
			}
			srv.Ending = func(n int) string {
				if n == 1 {
					return "expired"
				}
				return "completed"
			}
			reqs := batchReqs(bp.model, 6)
			id, byID := submit(t, b, "pmerr01", reqs)
			waitEnded(t, b, id)
			got, _ := results(t, b, id, byID)
			perm, trans := got["pmerr01-2"].Err, got["pmerr01-3"].Err
			if !llm.IsPermanent(perm) || strings.Contains(perm.Error(), testKey) {
				t.Errorf("400 line: %v", perm)
			}
			var le *llm.Error
			if !errors.As(trans, &le) || le.Kind != llm.Transient {
				t.Errorf("500 line: %v", trans)
			}
			// The second job expires after answering half its lines.
			id2, byID2 := submit(t, b, "pmexp01", batchReqs(bp.model, 6))
			st, _ := waitEnded(t, b, id2)
			if st.State != llm.BatchExpired {
				t.Fatalf("second job ended %s", st.State)
			}
			got2, _ := results(t, b, id2, byID2)
			ok := 0
			for cid := range byID2 {
				r, found := got2[cid]
				switch {
				case found && r.Err == nil:
					ok++
				case cid == "pmexp01-2":
					// the fake's 400, if the job reached it
				case found && llm.IsPermanent(r.Err):
					t.Errorf("%s: an unrun line is permanent: %v", cid, r.Err)
				}
			}
			// The fake answers the first half of the job's lines: requests 0
			// and 1 (three samples, three lines at Anthropic).
			if ok != 2 {
				t.Errorf("expired job: %d answered, want 2", ok)
			}
		})
	}
}

func TestBatchCreate429IsTransientAndCancelWorks(t *testing.T) {
	for _, bp := range batchProviders {
		t.Run(bp.provider, func(t *testing.T) {
			srv, _, b := newBatchTest(t, bp.provider)
			srv.RateLimitCreates.Store(1)
			l, err := b.BatchLine("pmrl-0", batchReqs(bp.model, 1)[0])
			if err != nil {
				t.Fatal(err)
			}
			_, err = b.SubmitBatch(context.Background(), "pmrl", []llm.BatchLine{l})
			var le *llm.Error
			if !errors.As(err, &le) || le.Kind != llm.Transient || !le.RateLimited {
				t.Fatalf("429 on create: %v", err)
			}
			if strings.Contains(err.Error(), testKey) {
				t.Fatal("the key leaked into an error")
			}
			srv.Hold.Store(true)
			id, err := b.SubmitBatch(context.Background(), "pmrl", []llm.BatchLine{l})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.CancelBatch(context.Background(), id); err != nil {
				t.Fatal(err)
			}
			st, _ := waitEnded(t, b, id)
			if st.State != llm.BatchCancelled {
				t.Errorf("after cancel: %s", st.State)
			}
		})
	}
}

// A job whose creation was never recorded is found again by name (or, for
// Anthropic, by size and time), and known jobs are skipped.
func TestFindBatch(t *testing.T) {
	for _, bp := range batchProviders {
		t.Run(bp.provider, func(t *testing.T) {
			_, _, b := newBatchTest(t, bp.provider)
			since := time.Now().Add(-time.Second)
			other, _ := submit(t, b, "pmother", batchReqs(bp.model, 2))
			id, _ := submit(t, b, "pmfind", batchReqs(bp.model, 4))
			samples := []int{1, 3, 1, 1}
			found, ok, err := b.FindBatch(context.Background(), "pmfind", since, samples, map[string]bool{other: true})
			if err != nil || !ok || found != id {
				t.Fatalf("FindBatch: %q %v %v, want %q", found, ok, err, id)
			}
			_, ok, err = b.FindBatch(context.Background(), "pmfind", since, samples, map[string]bool{other: true, id: true})
			if err != nil || ok {
				t.Fatalf("a known job was found again: %v %v", ok, err)
			}
		})
	}
}

func TestNoBatchEndpoint(t *testing.T) {
	srv := fake.New(OpenAI, echoReply)
	defer srv.Close()
	srv.NoBatch = true
	p, err := New(Config{Provider: OpenAICompatible, BaseURL: srv.BaseURL(), Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	b := p.(llm.Batcher)
	l, _ := b.BatchLine("pmx-0", batchReqs("m", 1)[0])
	_, err = b.SubmitBatch(context.Background(), "pmx", []llm.BatchLine{l})
	if !errors.Is(err, llm.ErrNoBatchEndpoint) {
		t.Fatalf("want ErrNoBatchEndpoint, got %v", err)
	}
}

func TestGeminiExtraIsNotBatchable(t *testing.T) {
	_, _, b := newBatchTest(t, Gemini)
	r := batchReqs("gemini-2.5-pro", 1)[0]
	r.Extra = map[string]any{"safetySettings": []any{}}
	if _, err := b.BatchLine("x-0", r); err == nil {
		t.Fatal("a request with extra parameters was accepted into a Gemini batch")
	}
}
