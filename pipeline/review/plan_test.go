package review_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/pipeline/spec"
)

func TestPlanCountsCallsAndJournal(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{
		"configs/run.yaml": strings.Replace(studytest.BaseTree(nil)["configs/run.yaml"], "models:", "models:\n  - {name: priced, provider: scripted, price: {input: 2, output: 8}, script: {replies: [{text: \"Answer: wrong\"}]}}", 1) +
			"matrix: {models: [priced]}\n",
	}))
	out := filepath.Join(dir, "out")
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	p, err := review.MakePlanWith(st, out, review.PlanOptions{})
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
	m := &spec.Model{Name: "m", Spec: &spec.ModelSpec{Price: spec.Price{Output: 1e6}}}
	if got := engine.WorstCost(m, req, false); got < float64(llm.DefaultReplyTokens) || got > float64(llm.DefaultReplyTokens)+1000 {
		t.Errorf("the spend cap reserves $%v at $1 per output token; the plan's bound is %d tokens", got, llm.DefaultReplyTokens)
	}
	if tot.CostWorst <= tot.CostBest || tot.CostBest <= 0 {
		t.Errorf("cost range %v–%v", tot.CostBest, tot.CostWorst)
	}
	sum, _ := studytest.Apply(t, st, out)
	p2, err := review.MakePlanWith(studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), out, review.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p2.HasWork() || p2.Total.CasesDone != 12 || p2.Total.CallsJournaled != sum.CallsNew {
		t.Fatalf("plan after apply: %+v (apply made %d calls)", p2.Total, sum.CallsNew)
	}
}

// Repeat 0 keeps the key a run without repeats journaled; raising k pays
// only for the new repeats, and plan says so before.
func TestRepeatsRaiseCallsOnlyNew(t *testing.T) {
	t.Setenv(engine.CacheEnv, t.TempDir())
	t.Setenv("PROMORAL_TEST_KEY_REP", "sk-test-0000")
	srv := studytest.NewRandomServer(t, 2)
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	cfg := studytest.RepeatsStudy(t, dir, srv, 0)
	first := studytest.RunRepeats(t, cfg, out, context.Background())
	if first.Cases != 6 || first.CallsNew != 6 {
		t.Fatalf("without repeats: %s", first)
	}
	prev := 1
	for _, k := range []int{2, 4} {
		before := srv.Calls.Load()
		cfg = studytest.RepeatsStudy(t, dir, srv, k)
		plan, err := review.MakePlanWith(studytest.MustLoad(t, cfg), out, review.PlanOptions{})
		if err != nil {
			t.Fatal(err)
		}
		doneBefore := 6 * prev
		prev = k
		if plan.Total.Cases != 6*k || plan.Total.CasesDone != doneBefore || plan.Total.CallsBest != 6*k-doneBefore {
			t.Errorf("plan at k=%d: %d cases, %d done, %d calls; want %d, %d, %d", k, plan.Total.Cases, plan.Total.CasesDone, plan.Total.CallsBest,
				6*k, doneBefore, 6*k-doneBefore)
		}
		sum := studytest.RunRepeats(t, cfg, out, context.Background())
		if sum.Cases != 6*k || sum.CallsNew != 6*k-doneBefore || sum.CallsCached != doneBefore {
			t.Errorf("k=%d: want %d cases, %d new and %d cached calls; got %s", k, 6*k, 6*k-doneBefore, doneBefore, sum)
		}
		if n := srv.Calls.Load() - before; n != int64(6*k-doneBefore) {
			t.Errorf("k=%d: the server answered %d new calls, want %d", k, n, 6*k-doneBefore)
		}
	}
}

// A thinking-budget sweep: 0 turns thinking off, a budget turns it on for
// every request of the strategy, and plan's worst case counts the budget.
func TestSweepThinkingBudget(t *testing.T) {
	t.Setenv(engine.CacheEnv, t.TempDir())
	t.Setenv("PROMORAL_TEST_KEY_REP", "sk-test-0000")
	srv := studytest.NewRandomServer(t, 12)
	files := studytest.BaseTree(nil)
	run := func(sweep string) string {
		return fmt.Sprintf(`name: think-run
models:
  - {name: rnd, provider: openai, model: gpt-4.1, base_url: %s, key_env: PROMORAL_TEST_KEY_REP, price: {input: 1, output: 1}%s}
tasks: [toy]
strategies: [one_shot]
`, srv.BaseURL(), sweep)
	}
	files["configs/run.yaml"] = run(", sweep: {thinking_budget: [0, 1024]}")
	files["configs/plain.yaml"] = run("")
	dir := studytest.WriteTree(t, files)
	cfg := filepath.Join(dir, "configs/run.yaml")
	out := filepath.Join(dir, "out")
	swept, err := review.MakePlanWith(studytest.MustLoad(t, cfg), out, review.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := review.MakePlanWith(studytest.MustLoad(t, filepath.Join(dir, "configs/plain.yaml")), filepath.Join(dir, "out-plain"), review.PlanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if swept.Total.Cases != 12 || swept.Total.OutputTokensWorst != 2*plain.Total.OutputTokensWorst+6*1024 {
		t.Errorf("plan: %d cases, worst output %d; want 12 and twice the unswept %d plus 6 x 1024", swept.Total.Cases, swept.Total.OutputTokensWorst, plain.Total.OutputTokensWorst)
	}
	if sum := studytest.RunRepeats(t, cfg, out, context.Background()); sum.Cases != 12 || sum.CallsNew != 12 {
		t.Fatalf("%s", sum)
	}
	on, off := 0, 0
	for _, r := range studytest.ReadRows(t, filepath.Join(out, "calls.parquet")) {
		p := r["request_params"].(string)
		switch {
		case strings.Contains(p, `"thinking":{"enabled":true,"budget":1024}`):
			on++
		case strings.Contains(p, `"thinking":{}`):
			off++
		}
	}
	if on != 6 || off != 6 {
		t.Errorf("requests with thinking on %d, off %d; want 6 each", on, off)
	}
}
