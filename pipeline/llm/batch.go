package llm

import (
	"context"
	"errors"
	"time"
)

// Batcher is implemented by providers that sell batch processing: many
// requests sent as one job, answered within a completion window (24 hours
// at OpenAI, Anthropic and Google) at about half the live price.
//
// A batch is named by the caller before it exists (the name travels in the
// job's metadata where the API has any), so a process killed between
// creating a job and recording its id can find it again instead of paying
// for it twice. Every method makes its HTTP requests once: the caller counts,
// paces and retries.
type Batcher interface {
	// BatchLimits bounds one job: requests and encoded bytes.
	BatchLimits() (maxRequests int, maxBytes int64)
	// BatchLine encodes one request for a job under the given custom id.
	// An error means the request cannot go in a job (it is sent live).
	BatchLine(id string, req *Request) (BatchLine, error)
	// SubmitBatch uploads the lines and creates the job, returning its id.
	// ErrNoBatchEndpoint means the server has no batch API at all.
	SubmitBatch(ctx context.Context, name string, lines []BatchLine) (string, error)
	// FindBatch looks for a job submitted under name since the given time
	// whose id was never recorded (known lists the ids that were). samples
	// holds each line's sample count, for APIs that keep no metadata and
	// can only match a job by its size and time.
	FindBatch(ctx context.Context, name string, since time.Time, samples []int, known map[string]bool) (id string, found bool, err error)
	// BatchStatus reports a job's state.
	BatchStatus(ctx context.Context, id string) (*BatchState, error)
	// BatchResults calls fn for every line the job answered or failed, in
	// the provider's order (not the submission order). Lines with no result
	// (a job that expired or was cancelled first) may be absent. lookup
	// returns the request behind a custom id, or nil when it is not known
	// (a reply decodes as for a plain one-sample request then).
	BatchResults(ctx context.Context, id string, lookup func(customID string) *Request, fn func(BatchResult) error) error
	// CancelBatch asks the provider to stop a job; lines already answered
	// keep their results.
	CancelBatch(ctx context.Context, id string) error
}

// BatchLine is one request encoded for a provider's job.
type BatchLine struct {
	ID string
	// Size is the encoded size in bytes, for the job's byte limit.
	Size int
	// Body is the provider's own encoding, opaque to the caller.
	Body any
	// Samples is how many replies the request asks for.
	Samples int
}

// Normalised job states. Providers name them differently (Anthropic has only
// in_progress, canceling and ended; Gemini has pending, running, succeeded…);
// these are OpenAI's, the richest set.
const (
	BatchValidating = "validating"
	BatchInProgress = "in_progress"
	BatchFinalizing = "finalizing"
	BatchCompleted  = "completed"
	BatchExpired    = "expired"
	BatchCancelling = "cancelling"
	BatchCancelled  = "cancelled"
	BatchFailed     = "failed"
)

// BatchState is a job's progress as its provider reports it.
type BatchState struct {
	State string
	// Ended is true once no line will change any more: results (if any)
	// can be read.
	Ended bool
	// Total, Done and Failed count lines; Done includes Failed.
	Total, Done, Failed int
	// Err is the provider's reason for a failed job.
	Err string
}

// BatchResult is one line's outcome: a reply, or an error classified like a
// live call's (*Error), so expired and cancelled lines are transient.
type BatchResult struct {
	ID   string
	Resp *Response
	Err  error
}

// ErrNoBatchEndpoint is returned by SubmitBatch when the server has no batch
// API (an OpenAI-compatible server answering 404 on /files or /batches).
var ErrNoBatchEndpoint = errors.New("the server has no batch endpoint")
