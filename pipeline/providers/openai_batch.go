package providers

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/shared"

	"github.com/promoral/promoral/pipeline/llm"
)

// OpenAI's Batch API: the requests go up as a JSONL file (Files API,
// purpose batch), a batch job runs over it, and the answers come back as an
// output file and an error file, each line naming its custom_id.
const (
	openAIBatchMaxRequests = 50_000
	openAIBatchMaxBytes    = 200 << 20
	// openAIBatchTag is the metadata key that carries promoral's name for a
	// job, by which a restarted run finds a job it never recorded.
	openAIBatchTag = "promoral_batch"
)

// openAIBatchLine is the envelope of one line of the input file. The SDK
// has no type for it; the body inside is the SDK's own encoding of the
// chat completion parameters.
type openAIBatchLine struct {
	CustomID string          `json:"custom_id"`
	Method   string          `json:"method"`
	URL      string          `json:"url"`
	Body     json.RawMessage `json:"body"`
}

// openAIBatchResult is one line of an output or error file.
type openAIBatchResult struct {
	CustomID string `json:"custom_id"`
	Response *struct {
		StatusCode int             `json:"status_code"`
		Body       json.RawMessage `json:"body"`
	} `json:"response"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// uploads remembers the input file of a job whose creation failed, so a
// retry does not upload the same lines again.
var uploads sync.Map // name -> file id

func (p *openAIProvider) BatchLimits() (int, int64) {
	return openAIBatchMaxRequests, openAIBatchMaxBytes
}

func (p *openAIProvider) BatchLine(id string, req *llm.Request) (llm.BatchLine, error) {
	params, err := p.params(req)
	if err != nil {
		return llm.BatchLine{}, err
	}
	if len(req.Extra) > 0 {
		params.SetExtraFields(req.Extra)
	}
	body, err := json.Marshal(params)
	if err != nil {
		return llm.BatchLine{}, fmt.Errorf("encoding a batch line: %w", err)
	}
	line, err := json.Marshal(openAIBatchLine{CustomID: id, Method: "POST", URL: "/v1/chat/completions", Body: body})
	if err != nil {
		return llm.BatchLine{}, fmt.Errorf("encoding a batch line: %w", err)
	}
	line = append(line, '\n')
	return llm.BatchLine{ID: id, Size: len(line), Body: line, Samples: req.Samples()}, nil
}

func (p *openAIProvider) SubmitBatch(ctx context.Context, name string, lines []llm.BatchLine) (string, error) {
	fileID, _ := uploads.Load(name)
	if fileID == nil {
		parts := make([]io.Reader, len(lines))
		for i, l := range lines {
			parts[i] = bytes.NewReader(l.Body.([]byte))
		}
		c := startCall(ctx, p.cfg.batchTimeout(), 0)
		f, err := p.client.Files.New(c.ctx, openai.FileNewParams{
			File:    openai.File(io.MultiReader(parts...), name+".jsonl", "application/jsonl"),
			Purpose: openai.FilePurposeBatch,
		})
		c.cancel()
		if err != nil {
			return "", submitError(c.classify(err, openAIFailure(err), &p.cfg))
		}
		fileID = f.ID
		uploads.Store(name, f.ID)
	}
	c := startCall(ctx, p.cfg.batchTimeout(), 0)
	defer c.cancel()
	b, err := p.client.Batches.New(c.ctx, openai.BatchNewParams{
		InputFileID:      fileID.(string),
		Endpoint:         openai.BatchNewParamsEndpointV1ChatCompletions,
		CompletionWindow: openai.BatchNewParamsCompletionWindow24h,
		Metadata:         shared.Metadata{openAIBatchTag: name},
	})
	if err != nil {
		return "", submitError(c.classify(err, openAIFailure(err), &p.cfg))
	}
	uploads.Delete(name)
	return b.ID, nil
}

func (p *openAIProvider) FindBatch(ctx context.Context, name string, since time.Time, _ []int, known map[string]bool) (string, bool, error) {
	c := startCall(ctx, p.cfg.batchTimeout(), 0)
	defer c.cancel()
	// Newest first: stop at jobs created well before the one we look for.
	it := p.client.Batches.ListAutoPaging(c.ctx, openai.BatchListParams{Limit: openai.Int(100)})
	for it.Next() {
		b := it.Current()
		if b.Metadata[openAIBatchTag] == name && !known[b.ID] {
			return b.ID, true, nil
		}
		if b.CreatedAt != 0 && time.Unix(b.CreatedAt, 0).Before(since.Add(-time.Hour)) {
			break
		}
	}
	if err := it.Err(); err != nil {
		return "", false, c.classify(err, openAIFailure(err), &p.cfg)
	}
	return "", false, nil
}

func (p *openAIProvider) BatchStatus(ctx context.Context, id string) (*llm.BatchState, error) {
	b, err := p.getBatch(ctx, id)
	if err != nil {
		return nil, err
	}
	st := &llm.BatchState{State: string(b.Status), Total: int(b.RequestCounts.Total),
		Done: int(b.RequestCounts.Completed + b.RequestCounts.Failed), Failed: int(b.RequestCounts.Failed)}
	switch b.Status {
	case openai.BatchStatusCompleted, openai.BatchStatusExpired, openai.BatchStatusCancelled, openai.BatchStatusFailed:
		st.Ended = true
	}
	var msgs []string
	for _, e := range b.Errors.Data {
		m := e.Message
		if e.Line != 0 {
			m = fmt.Sprintf("line %d: %s", e.Line, m)
		}
		msgs = append(msgs, m)
	}
	st.Err = clip(redact(strings.Join(msgs, "; "), p.cfg.APIKey))
	return st, nil
}

func (p *openAIProvider) getBatch(ctx context.Context, id string) (*openai.Batch, error) {
	c := startCall(ctx, p.cfg.Timeout, 0)
	defer c.cancel()
	b, err := p.client.Batches.Get(c.ctx, id)
	if err != nil {
		return nil, c.classify(err, openAIFailure(err), &p.cfg)
	}
	return b, nil
}

func (p *openAIProvider) BatchResults(ctx context.Context, id string, lookup func(string) *llm.Request, fn func(llm.BatchResult) error) error {
	b, err := p.getBatch(ctx, id)
	if err != nil {
		return err
	}
	for _, file := range []string{b.OutputFileID, b.ErrorFileID} {
		if file == "" {
			continue
		}
		if err := p.readResultFile(ctx, file, lookup, fn); err != nil {
			return err
		}
	}
	return nil
}

func (p *openAIProvider) readResultFile(ctx context.Context, file string, lookup func(string) *llm.Request, fn func(llm.BatchResult) error) error {
	c := startCall(ctx, p.cfg.batchTimeout(), 0)
	defer c.cancel()
	resp, err := p.client.Files.Content(c.ctx, file)
	if err != nil {
		return c.classify(err, openAIFailure(err), &p.cfg)
	}
	defer resp.Body.Close()
	r := bufio.NewReaderSize(resp.Body, 1<<20)
	for {
		line, rerr := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var res openAIBatchResult
			if err := json.Unmarshal(line, &res); err != nil {
				return &llm.Error{Kind: llm.Transient, Msg: "a batch result file has a damaged line: " + clip(err.Error())}
			}
			if err := fn(p.batchResult(&res, lookup)); err != nil {
				return err
			}
		}
		if rerr == io.EOF {
			return nil
		}
		if rerr != nil {
			return c.classify(rerr, apiFailure{}, &p.cfg)
		}
	}
}

func (p *openAIProvider) batchResult(res *openAIBatchResult, lookup func(string) *llm.Request) llm.BatchResult {
	out := llm.BatchResult{ID: res.CustomID}
	switch {
	case res.Error != nil:
		switch res.Error.Code {
		case "batch_expired":
			out.Err = notRun("expired")
		case "batch_cancelled":
			out.Err = notRun("was cancelled")
		default:
			out.Err = lineError(500, res.Error.Code, res.Error.Message, &p.cfg)
		}
	case res.Response == nil:
		out.Err = &llm.Error{Kind: llm.Transient, Msg: "the batch returned neither a response nor an error for this request"}
	case res.Response.StatusCode != 200:
		var body struct {
			Error struct {
				Message string `json:"message"`
				Code    string `json:"code"`
				Type    string `json:"type"`
			} `json:"error"`
		}
		json.Unmarshal(res.Response.Body, &body)
		code := body.Error.Code
		if code == "" {
			code = body.Error.Type
		}
		out.Err = lineError(res.Response.StatusCode, code, body.Error.Message, &p.cfg)
	default:
		var cc openai.ChatCompletion
		if err := json.Unmarshal(res.Response.Body, &cc); err != nil {
			out.Err = &llm.Error{Kind: llm.Transient, Msg: "a batch reply is not a chat completion: " + clip(err.Error())}
			break
		}
		req := lookup(res.CustomID)
		if req == nil {
			req = &llm.Request{}
		}
		out.Resp = p.response(req, &cc)
	}
	return out
}

func (p *openAIProvider) CancelBatch(ctx context.Context, id string) error {
	c := startCall(ctx, p.cfg.Timeout, 0)
	defer c.cancel()
	if _, err := p.client.Batches.Cancel(c.ctx, id); err != nil {
		return c.classify(err, openAIFailure(err), &p.cfg)
	}
	return nil
}
