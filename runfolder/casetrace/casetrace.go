// Package casetrace is the trace of one case as results.parquet's trace
// column records it. It imports nothing but encoding/json, so the viewer
// compiled to WebAssembly reads traces with the same type as the engine
// writes them.
package casetrace

import "encoding/json"

// Step is one stage run of a case, as results.parquet's trace column
// records it for people reading the run (promoral view): the stage, which
// visit of it this was, what it published (long strings clipped: the
// replies themselves are in calls.parquet) and any notes it left with
// Exec.Note. Judge stages carry the "judge." prefix.
type Step struct {
	Stage string `json:"stage"`
	// Kind is the stage's kind as the strategy names it (its registered
	// kind: prompt, extract, branch, compute, ...); empty in runs written
	// before the trace recorded it.
	Kind  string         `json:"kind,omitempty"`
	Visit int            `json:"visit"`
	Out   map[string]any `json:"out,omitempty"`
	Note  map[string]any `json:"note,omitempty"`
	// Next is where the stage sent the case when it chose ("end" or a
	// stage name); empty when the graph simply went on.
	Next string `json:"next,omitempty"`
	Err  string `json:"error,omitempty"`
}

// Read decodes a trace column value.
func Read(s string) ([]Step, error) {
	var steps []Step
	if s == "" {
		return nil, nil
	}
	err := json.Unmarshal([]byte(s), &steps)
	return steps, err
}
