package configs_test

import (
	"context"
	"encoding/csv"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
)

// The development set of the role-confirmation selection never shows a test
// item: no id and no scenario of ethics_dev is in the ethics task, every dev
// row is outside the ProMoral subset, and the wording matches ethics.
func TestEthicsDevIsDisjointFromTheTestItems(t *testing.T) {
	st, _ := loadAll(t, []string{"zero_shot"}, []string{"ethics", "ethics_dev"}, 1, false)
	full, err := spec.LoadWith(st.File, spec.LoadOptions{}) // untrimmed items
	if err != nil {
		t.Fatal(err)
	}
	test, dev := full.Task("ethics"), full.Task("ethics_dev")
	if len(dev.Items) != 200 || len(test.Items) != 1700 {
		t.Fatalf("ethics_dev has %d items, ethics %d; want 200 and 1700", len(dev.Items), len(test.Items))
	}
	ids, scenarios := map[string]bool{}, map[string]bool{}
	for _, it := range test.Items {
		ids[it.ID] = true
		scenarios[strings.TrimSpace(it.Fields["scenario"].(string))] = true
	}
	gold := map[string]int{}
	for _, it := range dev.Items {
		if ids[it.ID] || scenarios[strings.TrimSpace(it.Fields["scenario"].(string))] {
			t.Errorf("dev item %s is a test item of ethics", it.ID)
		}
		if it.Fields["in_promoral_subset"] != false {
			t.Errorf("dev item %s: in_promoral_subset = %v", it.ID, it.Fields["in_promoral_subset"])
		}
		gold[it.Gold]++
	}
	if gold["unacceptable"] == 0 || gold["acceptable"] == 0 || gold[""] != 0 {
		t.Errorf("dev gold labels: %v", gold)
	}
	// The same draw on every load.
	again, err := spec.LoadWith(st.File, spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i, it := range again.Task("ethics_dev").Items {
		if it.ID != dev.Items[i].ID {
			t.Fatalf("the dev sample changed between loads at %d: %s vs %s", i, it.ID, dev.Items[i].ID)
		}
	}
	r, s := test.Spec, dev.Spec
	if !reflect.DeepEqual(r.Blocks, s.Blocks) || !reflect.DeepEqual(r.Vars, s.Vars) || !reflect.DeepEqual(r.Extract, s.Extract) ||
		!reflect.DeepEqual(r.Answer, s.Answer) || r.Gold != s.Gold || r.Type != s.Type {
		t.Errorf("ethics_dev words its blocks, vars, extract rules or answer space differently from ethics")
	}
}

// selFake plays one model of the selection run. Its candidates request (n
// samples) returns numbered confirmations; on a try it answers the item's
// gold label when the candidate in the assistant turn is one of good, and
// "Unacceptable" otherwise.
type selFake struct {
	name string
	good map[int]bool
	gold map[string]string // scenario -> gold label

	mu   sync.Mutex
	reqs []llm.Request
}

// candidateText is candidate k of a model, as the fake samples it: with
// surrounding white space (the strategy and the metric trim it) and YAML
// syntax in the text.
func candidateText(model string, k int) string {
	return fmt.Sprintf("\n Understood: as %q I'll answer in that role (candidate %d).\n", model, k)
}

var candidateRe = regexp.MustCompile(`\(candidate (\d+)\)`)

func (f *selFake) Complete(_ context.Context, req *llm.Request) (*llm.Response, error) {
	f.mu.Lock()
	f.reqs = append(f.reqs, *req)
	f.mu.Unlock()
	resp := &llm.Response{Usage: llm.Usage{PromptTokens: 100, CompletionTokens: 20}}
	if req.N > 1 {
		for k := 0; k < req.N; k++ {
			resp.Choices = append(resp.Choices, llm.Choice{Text: candidateText(f.name, k), FinishReason: llm.FinishStop})
		}
		return resp, nil
	}
	if len(req.Messages) != 3 {
		return nil, &llm.Error{Kind: llm.Permanent, Msg: fmt.Sprintf("a try has 3 messages, got %d", len(req.Messages))}
	}
	m := candidateRe.FindStringSubmatch(req.Messages[1].Content)
	if m == nil {
		return nil, &llm.Error{Kind: llm.Permanent, Msg: "no candidate in the assistant turn"}
	}
	k, _ := strconv.Atoi(m[1])
	answer := "unacceptable"
	if f.good[k] {
		answer = ""
		for sc, g := range f.gold {
			if strings.Contains(req.Messages[2].Content, sc) {
				answer = g
			}
		}
		if answer == "" {
			return nil, &llm.Error{Kind: llm.Permanent, Msg: "no known scenario in the question"}
		}
	}
	text := fmt.Sprintf("Reasoning: fake.\nConfidence: 0.8\nFinal Answer: %s", strings.ToUpper(answer[:1])+answer[1:])
	resp.Choices = []llm.Choice{{Text: text, FinishReason: llm.FinishStop}}
	return resp, nil
}

// TestRoleSelectionEndToEnd runs configs/role_selection.yaml as shipped on 20
// dev items, then loads the shipped model files the way paper.yaml does and
// checks that Role Prompting sends the chosen confirmation.
func TestRoleSelectionEndToEnd(t *testing.T) {
	const items = 20
	st, err := spec.LoadWith(filepath.Join(configsDir, "role_selection.yaml"), spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dev := st.Task("ethics_dev")
	dev.Items = dev.Items[:items]
	gold := map[string]string{}
	for _, it := range dev.Items {
		gold[strings.TrimSpace(it.Fields["scenario"].(string))] = it.Gold
	}
	// Which candidates answer right, and so which one must win.
	plan := []struct {
		model string
		good  []int
		want  int
	}{
		{"gpt-4.1", []int{3}, 3},          // only candidate 3 is right
		{"claude-sonnet-4", []int{0}, 0},  // only candidate 0
		{"gemini-2.5-pro", nil, 0},        // all alike: the tie goes to the lowest index
		{"deepseek-v3.1", []int{7, 2}, 2}, // a tie between 2 and 7
	}
	fakes := map[string]*selFake{}
	for _, p := range plan {
		f := &selFake{name: p.model, good: map[int]bool{}, gold: gold}
		for _, k := range p.good {
			f.good[k] = true
		}
		m := st.Model(p.model)
		if m == nil {
			t.Fatalf("role_selection.yaml has no model %s", p.model)
		}
		m.Provider = f
		fakes[p.model] = f
	}
	if len(st.Models) != len(plan) || len(st.Cells) != len(plan) {
		t.Fatalf("%d models, %d cells; want %d each", len(st.Models), len(st.Cells), len(plan))
	}

	// The run folder sits where the shipped model files look for it:
	// <root>/out/role_selection, with the model files under <root>/configs/models.
	root := t.TempDir()
	out := filepath.Join(root, "out", "role_selection")
	t.Setenv(engine.CacheEnv, t.TempDir())
	sum, results, err := engine.NewEngine(st, engine.Options{OutDir: out, Scorer: scoring.New()}).Run(context.Background())
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if sum.Cases != len(plan)*items || sum.Errors != 0 || sum.Unparsed != 0 {
		t.Fatalf("summary: %s", sum)
	}

	for _, p := range plan {
		f := fakes[p.model]
		var cands, tries int
		seen := map[string]int{} // item question -> tries
		for _, r := range f.reqs {
			if r.N > 1 {
				cands++
				if r.N != 10 || r.Temperature == nil || *r.Temperature != 0.7 {
					t.Errorf("%s: candidates request n=%d temperature=%v; want 10, 0.7", p.model, r.N, r.Temperature)
				}
				for _, msg := range r.Messages {
					for sc := range gold {
						if strings.Contains(msg.Content, sc) {
							t.Errorf("%s: the candidates request shows an item", p.model)
						}
					}
				}
				continue
			}
			tries++
			seen[r.Messages[2].Content]++
			if a := r.Messages[1]; a.Role != llm.RoleAssistant || a.Content != strings.TrimSpace(a.Content) {
				t.Errorf("%s: assistant turn %+v (want the trimmed candidate)", p.model, a)
			}
		}
		if cands != 1 {
			t.Errorf("%s: %d candidates requests reached the model, want 1 for all %d items", p.model, cands, items)
		}
		if tries != 10*items || len(seen) != items {
			t.Errorf("%s: %d tries over %d items, want 10 per item over %d", p.model, tries, len(seen), items)
		}
		for q, n := range seen {
			if n != 10 {
				t.Errorf("%s: %d tries of item %.60q, want 10", p.model, n, q)
			}
		}
	}
	st.EachCase(func(c *spec.Case) bool {
		r := results[c.Ordinal]
		labels, _ := r.Outputs["candidate_labels"].([]any)
		texts, _ := r.Outputs["candidates"].([]any)
		if r.Err != "" || len(labels) != 10 || len(texts) != 10 || r.Label != labels[0] || r.Confidence == nil {
			t.Errorf("%s: err %q, %d labels, %d candidates, label %q", c.ID(), r.Err, len(labels), len(texts), r.Label)
		}
		return true
	})

	// The chosen texts, trimmed, under each model's name.
	var chosen map[string]map[string]string
	data, err := os.ReadFile(filepath.Join(out, "role_confirmations.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("role_confirmations.yaml:\n%s", data)
	if err := yaml.Unmarshal(data, &chosen); err != nil {
		t.Fatalf("role_confirmations.yaml: %v\n%s", err, data)
	}
	want := map[string]map[string]string{}
	for _, p := range plan {
		want[p.model] = map[string]string{"role_confirmation": strings.TrimSpace(candidateText(p.model, p.want))}
	}
	if !reflect.DeepEqual(chosen, want) {
		t.Errorf("role_confirmations.yaml = %v\nwant %v", chosen, want)
	}

	// The table: 10 candidates per model, one chosen.
	f, err := os.Open(filepath.Join(out, "role_candidates.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := csv.NewReader(f).ReadAll()
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(rows[0], ","); got != "block,model,candidate,status,accuracy,f1,score,chosen,text" || len(rows) != 1+10*len(plan) {
		t.Fatalf("role_candidates.csv: header %s, %d rows", got, len(rows)-1)
	}
	for _, r := range rows[1:] {
		if r[3] != "ok" {
			t.Errorf("role_candidates.csv row %v: status %s", r, r[3])
		}
		r = append(r[1:3:3], r[4:]...) // the block and status columns
		for _, p := range plan {
			if r[0] == p.model && (r[5] == "true") != (r[1] == strconv.Itoa(p.want)) {
				t.Errorf("role_candidates.csv row %v: chosen %s, want candidate %d", r, r[5], p.want)
			}
			if r[0] == p.model && r[1] == strconv.Itoa(p.want) && p.good != nil && (r[2] != "1" || r[3] != "1" || r[4] != "2") {
				t.Errorf("role_candidates.csv row %v: the all-right candidate must score 1 + 1", r)
			}
		}
	}
	t.Logf("report:\n%s", strings.Join(sum.Report, "\n"))
	if len(sum.Report) != 1 || !strings.Contains(sum.Report[0], "gpt-4.1: candidate 3 of 10") {
		t.Errorf("report: %q", sum.Report)
	}

	// Role Prompting with the shipped model files: before the selection
	// file exists the inline confirmation stands, afterwards the chosen one.
	models := filepath.Join(root, "configs", "models")
	if err := os.MkdirAll(models, 0o755); err != nil {
		t.Fatal(err)
	}
	inline := map[string]string{}
	for _, p := range plan {
		src, err := os.ReadFile(filepath.Join(configsDir, "models", p.model+".yaml"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(models, p.model+".yaml"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		inline[p.model] = st.Model(p.model).Spec.Vars["role_confirmation"]
	}
	runFile := filepath.Join(root, "configs", "role_prompting.yaml")
	if err := os.WriteFile(runFile, []byte(fmt.Sprintf(`name: role-prompting-after-selection
models: [gpt-4.1, claude-sonnet-4, gemini-2.5-pro, deepseek-v3.1]
tasks: [ethics]
strategies: [role_prompting]
paths:
  strategies: %q
  tasks: %q
  prompts: %q
`, filepath.Join(configsDir, "strategies"), filepath.Join(configsDir, "tasks"), filepath.Join(repoDir, "prompts"))), 0o644); err != nil {
		t.Fatal(err)
	}
	assistantTurns := func(t *testing.T) map[string]string {
		st, fake := loadStudy(t, runFile, 1, false)
		run(t, st)
		got := map[string]string{}
		for _, r := range fake.requests() {
			if len(r.Messages) != 3 || r.Messages[1].Role != llm.RoleAssistant {
				t.Fatalf("role_prompting request: %+v", r.Messages)
			}
			for _, m := range st.Models {
				if m.Spec.ID() == r.Model {
					got[m.Name] = r.Messages[1].Content
				}
			}
		}
		return got
	}
	// The selection output is moved aside and back.
	sel := filepath.Join(out, "role_confirmations.yaml")
	if err := os.Rename(sel, sel+".aside"); err != nil {
		t.Fatal(err)
	}
	if got := assistantTurns(t); !reflect.DeepEqual(got, inline) {
		t.Errorf("without the selection file: assistant turns %v, want the inline %v", got, inline)
	}
	if err := os.Rename(sel+".aside", sel); err != nil {
		t.Fatal(err)
	}
	after := map[string]string{}
	for m, v := range want {
		after[m] = v["role_confirmation"]
	}
	if got := assistantTurns(t); !reflect.DeepEqual(got, after) {
		t.Errorf("after the selection: assistant turns %v, want the chosen %v", got, after)
	}
}
