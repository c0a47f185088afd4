package spec_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/dataset"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// Each bad input must fail at load time, naming the file, the line and the
// field, before any model call.
func TestBadInputIsReportedWithFileLineAndField(t *testing.T) {
	strat := func(body string) map[string]string {
		return map[string]string{"configs/strategies/one_shot.yaml": body}
	}
	cases := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"malformed YAML", strat("name: one_shot\nstages: [\n  - {name: x\n"),
			[]string{"one_shot.yaml:", "malformed YAML"}},
		{"unknown field", strat(strings.Replace(studytest.OneShotYAML, "    temperature: 0\n", "    temprature: 0\n", 1)),
			[]string{"one_shot.yaml:5", `unknown field "temprature"`, `did you mean "temperature"`}},
		{"wrong type", strat(strings.Replace(studytest.OneShotYAML, "temperature: 0", "temperature: hot", 1)),
			[]string{"one_shot.yaml:5", "stages[0].temperature", "expected a number"}},
		{"unknown stage kind", strat(strings.Replace(studytest.OneShotYAML, "kind: extract", "kind: extrakt", 1)),
			[]string{"one_shot.yaml:10", `unknown stage kind "extrakt"`, "known stage kinds: branch, compute, extract, prompt"}},
		{"missing stage in next", strat(strings.Replace(studytest.OneShotYAML, "    kind: extract\n", "    kind: extract\n    next: finish\n", 1)),
			[]string{"one_shot.yaml:11", "stages[parse].next", `no stage named "finish"`}},
		{"missing stage in an expression", strat(strings.Replace(studytest.OneShotYAML, "label: stages.parse.label", "label: stages.pasre.label", 1)),
			[]string{"one_shot.yaml", "outputs.label", `no stage "pasre"`}},
		{"expression that does not compile", strat(strings.Replace(studytest.OneShotYAML, "label: stages.parse.label", "label: stages.parse.label ==", 1)),
			[]string{"one_shot.yaml", "outputs.label", "does not compile"}},
		{"unbounded cycle", map[string]string{"configs/strategies/loop.yaml": strings.Replace(studytest.LoopYAML, "    max_visits: 3\n", "", 1)},
			[]string{"loop.yaml:", "unbounded loop", "max_visits"}},
		{"template names a missing field", strat(strings.Replace(studytest.OneShotYAML, "{{.task.question}}", "{{.item.scenario}}", 1)),
			[]string{"one_shot.yaml:3", "stages[ask]", `map has no entry for key "scenario"`, "item a"}},
		{"template syntax", strat(strings.Replace(studytest.OneShotYAML, "{{.task.question}}", "{{.task.question", 1)),
			[]string{"one_shot.yaml:7", "stages[ask].messages[0]", "unclosed action"}},
		{"missing template file", strat(strings.Replace(studytest.OneShotYAML, `text: "{{.task.question}}"`, "template: nowhere/user.tmpl", 1)),
			[]string{"one_shot.yaml:7", "cannot read template", "prompts folder"}},
		{"dangling strategy reference", map[string]string{"configs/run.yaml": strings.Replace(studytest.BaseTree(nil)["configs/run.yaml"], "[one_shot, loop]", "[one_shot, lopo]", 1)},
			[]string{"run.yaml:12", `strategy "lopo" not found`}},
		{"dangling matrix reference", map[string]string{"configs/run.yaml": studytest.BaseTree(nil)["configs/run.yaml"] + "matrix: {models: [gpt-9]}\n"},
			[]string{"run.yaml:", "matrix[0].models", `no model "gpt-9"`}},
		{"dataset row missing a mapped field", map[string]string{
			"data/items.jsonl":       studytest.ItemsJSONL + `{"id":"g","gold":"0"}` + "\n",
			"configs/tasks/toy.yaml": strings.Replace(studytest.TaskYAML, "  id: id\n", "  id: id\n  fields: {text: text}\n", 1)},
			[]string{"items.jsonl: row 7", `"text"`}},
		{"gold outside the answer space", map[string]string{"data/items.jsonl": studytest.ItemsJSONL + `{"id":"g","text":"x","gold":"7"}` + "\n"},
			[]string{"items.jsonl:7", "gold value 7 is not in the answer space"}},
		{"duplicate item id", map[string]string{"data/items.jsonl": studytest.ItemsJSONL + `{"id":"a","text":"x","gold":"0"}` + "\n"},
			[]string{"items.jsonl", "row 7", "duplicate"}},
		{"unknown provider", map[string]string{"configs/run.yaml": strings.Replace(studytest.BaseTree(nil)["configs/run.yaml"], "provider: scripted", "provider: skynet", 1)},
			[]string{"run.yaml:4", "models[0].provider", `unknown provider "skynet"`}},
		{"label output missing", strat(strings.Replace(studytest.OneShotYAML, "  label: stages.parse.label\n", "", 1)),
			[]string{"one_shot.yaml", "outputs.label", "must declare a label"}},
		{"duplicate stage names", strat(strings.Replace(studytest.OneShotYAML, "name: parse", "name: ask", 1)),
			[]string{"one_shot.yaml:9", `stage "ask" is declared twice`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := studytest.WriteTree(t, studytest.BaseTree(tc.files))
			_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
			studytest.WantErr(t, err, tc.want...)
		})
	}
}

func TestValidationListsEveryProblem(t *testing.T) {
	bad := strings.Replace(studytest.OneShotYAML, "temperature: 0", "temperature: hot", 1)
	bad = strings.Replace(bad, "label: stages.parse.label", "label: stages.nope.label", 1)
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/strategies/one_shot.yaml": bad,
		"configs/strategies/loop.yaml": strings.Replace(studytest.LoopYAML, "    max_visits: 3\n", "", 1)}))
	_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
	ds, ok := err.(yamlstrict.Diags)
	if !ok || len(ds) < 3 {
		t.Fatalf("want at least 3 diagnostics, got %v", err)
	}
}

func TestAnUndecodableStageCausesNoFollowOnErrors(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/strategies/one_shot.yaml": strings.Replace(studytest.OneShotYAML, "kind: extract", "kind: extrakt", 1)}))
	_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
	ds, _ := err.(yamlstrict.Diags)
	if len(ds) != 1 {
		t.Fatalf("want exactly the one unknown-kind error, got %d:\n%v", len(ds), err)
	}
}

func TestDatasetProblemsPointAtTheField(t *testing.T) {
	bad := strings.Replace(studytest.TaskYAML, "  path: ../../data/items.jsonl\n", "  path: ../../data/itemz.jsonl\n", 1)
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/tasks/toy.yaml": bad}))
	_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
	studytest.WantErr(t, err, "toy.yaml:4: dataset.path:", "file not found", "fix dataset.path")
}

// Gold errors read the same whether the items' fields stay in memory or
// wait in the store (where only a number is kept of each item's gold):
// the raw value as loaded, a missing field, and the stop after ten.
func TestGoldErrorsOfStoredItems(t *testing.T) {
	defer func(v int64) { dataset.SpillAbove = v }(dataset.SpillAbove)
	data := studytest.ItemsJSONL + `{"id":"g","text":"x","gold":7}
{"id":"h","text":"x"}
{"id":"i","text":"x","gold":"maybe"}
{"id":"j","text":"x","gold":2.5}
{"id":"k","text":"x","gold":null}
{"id":"l","text":"x","gold":""}
{"id":"m","text":"x","gold":true}
`
	for i := range 10 {
		data += fmt.Sprintf("{\"id\":\"z%d\",\"text\":\"x\",\"gold\":\"%d\"}\n", i, 10+i)
	}
	errs := map[int64]string{}
	for _, spill := range []int64{1 << 40, 0} {
		dataset.SpillAbove = spill
		dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"data/items.jsonl": data}))
		_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
		if err == nil {
			t.Fatalf("spill above %d: no error", spill)
		}
		errs[spill] = strings.ReplaceAll(err.Error(), dir, "DIR")
	}
	mem, stored := errs[1<<40], errs[0]
	if mem != stored {
		t.Errorf("gold errors differ:\nin memory:\n%s\nstored:\n%s", mem, stored)
	}
	for _, want := range []string{"row 7: gold value 7 is not in the answer space", `row 8 has no gold field "gold"`,
		"row 9: gold value maybe is not", "row 10: gold value 2.5 is not",
		"row 19: gold value 15 is not", "stopped after 10 gold errors"} {
		if !strings.Contains(stored, want) {
			t.Errorf("stored: no %q in\n%s", want, stored)
		}
	}
	if strings.Contains(stored, "row 20:") {
		t.Errorf("stored: an 11th gold error:\n%s", stored)
	}
}
