package providers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"google.golang.org/genai"

	"github.com/promoral/promoral/pipeline/llm"
)

// Gemini's batch mode: the requests go inline in the create call (the API
// takes up to 20 MB that way), the job is a long-running operation, and the
// answers come back inline in the finished job, each with the metadata its
// request carried.
const (
	geminiBatchMaxRequests = 50_000
	// geminiBatchMaxBytes stays under the 20 MB inline limit with room for
	// the envelope.
	geminiBatchMaxBytes = 19 << 20
	geminiBatchKey      = "key"
)

var errGeminiExtra = errors.New("gemini batch jobs cannot carry extra parameters (params.extra); this request is sent live")

func (p *geminiProvider) BatchLimits() (int, int64) {
	return geminiBatchMaxRequests, geminiBatchMaxBytes
}

func (p *geminiProvider) BatchLine(id string, req *llm.Request) (llm.BatchLine, error) {
	if len(req.Extra) > 0 {
		// The SDK sends Extra as an HTTP body patch of a live call; a batch
		// line has no such hook, and dropping it would change the request
		// the cache key promises.
		return llm.BatchLine{}, errGeminiExtra
	}
	contents, gc, err := p.request(req)
	if err != nil {
		return llm.BatchLine{}, err
	}
	gc.AutomaticContinuation = nil
	ir := &genai.InlinedRequest{Model: req.Model, Contents: contents, Config: gc, Metadata: map[string]string{geminiBatchKey: id}}
	raw, err := json.Marshal(ir)
	if err != nil {
		return llm.BatchLine{}, fmt.Errorf("encoding a batch line: %w", err)
	}
	return llm.BatchLine{ID: id, Size: len(raw), Body: ir, Samples: req.Samples()}, nil
}

func (p *geminiProvider) SubmitBatch(ctx context.Context, name string, lines []llm.BatchLine) (string, error) {
	if len(lines) == 0 {
		return "", errors.New("an empty batch")
	}
	reqs := make([]*genai.InlinedRequest, len(lines))
	for i, l := range lines {
		reqs[i] = l.Body.(*genai.InlinedRequest)
	}
	c := startCall(ctx, p.cfg.batchTimeout(), 0)
	defer c.cancel()
	job, err := p.client.Batches.Create(c.ctx, reqs[0].Model, &genai.BatchJobSource{InlinedRequests: reqs}, &genai.CreateBatchJobConfig{DisplayName: name})
	if err != nil {
		return "", submitError(c.classify(err, geminiFailure(err), &p.cfg))
	}
	return job.Name, nil
}

func (p *geminiProvider) FindBatch(ctx context.Context, name string, since time.Time, _ []int, known map[string]bool) (string, bool, error) {
	c := startCall(ctx, p.cfg.batchTimeout(), 0)
	defer c.cancel()
	for job, err := range p.client.Batches.All(c.ctx) {
		if err != nil {
			return "", false, c.classify(err, geminiFailure(err), &p.cfg)
		}
		if job.DisplayName == name && !known[job.Name] {
			return job.Name, true, nil
		}
		if !job.CreateTime.IsZero() && job.CreateTime.Before(since.Add(-time.Hour)) {
			break
		}
	}
	return "", false, nil
}

func (p *geminiProvider) getBatch(ctx context.Context, id string, timeout time.Duration) (*genai.BatchJob, error) {
	c := startCall(ctx, timeout, 0)
	defer c.cancel()
	job, err := p.client.Batches.Get(c.ctx, id, nil)
	if err != nil {
		return nil, c.classify(err, geminiFailure(err), &p.cfg)
	}
	return job, nil
}

var geminiStates = map[genai.JobState]string{
	genai.JobStateQueued:             llm.BatchValidating,
	genai.JobStatePending:            llm.BatchValidating,
	genai.JobStateRunning:            llm.BatchInProgress,
	genai.JobStateUpdating:           llm.BatchInProgress,
	genai.JobStatePaused:             llm.BatchInProgress,
	genai.JobStateCancelling:         llm.BatchCancelling,
	genai.JobStateSucceeded:          llm.BatchCompleted,
	genai.JobStatePartiallySucceeded: llm.BatchCompleted,
	genai.JobStateFailed:             llm.BatchFailed,
	genai.JobStateCancelled:          llm.BatchCancelled,
	genai.JobStateExpired:            llm.BatchExpired,
}

func (p *geminiProvider) BatchStatus(ctx context.Context, id string) (*llm.BatchState, error) {
	job, err := p.getBatch(ctx, id, p.cfg.batchTimeout())
	if err != nil {
		return nil, err
	}
	st := &llm.BatchState{State: geminiStates[job.State]}
	if st.State == "" {
		st.State = string(job.State)
	}
	switch st.State {
	case llm.BatchCompleted, llm.BatchFailed, llm.BatchCancelled, llm.BatchExpired:
		st.Ended = true
	}
	if cs := job.CompletionStats; cs != nil {
		st.Done = int(cs.SuccessfulCount + cs.FailedCount)
		st.Failed = int(cs.FailedCount)
		st.Total = st.Done + int(cs.IncompleteCount)
	}
	if job.Error != nil {
		st.Err = clip(redact(job.Error.Message, p.cfg.APIKey))
	}
	return st, nil
}

func (p *geminiProvider) BatchResults(ctx context.Context, id string, lookup func(string) *llm.Request, fn func(llm.BatchResult) error) error {
	job, err := p.getBatch(ctx, id, p.cfg.batchTimeout())
	if err != nil {
		return err
	}
	if job.Dest == nil {
		return nil
	}
	for i, ir := range job.Dest.InlinedResponses {
		if ir == nil {
			continue
		}
		cid := ir.Metadata[geminiBatchKey]
		if cid == "" {
			// Responses come in request order; ids are <name>-<index>.
			cid = fmt.Sprintf("%s-%d", job.DisplayName, i)
		}
		res := llm.BatchResult{ID: cid}
		switch {
		case ir.Error != nil:
			res.Err = geminiLineError(ir.Error, &p.cfg)
		case ir.Response == nil:
			res.Err = &llm.Error{Kind: llm.Transient, Msg: "the batch returned neither a response nor an error for this request"}
		default:
			req := lookup(cid)
			if req == nil {
				req = &llm.Request{}
			}
			res.Resp = geminiResponse(req, ir.Response)
		}
		if err := fn(res); err != nil {
			return err
		}
	}
	return nil
}

// geminiLineError classifies a line's google.rpc.Status; some gateways put
// an HTTP status in code instead of a gRPC one, so both are read.
func geminiLineError(e *genai.JobError, cfg *Config) error {
	status := 500
	if e.Code != nil {
		switch c := int(*e.Code); {
		case c >= 100:
			status = c
		case c == 3 || c == 9 || c == 11: // INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE
			status = 400
		case c == 16: // UNAUTHENTICATED
			status = 401
		case c == 7: // PERMISSION_DENIED
			status = 403
		case c == 5: // NOT_FOUND
			status = 404
		case c == 8: // RESOURCE_EXHAUSTED
			status = 429
		}
	}
	return lineError(status, "", e.Message, cfg)
}

func (p *geminiProvider) CancelBatch(ctx context.Context, id string) error {
	c := startCall(ctx, p.cfg.Timeout, 0)
	defer c.cancel()
	if err := p.client.Batches.Cancel(c.ctx, id, nil); err != nil {
		return c.classify(err, geminiFailure(err), &p.cfg)
	}
	return nil
}
