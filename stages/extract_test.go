package stages_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
	_ "github.com/promoral/promoral/stages"
)

// Extra fields read tagged steps while the label still comes from the
// task's rules.
func TestExtractFieldsAddToTheTaskRules(t *testing.T) {
	files := map[string]string{
		"data/items.jsonl": `{"id":"a","text":"x","gold":"1"}` + "\n",
		"configs/tasks/t.yaml": `name: t
dataset: {path: ../../data/items.jsonl, id: id}
gold: gold
answer: {labels: [{value: bad, gold: ["1"]}, {value: fine, gold: ["0"]}]}
extract: {label: [{kind: prefix, prefix: Answer}]}
`,
		"configs/strategies/s.yaml": `name: s
stages:
  - {name: ask, kind: prompt, messages: [{role: user, text: "{{.item.text}}"}]}
  - name: parse
    kind: extract
    fields:
      facts: [{kind: tag, tag: facts}]
outputs: {label: stages.parse.label, facts: stages.parse.facts}
`,
		"configs/run.yaml": `name: r
models: [{name: m, provider: scripted, script: {replies: [{text: "<facts>It rained.</facts>\nAnswer: bad"}]}}]
tasks: [t]
strategies: [s]
`,
	}
	dir := studytest.WriteTree(t, files)
	st, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, res, err := engine.NewEngine(st, engine.Options{OutDir: filepath.Join(dir, "out"), Scorer: scoring.New()}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Label != "bad" || res[0].Outputs["facts"] != "It rained." {
		t.Fatalf("label %q facts %q", res[0].Label, res[0].Outputs["facts"])
	}
}
