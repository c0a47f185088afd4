//go:build js

package view

// A bundle's viewer (GOOS=js) is compiled without the engine, which does
// not build for WebAssembly: the case pages come written (JSON) and the
// answer policies come with the run (bundle.go).

import "encoding/json"

// TraceStep is one stage of a case's trace: the fields of the engine's
// pipeline.TraceStep, as a case page carries them.
type TraceStep struct {
	Stage string         `json:"stage"`
	Kind  string         `json:"kind,omitempty"`
	Visit int            `json:"visit"`
	Out   map[string]any `json:"out,omitempty"`
	Note  map[string]any `json:"note,omitempty"`
	Next  string         `json:"next,omitempty"`
	Err   string         `json:"error,omitempty"`
}

func readTrace(s string) ([]TraceStep, error) {
	var steps []TraceStep
	if s == "" {
		return nil, nil
	}
	err := json.Unmarshal([]byte(s), &steps)
	return steps, err
}

// answerPolicyOf: a bundle holds the policy of each of its tasks; this
// answers only for a task it lacks, which counts no answer.
func answerPolicyOf(dir, task string) answerPolicy { return answerPolicy{} }

// checkFormat: a bundle was written by the promoral that built its viewer.
func checkFormat(dir string) error { return nil }
