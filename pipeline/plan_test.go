package pipeline_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/parquetio"
)

func TestPlanCountsCallsAndJournal(t *testing.T) {
	dir := writeTree(t, baseTree(map[string]string{
		"configs/run.yaml": strings.Replace(baseTree(nil)["configs/run.yaml"], "models:", "models:\n  - {name: priced, provider: scripted, price: {input: 2, output: 8}, script: {replies: [{text: \"Answer: wrong\"}]}}", 1) +
			"matrix: {models: [priced]}\n",
	}))
	out := filepath.Join(dir, "out")
	st := mustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	p, err := pipeline.MakePlan(st, out)
	if err != nil {
		t.Fatal(err)
	}
	// one_shot: 1 call per item; loop: ask + again, again up to 3 times.
	// 6 items: best 6*1 + 6*2 = 18, worst 6*1 + 6*(1+3) = 30.
	tot := p.Total
	if tot.Cases != 12 || tot.CallsBest != 18 || tot.CallsWorst != 30 || tot.CallsJournaled != 0 || !p.HasWork() {
		t.Fatalf("plan before apply: %+v", tot)
	}
	if tot.InputTokensBest <= 0 || tot.InputTokensWorst < tot.InputTokensBest || tot.OutputTokensWorst < tot.OutputTokensBest {
		t.Errorf("token ranges: %+v", tot)
	}
	// no max_tokens set: the worst output is the bound the spend cap
	// reserves for such a request, per call.
	if tot.OutputTokensWorst != 30*llm.DefaultReplyTokens {
		t.Errorf("worst output tokens %d, want %d", tot.OutputTokensWorst, 30*llm.DefaultReplyTokens)
	}
	req := &llm.Request{Model: "m", Messages: []llm.Message{{Role: "user", Content: "x"}}}
	m := &pipeline.Model{Name: "m", Spec: &pipeline.ModelSpec{Price: pipeline.Price{Output: 1e6}}}
	if got := pipeline.WorstCost(m, req, false); got < float64(llm.DefaultReplyTokens) || got > float64(llm.DefaultReplyTokens)+1000 {
		t.Errorf("the spend cap reserves $%v at $1 per output token; the plan's bound is %d tokens", got, llm.DefaultReplyTokens)
	}
	if tot.CostWorst <= tot.CostBest || tot.CostBest <= 0 {
		t.Errorf("cost range %v–%v", tot.CostBest, tot.CostWorst)
	}
	sum, _ := apply(t, st, out)
	p2, err := pipeline.MakePlan(mustLoad(t, filepath.Join(dir, "configs/run.yaml")), out)
	if err != nil {
		t.Fatal(err)
	}
	if p2.HasWork() || p2.Total.CasesDone != 12 || p2.Total.CallsJournaled != sum.CallsNew {
		t.Fatalf("plan after apply: %+v (apply made %d calls)", p2.Total, sum.CallsNew)
	}
}

// Two cases that send the same request at the same time pay for it once,
// and the accounting says one new call and one cached.
func TestIdenticalConcurrentRequestsArePaidOnce(t *testing.T) {
	dir := writeTree(t, baseTree(map[string]string{
		"data/items.jsonl": `{"id":"a","text":"same","gold":"1"}
{"id":"b","text":"same","gold":"1"}
`,
		"configs/run.yaml": `name: dup
models:
  - {name: slow, provider: scripted, script: {latency: 50ms, replies: [{text: "Answer: wrong"}]}}
tasks: [toy]
strategies: [one_shot]
settings: {concurrency: 2}
`,
	}))
	st := mustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	sum, _ := apply(t, st, filepath.Join(dir, "out"))
	if sum.CallsNew != 1 || sum.CallsCached != 1 || sum.Attempts != 1 {
		t.Fatalf("want 1 new + 1 cached from 1 attempt, got %+v", sum)
	}
	rows, _ := parquetio.Read(filepath.Join(dir, "out", "calls.parquet"))
	if len(rows) != 2 {
		t.Fatalf("calls.parquet rows = %d, want 2", len(rows))
	}
}

func TestTokenizerForOpenAIModels(t *testing.T) {
	count, name, ok := pipeline.Tokenizer(&pipeline.ModelSpec{Name: "g", Provider: "openai", Model: "gpt-4.1"})
	if !ok || name != "o200k_base" {
		t.Fatalf("gpt-4.1: %q %v", name, ok)
	}
	// o200k_base: "hello world" is two tokens, "Hello, world!" four.
	if n := count("hello world"); n != 2 {
		t.Errorf("hello world = %d tokens", n)
	}
	if n := count("Hello, world!"); n != 4 {
		t.Errorf("Hello, world! = %d tokens", n)
	}
	if _, _, ok := pipeline.Tokenizer(&pipeline.ModelSpec{Name: "c", Provider: "anthropic", Model: "claude-sonnet-4"}); ok {
		t.Error("no Go tokenizer exists for Claude; plan must say it estimates")
	}
}
