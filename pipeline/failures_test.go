package pipeline_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
)

// doerFunc adapts a function to pipeline.Doer.
type doerFunc func(ctx context.Context, req *llm.Request, onAttempt func(pipeline.Attempt)) (*llm.Response, error)

func (f doerFunc) Do(ctx context.Context, req *llm.Request, onAttempt func(pipeline.Attempt)) (*llm.Response, error) {
	return f(ctx, req, onAttempt)
}

// answer replies like the scripted bot of the toy study.
func answer(req *llm.Request) *llm.Response {
	last := req.Messages[len(req.Messages)-1].Content
	text := "Confidence: 0.8\nAnswer: not wrong"
	if strings.Contains(last, "stole") || strings.Contains(last, "lied") || strings.Contains(last, "hit") {
		text = "Confidence: 0.8\nAnswer: wrong"
	}
	return &llm.Response{Choices: []llm.Choice{{Text: text, FinishReason: llm.FinishStop}}, Usage: llm.Usage{PromptTokens: 5, CompletionTokens: 3}}
}

// An interrupted run counts only the cases that finished, writes no
// outputs, and the earlier ones stand.
func TestInterruptedSummaryCountsFinishedCases(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(nil))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	out := filepath.Join(dir, "out")
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int64
	doer := doerFunc(func(ctx context.Context, req *llm.Request, on func(pipeline.Attempt)) (*llm.Response, error) {
		if calls.Add(1) == 5 {
			cancel()
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		resp := answer(req)
		on(pipeline.Attempt{N: 1, Resp: resp})
		return resp, nil
	})
	sum, _, err := pipeline.NewEngine(st, pipeline.Options{OutDir: out, Concurrency: 1, Doer: func(*spec.Model) (pipeline.Doer, error) { return doer, nil }, Scorer: scoring.New()}).Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Interrupted || sum.CasesPlanned != 12 || sum.Cases >= 12 || sum.Cases < 1 {
		t.Fatalf("summary %+v", sum)
	}
	if !strings.Contains(sum.String(), "interrupted after") || !strings.Contains(sum.String(), " of 12 cases") {
		t.Errorf("summary text: %s", sum)
	}
	if _, err := os.Stat(filepath.Join(out, "results.parquet")); err == nil {
		t.Error("an interrupted run wrote results")
	}
}

// A Doer that hands back a reply without an answer (an in-process model, a
// batch job) gets no further than the engine: the attempt is journaled as a
// failure, the case errors with class empty_reply, and the next run asks
// again.
func TestEngineRejectsRepliesWithoutAnAnswer(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(nil))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	out := filepath.Join(dir, "out")
	empty := true
	doer := doerFunc(func(ctx context.Context, req *llm.Request, on func(pipeline.Attempt)) (*llm.Response, error) {
		resp := answer(req)
		if empty && strings.Contains(req.Messages[0].Content, "stole") {
			resp = &llm.Response{Choices: []llm.Choice{{FinishReason: llm.FinishStop}}}
		}
		on(pipeline.Attempt{N: 1, Resp: resp})
		return resp, nil
	})
	opts := pipeline.Options{OutDir: out, Doer: func(*spec.Model) (pipeline.Doer, error) { return doer, nil }, Scorer: scoring.New()}
	sum, res, err := pipeline.NewEngine(st, opts).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Errors != 2 || len(sum.ErrorClasses) != 1 || sum.ErrorClasses[0].Class != llm.ClassEmptyReply || sum.ErrorClasses[0].Cases != 2 {
		t.Fatalf("summary %+v", sum)
	}
	for _, r := range res {
		if r.Err != "" && r.ErrClass != llm.ClassEmptyReply {
			t.Errorf("class %q for %q", r.ErrClass, r.Err)
		}
	}
	empty = false
	st = studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	sum, _, err = pipeline.NewEngine(st, opts).Run(context.Background())
	// The two failed first calls again, and the loop case's three rounds
	// that could not happen before.
	if err != nil || sum.Errors != 0 || sum.CallsNew != 5 {
		t.Fatalf("second run: %v %+v", err, sum)
	}
}

// A bug that panics inside a case is an internal error of that case: the
// stack goes to the log, never into results.parquet.
func TestPanicIsAnInternalErrorWithoutAStackInResults(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(nil))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	var log bytes.Buffer
	doer := doerFunc(func(ctx context.Context, req *llm.Request, on func(pipeline.Attempt)) (*llm.Response, error) {
		if strings.Contains(req.Messages[0].Content, "cat") {
			var m map[string]int
			m["boom"]++ // a nil map write: a real runtime panic
		}
		resp := answer(req)
		on(pipeline.Attempt{N: 1, Resp: resp})
		return resp, nil
	})
	sum, res, err := pipeline.NewEngine(st, pipeline.Options{OutDir: filepath.Join(dir, "out"), Log: &log,
		Doer: func(*spec.Model) (pipeline.Doer, error) { return doer, nil }, Scorer: scoring.New()}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Errors != 2 || sum.ErrorClasses[0].Class != spec.ClassInternal {
		t.Fatalf("summary %+v", sum)
	}
	for _, r := range res {
		if r.Err != "" && (strings.Contains(r.Err, "goroutine") || strings.Contains(r.Err, ".go:")) {
			t.Fatalf("a stack trace in the result: %s", r.Err)
		}
	}
	if !strings.Contains(log.String(), "goroutine") {
		t.Error("the stack is not in the log")
	}
	rows, _ := parquetio.Read(filepath.Join(dir, "out", "results.parquet"))
	for _, r := range rows {
		if s, _ := r["error"].(string); strings.Contains(s, "goroutine") {
			t.Fatal("a stack trace in results.parquet")
		}
	}
}

// When the output set cannot be completed (here: scoring fails), nothing
// of it is switched in: the earlier set stays whole.
func TestFailedWriteLeavesTheEarlierSet(t *testing.T) {
	files := studytest.BaseTree(nil)
	dir := studytest.WriteTree(t, files)
	cfg := filepath.Join(dir, "configs/run.yaml")
	out := filepath.Join(dir, "out")
	studytest.Apply(t, studytest.MustLoad(t, cfg), out)
	before, _ := os.ReadFile(filepath.Join(out, "results.parquet"))
	manifest, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	// Two metric blocks that write the same table: scoring fails after
	// results and calls of the new apply are written.
	os.WriteFile(cfg, []byte(files["configs/run.yaml"]+"metrics:\n  - {kind: confidence_study}\n  - {kind: confidence_study}\n"), 0o644)
	st, err := spec.Load(cfg)
	if err != nil {
		t.Skipf("the duplicate is caught at load time now: %v", err)
	}
	_, _, err = pipeline.NewEngine(st, pipeline.Options{OutDir: out, Scorer: scoring.New()}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "two metric blocks write") {
		t.Fatalf("want the scoring error, got %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(out, "results.parquet"))
	manifest2, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	if !bytes.Equal(before, after) || !bytes.Equal(manifest, manifest2) {
		t.Fatal("a failed apply replaced part of the output set")
	}
	gens, _ := os.ReadDir(pipeline.GenerationsDir(out))
	if len(gens) != 2 {
		t.Errorf("generations after a failed write: %d entries (want current and its link)", len(gens))
	}
}
