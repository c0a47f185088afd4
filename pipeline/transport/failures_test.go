package transport

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/promoral/promoral/pipeline/llm"
)

// Only the model's or the account's errors stop a model: a rejection of one
// request (a 400 for an over-long prompt, a content policy) fails that
// request, and every other request still goes out.
func TestRejectedRequestDoesNotStopTheModel(t *testing.T) {
	f := newFake(func(_ context.Context, id string, _ int) (*llm.Response, error) {
		if id == "long" {
			return nil, errBadReq
		}
		return ok(id), nil
	})
	tr := New(f, Options{Sleep: (&sleeper{}).Sleep})
	if _, err := tr.Do(context.Background(), req("long"), nil); !errors.Is(err, errBadReq) || f.callsOf("long") != 1 {
		t.Fatalf("err = %v after %d calls; want the 400 once, not retried", err, f.callsOf("long"))
	}
	for i := range 20 {
		if _, err := tr.Do(context.Background(), req(fmt.Sprint("next", i)), nil); err != nil {
			t.Fatalf("request %d after a 400: %v", i, err)
		}
	}
	if tr.Stats().Stopped {
		t.Fatal("a request-specific rejection stopped the model")
	}
	for _, stop := range []*llm.Error{
		{Kind: llm.Permanent, Class: llm.ClassAuth, Status: 401},
		{Kind: llm.Permanent, Class: llm.ClassNotFound, Status: 404},
		{Kind: llm.Permanent, Class: llm.ClassQuota, Status: 429},
	} {
		tr := New(newFake(func(context.Context, string, int) (*llm.Response, error) { return nil, stop }), Options{Sleep: (&sleeper{}).Sleep})
		tr.Do(context.Background(), req("x"), nil)
		if _, err := tr.Do(context.Background(), req("y"), nil); !errors.Is(err, ErrStopped) {
			t.Errorf("%s did not stop the model: %v", stop.ClassName(), err)
		}
	}
}

// A provider that hands back a 200 without an answer breaks the contract;
// the transport retries it like any transient failure and reports the
// attempt as failed, so it is never journaled as a reply.
func TestReplyWithoutAnswerIsRetried(t *testing.T) {
	f := newFake(func(_ context.Context, id string, call int) (*llm.Response, error) {
		switch call {
		case 1:
			return &llm.Response{}, nil
		case 2:
			return &llm.Response{Choices: []llm.Choice{{FinishReason: llm.FinishStop}}}, nil
		}
		return ok(id), nil
	})
	var atts []Attempt
	tr := New(f, Options{Sleep: (&sleeper{}).Sleep})
	resp, err := tr.Do(context.Background(), req("a"), func(a Attempt) {
		if !a.Sending {
			atts = append(atts, a)
		}
	})
	if err != nil || resp.Text() != "a" || len(atts) != 3 {
		t.Fatalf("resp %v err %v after %d attempts", resp, err, len(atts))
	}
	for _, a := range atts[:2] {
		var le *llm.Error
		if a.Resp != nil || !errors.As(a.Err, &le) || le.ClassName() != llm.ClassEmptyReply {
			t.Fatalf("an empty reply was reported as %+v", a)
		}
	}
}

// Every attempt is announced before it goes out, then reported: the caller
// journals an intent first, so a process killed mid-call knows afterwards
// which calls were on the wire.
func TestSendingPrecedesEveryAttempt(t *testing.T) {
	f := newFake(func(_ context.Context, id string, call int) (*llm.Response, error) {
		if call < 3 {
			return nil, errServer
		}
		return ok(id), nil
	})
	var log []string
	tr := New(f, Options{Sleep: (&sleeper{}).Sleep})
	tr.Do(context.Background(), req("a"), func(a Attempt) {
		if a.Sending {
			log = append(log, fmt.Sprintf("send %d", a.N))
		} else {
			log = append(log, fmt.Sprintf("done %d", a.N))
		}
	})
	want := "[send 1 done 1 send 2 done 2 send 3 done 3]"
	if fmt.Sprint(log) != want {
		t.Fatalf("reports %v, want %s", log, want)
	}
}

// Cancelling the scheduling context stops new attempts at once, while a
// call already on the wire runs under the call context to its end and is
// reported with its reply: what was paid for is kept.
func TestInterruptLetsCallsOnTheWireFinish(t *testing.T) {
	onWire := make(chan struct{})
	release := make(chan struct{})
	f := newFake(func(ctx context.Context, id string, _ int) (*llm.Response, error) {
		if id == "slow" {
			close(onWire)
			select {
			case <-release:
				return ok(id), nil
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
		return ok(id), nil
	})
	tr := New(f, Options{Concurrency: 1, Sleep: (&sleeper{}).Sleep})
	sched, stop := context.WithCancel(context.Background())
	call, abort := context.WithCancel(context.Background())
	defer abort()
	ctx := llm.WithCallContext(sched, call)
	var mu sync.Mutex
	var reported []Attempt
	done := make(chan error, 1)
	go func() {
		resp, err := tr.Do(ctx, req("slow"), func(a Attempt) {
			mu.Lock()
			reported = append(reported, a)
			mu.Unlock()
		})
		if err == nil && resp.Text() != "slow" {
			err = fmt.Errorf("reply %q", resp.Text())
		}
		done <- err
	}()
	<-onWire
	queued := make(chan error, 1)
	go func() { _, err := tr.Do(ctx, req("queued"), nil); queued <- err }()
	waitFor(t, func() bool { return tr.Stats().Waiting == 1 })
	stop()
	if err := <-queued; !errors.Is(err, context.Canceled) || f.callsOf("queued") != 0 {
		t.Fatalf("queued request after the interrupt: %v, %d calls", err, f.callsOf("queued"))
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the call on the wire was lost: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(reported) != 2 || !reported[0].Sending || reported[1].Resp == nil {
		t.Fatalf("reports %+v", reported)
	}
}

// Aborting the call context cuts a call on the wire; it is not retried.
func TestAbortCutsTheCallOnTheWire(t *testing.T) {
	onWire := make(chan struct{}, 1)
	f := newFake(func(ctx context.Context, id string, _ int) (*llm.Response, error) {
		onWire <- struct{}{}
		<-ctx.Done()
		return nil, ctx.Err()
	})
	tr := New(f, Options{Sleep: (&sleeper{}).Sleep})
	sched, stop := context.WithCancel(context.Background())
	call, abort := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := tr.Do(llm.WithCallContext(sched, call), req("a"), nil); done <- err }()
	<-onWire
	stop()
	abort()
	if err := <-done; !errors.Is(err, context.Canceled) || f.callsOf("a") != 1 {
		t.Fatalf("err %v after %d calls", err, f.callsOf("a"))
	}
}
