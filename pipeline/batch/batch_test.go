package batch_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	_ "github.com/promoral/promoral/metrics" // registers the metric kinds
	"github.com/promoral/promoral/pipeline/batch"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/fake"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
	_ "github.com/promoral/promoral/stages"
)

const fakeKey = "sk-fake-BATCH-7d1e0c"

type fakes struct {
	openai, anthropic, gemini *fake.Server
}

func startFakes(t *testing.T) *fakes {
	t.Helper()
	f := &fakes{fake.New("openai", fake.Moral), fake.New("anthropic", fake.Moral), fake.New("gemini", fake.Moral)}
	t.Cleanup(func() { f.openai.Close(); f.anthropic.Close(); f.gemini.Close() })
	return f
}

func (f *fakes) all() []*fake.Server { return []*fake.Server{f.openai, f.anthropic, f.gemini} }

// study writes a run file using the shipped strategies and the ETHICS task
// (items items) against the fakes, and loads it.
func study(t *testing.T, f *fakes, items int, strategies string) *spec.Study {
	return studyWith(t, f, items, strategies, "{}")
}

func studyWith(t *testing.T, f *fakes, items int, strategies, limits string) *spec.Study {
	t.Helper()
	root, _ := filepath.Abs("../..")
	dir := t.TempDir()
	run := fmt.Sprintf(`name: batchtest
models:
  - {name: oa, provider: openai, model: gpt-4.1, base_url: %[1]s, key_env: FAKE_KEY, limits: %[6]s, price: {input: 2, output: 8, batch_input: 1, batch_output: 4}}
  - {name: an, provider: anthropic, model: claude-sonnet-4-20250514, base_url: %[2]s, key_env: FAKE_KEY, limits: %[6]s, price: {input: 3, output: 15, batch_input: 1.5, batch_output: 7.5}}
  - {name: ge, provider: gemini, model: gemini-2.5-pro, base_url: %[3]s, key_env: FAKE_KEY, limits: %[6]s, price: {input: 1.25, output: 10, batch_input: 0.625, batch_output: 5}}
tasks:
  - {use: ethics, dataset: {limit: %[4]d}}
strategies: %[5]s
paths: {strategies: %[7]s/configs/strategies, tasks: %[7]s/configs/tasks, models: %[7]s/configs/models, prompts: %[7]s/prompts}
settings: {concurrency: 4}
`, f.openai.BaseURL(), f.anthropic.BaseURL(), f.gemini.BaseURL(), items, strategies, limits, root)
	path := filepath.Join(dir, "run.yaml")
	os.WriteFile(path, []byte(run), 0o644)
	t.Setenv("FAKE_KEY", fakeKey)
	st, err := spec.LoadWith(path, spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.Connect(st, false); err != nil {
		t.Fatal(err)
	}
	return st
}

func apply(t *testing.T, st *spec.Study, out string, batched bool, log *bytes.Buffer) (*engine.Summary, error) {
	t.Helper()
	opts := engine.Options{OutDir: out, Doer: engine.TransportsShared(engine.RateOptions{Concurrency: 4}), Scorer: scoring.New()}
	if batched {
		var w io.Writer = io.Discard
		if log != nil {
			w = log
		}
		opts.Doer = batch.Transports(batch.Options{Dir: out, All: true, Poll: 2 * time.Millisecond, Live: engine.TransportsShared(engine.RateOptions{Concurrency: 4}), Log: w})
	}
	t.Setenv(engine.CacheEnv, t.TempDir()) // each apply its own shared cache: live and batch are compared
	sum, _, err := engine.NewEngine(st, opts).Run(context.Background())
	return sum, err
}

func readRows(t *testing.T, path string) []map[string]any {
	t.Helper()
	rows, err := parquetio.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// without drops columns that differ by design between a live and a batch
// run of the same replies (cost_usd: batch prices; config_hash: the two
// configs name other fake servers or limits).
func without(rows []map[string]any, cols ...string) []map[string]any {
	out := make([]map[string]any, len(rows))
	for i, r := range rows {
		m := map[string]any{}
		for k, v := range r {
			m[k] = v
		}
		for _, c := range cols {
			delete(m, c)
		}
		out[i] = m
	}
	return out
}

func sum(rows []map[string]any, col string) float64 {
	s := 0.0
	for _, r := range rows {
		if v, ok := r[col].(float64); ok {
			s += v
		}
	}
	return s
}

// noDuplicates checks that no request went into two jobs.
func noDuplicates(t *testing.T, srv *fake.Server) {
	t.Helper()
	job := map[string]string{}
	for _, l := range srv.Lines() {
		if j, ok := job[l.Fingerprint]; ok && j != l.Job {
			t.Errorf("%s: a request was submitted in two jobs (%s and %s)", srv.Provider, j, l.Job)
		}
		job[l.Fingerprint] = l.Job
	}
}

// Self-Correct (a loop of up to three critique rounds) and the five-turn
// Thought Experiment (five samples in one turn) give the same results in
// batch mode as live, one job per model per turn, at batch prices.
func TestBatchEqualsLive(t *testing.T) {
	f := startFakes(t)
	st := study(t, f, 6, "[zero_shot, self_correct, thought_experiment]")
	liveOut, batchOut := t.TempDir(), t.TempDir()
	if _, err := apply(t, st, liveOut, false, nil); err != nil {
		t.Fatal(err)
	}
	liveCalls := map[string]int{}
	for _, s := range f.all() {
		live, creates, _ := s.Counts()
		liveCalls[s.Provider] = live
		if creates != 0 {
			t.Fatalf("the live run created %d jobs", creates)
		}
	}
	var log bytes.Buffer
	sumB, err := apply(t, st, batchOut, true, &log)
	if err != nil {
		t.Fatal(err)
	}
	if sumB.Errors != 0 {
		t.Fatalf("batch run: %s\n%s", sumB, log.String())
	}
	a := readRows(t, filepath.Join(liveOut, "results.parquet"))
	b := readRows(t, filepath.Join(batchOut, "results.parquet"))
	if len(a) != 54 || !reflect.DeepEqual(without(a, "cost_usd", "config_hash"), without(b, "cost_usd", "config_hash")) {
		for i := range a {
			if i < len(b) && !reflect.DeepEqual(without(a[i:i+1], "cost_usd", "config_hash"), without(b[i:i+1], "cost_usd", "config_hash")) {
				t.Logf("first difference, row %d:\nlive  %v\nbatch %v", i, a[i], b[i])
				break
			}
		}
		t.Fatalf("batch results differ from live (%d vs %d rows)", len(a), len(b))
	}
	// Batch prices are half the live ones here.
	if la, lb := sum(a, "cost_usd"), sum(b, "cost_usd"); la == 0 || math.Abs(lb-la/2) > 1e-9 {
		t.Errorf("results cost: live %.6f, batch %.6f (want half)", la, lb)
	}
	calls := readRows(t, filepath.Join(batchOut, "calls.parquet"))
	liveRows := readRows(t, filepath.Join(liveOut, "calls.parquet"))
	if lc, bc := sum(liveRows, "cost_usd"), sum(calls, "cost_usd"); math.Abs(bc-lc/2) > 1e-9 {
		t.Errorf("calls.parquet cost: live %.6f, batch %.6f (want half)", lc, bc)
	}
	// Every case's calls are sequential, so the deepest case sets the
	// number of waves: one job per wave per model.
	deepest := map[string]int{}
	perCase := map[string]int{}
	for _, r := range calls {
		if r["batch_id"] == nil {
			t.Fatalf("a call of the batch run has no batch id: %v", r)
		}
		perCase[r["case_id"].(string)]++
	}
	for c, n := range perCase {
		m := strings.SplitN(c, "/", 2)[0]
		deepest[m] = max(deepest[m], n)
	}
	for _, s := range f.all() {
		live, creates, _ := s.Counts()
		if live != liveCalls[s.Provider] {
			t.Errorf("%s: the batch run made %d live calls", s.Provider, live-liveCalls[s.Provider])
		}
		m := map[string]string{"openai": "oa", "anthropic": "an", "gemini": "ge"}[s.Provider]
		if creates != deepest[m] {
			t.Errorf("%s: %d jobs, want one per turn of the deepest case (%d)", s.Provider, creates, deepest[m])
		}
		noDuplicates(t, s)
	}
	if deepest["oa"] < 5 {
		t.Errorf("the study should need at least five waves, got %d", deepest["oa"])
	}
	t.Log(log.String())
	if strings.Contains(log.String(), fakeKey) {
		t.Error("the key leaked into the log")
	}
	// The record closes every job.
	jobs, err := batch.NewFile(batchOut).Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if j.Status != batch.StatusEnded || j.State != "completed" {
			t.Errorf("job %s: %s %s", j.Name, j.Status, j.State)
		}
	}
}

// A run interrupted while jobs are in flight re-attaches to them on the next
// apply: nothing is submitted twice and the results equal an uninterrupted
// run's.
func TestInterruptedBatchRunResumes(t *testing.T) {
	clean := t.TempDir()
	if _, err := apply(t, study(t, startFakes(t), 5, "[zero_shot, self_correct]"), clean, true, nil); err != nil {
		t.Fatal(err)
	}
	f := startFakes(t)
	st := study(t, f, 5, "[zero_shot, self_correct]")
	out := t.TempDir()
	for _, s := range f.all() {
		s.Hold.Store(true)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan *engine.Summary)
	go func() {
		opts := engine.Options{OutDir: out, Doer: batch.Transports(batch.Options{Dir: out, All: true, Poll: 2 * time.Millisecond, Live: engine.TransportsShared(engine.RateOptions{Concurrency: 4})}), Scorer: scoring.New()}
		t.Setenv(engine.CacheEnv, t.TempDir()) // each apply its own shared cache: live and batch are compared
		sum, _, _ := engine.NewEngine(st, opts).Run(ctx)
		done <- sum
	}()
	deadline := time.Now().Add(20 * time.Second)
	for ready := false; !ready && time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		ready = true
		for _, s := range f.all() {
			_, creates, _ := s.Counts()
			ready = ready && creates > 0
		}
	}
	cancel()
	sum := <-done
	if sum == nil || !sum.Interrupted {
		t.Fatalf("the run was not interrupted: %v", sum)
	}
	jobs, _ := batch.NewFile(out).Read()
	open := 0
	for _, j := range jobs {
		if j.Status == batch.StatusInFlight {
			open++
		}
	}
	if open != 3 {
		t.Fatalf("%d jobs in flight after the interruption, want 3", open)
	}
	for _, s := range f.all() {
		s.Hold.Store(false)
	}
	var log bytes.Buffer
	if _, err := apply(t, st, out, true, &log); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(log.String(), "re-attached") {
		t.Errorf("the resumed run did not re-attach:\n%s", log.String())
	}
	a := readRows(t, filepath.Join(clean, "results.parquet"))
	b := readRows(t, filepath.Join(out, "results.parquet"))
	if len(a) != 30 || !reflect.DeepEqual(without(a, "config_hash"), without(b, "config_hash")) {
		t.Fatal("results after the interruption differ from an uninterrupted run")
	}
	for _, s := range f.all() {
		noDuplicates(t, s)
	}
	jobs, _ = batch.NewFile(out).Read()
	for _, j := range jobs {
		if j.Open() {
			t.Errorf("job %s still open: %s", j.Name, j.Status)
		}
	}
}

// Transient line failures, an expired job, a 429 on creation and a creation
// whose answer was lost all end with the same results as a clean live run:
// failed lines go out again (and only they), nothing twice.
func TestBatchFaultsRecover(t *testing.T) {
	liveOut := t.TempDir()
	if _, err := apply(t, study(t, startFakes(t), 4, "[zero_shot, self_correct]"), liveOut, false, nil); err != nil {
		t.Fatal(err)
	}
	f := startFakes(t)
	for _, s := range f.all() {
		var mu sync.Mutex
		failed := map[string]bool{}
		s.Fault = func(c fake.Call, id string) (int, string) {
			mu.Lock()
			defer mu.Unlock()
			if fp := c.Fingerprint(); !failed[fp] && strings.HasSuffix(id, "-1") {
				failed[fp] = true
				return 500, "overloaded"
			}
			return 0, ""
		}
		s.Ending = func(n int) string {
			if n == 1 {
				return "expired"
			}
			return "completed"
		}
		s.RateLimitCreates.Store(1)
		lost := false
		s.BeforeCreateReply = func(string) {
			mu.Lock()
			defer mu.Unlock()
			if !lost {
				lost = true
				panic(http.ErrAbortHandler) // the job exists; the client never hears so
			}
		}
	}
	st := study(t, f, 4, "[zero_shot, self_correct]")
	out := t.TempDir()
	var log bytes.Buffer
	sum, err := apply(t, st, out, true, &log)
	if err != nil {
		t.Fatal(err)
	}
	a := readRows(t, filepath.Join(liveOut, "results.parquet"))
	b := readRows(t, filepath.Join(out, "results.parquet"))
	if !reflect.DeepEqual(without(a, "cost_usd", "config_hash"), without(b, "cost_usd", "config_hash")) {
		t.Fatalf("results with faults differ from a clean live run\n%s\n%s", sum, log.String())
	}
	if !strings.Contains(log.String(), "created although the provider reported a failure") {
		t.Errorf("the lost creation was not found again:\n%s", log.String()[:2000])
	}
	for _, s := range f.all() {
		noDuplicatesExceptRetries(t, s)
	}
	// Every failed line is a failed attempt in calls.parquet.
	calls := readRows(t, filepath.Join(out, "calls.parquet"))
	failedRows := 0
	for _, r := range calls {
		if r["error"] != nil {
			failedRows++
		}
	}
	if failedRows < 6 {
		t.Errorf("calls.parquet has %d failed attempts; each fake fails at least one line and expires a job", failedRows)
	}
}

// noDuplicatesExceptRetries: a request goes into a second job only when its
// line in the first one failed or was never run.
func noDuplicatesExceptRetries(t *testing.T, srv *fake.Server) {
	t.Helper()
	seen := map[string]int{}
	for _, l := range srv.Lines() {
		seen[l.Fingerprint]++
	}
	max := 0
	for _, n := range seen {
		max = maxInt(max, n)
	}
	if max > 3 {
		t.Errorf("%s: a request went into %d jobs", srv.Provider, max)
	}
}

func maxInt(a, b int) int {
	if a > b {
		return a
	}
	return b
}

// A server without a batch API gets live calls, with a note saying so.
func TestNoBatchEndpointFallsBackToLive(t *testing.T) {
	f := startFakes(t)
	f.openai.NoBatch = true
	st := study(t, f, 3, "[zero_shot]")
	out := t.TempDir()
	var log bytes.Buffer
	if _, err := apply(t, st, out, true, &log); err != nil {
		t.Fatal(err)
	}
	live, creates, _ := f.openai.Counts()
	if live != 3 || creates != 0 || !strings.Contains(log.String(), "has no batch API") {
		t.Fatalf("live %d, jobs %d, log:\n%s", live, creates, log.String())
	}
	for _, r := range readRows(t, filepath.Join(out, "calls.parquet")) {
		if r["model"] == "oa" && r["batch_id"] != nil {
			t.Errorf("a live call carries a batch id: %v", r)
		}
	}
}

// More cases than may be in flight: finished cases hand their place to the
// next, the waves still carry every request once, and the results equal
// the live path's.
func TestBatchFewerSlotsThanCases(t *testing.T) {
	liveOut := t.TempDir()
	if _, err := apply(t, study(t, startFakes(t), 7, "[zero_shot, self_correct, thought_experiment]"), liveOut, false, nil); err != nil {
		t.Fatal(err)
	}
	f := startFakes(t)
	st := studyWith(t, f, 7, "[zero_shot, self_correct, thought_experiment]", "{batch_cases: 4}")
	out := t.TempDir()
	done := make(chan error, 1)
	go func() {
		_, err := apply(t, st, out, true, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(60 * time.Second):
		t.Fatal("the batch run is stuck")
	}
	a := readRows(t, filepath.Join(liveOut, "results.parquet"))
	b := readRows(t, filepath.Join(out, "results.parquet"))
	if !reflect.DeepEqual(without(a, "cost_usd", "config_hash"), without(b, "cost_usd", "config_hash")) {
		t.Fatal("results differ from live")
	}
	p, _ := review.MakePlanWith(st, t.TempDir(), review.PlanOptions{Batch: true})
	for _, s := range f.all() {
		noDuplicates(t, s)
		_, creates, _ := s.Counts()
		t.Logf("%s: %d jobs; plan: %d–%d waves", s.Provider, creates, p.Total.WavesBest, p.Total.WavesWorst)
	}
}

// A wave larger than a job may be goes out as several jobs at once, none
// waiting for another.
func TestWaveSplitsIntoParallelJobs(t *testing.T) {
	f := startFakes(t)
	st := study(t, f, 6, "[zero_shot]")
	for _, s := range f.all() {
		s.Hold.Store(true)
	}
	out := t.TempDir()
	done := make(chan error, 1)
	go func() {
		opts := engine.Options{OutDir: out, Doer: batch.Transports(batch.Options{Dir: out, All: true, Poll: 2 * time.Millisecond, MaxRequests: 4, Live: engine.TransportsShared(engine.RateOptions{Concurrency: 4})}), Scorer: scoring.New()}
		t.Setenv(engine.CacheEnv, t.TempDir()) // each apply its own shared cache: live and batch are compared
		_, _, err := engine.NewEngine(st, opts).Run(context.Background())
		done <- err
	}()
	// Six requests per model, at most four per job: two jobs each, both
	// created while every job is held in progress.
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		n := 0
		for _, s := range f.all() {
			_, c, _ := s.Counts()
			n += c
		}
		if n == 6 {
			break
		}
		time.Sleep(time.Millisecond)
	}
	for _, s := range f.all() {
		if _, c, _ := s.Counts(); c != 2 {
			t.Errorf("%s: %d jobs in flight, want 2", s.Provider, c)
		}
		s.Hold.Store(false)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if rows := readRows(t, filepath.Join(out, "results.parquet")); len(rows) != 18 {
		t.Fatalf("%d results", len(rows))
	}
}

// Identical requests in one wave are sent once (the engine's singleflight):
// the cases waiting for another's identical request count as waiting
// whichever of them singleflight lets through, so every wave still leaves,
// and all the cases get the reply.
func TestIdenticalRequestsInAWave(t *testing.T) {
	f := startFakes(t)
	dir := t.TempDir()
	var data strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&data, `{"id":"i%d","text":"I %s the wallet I found."}`+"\n", i, []string{"kept", "returned", "hid"}[i%3])
	}
	files := map[string]string{
		"data.jsonl": data.String(),
		"task.yaml": `name: dup
dataset: {path: data.jsonl, id: id}
answer: {labels: [{value: Acceptable}, {value: Unacceptable}]}
extract: {label: [{kind: prefix, prefix: Final Answer}]}
`,
		"ask.yaml": `name: ask
stages:
  - {name: q, kind: prompt, messages: [{role: user, text: "{{.item.text}}"}]}
  - {name: p, kind: extract}
  - {name: q2, kind: prompt, continue: q, messages: [{role: user, text: "Sure?"}]}
  - {name: p2, kind: extract}
outputs: {label: stages.p2.label}
`,
		"run.yaml": fmt.Sprintf(`name: dup
models:
  - {name: oa, provider: openai, model: gpt-4.1, base_url: %s, key_env: FAKE_KEY}
tasks: [task.yaml]
strategies: [ask.yaml]
paths: {tasks: ., strategies: .}
`, f.openai.BaseURL()),
	}
	for name, content := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644)
	}
	t.Setenv("FAKE_KEY", fakeKey)
	st, err := spec.LoadWith(filepath.Join(dir, "run.yaml"), spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.Connect(st, false); err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	done := make(chan error, 1)
	var sum *engine.Summary
	go func() {
		var err error
		sum, err = apply(t, st, out, true, nil)
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a wave with identical requests never left")
	}
	_, creates, _ := f.openai.Counts()
	lines := len(f.openai.Lines())
	if creates != 2 || lines != 6 || sum.Cases != 3000 || sum.Errors != 0 {
		t.Fatalf("%d jobs, %d lines (want 2 and 6: each turn of the three distinct cases sent once); %s", creates, lines, sum)
	}
}

// recordedJudged loads a study of 40 recorded replies (a model that is
// never called) judged by harmbench_judge on the fake OpenAI server.
func recordedJudged(t *testing.T, f *fakes, limits string) *spec.Study {
	t.Helper()
	root, _ := filepath.Abs("../..")
	run := fmt.Sprintf(`name: judgebatch
models:
  - {name: recorded, provider: none}
  - {name: oa, provider: openai, model: gpt-4.1, base_url: %[1]s, key_env: FAKE_KEY, limits: %[3]s, price: {input: 2, output: 8, batch_input: 1, batch_output: 4}}
tasks:
  - {use: jbb_judge_comparison, dataset: {limit: 40}, judge: {strategy: harmbench_judge, model: oa}}
strategies: [recorded_reply]
matrix: {models: [recorded]}
paths: {strategies: %[2]s/configs/strategies, tasks: %[2]s/configs/tasks, models: %[2]s/configs/models, prompts: %[2]s/prompts}
settings: {concurrency: 4}
`, f.openai.BaseURL(), root, limits)
	path := filepath.Join(t.TempDir(), "run.yaml")
	os.WriteFile(path, []byte(run), 0o644)
	t.Setenv("FAKE_KEY", fakeKey)
	st, err := spec.LoadWith(path, spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// Recorded replies judged in batch mode: the recorded model makes no call,
// so its cases run as many at once as the judge's wave holds, and the
// judge's calls go out as full waves (one job per judge turn), not a job
// per handful of cases.
func TestBatchJudgeOfRecordedRepliesFillsItsWaves(t *testing.T) {
	f := startFakes(t)
	st := recordedJudged(t, f, "{}")
	if err := engine.Connect(st, false); err != nil {
		t.Fatal(err)
	}
	sum, err := apply(t, st, t.TempDir(), true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Cases != 40 {
		t.Fatalf("%d cases of 40: %s", sum.Cases, sum)
	}
	_, creates, _ := f.openai.Counts()
	lines := len(f.openai.Lines())
	if lines < 40 {
		t.Fatalf("the judge sent %d requests for 40 replies", lines)
	}
	// One LLM turn per judged reply: one wave, one job (at concurrency 4
	// the waves would hold 4 requests each: 10 jobs).
	if creates != 1 {
		t.Errorf("the judge's %d requests went out in %d batch jobs; want 1 (one wave)", lines, creates)
	}
}

// plan --batch counts those waves for the judge model.
func TestPlanCountsABatchJudgesWavesOverRecordedReplies(t *testing.T) {
	st := recordedJudged(t, startFakes(t), "{batch_cases: 15}")
	p, err := review.MakePlanWith(st, t.TempDir(), review.PlanOptions{Batch: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p.Models {
		if r.Model == "oa" {
			// 40 replies, one judge turn each, 15 at a time: 3 waves.
			if r.WavesBest != 3 || r.WavesWorst != 3 {
				t.Fatalf("judge row: %d–%d waves, want 3–3", r.WavesBest, r.WavesWorst)
			}
			return
		}
	}
	t.Fatalf("no row for the judge model: %+v", p.Models)
}

// Repeats in batch mode: self-consistency's five samples of each case are
// five lines of one wave (five cache keys, five custom ids), never merged
// as identical requests, and a second apply sends none of them again.
func TestBatchRepeatsAreLinesOfTheirOwn(t *testing.T) {
	f := startFakes(t)
	st := study(t, f, 8, "[self_consistency]")
	out := t.TempDir()
	sum, err := apply(t, st, out, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Cases != 3*8*5 || sum.Errors != 0 || sum.CallsNew != 3*8*5 {
		t.Fatalf("3 models x 8 items x 5 repeats: %s", sum)
	}
	for _, srv := range f.all() {
		if n := len(srv.Lines()); n != 40 {
			t.Errorf("%s: %d batch lines, want 40 (8 items x 5 repeats)", srv.Provider, n)
		}
	}
	keys := map[string]bool{}
	for _, r := range readRows(t, filepath.Join(out, "calls.parquet")) {
		keys[r["request_hash"].(string)] = true
	}
	if len(keys) != 120 {
		t.Errorf("%d distinct request hashes, want 120", len(keys))
	}
	again, err := apply(t, st, out, true, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.CallsNew != 0 {
		t.Errorf("a second apply made %d new calls", again.CallsNew)
	}
	for _, srv := range f.all() {
		if n := len(srv.Lines()); n != 40 {
			t.Errorf("%s: %d batch lines after the second apply, want still 40", srv.Provider, n)
		}
	}
}
