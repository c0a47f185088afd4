// Package configs_test checks the shipped study configs: every strategy on
// every task it applies to renders exactly the prompts recorded under
// testdata/golden (run `go test ./configs/ -run TestGolden -update` after an
// intended wording change and review the diff), and every study runs end to
// end against an in-memory fake model.
package configs_test

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/expr-lang/expr/vm"
	"gopkg.in/yaml.v3"

	_ "github.com/promoral/promoral/metrics" // registers the metric kinds
	"github.com/promoral/promoral/pipeline/dataset"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/hub/hubtest"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
	_ "github.com/promoral/promoral/stages"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/golden")

// The test runs in configs/; the repository root is one level up.
var (
	configsDir = mustAbs(".")
	repoDir    = mustAbs("..")
	goldenDir  = filepath.Join("testdata", "golden")
)

func mustAbs(p string) string {
	a, err := filepath.Abs(p)
	if err != nil {
		panic(err)
	}
	return a
}

// ---------------------------------------------------------------------------
// The fake model.

// replyStyle is how the fake answers one task's items.
type replyStyle int

const (
	styleEthics   replyStyle = iota // Acceptable / Unacceptable, and wrong / not wrong tags
	styleLetter                     // A, B, ...
	styleScruples                   // AUTHOR, OTHER, ...
	styleReply                      // judge tasks: a plain reply to the user
	styleLabel                      // any other label task: its first label
)

func styleOf(t *spec.Task) replyStyle {
	switch {
	case t.Spec.Type == "judge":
		return styleReply
	case t.Spec.Type == "letter":
		return styleLetter
	case contains(t.Labels, "unacceptable"):
		return styleEthics
	case contains(t.Labels, "AUTHOR"):
		return styleScruples
	case len(t.Labels) > 0:
		return styleLabel
	}
	panic("no fake reply style for task " + t.Name)
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// fakeLLM answers every request with a fixed, parseable reply in the style
// of the task whose item the conversation shows. It records every request.
//
// With diverge set, the stated confidence alternates between 0.9 and 0.5
// from one answer turn to the next (by conversation length), so a
// self-correction loop never converges; otherwise it is always 0.8.
type fakeLLM struct {
	diverge bool
	styles  []snippetStyle

	mu   sync.Mutex
	reqs []llm.Request
}

type snippetStyle struct {
	snippet string
	style   replyStyle
	label   string // styleLabel's answer
}

// newFake indexes the study's (already trimmed) items: any string field of
// at least 25 characters that a request contains identifies the task.
func newFake(st *spec.Study, diverge bool) *fakeLLM {
	f := &fakeLLM{diverge: diverge}
	for _, t := range st.Tasks {
		style := styleOf(t)
		label := ""
		if len(t.Labels) > 0 {
			label = t.Labels[0]
		}
		for _, it := range t.Items {
			for _, v := range it.Fields {
				if s, ok := v.(string); ok && len(strings.TrimSpace(s)) >= 25 {
					f.styles = append(f.styles, snippetStyle{strings.TrimSpace(s), style, label})
				}
			}
		}
	}
	return f
}

func (f *fakeLLM) Complete(_ context.Context, req *llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, *req)
	f.mu.Unlock()

	var all strings.Builder
	for _, m := range req.Messages {
		all.WriteString(m.Content)
		all.WriteByte('\n')
	}
	last := req.Messages[len(req.Messages)-1].Content
	text, err := f.reply(all.String(), last, len(req.Messages))
	if err != nil && req.Samples() > 1 {
		// A sampled request that shows no item: the candidates stage of
		// role_confirmation_selection, which asks only about the task's role.
		text, err = "Understood. I'll answer in that role. (fake confirmation)", nil
	}
	if err != nil {
		return nil, &llm.Error{Kind: llm.Permanent, Msg: err.Error()}
	}
	resp := &llm.Response{Usage: llm.Usage{PromptTokens: all.Len() / 4, CompletionTokens: len(text) / 4}}
	for i := 0; i < req.Samples(); i++ {
		t := text
		if req.Samples() > 1 {
			t = fmt.Sprintf("%s\n(sample %d)", text, i+1)
		}
		resp.Choices = append(resp.Choices, llm.Choice{Text: t, FinishReason: llm.FinishStop})
	}
	return resp, nil
}

func (f *fakeLLM) reply(all, last string, nMsgs int) (string, error) {
	if strings.Contains(last, "number of the best summary") {
		return "Summary 2", nil
	}
	// MoralChoice question forms: repeat the text of option B; answer yes.
	if strings.Contains(last, "word for word, the text of the action") {
		if i := strings.Index(all, "\nB. "); i >= 0 {
			text, _, _ := strings.Cut(all[i+4:], "\n")
			return text + "\nConfidence: 0.8", nil
		}
	}
	if strings.Contains(last, "Answer Yes or No") {
		return "Yes, the first.\nConfidence: 0.8\nFinal Answer: Yes", nil
	}
	// The judges' own answer formats (their system prompts name them).
	switch {
	case strings.Contains(all, "Decision: <REFUSAL or COMPLIANCE>"):
		return "Decision: REFUSAL\nRefusal probability: 0.9\nPartial: no", nil
	case strings.Contains(all, "Verdict: <full_compliance"):
		return "Verdict: full_refusal", nil
	case strings.Contains(all, "Refused: <yes or no>"):
		return "Refused: yes\nConvincing: 1\nSpecific: 2", nil
	case strings.Contains(all, "Answer with one word, yes or no"):
		return "no", nil
	}
	style, label := replyStyle(-1), ""
	for _, s := range f.styles {
		if strings.Contains(all, s.snippet) {
			style, label = s.style, s.label
			break
		}
	}
	conf := 0.8
	if f.diverge {
		conf = []float64{0.9, 0.5}[(nMsgs/4)%2]
	}
	pct := int(conf*100 + 0.5)
	switch style {
	case styleEthics:
		return fmt.Sprintf("Reasoning: the fake model always finds the action wrong.\nConfidence: %.1f\nFinal Answer: Unacceptable\n<answer>wrong</answer>\nYour confidence (0-100): <confidence>%d</confidence>", conf, pct), nil
	case styleLetter:
		return fmt.Sprintf("Reasoning: the fake model always prefers option B.\nConfidence: %.1f\nFinal Answer: B\n<answer>B</answer>\nYour confidence (0-100): <confidence>%d</confidence>", conf, pct), nil
	case styleScruples:
		return fmt.Sprintf("Reasoning: the fake model always blames the other party.\nConfidence: %.1f\nFinal Answer: OTHER\n<answer>OTHER</answer>\nYour confidence (0-100): <confidence>%d</confidence>", conf, pct), nil
	case styleReply:
		return "I'm sorry, but I can't help with that. (fake reply)", nil
	case styleLabel:
		return fmt.Sprintf("Reasoning: the fake model always gives the first label.\nConfidence: %.1f\nFinal Answer: %s\n<answer>%s</answer>\nYour confidence (0-100): <confidence>%d</confidence>", conf, label, label, pct), nil
	}
	return "", fmt.Errorf("fake: no known item in the request %.80q", all)
}

func (f *fakeLLM) requests() []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]llm.Request(nil), f.reqs...)
}

// ---------------------------------------------------------------------------
// Studies.

// taskNames lists configs/tasks/*.yaml that strategies are written for:
// tasks of recorded replies (re-scored, or handed to judges) read the reply
// from the item and provide no wording blocks.
func taskNames(t *testing.T) []string {
	var out []string
	for _, name := range yamlNames(t, filepath.Join(configsDir, "tasks")) {
		data, err := os.ReadFile(filepath.Join(configsDir, "tasks", name+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var top map[string]any
		if err := yaml.Unmarshal(data, &top); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if _, recorded := top["report_as"]; recorded {
			continue
		}
		if _, worded := top["blocks"]; !worded {
			continue
		}
		out = append(out, name)
	}
	return out
}

func yamlNames(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no YAML files in %s: %v", dir, err)
	}
	var out []string
	for _, f := range files {
		out = append(out, strings.TrimSuffix(filepath.Base(f), ".yaml"))
	}
	return out
}

// strategyEntries lists every strategy file, plus the confidence-on variant
// of each reflection level (as configs/reflection.yaml declares them).
func strategyEntries(t *testing.T) []string {
	var out []string
	for _, n := range yamlNames(t, filepath.Join(configsDir, "strategies")) {
		out = append(out, n)
		if strings.HasPrefix(n, "reflection_l") {
			out = append(out, fmt.Sprintf("{use: %s, name: %s_conf, params: {confidence: true}}", n, n))
		}
	}
	return out
}

// loadAll builds a study of one fake model x the given strategies x tasks
// (the matrix keeps only the pairs each strategy applies to), trims every
// task to its first n items and connects the fake.
func loadAll(t *testing.T, strategies, tasks []string, n int, diverge bool) (*spec.Study, *fakeLLM) {
	t.Helper()
	run := fmt.Sprintf(`name: configs-test
models:
  - name: fake
    provider: openai
    model: fake-model
    vars: {role_confirmation: "Understood (fixed confirmation of the fake model)."}
tasks: [%s]
strategies:
%s
settings: {allow_fixtures: true}
paths:
  strategies: %q
  tasks: %q
  models: %q
  prompts: %q
`, strings.Join(tasks, ", "), "  - "+strings.Join(strategies, "\n  - "),
		filepath.Join(configsDir, "strategies"), filepath.Join(configsDir, "tasks"),
		filepath.Join(configsDir, "models"), filepath.Join(repoDir, "prompts"))
	path := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(path, []byte(run), 0o644); err != nil {
		t.Fatal(err)
	}
	return loadStudy(t, path, n, diverge)
}

// loadStudy loads a run file (fixture tasks allowed: tests run the shipped
// configs on the shipped fixtures), keeps n items per task and gives every
// model the fake.
func loadStudy(t *testing.T, path string, n int, diverge bool) (*spec.Study, *fakeLLM) {
	t.Helper()
	st, err := spec.LoadWith(path, spec.LoadOptions{AllowFixtures: true})
	if err != nil {
		t.Fatalf("load %s: %v", path, err)
	}
	for _, task := range st.Tasks {
		if len(task.Items) < n {
			t.Fatalf("task %s has %d items, want at least %d", task.Name, len(task.Items), n)
		}
		task.Items = task.Items[:n]
	}
	fake := newFake(st, diverge)
	for _, m := range st.Models {
		m.Provider = fake
	}
	return st, fake
}

// run applies the study and fails the test on a run error.
func run(t *testing.T, st *spec.Study) (string, *engine.Summary, map[string]spec.Result) {
	t.Helper()
	out := t.TempDir()
	t.Setenv(engine.CacheEnv, t.TempDir()) // each run its own shared cache: the fakes answer differently
	sum, res, err := engine.NewEngine(st, engine.Options{OutDir: out, Scorer: scoring.New()}).Run(context.Background())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	byCase := map[string]spec.Result{}
	st.EachCase(func(c *spec.Case) bool {
		byCase[c.ID()] = res[c.Ordinal]
		return true
	})
	return out, sum, byCase
}

// ---------------------------------------------------------------------------
// Golden prompts.

// TestGolden renders every strategy x task it applies to on the task's first
// item and compares every call's messages, stage by stage, with
// testdata/golden/<strategy>/<task>.txt.
func TestGolden(t *testing.T) {
	want := map[string]bool{}
	// One study per task: two tasks that share an item (ethics and
	// ethics_test_hard) would otherwise share identical requests, and the
	// engine records a shared request twice for the case that sent it.
	for _, task := range taskNames(t) {
		st, _ := loadAll(t, strategyEntries(t), []string{task}, 1, false)
		checkGolden(t, st, want)
	}
	// Every judge that calls a model, judging the first recorded reply of
	// the judge-comparison set (a jailbreak prompt with its plain goal):
	// recorded_reply/jbb_judged_by_<judge>.txt.
	for _, j := range judgeNames(t) {
		st, _ := loadAll(t, []string{"recorded_reply"}, []string{fmt.Sprintf("{use: jbb_judge_comparison, name: jbb_judged_by_%s, judge: {strategy: %s, model: fake}}", j, j)}, 1, false)
		checkGolden(t, st, want)
	}

	// Golden files that no case produces any more are stale.
	filepath.Walk(goldenDir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(goldenDir, p)
		if !want[rel] {
			if *update {
				os.Remove(p)
			} else {
				t.Errorf("%s: stale golden file (no strategy x task produces it; -update removes it)", rel)
			}
		}
		return nil
	})
}

// judgeNames lists the judge strategies that call a model.
func judgeNames(t *testing.T) []string {
	var out []string
	for _, n := range yamlNames(t, filepath.Join(configsDir, "strategies")) {
		data, err := os.ReadFile(filepath.Join(configsDir, "strategies", n+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Judge  bool             `yaml:"judge"`
			Stages []map[string]any `yaml:"stages"`
		}
		if err := yaml.Unmarshal(data, &s); err != nil {
			t.Fatalf("%s: %v", n, err)
		}
		for _, st := range s.Stages {
			if s.Judge && st["kind"] == "prompt" {
				out = append(out, n)
				break
			}
		}
	}
	if len(out) < 4 {
		t.Fatalf("judges that call a model: %v, want at least 4", out)
	}
	return out
}

func checkGolden(t *testing.T, st *spec.Study, want map[string]bool) {
	t.Helper()
	out, sum, results := run(t, st)
	if sum.Errors != 0 {
		for id, r := range results {
			if r.Err != "" {
				t.Errorf("%s: %s", id, r.Err)
			}
		}
		t.FailNow()
	}
	calls, err := parquetio.Read(filepath.Join(out, "calls.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	byCase := map[string][]map[string]any{}
	for _, c := range calls {
		id := c["case_id"].(string)
		byCase[id] = append(byCase[id], c)
	}
	st.EachCase(func(c *spec.Case) bool {
		if c.Repeat > 0 {
			return true // the prompts of a repeat are repeat 0's (its calls differ only in their key)
		}
		rel := filepath.Join(c.Strategy.Name, c.Task.Name+".txt")
		want[rel] = true
		got := renderGolden(t, c, byCase[c.ID()], results[c.ID()])
		path := filepath.Join(goldenDir, rel)
		if *update {
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			return true
		}
		old, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: no golden file (run go test ./configs/ -run TestGolden -update): %v", rel, err)
			return true
		}
		if string(old) != got {
			t.Errorf("%s: rendered prompts differ from the golden file (review, then -update):\n%s", rel, firstDiff(string(old), got))
		}
		return true
	})
}

func renderGolden(t *testing.T, c *spec.Case, calls []map[string]any, r spec.Result) string {
	t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "# strategy %s, task %s, item %s\n", c.Strategy.Name, c.Task.Name, c.Item.ID)
	fmt.Fprintf(&b, "# Every model call of the case, in order, as sent (fake model %q).\n", c.Model.Name)
	fmt.Fprintf(&b, "# Regenerate: go test ./configs/ -run TestGolden -update\n")
	for k, call := range calls {
		fmt.Fprintf(&b, "\n### stage %s (call %d)\n", call["stage"], k+1)
		fmt.Fprintf(&b, "params: %s\n", formatParams(t, call["request_params"].(string)))
		var msgs []llm.Message
		if err := json.Unmarshal([]byte(call["request_messages"].(string)), &msgs); err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs {
			fmt.Fprintf(&b, "[%s]\n%s\n", m.Role, strings.TrimRight(m.Content, "\n"))
		}
	}
	b.WriteString("\n### outputs\n")
	keys := make([]string, 0, len(r.Outputs))
	for k := range r.Outputs {
		if k != "reply" { // the last reply, already visible above or fixed by the fake
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		v := r.Outputs[k]
		if f, ok := v.(float64); ok {
			v = fmt.Sprintf("%.2f", f)
		}
		fmt.Fprintf(&b, "%s: %v\n", k, v)
	}
	return b.String()
}

// formatParams prints the generation parameters of a request, sorted.
func formatParams(t *testing.T, js string) string {
	var p map[string]any
	if err := json.Unmarshal([]byte(js), &p); err != nil {
		t.Fatal(err)
	}
	keys := make([]string, 0, len(p))
	for k, v := range p {
		switch x := v.(type) {
		case nil:
			continue
		case map[string]any:
			if len(x) == 0 {
				continue
			}
		}
		if k != "model" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		v, _ := json.Marshal(p[k])
		parts[i] = k + "=" + string(v)
	}
	return strings.Join(parts, " ")
}

func firstDiff(a, b string) string {
	al, bl := strings.Split(a, "\n"), strings.Split(b, "\n")
	for i := 0; i < len(al) || i < len(bl); i++ {
		var x, y string
		if i < len(al) {
			x = al[i]
		}
		if i < len(bl) {
			y = bl[i]
		}
		if x != y {
			return fmt.Sprintf("  line %d\n  golden: %q\n  now:    %q", i+1, x, y)
		}
	}
	return "  (no line differs)"
}

// ---------------------------------------------------------------------------
// End-to-end runs.

// TestEveryStrategyRunsOnEveryTask runs each strategy on three items of each
// task it applies to: no case may fail, labelled tasks must parse, and judge
// tasks must leave the label empty but produce a reply.
func TestEveryStrategyRunsOnEveryTask(t *testing.T) {
	st, _ := loadAll(t, strategyEntries(t), taskNames(t), 3, false)
	_, sum, results := run(t, st)
	if want := 3 * len(st.Cells); sum.Cases != want {
		t.Errorf("cases = %d, want %d (3 per cell)", sum.Cases, want)
	}
	st.EachCase(func(c *spec.Case) bool {
		r := results[c.ID()]
		switch {
		case r.Err != "":
			t.Errorf("%s: %s", c.ID(), r.Err)
		case c.Task.Spec.Type == "judge":
			if r.Label != "" || r.Outputs["reply"] == "" {
				t.Errorf("%s: judge task: label %q (want empty), reply %q", c.ID(), r.Label, r.Outputs["reply"])
			}
		case !r.Parsed || r.Confidence == nil:
			t.Errorf("%s: label %q parsed %v confidence %v", c.ID(), r.Label, r.Parsed, r.Confidence)
		}
		for _, k := range []string{"label", "confidence", "reply"} {
			if _, ok := r.Outputs[k]; !ok {
				t.Errorf("%s: no %s output", c.ID(), k)
			}
		}
		return true
	})
	// Every strategy ran on every task it applies to.
	seen := map[string]bool{}
	for _, c := range st.Cells {
		seen[c.Strategy.Name] = true
	}
	for _, s := range st.Strategies {
		if s.Spec.Judge || !appliesToAny(s, st.Tasks) {
			continue // judges run as a task's judge; re-scoring strategies on recorded tasks
		}
		if !seen[s.Name] {
			t.Errorf("strategy %s ran on no task", s.Name)
		}
	}
}

// appliesToAny reports whether a strategy's applies_to names any of the
// tasks (by name or type); an empty applies_to means every task.
func appliesToAny(s *spec.Strategy, tasks []*spec.Task) bool {
	if len(s.Spec.AppliesTo) == 0 {
		return true
	}
	for _, a := range s.Spec.AppliesTo {
		for _, t := range tasks {
			if a == t.Name || a == t.Spec.Type {
				return true
			}
		}
	}
	return false
}

func TestSelfCorrectStopsAtItsBoundAndEarly(t *testing.T) {
	for _, tc := range []struct {
		diverge bool
		rounds  int
		calls   int
	}{
		{diverge: true, rounds: 3, calls: 1 + 3*2}, // answer + 3 x (critique, revise)
		{diverge: false, rounds: 1, calls: 1 + 2},  // the first revision agrees
	} {
		st, _ := loadAll(t, []string{"self_correct"}, []string{"ethics", "moralchoice", "scruples"}, 1, tc.diverge)
		_, _, results := run(t, st)
		for id, r := range results {
			if r.Err != "" {
				t.Fatalf("%s: %s", id, r.Err)
			}
			if r.Outputs["rounds"] != tc.rounds || r.Acct.Calls != tc.calls {
				t.Errorf("diverge=%v %s: rounds %v, calls %d; want %d rounds, %d calls", tc.diverge, id, r.Outputs["rounds"], r.Acct.Calls, tc.rounds, tc.calls)
			}
		}
	}
}

func TestThoughtExperimentSamplesFiveSummaries(t *testing.T) {
	st, fake := loadAll(t, []string{"thought_experiment"}, []string{"ethics"}, 1, false)
	_, _, results := run(t, st)
	var sampled []llm.Request
	for _, r := range fake.requests() {
		if r.N > 1 {
			sampled = append(sampled, r)
		}
	}
	if len(sampled) != 1 {
		t.Fatalf("%d requests with n > 1, want 1 (the summary stage)", len(sampled))
	}
	s := sampled[0]
	if s.N != 5 || s.Temperature == nil || *s.Temperature != 0.7 || s.MaxTokens != 600 {
		t.Errorf("summary request: n=%d temperature=%v max_tokens=%d; want 5, 0.7, 600", s.N, s.Temperature, s.MaxTokens)
	}
	var maxTokens []int
	var decide string
	for _, r := range fake.requests() {
		maxTokens = append(maxTokens, r.MaxTokens)
		decide = r.Messages[len(r.Messages)-1].Content
	}
	if !reflect.DeepEqual(maxTokens, []int{500, 700, 600, 50, 300}) {
		t.Errorf("max_tokens per turn = %v, want [500 700 600 50 300]", maxTokens)
	}
	// The fake picks "Summary 2"; the decision turn must quote that sample.
	if !strings.Contains(decide, "(sample 2)") {
		t.Errorf("the decision turn does not show the chosen summary:\n%s", decide)
	}
	for id, r := range results {
		if r.Err != "" || r.Outputs["chosen_summary"] != 2 || r.Label != "unacceptable" {
			t.Errorf("%s: err %q chosen %v label %q", id, r.Err, r.Outputs["chosen_summary"], r.Label)
		}
	}
}

// The shipped paper.yaml reads Scruples and WildJailbreak by hub
// reference: validate and plan need no download (the tasks get their
// declared rows as stand-ins), apply fetches them into the cache, pins them
// in the lock file beside the run file, and Scruples is checked against the
// shipped index. The hub is a loopback fake; the cache a temporary folder.
func TestPaperReadsHubDataByReference(t *testing.T) {
	fh := hubtest.New(t)
	t.Setenv("PROMORAL_DATA_DIR", filepath.Join(t.TempDir(), "cache"))
	index, err := dataset.Load(&dataset.Spec{Path: filepath.Join(repoDir, "data", "scruples", "scruples_promoral_subset_index.jsonl")}, "")
	if err != nil {
		t.Fatal(err)
	}
	scruples := func(changeRow int) []byte {
		var b strings.Builder
		for i, r := range index {
			text := strings.TrimSuffix(r.Fields["text_prefix"].(string), "...") + " And the rest of the post."
			if i == changeRow {
				text = "Another post altogether."
			}
			line, _ := json.Marshal(map[string]any{"id": fmt.Sprintf("s%04d", i), "post_type": "HISTORICAL", "title": "AITA?", "text": text,
				"label": r.Fields["label"], "binarized_label": r.Fields["binarized_label"], "label_scores": map[string]int{"AUTHOR": 3, "OTHER": 1, "EVERYBODY": 0, "NOBODY": 0, "INFO": 0}})
			b.Write(line)
			b.WriteByte('\n')
		}
		return []byte(b.String())
	}
	fh.Put("justinphan3110/scruples", "test.jsonl", scruples(-1))
	wj, err := os.ReadFile(filepath.Join(repoDir, "data", "fixtures", "wildjailbreak_eval_sample.tsv"))
	if err != nil {
		t.Fatal(err)
	}
	fh.Put("allenai/wildjailbreak", "eval/eval.tsv", wj)
	fh.Gated["allenai/wildjailbreak"], fh.Token = true, "hf_test_token"

	data, err := os.ReadFile(filepath.Join(configsDir, "paper.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The fake serves Scruples as JSONL, not through the Parquet
	// conversion: the run file adds the file to the task's reference.
	text := strings.Replace(string(data), "\n  - scruples\n", "\n  - {use: scruples, dataset: {hub: {files: [test.jsonl]}}}\n", 1)
	if text == string(data) {
		t.Fatal("paper.yaml no longer lists scruples as a task")
	}
	text += fmt.Sprintf("paths: {strategies: %q, tasks: %q, models: %q, prompts: %q}\n",
		filepath.Join(configsDir, "strategies"), filepath.Join(configsDir, "tasks"), filepath.Join(configsDir, "models"), filepath.Join(repoDir, "prompts"))
	dir := t.TempDir()
	path := filepath.Join(dir, "paper.yaml")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}

	// validate and plan: no download, the declared rows.
	st, err := spec.LoadWith(path, spec.LoadOptions{})
	if err != nil {
		t.Fatalf("paper.yaml without its hub data: %v", err)
	}
	if fh.Count() != 0 {
		t.Errorf("loading without fetch asked the hub %d times", fh.Count())
	}
	pending := map[string]int{}
	for _, task := range st.PendingData() {
		pending[task.Name] = len(task.Items)
	}
	if want := map[string]int{"scruples": 1466, "wildjailbreak": 2210}; !reflect.DeepEqual(pending, want) {
		t.Fatalf("pending tasks %v, want %v", pending, want)
	}
	// apply --offline: an error naming data pull and the cache.
	_, err = spec.LoadWith(path, spec.LoadOptions{NeedData: true})
	for _, want := range []string{"dataset scruples (justinphan3110/scruples) is not in the cache", "promoral data pull " + path, os.Getenv("PROMORAL_DATA_DIR")} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("offline load: %v; lacks %q", err, want)
		}
	}
	// Fetching without a token: Scruples comes, WildJailbreak is refused.
	_, err = spec.LoadWith(path, spec.LoadOptions{Fetch: true, NeedData: true})
	for _, want := range []string{"dataset wildjailbreak", "accept its terms", "HF_TOKEN"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("gated fetch: %v; lacks %q", err, want)
		}
	}
	t.Setenv("HF_TOKEN", "hf_test_token")
	st, err = spec.LoadWith(path, spec.LoadOptions{Fetch: true, NeedData: true})
	if err != nil {
		t.Fatalf("fetch with the token: %v", err)
	}
	if n := len(st.Task("scruples").Items); n != 1466 || len(st.PendingData()) != 0 {
		t.Fatalf("scruples has %d items, %d tasks pending", n, len(st.PendingData()))
	}
	lock, err := os.ReadFile(filepath.Join(dir, "paper.lock.yaml"))
	if err != nil || !strings.Contains(string(lock), hubtest.Commit) || !strings.Contains(string(lock), "allenai/wildjailbreak") || strings.Contains(string(lock), "hf_test_token") {
		t.Fatalf("lock file (%v):\n%s", err, lock)
	}
	// A later load reads the verified cache without the hub.
	before := fh.Count()
	if _, err := spec.LoadWith(path, spec.LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	if fh.Count() != before {
		t.Error("a cached load asked the hub")
	}

	// Other data than the index describes is refused.
	fh.Put("justinphan3110/scruples", "test.jsonl", scruples(5))
	other := filepath.Join(t.TempDir(), "paper.yaml")
	os.WriteFile(other, []byte(text), 0o644)
	_, err = spec.LoadWith(other, spec.LoadOptions{Fetch: true, NeedData: true})
	for _, want := range []string{"task scruples", "does not match the index", "1 of 1466 index rows differ", "scruples_promoral_0005"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("changed row: %v; lacks %q", err, want)
		}
	}
}

// TestStudyConfigsRunEndToEnd loads paper.yaml and reflection.yaml as
// shipped, gives every model the fake, and runs two items per task.
func TestStudyConfigsRunEndToEnd(t *testing.T) {
	for _, tc := range []struct {
		file                      string
		models, strategies, tasks int
	}{
		{"paper.yaml", 4, 10, 4},      // 4 models x 10 strategies x 4 tasks (the judge model is not under test)
		{"reflection.yaml", 8, 12, 3}, // 4 models x thinking off/on; 6 levels x confidence off/on
	} {
		t.Run(tc.file, func(t *testing.T) {
			st, _ := loadStudy(t, filepath.Join(configsDir, tc.file), 2, false)
			tested := map[string]bool{}
			for _, c := range st.Cells {
				tested[c.Model.Name] = true
			}
			if len(tested) != tc.models || len(st.Strategies) != tc.strategies || len(st.Tasks) != tc.tasks {
				t.Fatalf("%d models, %d strategies, %d tasks; want %d, %d, %d", len(tested), len(st.Strategies), len(st.Tasks), tc.models, tc.strategies, tc.tasks)
			}
			want := tc.models * tc.strategies * tc.tasks * 2
			if st.NumCases() != want {
				t.Fatalf("cases = %d, want %d", st.NumCases(), want)
			}
			_, sum, results := run(t, st)
			if sum.Cases != want || sum.Errors != 0 {
				t.Errorf("summary: %d cases, %d errors; want %d, 0", sum.Cases, sum.Errors, want)
			}
			for id, r := range results {
				if r.Err != "" {
					t.Errorf("%s: %s", id, r.Err)
				}
			}
		})
	}
}

// ---------------------------------------------------------------------------
// Task files.

// Every task provides the same wording blocks and vars, so strategies never
// name a task.
func TestTasksProvideTheSameBlocks(t *testing.T) {
	st, _ := loadAll(t, []string{"zero_shot"}, taskNames(t), 1, false)
	blocks := []string{"scenario", "question", "answer_format", "answer_format_tags", "confidence_format_tags"}
	vars := []string{"role", "subject"}
	for _, task := range st.Tasks {
		for _, b := range blocks {
			if _, ok := task.Spec.Blocks[b]; !ok {
				t.Errorf("task %s has no block %s", task.Name, b)
			}
		}
		for _, v := range vars {
			if _, ok := task.Spec.Vars[v].(string); !ok {
				t.Errorf("task %s has no var %s", task.Name, v)
			}
		}
		if len(task.Spec.Blocks) != len(blocks) || len(task.Spec.Vars) != len(vars) {
			t.Errorf("task %s: blocks %v, vars %v; every task gives exactly %v and %v", task.Name, keysOf(task.Spec.Blocks), keysOf(task.Spec.Vars), blocks, vars)
		}
	}
}

// The ETHICS variants, and the two safety tasks, must word everything the
// same way as their reference task.
func TestTaskVariantsShareWording(t *testing.T) {
	st, _ := loadAll(t, []string{"zero_shot"}, []string{"ethics", "ethics_test_hard", "ethics_test", "ethics_contrast", "safety", "wildjailbreak", "moralchoice", "moralchoice_high"}, 1, false)
	for ref, variants := range map[string][]string{
		"ethics":      {"ethics_test_hard", "ethics_test", "ethics_contrast"},
		"safety":      {"wildjailbreak"},
		"moralchoice": {"moralchoice_high"},
	} {
		r := st.Task(ref).Spec
		for _, v := range variants {
			s := st.Task(v).Spec
			if !reflect.DeepEqual(r.Blocks, s.Blocks) || !reflect.DeepEqual(r.Vars, s.Vars) || !reflect.DeepEqual(r.Extract, s.Extract) {
				t.Errorf("task %s words its blocks, vars or extract rules differently from %s", v, ref)
			}
			if !reflect.DeepEqual(r.Answer.Labels[0].Value, s.Answer.Labels[0].Value) || len(r.Answer.Labels) != len(s.Answer.Labels) {
				t.Errorf("task %s has other labels than %s", v, ref)
			}
			if ref == "ethics" && !reflect.DeepEqual(r.Answer, s.Answer) {
				t.Errorf("task %s has another answer space than ethics", v)
			}
		}
	}
}

// No demonstration may be an item of a task that shows it, and the ETHICS
// demonstrations must match their source rows.
func TestDemonstrationsAreNotTestItems(t *testing.T) {
	st, _ := loadAll(t, []string{"zero_shot"}, taskNames(t), 1, false)
	full, err := spec.LoadWith(st.File, spec.LoadOptions{}) // untrimmed items
	if err != nil {
		t.Fatal(err)
	}
	for _, task := range full.Tasks {
		if task.Spec.Demos == "" {
			continue
		}
		demos := readDemos(t, task.Spec.Demos)
		if len(demos) != 5 {
			t.Errorf("%s: %d demonstrations, want 5", task.Spec.Demos, len(demos))
		}
		for _, d := range demos {
			material := d["material"].(string)
			for _, it := range task.Items {
				for _, v := range it.Fields {
					if s, ok := v.(string); ok && len(s) >= 20 && strings.Contains(material, strings.TrimSpace(s)) {
						t.Errorf("%s: demonstration %v shows item %s of task %s", task.Spec.Demos, d["id"], it.ID, task.Name)
					}
				}
			}
		}
	}
	for file, data := range map[string]string{
		"demonstrations/ethics.yaml":      "data/ethics/commonsense_test.jsonl",
		"demonstrations/ethics_test.yaml": "data/ethics/commonsense_test_hard.jsonl",
	} {
		rows := readJSONL(t, filepath.Join(repoDir, data))
		for _, d := range readDemos(t, file) {
			row, ok := rows[d["id"].(string)]
			if !ok {
				t.Errorf("%s: %v is not a row of %s", file, d["id"], data)
				continue
			}
			answer := map[string]string{"wrong": "Unacceptable", "not wrong": "Acceptable"}[row["label"].(string)]
			if d["material"] != "Scenario: "+row["scenario"].(string) || d["answer"] != answer {
				t.Errorf("%s: %v does not match its row (scenario or answer %v, gold %v)", file, d["id"], d["answer"], row["label"])
			}
			if in, _ := row["in_promoral_subset"].(bool); in {
				t.Errorf("%s: %v is in the ProMoral subset", file, d["id"])
			}
		}
	}
}

// The Scruples high-consensus subset: at least 70% of votes on one label.
func TestScruplesHighConsensusSubset(t *testing.T) {
	st, _ := loadAll(t, []string{"zero_shot"}, []string{"scruples"}, 8, false)
	task := st.Task("scruples")
	prog, err := spec.CompileExpr(task.Spec.Subsets["high_consensus"], nil, true)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, it := range task.Items {
		v, err := vm.Run(prog, map[string]any{"item": it.Fields})
		if err != nil {
			t.Fatalf("%s: %v", it.ID, err)
		}
		if v.(bool) {
			got = append(got, it.ID)
		}
	}
	// fx0001 is exactly 7 of 10 votes; fx0002, fx0005, fx0007 fall below.
	if want := []string{"fx0000", "fx0001", "fx0003", "fx0004", "fx0006"}; !reflect.DeepEqual(got, want) {
		t.Errorf("high_consensus = %v, want %v", got, want)
	}
}

// readDemos reads a demonstrations file the way the engine does (a YAML
// list of mappings under the prompts folder).
func readDemos(t *testing.T, rel string) []map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoDir, "prompts", rel))
	if err != nil {
		t.Fatal(err)
	}
	var demos []map[string]any
	if err := yaml.Unmarshal(data, &demos); err != nil {
		t.Fatalf("%s: %v", rel, err)
	}
	return demos
}

func readJSONL(t *testing.T, path string) map[string]map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows := map[string]map[string]any{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var r map[string]any
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		rows[r["id"].(string)] = r
	}
	return rows
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// The MoralChoice question forms map the model's words back to the
// shuffled options: repeating option B's text is B, and "yes" to "do you
// prefer the first?" is A.
func TestMoralChoiceQuestionFormsMapToOptions(t *testing.T) {
	st, _ := loadAll(t, []string{"mc_repeat", "mc_compare"}, []string{"moralchoice"}, 3, false)
	t.Setenv(engine.CacheEnv, t.TempDir())
	_, res, err := engine.NewEngine(st, engine.Options{OutDir: t.TempDir(), Scorer: scoring.New()}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	st.EachCase(func(c *spec.Case) bool {
		r := res[c.Ordinal]
		want := map[string]string{"mc_repeat": "B", "mc_compare": "A"}[c.Strategy.Name]
		if r.Err != "" || r.Label != want || r.Confidence == nil {
			t.Errorf("%s: label %q (want %q), confidence %v, err %q", c.ID(), r.Label, want, r.Confidence, r.Err)
		}
		n++
		return true
	})
	if n != 6 {
		t.Fatalf("ran %d cases, want 6", n)
	}
}
