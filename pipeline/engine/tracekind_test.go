package engine_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/casetrace"
)

// tallyConfig is a stage kind that only this test registers: the trace
// must name it by its registered kind like any built-in one.
type tallyConfig struct {
	spec.StageBase `yaml:",inline"`
}

func (c *tallyConfig) Build(b *spec.Build) spec.Stage { return tally{} }

type tally struct{}

func (tally) Run(x spec.Exec) (string, error) { return "", nil }

func init() {
	spec.Register(spec.Kind{Name: "trace_test_tally", Doc: "A stage kind for the trace test.", New: func() spec.Config { return &tallyConfig{} }})
}

// Each trace step carries the kind the strategy gave its stage, so the
// viewer can say "compute" or "branch" rather than guess from the outputs.
func TestTraceRecordsStageKind(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{
		"configs/strategies/kinds.yaml": `name: kinds
stages:
  - name: ask
    kind: prompt
    messages: [{role: user, text: "{{.task.question}}"}]
  - name: parse
    kind: extract
  - name: keep
    kind: compute
    set: {first: stages.parse.label}
  - name: count
    kind: trace_test_tally
  - name: route
    kind: branch
    cases: [{when: "true", goto: end}]
outputs:
  label: stages.parse.label
`,
		"configs/run.yaml": `name: kinds
models:` + studytest.ScriptedModel + `
tasks: [toy]
strategies: [kinds]
`,
	}))
	out := filepath.Join(t.TempDir(), "out")
	studytest.Apply(t, studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), out)
	var traces []string
	if err := parquetio.Scan(filepath.Join(out, "results.parquet"), []string{"trace"}, nil,
		func(r map[string]any) { traces = append(traces, r["trace"].(string)) }); err != nil {
		t.Fatal(err)
	}
	if len(traces) == 0 {
		t.Fatal("no rows in results.parquet")
	}
	for _, tr := range traces {
		steps, err := casetrace.Read(tr)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range steps {
			got = append(got, s.Stage+":"+s.Kind)
		}
		if want := "ask:prompt parse:extract keep:compute count:trace_test_tally route:branch"; strings.Join(got, " ") != want {
			t.Errorf("trace kinds:\n got %s\nwant %s", strings.Join(got, " "), want)
		}
	}
}
