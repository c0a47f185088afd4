package spec_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

// A value written after a derivation is a check: equal, it is accepted;
// different, validate names the file, line and field of the written value,
// what the derivation gives, and where it is.
func TestFactorWrittenBesideDerivationMustAgree(t *testing.T) {
	load := func(strategies, models string) error {
		run := "name: toy-run\nmodels:" + models + "tasks: [toy]\nstrategies:\n" + strategies
		dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": run, "configs/strategies/one_shot.yaml": studytest.OneShotDerived}))
		_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
		if err != nil {
			err = fmt.Errorf("%s", strings.ReplaceAll(err.Error(), dir+string(filepath.Separator), ""))
		}
		return err
	}
	ok := "  - one_shot\n  - {use: one_shot, name: one_shot_conf, params: {conf: true}, factors: {instruction: \"on\"}}\n"
	if err := load(ok, studytest.DerivedModels); err != nil {
		t.Fatalf("an agreeing value: %v", err)
	}
	bad := "  - one_shot\n  - {use: one_shot, name: one_shot_conf,\n     params: {conf: true}, factors: {instruction: \"off\"}}\n"
	studytest.WantErr(t, load(bad, studytest.DerivedModels), `configs/run.yaml:14: strategies[1].factors.instruction: factor instruction is "off" here, but expr: params.conf ? "on" : "off" gives "on" for strategy one_shot_conf`,
		"configs/strategies/one_shot.yaml:5")
	badModel := strings.Replace(studytest.DerivedModels, "extends: bot,", `extends: bot, factors: {thinking: "off"},`, 1)
	studytest.WantErr(t, load("  - one_shot\n", badModel), `models[1].factors.thinking: factor thinking is "off" here, but expr: params.thinking?.enabled == true ? "on" : "off" gives "on" for model bot-think`)
	// A variant may replace a written value with a derivation.
	over := strings.Replace(studytest.DerivedModels, `factors: {thinking: {expr: 'params.thinking?.enabled == true ? "on" : "off"'}}`, `factors: {thinking: "off"}`, 1)
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
	data, _ := studytest.RecordedReplies(20)
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
		_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
		return err
	}
	none := "  - {name: recorded, provider: none}"
	studytest.WantErr(t, load(strings.Replace(studytest.RecordedTaskYAML, "{from: item.thinking}", "{expr: 'itme.thinking'}", 1), none, studytest.RescoreYAML),
		"tasks/recorded.yaml:13: factors.thinking: factor thinking: expr: itme.thinking does not compile", "a factor on a task reads item, task")
	studytest.WantErr(t, load(strings.Replace(studytest.RecordedTaskYAML, "{from: item.thinking}", "{from: 'item.thinking ?? 1'}", 1), none, studytest.RescoreYAML),
		`factors.thinking.from: "item.thinking ?? 1" is not a field path`, "write an expression as expr:")
	studytest.WantErr(t, load(strings.Replace(studytest.RecordedTaskYAML, "{from: item.thinking}", "{expr: '[item.thinking]'}", 1), none, studytest.RescoreYAML),
		"factor thinking, task recorded, item r0: expr: [item.thinking] gives a list, not text", "fails on 17 more items")
	studytest.WantErr(t, load(strings.Replace(studytest.RecordedTaskYAML, "{from: item.thinking}", "{}", 1), none, studytest.RescoreYAML),
		"factor thinking derives its value from nothing")
	studytest.WantErr(t, load(studytest.RecordedTaskYAML, "  - {name: recorded, provider: none, factors: {thinking: \"on\"}}", studytest.RescoreYAML),
		`factor thinking is read from task recorded's items (from: item.thinking) and also set on model recorded`)
	studytest.WantErr(t, load(studytest.RecordedTaskYAML, none, strings.Replace(studytest.RescoreYAML, "name: rescore\n", "name: rescore\nfactors: {mode: {expr: 'item.x'}}\n", 1)),
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
	run := "name: toy-run\nmodels:" + studytest.DerivedModels + "tasks: [toy]\nstrategies: [one_shot]\n"
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

// A selection (a shard) keeps each kept item's own factor values.
func TestFactorsFromItemsUnderShard(t *testing.T) {
	data, _ := studytest.RecordedReplies(90)
	dir := studytest.WriteTree(t, map[string]string{
		"data/replies.jsonl":              data,
		"configs/tasks/recorded.yaml":     studytest.RecordedTaskYAML,
		"configs/strategies/rescore.yaml": studytest.RescoreYAML,
		"configs/run.yaml":                studytest.RecordedRun,
	})
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	if err := st.Select(manifest.Selection{Shard: &manifest.Shard{K: 1, N: 3}}); err != nil {
		t.Fatal(err)
	}
	n := 0
	levels := []string{"off", "low", "high"}
	st.EachCase(func(c *spec.Case) bool {
		var i int
		fmt.Sscanf(c.Item.ID, "r%d", &i)
		want := levels[i%3]
		if i%50 == 0 {
			want = ""
		}
		if got := st.FactorValues(c); got[0] != want {
			t.Errorf("%s: thinking %q, want %q", c.Item.ID, got[0], want)
		}
		n++
		return true
	})
	if n == 0 || n == 90 {
		t.Fatalf("the shard kept %d of 90 items", n)
	}
}
