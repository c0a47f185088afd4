package engine_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/transport"
	"github.com/promoral/promoral/runfolder"
)

// doerFunc adapts a function to transport.Doer.
type doerFunc func(ctx context.Context, req *llm.Request, onAttempt func(transport.Attempt)) (*llm.Response, error)

func (f doerFunc) Do(ctx context.Context, req *llm.Request, onAttempt func(transport.Attempt)) (*llm.Response, error) {
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
	doer := doerFunc(func(ctx context.Context, req *llm.Request, on func(transport.Attempt)) (*llm.Response, error) {
		if calls.Add(1) == 5 {
			cancel()
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		resp := answer(req)
		on(transport.Attempt{N: 1, Resp: resp})
		return resp, nil
	})
	sum, _, err := engine.NewEngine(st, engine.Options{OutDir: out, Concurrency: 1, Doer: func(*spec.Model) (transport.Doer, error) { return doer, nil }, Scorer: scoring.New()}).Run(ctx)
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
	doer := doerFunc(func(ctx context.Context, req *llm.Request, on func(transport.Attempt)) (*llm.Response, error) {
		resp := answer(req)
		if empty && strings.Contains(req.Messages[0].Content, "stole") {
			resp = &llm.Response{Choices: []llm.Choice{{FinishReason: llm.FinishStop}}}
		}
		on(transport.Attempt{N: 1, Resp: resp})
		return resp, nil
	})
	opts := engine.Options{OutDir: out, Doer: func(*spec.Model) (transport.Doer, error) { return doer, nil }, Scorer: scoring.New()}
	sum, res, err := engine.NewEngine(st, opts).Run(context.Background())
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
	sum, _, err = engine.NewEngine(st, opts).Run(context.Background())
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
	doer := doerFunc(func(ctx context.Context, req *llm.Request, on func(transport.Attempt)) (*llm.Response, error) {
		if strings.Contains(req.Messages[0].Content, "cat") {
			var m map[string]int
			m["boom"]++ // a nil map write: a real runtime panic
		}
		resp := answer(req)
		on(transport.Attempt{N: 1, Resp: resp})
		return resp, nil
	})
	sum, res, err := engine.NewEngine(st, engine.Options{OutDir: filepath.Join(dir, "out"), Log: &log,
		Doer: func(*spec.Model) (transport.Doer, error) { return doer, nil }, Scorer: scoring.New()}).Run(context.Background())
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

// failingScorer writes half a metric table into the new output set, then
// fails as a full disk would. It keeps the set's folder and whether the
// new results were there.
type failingScorer struct {
	dir     string
	results bool
}

func (f *failingScorer) Score(w engine.Written) ([]string, error) {
	f.dir = w.Dir
	_, err := os.Stat(w.Results())
	f.results = err == nil
	if err := os.WriteFile(filepath.Join(w.Dir, "metrics.parquet"), []byte("half a table"), 0o644); err != nil {
		return nil, err
	}
	return nil, errors.New("no space left on device")
}

// When the output set cannot be completed (here: the scorer fails after
// the new results and part of the metrics are written), nothing of it is
// switched in: the earlier set stays whole and in force, and the failed
// set's folder is removed.
func TestFailedWriteLeavesTheEarlierSet(t *testing.T) {
	run := studytest.BaseTree(nil)["configs/run.yaml"] + "metrics:\n  - {kind: classification, bootstrap: 0}\n"
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": run}))
	cfg := filepath.Join(dir, "configs/run.yaml")
	out := filepath.Join(dir, "out")
	studytest.Apply(t, studytest.MustLoad(t, cfg), out)
	before, current := snapshot(t, out), engine.CurrentGeneration(out)
	if before["results.parquet"] == "" || before["metrics.parquet"] == "" || current == "" {
		t.Fatalf("the first apply wrote no output set: %v", slices.Sorted(maps.Keys(before)))
	}
	gensBefore := snapshot(t, filepath.Join(out, runfolder.GenDir))

	sc := &failingScorer{}
	_, _, err := engine.NewEngine(studytest.MustLoad(t, cfg), engine.Options{OutDir: out, Scorer: sc}).Run(context.Background())
	if err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Fatalf("want the scorer's error, got %v", err)
	}
	// The failed set was being written beside the earlier one ...
	if sc.dir == "" || sc.dir == current || !sc.results {
		t.Fatalf("the scorer saw folder %q (current %q), results written %v", sc.dir, current, sc.results)
	}
	// ... and none of it is in force or left behind.
	if got := engine.CurrentGeneration(out); got != current {
		t.Errorf("current output set %s, want the earlier %s", got, current)
	}
	if _, err := os.Stat(sc.dir); !os.IsNotExist(err) {
		t.Errorf("the failed set's folder is left behind: %v", err)
	}
	if gens := snapshot(t, filepath.Join(out, runfolder.GenDir)); !equalMaps(gens, gensBefore) {
		t.Errorf("generations %v, want %v", slices.Sorted(maps.Keys(gens)), slices.Sorted(maps.Keys(gensBefore)))
	}
	after := snapshot(t, out)
	for name, data := range before {
		if after[name] != data {
			t.Errorf("%s changed (%d bytes, was %d)", name, len(after[name]), len(data))
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s appeared", name)
		}
	}
}
