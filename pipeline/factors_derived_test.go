package pipeline_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/spec"
)

// oneShotDerived is one_shot with a param and a factor derived from it.
var oneShotDerived = strings.Replace(studytest.OneShotYAML, "name: one_shot\n", `name: one_shot
params: {conf: false}
factors:
  level: 0
  instruction: {expr: 'params.conf ? "on" : "off"'}
`, 1)

const derivedModels = `
  - name: bot
    provider: scripted
    factors: {thinking: {expr: 'params.thinking?.enabled == true ? "on" : "off"'}}
    script:
      replies:
        - text: "Confidence: 0.8\nAnswer: {{if find \"(stole|lied|hit)\" .last}}wrong{{else}}not wrong{{end}}"
  - {name: bot-think, extends: bot, params: {thinking: {enabled: true, budget: 1024}}}
`

// A factor derived from a strategy's params and one derived from a model's
// settings take the values the hand-written ones did: a variant that sets
// the param, and a model variant that turns thinking on, are labelled
// without saying so again.
func TestFactorsDerivedFromParams(t *testing.T) {
	run := `name: toy-run
models:` + derivedModels + `
tasks: [toy]
strategies:
  - one_shot
  - {use: one_shot, name: one_shot_conf, params: {conf: true}}
settings: {seed: 3}
metrics:
  - {kind: classification, bootstrap: 0}
`
	files := studytest.BaseTree(map[string]string{"configs/run.yaml": run, "configs/strategies/one_shot.yaml": oneShotDerived})
	dir := studytest.WriteTree(t, files)
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	if strings.Join(st.Factors, ",") != "instruction,level,thinking" {
		t.Fatalf("factors %v", st.Factors)
	}
	out := filepath.Join(dir, "out")
	studytest.Apply(t, st, out)
	want := map[string][3]any{ // model/strategy -> instruction, level, thinking
		"bot/one_shot":            {"off", "0", "off"},
		"bot/one_shot_conf":       {"on", "0", "off"},
		"bot-think/one_shot":      {"off", "0", "on"},
		"bot-think/one_shot_conf": {"on", "0", "on"},
	}
	for _, f := range []string{"results.parquet", "metrics.parquet"} {
		rows, err := parquetio.Read(filepath.Join(out, f))
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, r := range rows {
			k := fmt.Sprint(r["model"], "/", r["strategy"])
			w, ok := want[k]
			if !ok {
				t.Fatalf("%s: a row of %s", f, k)
			}
			seen[k] = true
			if r["instruction"] != w[0] || r["level"] != w[1] || r["thinking"] != w[2] {
				t.Errorf("%s %s: instruction %v level %v thinking %v, want %v", f, k, r["instruction"], r["level"], r["thinking"], w)
			}
		}
		if len(seen) != 4 {
			t.Errorf("%s: rows of %d cells, want 4", f, len(seen))
		}
	}
	// The manifest records the models' values, derived ones computed.
	if st.Model("bot-think").Factors["thinking"] != "on" || st.Model("bot").Factors["thinking"] != "off" {
		t.Errorf("model factors %v, %v", st.Model("bot").Factors, st.Model("bot-think").Factors)
	}
}

// A value written after a derivation is a check: equal, it is accepted;
// different, validate names the file, line and field of the written value,
// what the derivation gives, and where it is.
func TestFactorWrittenBesideDerivationMustAgree(t *testing.T) {
	load := func(strategies, models string) error {
		run := "name: toy-run\nmodels:" + models + "tasks: [toy]\nstrategies:\n" + strategies
		dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": run, "configs/strategies/one_shot.yaml": oneShotDerived}))
		_, err := spec.Load(filepath.Join(dir, "configs/run.yaml"))
		if err != nil {
			err = fmt.Errorf("%s", strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""))
		}
		return err
	}
	ok := "  - one_shot\n  - {use: one_shot, name: one_shot_conf, params: {conf: true}, factors: {instruction: \"on\"}}\n"
	if err := load(ok, derivedModels); err != nil {
		t.Fatalf("an agreeing value: %v", err)
	}
	bad := "  - one_shot\n  - {use: one_shot, name: one_shot_conf,\n     params: {conf: true}, factors: {instruction: \"off\"}}\n"
	studytest.WantErr(t, load(bad, derivedModels), `configs/run.yaml:14: strategies[1].factors.instruction: factor instruction is "off" here, but expr: params.conf ? "on" : "off" gives "on" for strategy one_shot_conf`,
		"configs/strategies/one_shot.yaml:5")
	badModel := strings.Replace(derivedModels, "extends: bot,", `extends: bot, factors: {thinking: "off"},`, 1)
	studytest.WantErr(t, load("  - one_shot\n", badModel), `models[1].factors.thinking: factor thinking is "off" here, but expr: params.thinking?.enabled == true ? "on" : "off" gives "on" for model bot-think`)
	// A variant may replace a written value with a derivation.
	over := strings.Replace(derivedModels, `factors: {thinking: {expr: 'params.thinking?.enabled == true ? "on" : "off"'}}`, `factors: {thinking: "off"}`, 1)
	over = strings.Replace(over, "extends: bot,", `extends: bot, factors: {thinking: {from: params.thinking.enabled}},`, 1)
	if err := load("  - one_shot\n", over); err != nil {
		t.Errorf("a derivation over a written value: %v", err)
	}
}

// Mistakes in derived factors are load errors naming the field: an
// expression over names the place does not have, a from: that is not a
// path, a value that is not text, a factor read from items and set on the
// model too.
func TestFactorDerivationErrors(t *testing.T) {
	data, _ := recordedReplies(20)
	load := func(task, models, strategy string) error {
		run := `name: recorded-run
models:
` + models + `
tasks: [recorded]
strategies: [rescore]
`
		dir := studytest.WriteTree(t, map[string]string{
			"data/replies.jsonl":              data,
			"configs/tasks/recorded.yaml":     task,
			"configs/strategies/rescore.yaml": strategy,
			"configs/run.yaml":                run,
		})
		_, err := spec.Load(filepath.Join(dir, "configs/run.yaml"))
		return err
	}
	none := "  - {name: recorded, provider: none}"
	studytest.WantErr(t, load(strings.Replace(recordedTaskYAML, "{from: item.thinking}", "{expr: 'itme.thinking'}", 1), none, rescoreYAML),
		"tasks/recorded.yaml:13: factors.thinking: factor thinking: expr: itme.thinking does not compile", "a factor on a task reads item, task")
	studytest.WantErr(t, load(strings.Replace(recordedTaskYAML, "{from: item.thinking}", "{from: 'item.thinking ?? 1'}", 1), none, rescoreYAML),
		`factors.thinking.from: "item.thinking ?? 1" is not a field path`, "write an expression as expr:")
	studytest.WantErr(t, load(strings.Replace(recordedTaskYAML, "{from: item.thinking}", "{expr: '[item.thinking]'}", 1), none, rescoreYAML),
		"factor thinking, task recorded, item r0: expr: [item.thinking] gives a list, not text", "fails on 17 more items")
	studytest.WantErr(t, load(strings.Replace(recordedTaskYAML, "{from: item.thinking}", "{}", 1), none, rescoreYAML),
		"factor thinking derives its value from nothing")
	studytest.WantErr(t, load(recordedTaskYAML, "  - {name: recorded, provider: none, factors: {thinking: \"on\"}}", rescoreYAML),
		`factor thinking is read from task recorded's items (from: item.thinking) and also set on model recorded`)
	studytest.WantErr(t, load(recordedTaskYAML, none, strings.Replace(rescoreYAML, "name: rescore\n", "name: rescore\nfactors: {mode: {expr: 'item.x'}}\n", 1)),
		"strategies/rescore.yaml:2: factors.mode: factor mode: expr: item.x does not compile", "a factor on a strategy reads model, params, strategy")
}

// A strategy's factor may read the cell's model as well as the strategy:
// each cell gets its own value.
func TestStrategyFactorReadsTheCellsModel(t *testing.T) {
	strategy := strings.Replace(studytest.OneShotYAML, "name: one_shot\n", `name: one_shot
factors:
  budget: {expr: 'model.params.thinking?.budget ?? 0'}
  cell: {expr: 'strategy.name + "@" + model.name'}
`, 1)
	run := "name: toy-run\nmodels:" + derivedModels + "tasks: [toy]\nstrategies: [one_shot]\n"
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": run, "configs/strategies/one_shot.yaml": strategy}))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	got := map[string]string{}
	for _, c := range st.Cells {
		got[c.Model.Name] = strings.Join(c.Factors, " ")
	}
	// Factors sorted: budget, cell, thinking.
	if got["bot"] != "0 one_shot@bot off" || got["bot-think"] != "1024 one_shot@bot-think on" {
		t.Errorf("cell factors %q", got)
	}
}
