package providers

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// Every provider here implements llm.Batcher; the compile-time checks keep
// the three batch sides honest.
var (
	_ llm.Batcher = (*openAIProvider)(nil)
	_ llm.Batcher = (*anthropicProvider)(nil)
	_ llm.Batcher = (*geminiProvider)(nil)
)

// minBatchTimeout bounds uploads and result downloads, which can be hundreds
// of megabytes: a chat call's timeout is too short for them.
const minBatchTimeout = 10 * time.Minute

func (cfg *Config) batchTimeout() time.Duration { return max(cfg.Timeout, minBatchTimeout) }

// lineError classifies a failed line of a job as a live call with that HTTP
// status would be: 429 and 5xx are transient (the line goes out again in the
// next wave), other 4xx permanent.
func lineError(status int, code, msg string, cfg *Config) error {
	return statusError(apiFailure{status: status, msg: msg, code: code}, nil, cfg, nil, time.Now())
}

// notRun is the error of a line a job never reached because it expired or
// was cancelled first; it is transient so the line is sent again.
func notRun(state string) error {
	return &llm.Error{Kind: llm.Transient, Msg: "the batch " + state + " before this request ran"}
}

// submitError marks a 404 or 405 from a batch endpoint as the server having
// no batch API, so the caller can fall back to live calls.
func submitError(err error) error {
	var le *llm.Error
	if errors.As(err, &le) && (le.Status == http.StatusNotFound || le.Status == http.StatusMethodNotAllowed) {
		return fmt.Errorf("%w (%v)", llm.ErrNoBatchEndpoint, err)
	}
	return err
}
