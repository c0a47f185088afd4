package transport

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// fake is a scripted provider: script decides each call's outcome from the
// request's id (its first message) and how many times that id was called.
type fake struct {
	script func(ctx context.Context, id string, call int) (*llm.Response, error)

	mu          sync.Mutex
	calls       map[string]int
	total       int
	inFlight    int
	maxInFlight int
}

func newFake(script func(ctx context.Context, id string, call int) (*llm.Response, error)) *fake {
	return &fake{script: script, calls: map[string]int{}}
}

func (f *fake) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	id := req.Messages[0].Content
	f.mu.Lock()
	f.calls[id]++
	f.total++
	n := f.calls[id]
	f.inFlight++
	f.maxInFlight = max(f.maxInFlight, f.inFlight)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.inFlight--
		f.mu.Unlock()
	}()
	return f.script(ctx, id, n)
}

func (f *fake) callsOf(id string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[id]
}

func (f *fake) totalCalls() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.total
}

func ok(text string) *llm.Response {
	return &llm.Response{Choices: []llm.Choice{{Text: text, FinishReason: llm.FinishStop}}}
}

var (
	errServer  = &llm.Error{Kind: llm.Transient, Status: 500, Msg: "server error"}
	err429     = &llm.Error{Kind: llm.Transient, Status: 429, RateLimited: true, Msg: "rate limited"}
	errAuth    = &llm.Error{Kind: llm.Permanent, Class: llm.ClassAuth, Status: 401, Msg: "authentication failed: check the key variable OPENAI_API_KEY"}
	errBadReq  = &llm.Error{Kind: llm.Permanent, Class: llm.ClassRejected, Status: 400, Msg: "prompt too long"}
	errUnknown = errors.New("scripted failure")
)

func req(id string) *llm.Request {
	return &llm.Request{Model: "m", Messages: []llm.Message{{Role: llm.RoleUser, Content: id}}, MaxTokens: 100}
}

// sleeper records requested waits and returns at once.
type sleeper struct {
	mu sync.Mutex
	ds []time.Duration
}

func (s *sleeper) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.ds = append(s.ds, d)
	s.mu.Unlock()
	return ctx.Err()
}

func (s *sleeper) waits() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]time.Duration(nil), s.ds...)
}

func constRand(v float64) func() float64 { return func() float64 { return v } }

func TestRetriesUntilSuccess(t *testing.T) {
	f := newFake(func(_ context.Context, id string, call int) (*llm.Response, error) {
		if call < 3 {
			return nil, errServer
		}
		return ok("fine"), nil
	})
	s := &sleeper{}
	tr := New(f, Options{MaxAttempts: 5, BaseBackoff: time.Second, MaxBackoff: time.Minute, Sleep: s.Sleep, Rand: constRand(0.5)})
	var atts []Attempt
	resp, err := tr.Do(context.Background(), req("a"), func(a Attempt) {
		if !a.Sending {
			atts = append(atts, a)
		}
	})
	if err != nil || resp.Text() != "fine" {
		t.Fatalf("resp=%v err=%v", resp, err)
	}
	if f.callsOf("a") != 3 || len(atts) != 3 {
		t.Fatalf("calls=%d attempts reported=%d, want 3", f.callsOf("a"), len(atts))
	}
	for i, a := range atts {
		if a.N != i+1 || (i < 2) != (a.Err != nil) || (i == 2) != (a.Resp != nil) || a.Start.IsZero() {
			t.Errorf("attempt %d = %+v", i, a)
		}
	}
	// Full jitter at 0.5: half of 1s, then half of 2s.
	if w := s.waits(); len(w) != 2 || w[0] != 500*time.Millisecond || w[1] != time.Second {
		t.Errorf("waits = %v", w)
	}
	st := tr.Stats()
	if st.Attempts != 3 || st.Retries != 2 || st.Succeeded != 1 || st.Failed != 0 || st.InFlight != 0 {
		t.Errorf("stats = %+v", st)
	}
}

func TestStopsAtMaxAttempts(t *testing.T) {
	f := newFake(func(context.Context, string, int) (*llm.Response, error) { return nil, errServer })
	s := &sleeper{}
	tr := New(f, Options{MaxAttempts: 4, BaseBackoff: time.Second, MaxBackoff: 3 * time.Second, Sleep: s.Sleep, Rand: constRand(0.999)})
	reported := 0
	_, err := tr.Do(context.Background(), req("a"), func(a Attempt) {
		if !a.Sending {
			reported++
		}
	})
	if f.callsOf("a") != 4 || reported != 4 {
		t.Fatalf("calls=%d reported=%d, want 4", f.callsOf("a"), reported)
	}
	var le *llm.Error
	if !errors.As(err, &le) || le.Status != 500 || !strings.Contains(err.Error(), "4 attempts") {
		t.Fatalf("err = %v", err)
	}
	// Three waits between four attempts; the third is capped at MaxBackoff.
	w := s.waits()
	if len(w) != 3 || w[0] != 999*time.Millisecond || w[1] != 1998*time.Millisecond || w[2] != 2997*time.Millisecond {
		t.Errorf("waits = %v", w)
	}
	if tr.Stats().Stopped {
		t.Error("transient failures must not stop the model")
	}
}

func TestRetryAfterHonoured(t *testing.T) {
	for _, tc := range []struct {
		retryAfter time.Duration
		rand       float64
		want       time.Duration
	}{
		{7 * time.Second, 0, 7 * time.Second},
		{10 * time.Minute, 0, 2 * time.Minute},              // capped by the MaxRetryAfter default
		{time.Millisecond, 0.5, 251 * time.Millisecond},     // full jitter on top of the server's ask
		{3 * time.Second, 0.999, 3*time.Second + 499500000}, // the same, longer ask
	} {
		f := newFake(func(_ context.Context, _ string, call int) (*llm.Response, error) {
			if call == 1 {
				e := *err429
				e.RetryAfter = tc.retryAfter
				return nil, &e
			}
			return ok("x"), nil
		})
		s := &sleeper{}
		tr := New(f, Options{BaseBackoff: 500 * time.Millisecond, Sleep: s.Sleep, Rand: constRand(tc.rand)})
		if _, err := tr.Do(context.Background(), req("a"), nil); err != nil {
			t.Fatal(err)
		}
		if w := s.waits(); len(w) != 1 || w[0] != tc.want {
			t.Errorf("RetryAfter %v: waits = %v, want [%v]", tc.retryAfter, w, tc.want)
		}
	}
}

func TestBackoffBounds(t *testing.T) {
	tr := New(newFake(nil), Options{BaseBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Rand: constRand(0.999999)})
	prev := time.Duration(0)
	for n := 1; n <= 80; n++ { // far past where naive shifting would overflow
		d := tr.backoff(n, 0)
		if d > time.Second || d < prev {
			t.Fatalf("backoff(%d) = %v after %v", n, d, prev)
		}
		prev = d
	}
	tr0 := New(newFake(nil), Options{Rand: constRand(0)})
	if d := tr0.backoff(3, 0); d != 0 {
		t.Errorf("full jitter at rand 0 = %v, want 0", d)
	}
}

func TestPermanentErrorStopsTheModel(t *testing.T) {
	f := newFake(func(_ context.Context, id string, _ int) (*llm.Response, error) {
		if id == "bad" {
			return nil, errAuth
		}
		return ok(id), nil
	})
	tr := New(f, Options{Name: "gpt-4.1", Sleep: (&sleeper{}).Sleep})
	if _, err := tr.Do(context.Background(), req("fine"), nil); err != nil {
		t.Fatal(err)
	}
	_, err := tr.Do(context.Background(), req("bad"), nil)
	if !errors.Is(err, errAuth) || f.callsOf("bad") != 1 {
		t.Fatalf("err = %v after %d calls; want the 401 at once", err, f.callsOf("bad"))
	}
	for i := range 100 {
		_, err := tr.Do(context.Background(), req(fmt.Sprint("later", i)), func(Attempt) { t.Error("no attempt should be made") })
		if !errors.Is(err, ErrStopped) || !llm.IsPermanent(err) {
			t.Fatalf("err = %v, want a stopped (and permanent) error", err)
		}
		if i == 0 && (!strings.Contains(err.Error(), "model gpt-4.1 stopped after") || !strings.Contains(err.Error(), "HTTP 401") ||
			!strings.Contains(err.Error(), "OPENAI_API_KEY")) {
			t.Errorf("message = %q", err)
		}
	}
	if f.totalCalls() != 2 {
		t.Fatalf("provider called %d times, want 2", f.totalCalls())
	}
	st := tr.Stats()
	if !st.Stopped || !strings.Contains(st.StopReason, "401") || st.Failed != 101 || st.Requests != 102 {
		t.Errorf("stats = %+v", st)
	}
}

func TestStopWakesQueuedRequests(t *testing.T) {
	release := make(chan struct{})
	f := newFake(func(_ context.Context, id string, _ int) (*llm.Response, error) {
		if id == "first" {
			<-release
			return nil, errAuth
		}
		return ok(id), nil
	})
	tr := New(f, Options{Concurrency: 1, Sleep: (&sleeper{}).Sleep})
	first := make(chan error, 1)
	go func() { _, err := tr.Do(context.Background(), req("first"), nil); first <- err }()
	waitFor(t, func() bool { return tr.Stats().InFlight == 1 })
	const queued = 20
	errs := make(chan error, queued)
	for i := range queued {
		go func() { _, err := tr.Do(context.Background(), req(fmt.Sprint("q", i)), nil); errs <- err }()
	}
	waitFor(t, func() bool { return tr.Stats().Waiting == queued })
	close(release)
	if err := <-first; !errors.Is(err, errAuth) {
		t.Fatalf("first = %v", err)
	}
	for range queued {
		if err := <-errs; !errors.Is(err, ErrStopped) {
			t.Fatalf("queued request: %v, want stopped", err)
		}
	}
	if f.totalCalls() != 1 {
		t.Fatalf("provider called %d times, want 1", f.totalCalls())
	}
	if st := tr.Stats(); st.InFlight != 0 || st.Waiting != 0 {
		t.Errorf("slots leaked: %+v", st)
	}
}

func TestStopOnPolicy(t *testing.T) {
	f := newFake(func(_ context.Context, id string, _ int) (*llm.Response, error) {
		if id == "long" {
			return nil, errBadReq
		}
		return ok(id), nil
	})
	tr := New(f, Options{StopOn: func(e *llm.Error) bool { return e.Status != 400 }})
	if _, err := tr.Do(context.Background(), req("long"), nil); !errors.Is(err, errBadReq) || f.callsOf("long") != 1 {
		t.Fatalf("err = %v, calls = %d", err, f.callsOf("long"))
	}
	if _, err := tr.Do(context.Background(), req("next"), nil); err != nil {
		t.Fatalf("a 400 the policy tolerates stopped the model: %v", err)
	}
}

func TestUnclassifiedErrorIsNotRetried(t *testing.T) {
	f := newFake(func(context.Context, string, int) (*llm.Response, error) { return nil, errUnknown })
	tr := New(f, Options{Sleep: (&sleeper{}).Sleep})
	if _, err := tr.Do(context.Background(), req("a"), nil); !errors.Is(err, errUnknown) || f.callsOf("a") != 1 {
		t.Fatalf("err = %v after %d calls", err, f.callsOf("a"))
	}
	if tr.Stats().Stopped {
		t.Error("an unclassified error stopped the model")
	}
}

func TestAIMD(t *testing.T) {
	outcome := make(chan error, 100)
	f := newFake(func(context.Context, string, int) (*llm.Response, error) {
		if err := <-outcome; err != nil {
			return nil, err
		}
		return ok("x"), nil
	})
	// A 429 fails at once past a nanosecond's wait for the rate limit.
	tr := New(f, Options{Concurrency: 8, MaxAttempts: 1, RateLimitWait: time.Nanosecond})
	step := func(err error, wantLimit int) {
		t.Helper()
		outcome <- err
		_, _ = tr.Do(context.Background(), req("a"), nil)
		if got := tr.Stats().Limit; got != wantLimit {
			t.Fatalf("after %v: limit = %d, want %d", err, got, wantLimit)
		}
	}
	step(err429, 4)
	step(errServer, 4) // only rate limits move it down
	step(err429, 2)
	step(err429, 1)
	step(err429, 1) // floor
	step(nil, 2)    // limit 1: one success grows it
	step(nil, 2)
	step(nil, 3) // two in a row at limit 2
	step(err429, 1)
	for _, want := range []int{2, 2, 3, 3, 3, 4} {
		step(nil, want)
	}
	if st := tr.Stats(); st.RateLimited != 5 || st.MaxLimit != 8 {
		t.Errorf("stats = %+v", st)
	}
}

// A burst of 429s from calls that were all in flight together is one
// signal, not eight: the limit halves once.
func TestAIMDHalvesOncePerBurst(t *testing.T) {
	gate := make(chan struct{})
	f := newFake(func(context.Context, string, int) (*llm.Response, error) {
		<-gate
		return nil, err429
	})
	tr := New(f, Options{Concurrency: 8, MaxAttempts: 1, RateLimitWait: time.Nanosecond})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { _, _ = tr.Do(context.Background(), req(fmt.Sprint(i)), nil) })
	}
	waitFor(t, func() bool { return tr.Stats().InFlight == 8 })
	close(gate)
	wg.Wait()
	if got := tr.Stats().Limit; got != 4 {
		t.Fatalf("limit = %d, want 4", got)
	}
}

func TestConcurrencyLimitIsRespected(t *testing.T) {
	gate := make(chan struct{})
	f := newFake(func(context.Context, string, int) (*llm.Response, error) {
		<-gate
		return ok("x"), nil
	})
	tr := New(f, Options{Concurrency: 3})
	var wg sync.WaitGroup
	for i := range 10 {
		wg.Go(func() {
			if _, err := tr.Do(context.Background(), req(fmt.Sprint(i)), nil); err != nil {
				t.Error(err)
			}
		})
	}
	waitFor(t, func() bool { st := tr.Stats(); return st.InFlight == 3 && st.Waiting == 7 })
	close(gate)
	wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.maxInFlight != 3 || f.total != 10 {
		t.Fatalf("max in flight = %d, calls = %d", f.maxInFlight, f.total)
	}
}

// 500 concurrent requests against a provider that rate-limits 30% of calls
// and fails 10% with a 500 at random: every request ends, none is lost, none
// fails for a 429 (they wait), and none meets more than MaxAttempts 500s.
func TestRateLimitStorm(t *testing.T) {
	var rmu sync.Mutex
	rng := rand.New(rand.NewPCG(1, 2))
	errs := map[string]int{}
	f := newFake(func(_ context.Context, id string, _ int) (*llm.Response, error) {
		rmu.Lock()
		defer rmu.Unlock()
		switch x := rng.Float64(); {
		case x < 0.3:
			return nil, err429
		case x < 0.4:
			errs[id]++
			return nil, errServer
		}
		return ok("x"), nil
	})
	const n, maxAttempts = 500, 3
	tr := New(f, Options{Concurrency: 64, MaxAttempts: maxAttempts, Sleep: (&sleeper{}).Sleep})
	var reported atomic.Int64
	var answered, failed atomic.Int64
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			id := fmt.Sprint("r", i)
			resp, err := tr.Do(context.Background(), req(id), func(a Attempt) {
				if !a.Sending {
					reported.Add(1)
				}
			})
			switch {
			case err == nil && resp != nil:
				answered.Add(1)
			case err != nil && strings.Contains(err.Error(), "gave up after 3 attempts") && errors.Is(err, errServer):
				failed.Add(1)
			default:
				t.Errorf("%s: resp=%v err=%v", id, resp, err)
			}
		})
	}
	wg.Wait()
	if answered.Load()+failed.Load() != n {
		t.Fatalf("answered %d + failed %d != %d", answered.Load(), failed.Load(), n)
	}
	rmu.Lock()
	gaveUp := 0
	for id, c := range errs {
		if c > maxAttempts {
			t.Errorf("%s met %d server errors", id, c)
		}
		if c == maxAttempts {
			gaveUp++
		}
	}
	rmu.Unlock()
	if int64(gaveUp) != failed.Load() {
		t.Errorf("%d requests met %d server errors, but %d failed", gaveUp, maxAttempts, failed.Load())
	}
	f.mu.Lock()
	total := f.total
	f.mu.Unlock()
	st := tr.Stats()
	if int64(total) != st.Attempts || st.Attempts != reported.Load() {
		t.Errorf("provider calls %d, stats %d, reported %d", total, st.Attempts, reported.Load())
	}
	if st.Succeeded != answered.Load() || st.Failed != failed.Load() || st.InFlight != 0 || st.Waiting != 0 || st.RateLimited == 0 {
		t.Errorf("stats = %+v", st)
	}
	t.Logf("answered %d, failed %d, attempts %d, 429s %d, final limit %d", answered.Load(), failed.Load(), st.Attempts, st.RateLimited, st.Limit)
}

func TestCancellation(t *testing.T) {
	t.Run("during the call", func(t *testing.T) {
		f := newFake(func(ctx context.Context, _ string, _ int) (*llm.Response, error) {
			<-ctx.Done()
			return nil, ctx.Err()
		})
		tr := New(f, Options{})
		ctx, cancel := context.WithCancel(context.Background())
		go func() { waitFor(t, func() bool { return tr.Stats().InFlight == 1 }); cancel() }()
		if _, err := tr.Do(ctx, req("a"), nil); err != context.Canceled {
			t.Fatalf("err = %v", err)
		}
		if tr.Stats().Stopped || f.callsOf("a") != 1 {
			t.Fatal("cancellation was treated as a provider failure")
		}
	})
	t.Run("during backoff", func(t *testing.T) {
		f := newFake(func(context.Context, string, int) (*llm.Response, error) { return nil, errServer })
		// Real sleep and an hour of backoff: only cancellation can end it.
		tr := New(f, Options{BaseBackoff: time.Hour, MaxBackoff: time.Hour, Rand: constRand(1)})
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := tr.Do(ctx, req("a"), nil); done <- err }()
		waitFor(t, func() bool { return tr.Stats().Attempts == 1 })
		cancel()
		select {
		case err := <-done:
			if err != context.Canceled {
				t.Fatalf("err = %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Do did not return after cancellation")
		}
	})
	t.Run("while queued", func(t *testing.T) {
		gate := make(chan struct{})
		f := newFake(func(context.Context, string, int) (*llm.Response, error) { <-gate; return ok("x"), nil })
		tr := New(f, Options{Concurrency: 1})
		go func() { _, _ = tr.Do(context.Background(), req("holder"), nil) }()
		waitFor(t, func() bool { return tr.Stats().InFlight == 1 })
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { _, err := tr.Do(ctx, req("queued"), nil); done <- err }()
		waitFor(t, func() bool { return tr.Stats().Waiting == 1 })
		cancel()
		if err := <-done; err != context.Canceled {
			t.Fatalf("err = %v", err)
		}
		if st := tr.Stats(); st.Waiting != 0 || f.callsOf("queued") != 0 {
			t.Fatalf("stats = %+v", st)
		}
		close(gate)
		if _, err := tr.Do(context.Background(), req("after"), nil); err != nil {
			t.Fatalf("slot accounting broken after a cancelled waiter: %v", err)
		}
	})
}

func TestStoppedErrorText(t *testing.T) {
	e := &StoppedError{Cause: errAuth}
	if got := e.Error(); got != "model stopped after permanent error (HTTP 401): authentication failed: check the key variable OPENAI_API_KEY" {
		t.Errorf("Error() = %q", got)
	}
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}
