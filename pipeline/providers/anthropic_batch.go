package providers

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/anthropics/anthropic-sdk-go"
	"github.com/anthropics/anthropic-sdk-go/packages/param"

	"github.com/promoral/promoral/pipeline/llm"
)

// Anthropic's Message Batches: the requests go in the create call itself,
// results stream back as JSONL once the batch has ended.
const (
	anthropicBatchMaxRequests = 100_000
	anthropicBatchMaxBytes    = 256 << 20
	// anthropicSample separates a custom id from its sample number: the API
	// has no n, so a request for n samples is n lines (ids allow [A-Za-z0-9_-]).
	anthropicSample = "_s"
)

// anthropicLine is a request encoded once: the SDK's own JSON of the message
// parameters, which the batch carries verbatim.
type anthropicLine struct{ params json.RawMessage }

func (p *anthropicProvider) BatchLimits() (int, int64) {
	return anthropicBatchMaxRequests, anthropicBatchMaxBytes
}

func (p *anthropicProvider) BatchLine(id string, req *llm.Request) (llm.BatchLine, error) {
	params, err := p.params(req)
	if err != nil {
		return llm.BatchLine{}, err
	}
	if len(req.Extra) > 0 {
		params.SetExtraFields(req.Extra)
	}
	raw, err := json.Marshal(params)
	if err != nil {
		return llm.BatchLine{}, fmt.Errorf("encoding a batch line: %w", err)
	}
	n := req.Samples()
	return llm.BatchLine{ID: id, Size: n * (len(raw) + len(id) + 40), Body: anthropicLine{raw}, Samples: n}, nil
}

func (p *anthropicProvider) SubmitBatch(ctx context.Context, name string, lines []llm.BatchLine) (string, error) {
	var reqs []anthropic.MessageBatchNewParamsRequest
	for _, l := range lines {
		raw := l.Body.(anthropicLine).params
		for k := range max(l.Samples, 1) {
			id := l.ID
			if k > 0 {
				id += anthropicSample + strconv.Itoa(k)
			}
			reqs = append(reqs, anthropic.MessageBatchNewParamsRequest{
				CustomID: id,
				Params:   param.Override[anthropic.MessageBatchNewParamsRequestParams](raw),
			})
		}
	}
	c := startCall(ctx, p.cfg.batchTimeout(), 0)
	defer c.cancel()
	b, err := p.client.Messages.Batches.New(c.ctx, anthropic.MessageBatchNewParams{Requests: reqs})
	if err != nil {
		return "", submitError(c.classify(err, anthropicFailure(err), &p.cfg))
	}
	return b.ID, nil
}

// FindBatch matches by time and size: message batches carry no metadata.
// A wrong match costs nothing: its results carry custom ids this run never
// issued, which the caller ignores, and the lines go out again.
func (p *anthropicProvider) FindBatch(ctx context.Context, name string, since time.Time, samples []int, known map[string]bool) (string, bool, error) {
	n := 0
	for _, s := range samples {
		n += max(s, 1)
	}
	c := startCall(ctx, p.cfg.batchTimeout(), 0)
	defer c.cancel()
	it := p.client.Messages.Batches.ListAutoPaging(c.ctx, anthropic.MessageBatchListParams{Limit: anthropic.Int(100)})
	for it.Next() {
		b := it.Current()
		if b.CreatedAt.Before(since.Add(-time.Minute)) {
			break
		}
		rc := b.RequestCounts
		total := rc.Processing + rc.Succeeded + rc.Errored + rc.Canceled + rc.Expired
		if !known[b.ID] && int(total) == n && b.CreatedAt.Before(since.Add(15*time.Minute)) {
			return b.ID, true, nil
		}
	}
	if err := it.Err(); err != nil {
		return "", false, c.classify(err, anthropicFailure(err), &p.cfg)
	}
	return "", false, nil
}

func (p *anthropicProvider) BatchStatus(ctx context.Context, id string) (*llm.BatchState, error) {
	c := startCall(ctx, p.cfg.Timeout, 0)
	defer c.cancel()
	b, err := p.client.Messages.Batches.Get(c.ctx, id, anthropic.MessageBatchGetParams{})
	if err != nil {
		return nil, c.classify(err, anthropicFailure(err), &p.cfg)
	}
	rc := b.RequestCounts
	total := int(rc.Processing + rc.Succeeded + rc.Errored + rc.Canceled + rc.Expired)
	st := &llm.BatchState{Total: total, Done: total - int(rc.Processing), Failed: int(rc.Errored + rc.Canceled + rc.Expired)}
	switch b.ProcessingStatus {
	case anthropic.MessageBatchProcessingStatusCanceling:
		st.State = llm.BatchCancelling
	case anthropic.MessageBatchProcessingStatusEnded:
		st.Ended = true
		switch {
		case rc.Canceled > 0:
			st.State = llm.BatchCancelled
		case rc.Expired > 0:
			st.State = llm.BatchExpired
		default:
			st.State = llm.BatchCompleted
		}
	default:
		st.State = llm.BatchInProgress
	}
	return st, nil
}

// anthropicSamples collects the lines of one multi-sample request; results
// arrive in any order.
type anthropicSamples struct {
	msgs []*anthropic.Message
	err  error
	seen int
}

func (p *anthropicProvider) BatchResults(ctx context.Context, id string, lookup func(string) *llm.Request, fn func(llm.BatchResult) error) error {
	c := startCall(ctx, p.cfg.batchTimeout(), 0)
	defer c.cancel()
	stream := p.client.Messages.Batches.ResultsStreaming(c.ctx, id, anthropic.MessageBatchResultsParams{})
	defer stream.Close()
	groups := map[string]*anthropicSamples{}
	want := func(base string) int {
		if r := lookup(base); r != nil {
			return r.Samples()
		}
		return 0 // unknown: settle at the end with what came
	}
	for stream.Next() {
		r := stream.Current()
		base, k := r.CustomID, 0
		if i := strings.LastIndex(base, anthropicSample); i >= 0 {
			if n, err := strconv.Atoi(base[i+len(anthropicSample):]); err == nil {
				base, k = base[:i], n
			}
		}
		var msg *anthropic.Message
		var lineErr error
		switch r.Result.Type {
		case "succeeded":
			m := r.Result.Message
			msg = &m
		case "errored":
			e := r.Result.Error.Error
			status := 500
			switch e.Type {
			case "invalid_request_error":
				status = 400
			case "authentication_error":
				status = 401
			case "permission_error", "billing_error":
				status = 403
			case "not_found_error":
				status = 404
			case "rate_limit_error":
				status = 429
			}
			lineErr = lineError(status, e.Type, e.Message, &p.cfg)
		case "expired":
			lineErr = notRun("expired")
		case "canceled":
			lineErr = notRun("was cancelled")
		default:
			lineErr = &llm.Error{Kind: llm.Transient, Msg: "unknown batch result type " + strconv.Quote(r.Result.Type)}
		}
		n := want(base)
		if n <= 1 && k == 0 {
			if err := fn(anthropicResult(base, []*anthropic.Message{msg}, lineErr)); err != nil {
				return err
			}
			continue
		}
		g := groups[base]
		if g == nil {
			g = &anthropicSamples{}
			groups[base] = g
		}
		for len(g.msgs) <= k {
			g.msgs = append(g.msgs, nil)
		}
		g.msgs[k], g.seen = msg, g.seen+1
		if lineErr != nil && (g.err == nil || llm.IsPermanent(lineErr)) {
			g.err = lineErr
		}
		if n > 0 && g.seen == n {
			delete(groups, base)
			if err := fn(anthropicResult(base, g.msgs, g.err)); err != nil {
				return err
			}
		}
	}
	if err := stream.Err(); err != nil {
		return c.classify(err, anthropicFailure(err), &p.cfg)
	}
	for base, g := range groups {
		err := g.err
		if err == nil && want(base) > 0 {
			err = &llm.Error{Kind: llm.Transient, Msg: "the batch returned only some of this request's samples"}
		}
		if err := fn(anthropicResult(base, g.msgs, err)); err != nil {
			return err
		}
	}
	return nil
}

// anthropicResult builds one request's result from its samples, as
// Complete does for a live call.
func anthropicResult(id string, msgs []*anthropic.Message, err error) llm.BatchResult {
	if err != nil {
		return llm.BatchResult{ID: id, Err: err}
	}
	resp := &llm.Response{}
	for _, msg := range msgs {
		if msg == nil {
			return llm.BatchResult{ID: id, Err: &llm.Error{Kind: llm.Transient, Msg: "the batch returned only some of this request's samples"}}
		}
		resp.Choices = append(resp.Choices, anthropicChoice(msg))
		addAnthropicUsage(resp, msg)
	}
	return llm.BatchResult{ID: id, Resp: resp}
}

func (p *anthropicProvider) CancelBatch(ctx context.Context, id string) error {
	c := startCall(ctx, p.cfg.Timeout, 0)
	defer c.cancel()
	if _, err := p.client.Messages.Batches.Cancel(c.ctx, id, anthropic.MessageBatchCancelParams{}); err != nil {
		return c.classify(err, anthropicFailure(err), &p.cfg)
	}
	return nil
}
