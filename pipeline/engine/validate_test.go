package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// A bad config, or an output folder that cannot be written, must not touch
// the outputs of an earlier good run.
func TestBadInputLosesNothingAlreadyWritten(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(nil))
	out := filepath.Join(dir, "out")
	studytest.Apply(t, studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), out)
	before := snapshot(t, out)

	os.WriteFile(filepath.Join(dir, "configs/strategies/loop.yaml"), []byte("name: loop\nstages: [\n"), 0o644)
	if _, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{}); err == nil {
		t.Fatal("broken strategy loaded")
	}
	if after := snapshot(t, out); !equalMaps(before, after) {
		t.Fatal("a failed load changed the outputs")
	}
}

func TestUnwritableOutputFolderFailsBeforeAnyCall(t *testing.T) {
	if os.Getuid() == 0 {
		// root can write anywhere; use a path under a regular file instead.
	}
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"blocker": "a file, not a folder"}))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	_, _, err := engine.NewEngine(st, engine.Options{OutDir: filepath.Join(dir, "blocker", "out"), Scorer: scoring.New()}).Run(context.Background())
	studytest.WantErr(t, err, "output folder", "--out")
	if calls := st.Model("bot").Provider.(interface{ Calls() int64 }).Calls(); calls != 0 {
		t.Fatalf("%d model calls before the output folder was checked", calls)
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = string(data)
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Problems that do not depend on each other are all reported in one pass:
// a provider typo, an unknown field, a bad stage kind, a bad base_url, an
// expression that does not compile and a template that reads a field the
// items lack, each in its own place, give six problems at once (not a
// first layer, then the template once the rest is fixed).
func TestValidateReportsEveryIndependentProblemInOnePass(t *testing.T) {
	run := `name: toy-run
models:` + studytest.ScriptedModel + `
  - name: typo
    provider: openia
  - name: local
    provider: openai-compatible
    base_url: localhost:8000/v1
tasks: [toy]
strategies: [one_shot]
`
	strat := `name: one_shot
colour: red
stages:
  - name: ask
    kind: prompt
    messages:
      - role: user
        text: "{{.item.scenario}}"
  - name: parse
    kind: extrakt
  - name: tally
    kind: compute
    set:
      n: "visits.ask +"
outputs:
  label: stages.parse.label
`
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": run, "configs/strategies/one_shot.yaml": strat}))
	_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
	ds, ok := err.(yamlstrict.Diags)
	if !ok {
		t.Fatalf("want diagnostics, got %v", err)
	}
	want := [][]string{
		{"run.yaml:", "models[1].provider", `unknown provider "openia"`},
		{"run.yaml:", "models[2].base_url", "not an http(s) URL"},
		{"one_shot.yaml:2", `unknown field "colour"`},
		{"one_shot.yaml:", "stages[ask]", `map has no entry for key "scenario"`},
		{"one_shot.yaml:10", `unknown stage kind "extrakt"`},
		{"one_shot.yaml:", "stages[tally].set.n", "does not compile"},
	}
	text := err.Error()
	for _, w := range want {
		found := false
		for _, d := range ds {
			line := d.Error()
			all := true
			for _, part := range w {
				all = all && strings.Contains(line, part)
			}
			found = found || all
		}
		if !found {
			t.Errorf("no problem with %q in:\n%s", w, text)
		}
	}
	if len(ds) != len(want) {
		t.Errorf("want %d problems, got %d:\n%s", len(want), len(ds), text)
	}
}
