//go:build !js

package view

// What the view takes from the engine to read a run folder. A bundle's
// viewer is compiled to WebAssembly without the engine (engine_js.go): it
// reads what the bundle prepared with these.

import (
	"github.com/promoral/promoral/pipeline"
	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/pipeline/spec"
)

// TraceStep is one stage of a case's trace.
type TraceStep = pipeline.TraceStep

func readTrace(s string) ([]TraceStep, error) { return pipeline.ReadTrace(s) }

// answerPolicyOf reads a task's policy from the run folder's manifest.
func answerPolicyOf(dir, task string) answerPolicy {
	p := review.AnswerPolicyOf(dir, task)
	return policyFrom(p.Unparsed(), p.Errors(), p.Errors() == spec.ErrorsIncomplete, p.Score)
}
