package engine_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/scripted"
	"github.com/promoral/promoral/pipeline/spec"
)

func TestApplyWritesOutputsAndResumesWithoutCalls(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(nil))
	out := filepath.Join(dir, "out")
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	if got := st.NumCases(); got != 12 {
		t.Fatalf("cases = %d, want 12 (6 items x 2 strategies)", got)
	}
	sum1, res1 := studytest.Apply(t, st, out)
	if sum1.CallsNew == 0 || sum1.CallsCached != 0 || sum1.Errors != 0 {
		t.Fatalf("first run: %+v", sum1)
	}
	for _, f := range []string{"calls.parquet", "results.parquet", "manifest.json", "journal.jsonl"} {
		if _, err := os.Stat(filepath.Join(out, f)); err != nil {
			t.Errorf("missing %s: %v", f, err)
		}
	}
	prov := st.Model("bot").Provider.(*scripted.Provider)
	before := prov.Calls()

	st2 := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	sum2, res2 := studytest.Apply(t, st2, out)
	if sum2.CallsNew != 0 || sum2.CallsCached != sum1.CallsNew {
		t.Fatalf("second run should be served from the journal: %+v (first made %d calls)", sum2, sum1.CallsNew)
	}
	if st2.Model("bot").Provider.(*scripted.Provider).Calls() != 0 || prov.Calls() != before {
		t.Fatal("the provider was called on a resumed run")
	}
	for i := range res1 {
		if res1[i].Label != res2[i].Label || !reflect.DeepEqual(res1[i].Outputs, res2[i].Outputs) {
			t.Fatalf("case %d differs after resume: %+v vs %+v", i, res1[i], res2[i])
		}
	}

	var m map[string]any
	data, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"cases", "calls_new", "calls_cached", "errors", "unparsed", "prompt_tokens", "completion_tokens", "config_hash", "version", "started", "finished"} {
		if _, ok := m[k]; !ok {
			t.Errorf("manifest lacks %s", k)
		}
	}
	if m["calls_new"].(float64) != 0 || m["cases"].(float64) != 12 {
		t.Errorf("manifest counts: calls_new=%v cases=%v", m["calls_new"], m["cases"])
	}

	rows, err := parquetio.Read(filepath.Join(out, "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 12 {
		t.Fatalf("results rows = %d", len(rows))
	}
	// one_shot on item a ("I stole a bike."): the bot says wrong -> bad, gold 1 -> bad.
	r := rows[0]
	if r["case_id"] != "bot/one_shot/toy/a" || r["label"] != "bad" || r["gold"] != "bad" || r["correct"] != true || r["confidence"] != 0.8 {
		t.Errorf("first result row: %v", r)
	}
	calls, err := parquetio.Read(filepath.Join(out, "calls.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != sum1.CallsNew {
		t.Errorf("calls.parquet rows = %d, want %d", len(calls), sum1.CallsNew)
	}
	for _, c := range calls {
		if c["cached"] != true || c["request_hash"] == "" || c["response_text"] == nil {
			t.Fatalf("bad call row on the resumed run: %v", c)
		}
	}
}

func TestLoopStopsAtConvergenceAndAtItsBound(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(nil))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	_, res := studytest.Apply(t, st, filepath.Join(dir, "out"))
	byItem := map[string]spec.Result{}
	st.EachCase(func(c *spec.Case) bool {
		if c.Strategy.Name == "loop" {
			byItem[c.Item.ID] = res[c.Ordinal]
		}
		return true
	})
	// "stole": first answer wrong, every re-ask says fine -> never agrees -> bound of 3.
	if got := byItem["a"].Outputs["rounds"]; got != 3 {
		t.Errorf("non-converging loop ran %v rounds, want the bound 3", got)
	}
	if byItem["a"].Label != "fine" {
		t.Errorf("after the bound the last answer counts: got %q", byItem["a"].Label)
	}
	// "fed the cat": not wrong both times -> stops after one round.
	if got := byItem["b"].Outputs["rounds"]; got != 1 {
		t.Errorf("converging loop ran %v rounds, want 1", got)
	}
	// "hit": wrong both times.
	if got := byItem["e"].Outputs["rounds"]; got != 1 || byItem["e"].Label != "bad" {
		t.Errorf("item e: rounds %v label %q", got, byItem["e"].Label)
	}
}

func TestNewStrategyIsOneYAMLFile(t *testing.T) {
	// A strategy the Go code has never seen: ask twice with different
	// framings and keep the second answer when the first did not parse.
	const twoFrames = `name: two_frames
description: written for this test only
stages:
  - name: first
    kind: prompt
    messages:
      - {role: system, text: "You are careful."}
      - {role: user, text: "{{.task.question}} Reply with Answer: <x>."}
  - name: first_parse
    kind: extract
  - name: check
    kind: branch
    cases:
      - {when: stages.first_parse.parsed, goto: end}
  - name: second
    kind: prompt
    messages:
      - {role: user, text: "Again: {{.item.text}}"}
  - name: second_parse
    kind: extract
outputs:
  label: "stages.first_parse.parsed ? stages.first_parse.label : stages.second_parse.label"
  asked_twice: visits.second > 0
`
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{
		"configs/strategies/two_frames.yaml": twoFrames,
		"configs/run.yaml": `name: new-strategy
models:` + studytest.ScriptedModel + `
tasks: [toy]
strategies: [two_frames]
`,
	}))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	sum, res := studytest.Apply(t, st, filepath.Join(dir, "out"))
	if sum.Cases != 6 || sum.Errors != 0 || sum.Unparsed != 0 {
		t.Fatalf("summary %+v", sum)
	}
	for _, r := range res {
		if r.Outputs["asked_twice"] != false {
			t.Errorf("the first answer parses, so no second ask: %+v", r.Outputs)
		}
	}
}

func TestErrorsAreRecordedAndTheRunGoesOn(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{
		"configs/run.yaml": `name: errors
models:
  - name: flaky
    provider: scripted
    script:
      replies:
        - {match: "stole", status: 500}
        - {text: "Answer: fine"}
tasks: [toy]
strategies: [one_shot]
`,
	}))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	out := filepath.Join(dir, "out")
	sum, res := studytest.Apply(t, st, out)
	if sum.Errors != 1 || sum.Cases != 6 {
		t.Fatalf("want 1 error in 6 cases, got %+v", sum)
	}
	if res[0].Err == "" || res[1].Err != "" {
		t.Errorf("errors recorded on the wrong cases: %q / %q", res[0].Err, res[1].Err)
	}
	// Errors are never cached: the next run asks again.
	st2 := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	sum2, _ := studytest.Apply(t, st2, out)
	if sum2.CallsCached != 5 || sum2.Attempts != 1 {
		t.Errorf("second run: %+v (want 5 cached, the failed call tried again)", sum2)
	}
}

func TestTruncatedRepliesAreFlagged(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{
		"configs/run.yaml": `name: trunc
models:
  - name: cut
    provider: scripted
    script:
      replies:
        - {text: "Answer: wro", finish: length}
tasks: [toy]
strategies: [one_shot]
`,
	}))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	sum, res := studytest.Apply(t, st, filepath.Join(dir, "out"))
	if sum.Truncated != 6 || sum.Unparsed != 6 {
		t.Fatalf("summary %+v", sum)
	}
	if !res[0].Acct.Truncated || res[0].Parsed || res[0].Correct == nil || *res[0].Correct {
		t.Errorf("a cut-off reply must be flagged truncated and unparsed (counted wrong): %+v", res[0])
	}
}

func TestOfflineServesOnlyTheJournal(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(nil))
	out := filepath.Join(dir, "out")
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	sum, _, err := engine.NewEngine(st, engine.Options{OutDir: out, Offline: true, Scorer: scoring.New()}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if sum.Errors != sum.Cases || st.Model("bot").Provider.(*scripted.Provider).Calls() != 0 {
		t.Fatalf("offline with an empty journal: every case should fail, no call made: %+v", sum)
	}
	studytest.Apply(t, studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), out)
	st3 := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	sum3, _, err := engine.NewEngine(st3, engine.Options{OutDir: out, Offline: true, Scorer: scoring.New()}).Run(context.Background())
	if err != nil || sum3.Errors != 0 || sum3.CallsNew != 0 {
		t.Fatalf("offline after a full run: %+v %v", sum3, err)
	}
}

func TestChangedScriptIsNotServedOldReplies(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(nil))
	out := filepath.Join(dir, "out")
	studytest.Apply(t, studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), out)
	// Same requests, different script: the model's identity changes, so no cache hits.
	run := studytest.BaseTree(nil)["configs/run.yaml"]
	os.WriteFile(filepath.Join(dir, "configs/run.yaml"), []byte(strings.Replace(run, "Confidence: 0.8", "Confidence: 0.7", 1)), 0o644)
	sum, _ := studytest.Apply(t, studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), out)
	if sum.CallsCached != 0 || sum.CallsNew == 0 {
		t.Fatalf("a changed script must not reuse replies: %+v", sum)
	}
}

func TestModelVarsFromAFileWrittenByAnotherRun(t *testing.T) {
	run := strings.Replace(studytest.BaseTree(nil)["configs/run.yaml"], "  - name: bot\n", "  - name: bot\n    vars: {greeting: inline}\n    vars_file: {path: ../chosen.yaml, optional: true}\n", 1)
	run = strings.Replace(run, "[one_shot, loop]", "[greet]", 1)
	files := studytest.BaseTree(map[string]string{
		"configs/run.yaml": run,
		"configs/strategies/greet.yaml": `name: greet
stages:
  - {name: ask, kind: prompt, messages: [{role: user, text: "{{.model.vars.greeting}} {{.task.question}}"}]}
  - {name: parse, kind: extract}
outputs: {label: stages.parse.label}
`,
	})
	dir := studytest.WriteTree(t, files)
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	if got := st.Model("bot").Env["vars"].(map[string]any)["greeting"]; got != "inline" {
		t.Fatalf("without the file the inline var stands, got %v", got)
	}
	os.WriteFile(filepath.Join(dir, "chosen.yaml"), []byte("bot: {greeting: chosen}\nother: {greeting: no}\n"), 0o644)
	st = studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	if got := st.Model("bot").Env["vars"].(map[string]any)["greeting"]; got != "chosen" {
		t.Fatalf("the file's var should win, got %v", got)
	}
	os.WriteFile(filepath.Join(dir, "configs/run.yaml"), []byte(strings.Replace(run, "optional: true", "optional: false", 1)), 0o644)
	os.Remove(filepath.Join(dir, "chosen.yaml"))
	_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
	studytest.WantErr(t, err, "run.yaml:5", "vars_file", "cannot read")
}

// Changing an extraction rule (here: which words mean which label) and
// applying again re-scores from the journal without a single model call.
func TestChangedExtractionRescoresFromTheJournal(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(nil))
	out := filepath.Join(dir, "out")
	_, before := studytest.Apply(t, studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), out)
	flipped := strings.NewReplacer("aliases: [wrong]", "aliases: [not wrong]", "aliases: [not wrong]", "aliases: [wrong]").Replace(studytest.TaskYAML)
	os.WriteFile(filepath.Join(dir, "configs/tasks/toy.yaml"), []byte(flipped), 0o644)
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	sum, after := studytest.Apply(t, st, out)
	if sum.CallsNew != 0 || st.Model("bot").Provider.(*scripted.Provider).Calls() != 0 {
		t.Fatalf("re-scoring made calls: %+v", sum)
	}
	if before[0].Label != "bad" || after[0].Label != "fine" {
		t.Fatalf("labels %q -> %q, want bad -> fine", before[0].Label, after[0].Label)
	}
}

// Two cases that send the same request at the same time pay for it once,
// and the accounting says one new call and one cached.
func TestIdenticalConcurrentRequestsArePaidOnce(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{
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
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	sum, _ := studytest.Apply(t, st, filepath.Join(dir, "out"))
	if sum.CallsNew != 1 || sum.CallsCached != 1 || sum.Attempts != 1 {
		t.Fatalf("want 1 new + 1 cached from 1 attempt, got %+v", sum)
	}
	rows, _ := parquetio.Read(filepath.Join(dir, "out", "calls.parquet"))
	if len(rows) != 2 {
		t.Fatalf("calls.parquet rows = %d, want 2", len(rows))
	}
}
