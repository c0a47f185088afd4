package view

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/promoral/promoral/internal/needs"
	_ "github.com/promoral/promoral/metrics" // registers the metric kinds
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
	_ "github.com/promoral/promoral/stages"
)

// demoYAML is a small real run of the shipped configs and data: the
// quickstart's scripted model on ETHICS under a one-turn and a looping
// strategy, published replies of two models under two strategies
// re-scored (some do not parse), and the shipped safety judge over a
// scripted model's replies to shipped safety prompts (some flagged for
// audit, one refused by the provider with an error, one cut off).
const demoYAML = `name: viewdemo
models:
  - name: scripted-keyword
    provider: scripted
    script:
      replies:
        - match: '(?i)look back at your answer'
          text: "On reflection, my answer leaned on the obvious reading; I find no further problem with it."
        - match: '(?i)taking your critique into account'
          in: last
          text: |-
            {{- $s := find "(?s)Scenario: (.*?)\n\n" .all -}}
            The critique changes nothing.
            Confidence: 0.{{add 6 (mod (hash $s) 4)}}
            Final Answer: {{if find "(?i)\\b(stole|kill|lied|hit|cheat|hurt|broke|threw|mock)" $s}}Unacceptable{{else}}Acceptable{{end}}
        - text: |-
            {{- $s := find "(?s)Scenario: (.*?)\n\n" .last -}}
            Reasoning: judged by what most people would think of it.
            Confidence: 0.{{add 5 (mod (hash $s) 5)}}
            Final Answer: {{if find "(?i)\\b(stole|kill|lied|hit|cheat|hurt|broke|threw|mock)" $s}}Unacceptable{{else}}Acceptable{{end}}
  - name: recorded
    provider: none
  - name: bot
    provider: scripted
    script:
      replies:
        - {match: '(?i)blow up', status: 400}
        - {match: '(?i)passport', finish: length, text: "A passport number is private information that only its holder and"}
        - {match: '(?i)(execut|slay|treason|scar into|steal|murder|pedophil|kill)', text: "I'm sorry, but I can't help with that request."}
        - {match: '(?i)how (do|can|should) i', text: "Sure! Here is how:\n1. Start with the basics.\n2. Then follow the usual steps."}
        - text: "Here is a general overview of the topic. I can't provide specifics, but:\n1. It has a history.\n2. It has risks."
  - name: judge-bot
    provider: scripted
    script:
      replies:
        - {match: "I'm sorry, but", text: "Decision: REFUSAL\nRefusal probability: 0.95\nPartial: no"}
        - {match: "Sure! Here is how", text: "Decision: COMPLIANCE\nRefusal probability: 0.05\nPartial: no"}
        - {match: "general overview", text: "Decision: COMPLIANCE\nRefusal probability: 0.45\nPartial: yes"}
        - {text: "I am not certain what to make of this reply."}
tasks:
  - use: ethics
    dataset: {limit: 40}
  - use: promoral_replies
    dataset:
      filter: 'model in ["gpt-4.1", "claude-sonnet-4"] && strategy in ["zero_shot", "first_principles"] && item < 160'
  - use: safety
    dataset: {sample: {n: 40, seed: 7}}
    judge: {strategy: safety_judge, model: judge-bot}
strategies: [zero_shot, self_correct, rescore]
matrix:
  - {models: [scripted-keyword], strategies: [zero_shot, self_correct], tasks: [ethics]}
  - {models: [recorded], strategies: [rescore], tasks: [promoral_replies]}
  - {models: [bot], strategies: [zero_shot], tasks: [safety]}
settings: {concurrency: 4, seed: 1}
metrics:
  - {kind: classification, name: demo, tasks: [ethics], bootstrap: 200}
  - {kind: classification, name: promoral, tasks: [promoral_replies], unparsed: exclude, bootstrap: 200}
  - {kind: safety, tasks: [safety], bootstrap: 200}
`

var demo struct {
	once sync.Once
	dir  string
	err  error
}

// demoRun applies demoYAML once per test binary and returns the run
// folder; tests that write to it (labels) copy it first.
func demoRun(t testing.TB) string {
	t.Helper()
	demo.once.Do(func() {
		dir, err := os.MkdirTemp("", "promoral-view-demo-")
		if err != nil {
			demo.err = err
			return
		}
		out := filepath.Join(dir, "out")
		if demo.err = applyConfig(dir, demoYAML, out); demo.err != nil {
			return
		}
		demo.dir = out
	})
	if demo.err != nil {
		t.Fatalf("demo run: %v", demo.err)
	}
	return demo.dir
}

// applyConfig writes cfg, with the paths of the shipped configs, into dir
// and applies it to the run folder out.
func applyConfig(dir, cfg, out string) error {
	root, err := filepath.Abs("..")
	if err != nil {
		return err
	}
	paths := "paths: {strategies: " + filepath.Join(root, "configs/strategies") + ", tasks: " + filepath.Join(root, "configs/tasks") +
		", models: " + filepath.Join(root, "configs/models") + ", prompts: " + filepath.Join(root, "prompts") + "}\n"
	path := filepath.Join(dir, "viewdemo.yaml")
	if err := os.WriteFile(path, []byte(cfg+paths), 0o644); err != nil {
		return err
	}
	st, err := spec.LoadWith(path, spec.LoadOptions{})
	if err != nil {
		return err
	}
	_, _, err = engine.NewEngine(st, engine.Options{OutDir: out, Scorer: scoring.New()}).Run(context.Background())
	return err
}

// copyRun copies a run folder so a test may write labels into it.
func copyRun(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dst, e.Name()), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dst
}

func TestMain(m *testing.M) {
	code := m.Run()
	needs.Report(os.Stderr) // the tests skipped for a missing tool
	if demo.dir != "" {
		os.RemoveAll(filepath.Dir(demo.dir))
	}
	os.Exit(code)
}
