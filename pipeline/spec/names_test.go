package spec_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// Every name a config refers to gets the same help a misspelt field gets:
// the line it is on and the name that was probably meant.
func TestMisspeltNamesGetDidYouMean(t *testing.T) {
	run := studytest.BaseTree(nil)["configs/run.yaml"]
	runWith := func(old, new string) map[string]string {
		if !strings.Contains(run, old) {
			t.Fatalf("run.yaml has no %q", old)
		}
		return map[string]string{"configs/run.yaml": strings.Replace(run, old, new, 1)}
	}
	strat := func(file, body, old, new string) map[string]string {
		if !strings.Contains(body, old) {
			t.Fatalf("%s has no %q", file, old)
		}
		return map[string]string{"configs/strategies/" + file: strings.Replace(body, old, new, 1)}
	}
	task := func(old, new string) map[string]string {
		return map[string]string{"configs/tasks/toy.yaml": strings.Replace(studytest.TaskYAML, old, new, 1)}
	}
	cases := []struct {
		name  string
		files map[string]string
		want  []string
	}{
		{"task file", runWith("tasks: [toy]", "tasks: [tyo]"),
			[]string{"run.yaml:11", `task "tyo" not found`, `did you mean "toy"?`}},
		{"strategy file", runWith("[one_shot, loop]", "[one_shot, lopo]"),
			[]string{"run.yaml:12", `strategy "lopo" not found`, `did you mean "loop"?`}},
		{"use: file", runWith("[one_shot, loop]", "[one_shot, {use: one_shoot, name: again}]"),
			[]string{"run.yaml:12", "strategies[1].use", `did you mean "one_shot"?`}},
		{"a name far from any lists the known ones", runWith("tasks: [toy]", "tasks: [zqxjkw]"),
			[]string{"run.yaml:11", `task "zqxjkw" not found in`, "nor in the shipped library", "paths.tasks", "known: toy"}},
		{"extends", runWith("\n\ntasks: [toy]", "\n  - {name: bot2, extends: bto}\ntasks: [toy]"),
			[]string{"models[1].extends", `no earlier model "bto"`, `did you mean "bot"?`}},
		{"provider", runWith("provider: scripted", "provider: scriptd"),
			[]string{"run.yaml:4", `unknown provider "scriptd"`, `did you mean "scripted"?`}},
		{"unparsed policy", runWith("{concurrency: 3}", "{concurrency: 3, unparsed: exlude}"),
			[]string{"settings.unparsed", `did you mean "exclude"?`}},
		{"cache mode", runWith("{concurrency: 3}", "{concurrency: 3, cache: shard}"),
			[]string{"run.yaml", "settings.cache", `unknown cache "shard"`, `did you mean "shared"?`}},
		{"matrix model", map[string]string{"configs/run.yaml": run + "matrix:\n  - models: [bot]\n  - models: [bot, bto]\n"},
			[]string{"run.yaml:16", "matrix[1].models[1]", `no model "bto"`, `did you mean "bot"?`}},
		{"matrix strategy (one block)", map[string]string{"configs/run.yaml": run + "matrix: {strategies: [one_shto]}\n"},
			[]string{"run.yaml:14", "strategies[0]", `no strategy "one_shto"`, `did you mean "one_shot"?`}},
		{"matrix task", map[string]string{"configs/run.yaml": run + "matrix:\n  - tasks:\n      - tyo\n"},
			[]string{"run.yaml:16", "matrix[0].tasks[0]", `did you mean "toy"?`}},
		{"matrix exclusion", map[string]string{"configs/run.yaml": run + "matrix:\n  - exclude:\n      - {model: bot, strategy: lopp}\n"},
			[]string{"run.yaml:16", "matrix[0].exclude[0].strategy", `no strategy "lopp"`, `did you mean "loop"?`}},
		{"next", strat("one_shot.yaml", studytest.OneShotYAML, "    kind: extract\n", "    kind: extract\n    next: aks\n"),
			[]string{"one_shot.yaml:11", "stages[parse].next", `did you mean "ask"?`}},
		{"goto", strat("loop.yaml", studytest.LoopYAML, "goto: end", "goto: ned"),
			[]string{"loop.yaml", `no stage named "ned"`, `did you mean "end"?`}},
		{"branch default", strat("loop.yaml", studytest.LoopYAML, "default: again", "default: agian"),
			[]string{"loop.yaml", `no stage named "agian"`, `did you mean "again"?`}},
		{"continue", strat("loop.yaml", studytest.LoopYAML, "continue: [again, ask]", "continue: [again, aks]"),
			[]string{"loop.yaml:12", "stages[again].continue", `no stage "aks" to continue`, `did you mean "ask"?`}},
		{"extract from", strat("one_shot.yaml", studytest.OneShotYAML, "    kind: extract\n", "    kind: extract\n    from: aks\n"),
			[]string{"one_shot.yaml:11", "stages[parse].from", `did you mean "ask"?`}},
		{"expression", strat("one_shot.yaml", studytest.OneShotYAML, "label: stages.parse.label", "label: stages.pasre.label"),
			[]string{"one_shot.yaml", `no stage "pasre"`, `did you mean "parse"?`}},
		{"stage kind", strat("one_shot.yaml", studytest.OneShotYAML, "kind: extract", "kind: extarct"),
			[]string{"one_shot.yaml:10", `unknown stage kind "extarct"`, `did you mean "extract"?`}},
		{"judge model", task("blocks:", "judge: {strategy: one_shot, model: bto}\nblocks:"),
			[]string{"toy.yaml", `no model "bto" for the judge`, `did you mean "bot"?`}},
		{"judge strategy", task("blocks:", "judge: {strategy: one_sht, model: bot}\nblocks:"),
			[]string{"toy.yaml:15", "judge.strategy", `strategy "one_sht" not found`, `did you mean "one_shot"?`}},
		{"metric task", map[string]string{"configs/run.yaml": run + "metrics:\n  - kind: classification\n    tasks: [tyo]\n"},
			[]string{"run.yaml:16", "metrics[0].tasks[0]", `no task "tyo"`, `did you mean "toy"?`}},
		{"metric kind", map[string]string{"configs/run.yaml": run + "metrics:\n  - kind: clasification\n"},
			[]string{"run.yaml:15", `did you mean "classification"?`}},
		{"compare pair", map[string]string{"configs/run.yaml": run + "metrics:\n  - kind: compare\n    pairs: [[one_shot, lop]]\n"},
			[]string{"metrics[0].pairs[0][1]", `no strategy "lop"`, `did you mean "loop"?`}},
		{"applies_to", strat("one_shot.yaml", studytest.OneShotYAML, "stages:\n", "applies_to: [ty]\nstages:\n"),
			[]string{"one_shot.yaml:2", "applies_to[0]", `did you mean "toy"?`}},
		{"template file", strat("one_shot.yaml", studytest.OneShotYAML, `text: "{{.task.question}}"`, "template: zero_shot/usr.tmpl"),
			[]string{"one_shot.yaml:7", "cannot read template", `did you mean "zero_shot/user.tmpl"?`}},
		{"metric subset", map[string]string{"configs/run.yaml": run + "metrics:\n  - kind: classification\n    subsets: [shrot]\n",
			"configs/tasks/toy.yaml": strings.Replace(studytest.TaskYAML, "blocks:", "subsets: {short: 'len(item.text) < 20'}\nblocks:", 1)},
			[]string{"metrics[0].subsets[0]", `subset "shrot"`, `did you mean "short"?`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := studytest.BaseTree(tc.files)
			files["prompts/zero_shot/user.tmpl"] = "{{.task.question}}"
			dir := studytest.WriteTree(t, files)
			_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
			studytest.WantErr(t, err, tc.want...)
		})
	}
}

func TestDidYouMean(t *testing.T) {
	known := []string{"zero_shot", "zero_shot_cot", "few_shot", "self_correct"}
	for name, want := range map[string]string{
		"zero_shto":    `did you mean "zero_shot"?`, // a swap is one slip
		"Zero_Shot":    `did you mean "zero_shot"?`,
		"fewshot":      `did you mean "few_shot"?`,
		"self-correct": `did you mean "self_correct"?`,
		"zero_shot":    "", // present: wrong for another reason, not a typo
		"xyz":          "",
		"completely":   "",
	} {
		if got := yamlstrict.DidYouMean(name, known); got != want {
			t.Errorf("yamlstrict.DidYouMean(%q) = %q, want %q", name, got, want)
		}
	}
	if got := yamlstrict.NameHint("qqq", []string{"b", "a", "a"}, "name one"); got != "name one; known: a, b" {
		t.Errorf("NameHint = %q", got)
	}
}

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		n    int
		want string
	}{{0, "0 strategies"}, {1, "1 strategy"}, {2, "2 strategies"}} {
		if got := spec.Plural(c.n, "strategy", "strategies"); got != c.want {
			t.Errorf("Plural(%d) = %q, want %q", c.n, got, c.want)
		}
	}
}
