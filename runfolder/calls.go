package runfolder

import (
	"time"

	"github.com/promoral/promoral/pipeline/parquetio"
)

// Call is one row of calls.parquet: one attempt at one model call, or a
// reply served from the journal or shared with an identical request in
// flight (Cached). Replied says a reply came back: without one the reply's
// columns (text, finish reason, version, tokens, cost) are null.
type Call struct {
	CaseID, Model, Strategy, Task, ItemID string
	Repeat                                int
	Stage                                 string
	Attempt                               int
	RequestHash                           string
	RequestMessages, RequestParams        string

	Replied                                                            bool
	ResponseText                                                       string
	ResponseChoices                                                    string // "" (null) unless the request asked for several
	FinishReason                                                       string
	ModelVersion                                                       string
	PromptTokens, CompletionTokens, CachedPromptTokens, ThinkingTokens int
	CostUSD                                                            float64

	LatencyMS float64
	Cached    bool
	Error     string // "": null
	Time      time.Time
	Final     bool
	Attempts  int
	BatchID   string // "": null (a live call)
}

func replied(r *Call, v any) any {
	if !r.Replied {
		return nil
	}
	return v
}

// CallSchema is calls.parquet's columns.
var CallSchema = Schema[Call]{
	{"case_id", parquetio.ColString, false, "the case that asked for the call", func(r *Call) any { return r.CaseID }},
	{"model", parquetio.ColString, true, "the case that asked for the call", func(r *Call) any { return r.Model }},
	{"strategy", parquetio.ColString, true, "the case that asked for the call", func(r *Call) any { return r.Strategy }},
	{"task", parquetio.ColString, true, "the case that asked for the call", func(r *Call) any { return r.Task }},
	{"item_id", parquetio.ColString, false, "the case that asked for the call", func(r *Call) any { return r.ItemID }},
	{"repeat", parquetio.ColInt, false, "the case's sample index; it is part of `request_hash` (a judge's calls carry none: the same answer judged twice is one call)", func(r *Call) any { return r.Repeat }},
	{"stage", parquetio.ColString, true, "the prompt stage that made it", func(r *Call) any { return r.Stage }},
	{"attempt", parquetio.ColInt, false, "the attempt's number within this apply", func(r *Call) any { return r.Attempt }},
	{"request_hash", parquetio.ColString, false, "the cache key: the hash of the request's canonical form, by which the journal serves it", func(r *Call) any { return r.RequestHash }},
	{"request_messages", parquetio.ColString, false, "(JSON) the messages sent", func(r *Call) any { return r.RequestMessages }},
	{"request_params", parquetio.ColString, true, "(JSON) the rest of the request (model, temperature, `max_tokens`, thinking, …)", func(r *Call) any { return r.RequestParams }},
	{"response_text", parquetio.ColString, false, "the reply's text (the first sample's)", func(r *Call) any { return replied(r, r.ResponseText) }},
	{"response_choices", parquetio.ColString, false, "(JSON) every sample, when a request asked for more than one (`n`)", func(r *Call) any { return replied(r, nonEmpty(r.ResponseChoices)) }},
	{"finish_reason", parquetio.ColString, true, "normalised across providers: `stop`, `length` (cut off by `max_tokens`), `blocked` (a safety filter), `other`", func(r *Call) any { return replied(r, r.FinishReason) }},
	{"prompt_tokens", parquetio.ColInt, false, "as the provider billed them", func(r *Call) any { return replied(r, r.PromptTokens) }},
	{"completion_tokens", parquetio.ColInt, false, "as the provider billed them", func(r *Call) any { return replied(r, r.CompletionTokens) }},
	{"cached_prompt_tokens", parquetio.ColInt, false, "as the provider billed them", func(r *Call) any { return replied(r, r.CachedPromptTokens) }},
	{"thinking_tokens", parquetio.ColInt, false, "as the provider billed them", func(r *Call) any { return replied(r, r.ThinkingTokens) }},
	{"latency_ms", parquetio.ColFloat, false, "the request's wall time", func(r *Call) any { return r.LatencyMS }},
	{"cached", parquetio.ColBool, false, "served from the journal, no request sent", func(r *Call) any { return r.Cached }},
	{"error", parquetio.ColString, false, "the attempt's error; null when it succeeded", func(r *Call) any { return nonEmpty(r.Error) }},
	{"model_version", parquetio.ColString, true, "the model version the provider reports", func(r *Call) any { return replied(r, r.ModelVersion) }},
	{"cost_usd", parquetio.ColFloat, false, "the attempt's cost at the price table (batch prices for a batch reply); 0 for a row served from the journal", func(r *Call) any { return replied(r, r.CostUSD) }},
	{"time", parquetio.ColTime, false, "when the attempt ended", func(r *Call) any { return r.Time }},
	{"final", parquetio.ColBool, false, "this row's reply is the one the case used (or the failed last attempt of a call that failed)", func(r *Call) any { return r.Final }},
	{"attempts", parquetio.ColInt, false, "attempts this apply made for the call (0 when the journal or an identical request in flight served it), on every row of the call", func(r *Call) any { return r.Attempts }},
	{"batch_id", parquetio.ColString, true, "the provider batch job that answered; null for a live call", func(r *Call) any { return nonEmpty(r.BatchID) }},
}
