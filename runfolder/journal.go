package runfolder

import (
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// JournalRecord is one line of journal.jsonl, one of three kinds:
//
//   - an intent (Sent): an attempt is about to be sent, written before it is;
//   - an outcome: the attempt's reply (Resp) or its failure (Err), carrying
//     the intent's ID;
//   - a settlement: written when a journal is opened for an intent that never
//     got its outcome (the process died with the call in flight), as a
//     failure that says so.
//
// Only outcomes with a usable reply (llm.Response.Problem is empty) serve as
// cache entries; failures are kept so every attempt is accounted for, but
// are never replayed.
type JournalRecord struct {
	Key       string        `json:"k"`
	ID        string        `json:"i,omitempty"`
	Model     string        `json:"m"`
	Case      string        `json:"c"`
	Stage     string        `json:"s"`
	Attempt   int           `json:"a"`
	Time      time.Time     `json:"t"`
	LatencyMS float64       `json:"l"`
	Sent      bool          `json:"sent,omitempty"`
	Resp      *llm.Response `json:"r,omitempty"`
	Err       string        `json:"e,omitempty"`
	// Fresh, set by the journal's Lookup: the reply was journaled since
	// the journal was opened (in this apply), not found there from an
	// earlier one. It is never written.
	Fresh bool `json:"-"`
}
