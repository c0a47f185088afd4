package spec_test

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/spec"
)

func TestBatchModeValidation(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BatchPlanTree("{mode: bulk}"))
	_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
	studytest.WantErr(t, err, "run.yaml:3", "limits.mode", `unknown mode "bulk"`, "use live or batch")
	dir = studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": `name: s
models:
  - {name: s, provider: scripted, limits: {mode: batch}, script: {replies: [{text: hi}]}}
tasks: [toy]
strategies: [one_shot]
`}))
	_, err = spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
	studytest.WantErr(t, err, "provider scripted has no batch mode")
}

func TestBatchPrice(t *testing.T) {
	u := llm.Usage{PromptTokens: 1_000_000, CompletionTokens: 1_000_000, CachedPromptTokens: 500_000}
	p := spec.Price{Input: 2, Output: 8, CachedInput: 0.5, BatchInput: 1, BatchOutput: 4}
	if got := p.CostOf(&llm.Response{Usage: u, Batch: "batch_1"}); math.Abs(got-(0.5+0.5+4)) > 1e-9 {
		t.Errorf("batch cost %v", got)
	}
	if got := p.CostOf(&llm.Response{Usage: u}); math.Abs(got-(1+0.25+8)) > 1e-9 {
		t.Errorf("live cost %v", got)
	}
	// No batch price: a batch reply costs the live price, never a guess.
	live := spec.Price{Input: 2, Output: 8}
	if live.CostOf(&llm.Response{Usage: u, Batch: "b"}) != live.Cost(u) {
		t.Error("a batch reply without batch prices should cost the live price")
	}
}
