package engine_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/parquetio"
)

// A factor derived from a strategy's params and one derived from a model's
// settings take the values the hand-written ones did: a variant that sets
// the param, and a model variant that turns thinking on, are labelled
// without saying so again.
func TestFactorsDerivedFromParams(t *testing.T) {
	run := `name: toy-run
models:` + studytest.DerivedModels + `
tasks: [toy]
strategies:
  - one_shot
  - {use: one_shot, name: one_shot_conf, params: {conf: true}}
settings: {seed: 3}
metrics:
  - {kind: classification, bootstrap: 0}
`
	files := studytest.BaseTree(map[string]string{"configs/run.yaml": run, "configs/strategies/one_shot.yaml": studytest.OneShotDerived})
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
