package engine_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/spec"
)

// A model's sweep runs each cell once per value, the value winning over
// the stage's own temperature: 0, with the setting a factor column; with
// repeats, each value is sampled k times.
func TestSweepTemperatureAsAFactor(t *testing.T) {
	t.Setenv(engine.CacheEnv, t.TempDir())
	t.Setenv("PROMORAL_TEST_KEY_REP", "sk-test-0000")
	srv := studytest.NewRandomServer(t, 11)
	files := studytest.BaseTree(nil)
	files["configs/run.yaml"] = fmt.Sprintf(`name: sweep-run
models:
  - {name: rnd, provider: openai, model: gpt-4.1, base_url: %s, key_env: PROMORAL_TEST_KEY_REP, sweep: {temperature: [0, 0.7]}}
tasks: [toy]
strategies: [one_shot]
settings: {concurrency: 3, repeats: 2}
metrics:
  - {kind: classification, bootstrap: 0}
`, srv.BaseURL())
	dir := studytest.WriteTree(t, files)
	cfg := filepath.Join(dir, "configs/run.yaml")
	out := filepath.Join(dir, "out")
	st := studytest.MustLoad(t, cfg)
	if len(st.Factors) != 1 || st.Factors[0] != "temperature" {
		t.Fatalf("factors %v, want [temperature]", st.Factors)
	}
	sum := studytest.RunRepeats(t, cfg, out, context.Background())
	if sum.Cases != 24 || sum.CallsNew != 24 {
		t.Fatalf("6 items x 2 temperatures x 2 repeats: %s", sum)
	}
	temps := map[string]int{}
	for _, r := range studytest.ReadRows(t, filepath.Join(out, "calls.parquet")) {
		p := r["request_params"].(string)
		switch {
		case strings.Contains(p, `"temperature":0.7`):
			temps["0.7"]++
		case strings.Contains(p, `"temperature":0,`) || strings.Contains(p, `"temperature":0}`):
			temps["0"]++
		default:
			t.Errorf("request params %s", p)
		}
	}
	if temps["0"] != 12 || temps["0.7"] != 12 {
		t.Errorf("requests by temperature %v, want 12 each (the sweep wins over the stage's temperature: 0)", temps)
	}
	ids := map[string]bool{}
	col := map[string]int{}
	for _, r := range studytest.ReadRows(t, filepath.Join(out, "results.parquet")) {
		ids[r["case_id"].(string)] = true
		col[fmt.Sprint(r["temperature"])]++
		if want := "{temperature=" + fmt.Sprint(r["temperature"]) + "}"; !strings.Contains(r["case_id"].(string), want) {
			t.Errorf("case %s has temperature %v", r["case_id"], r["temperature"])
		}
	}
	if len(ids) != 24 || col["0"] != 12 || col["0.7"] != 12 {
		t.Errorf("%d distinct cases; temperature column %v", len(ids), col)
	}
	acc := map[string]int64{}
	for _, r := range studytest.ReadRows(t, filepath.Join(out, "metrics.parquet")) {
		if r["metric"] == "accuracy" && r["subset"] == "all" {
			acc[fmt.Sprint(r["temperature"])] = r["n"].(int64)
		}
	}
	if len(acc) != 2 || acc["0"] != 12 || acc["0.7"] != 12 {
		t.Errorf("accuracy rows by temperature (n): %v", acc)
	}
	// Applying again calls nothing: each value has its own keys.
	before := srv.Calls.Load()
	if again := studytest.RunRepeats(t, cfg, out, context.Background()); again.CallsNew != 0 || srv.Calls.Load() != before {
		t.Errorf("a second apply made %d new calls", again.CallsNew)
	}
}

func TestSweepValidation(t *testing.T) {
	// extra follows the models list: another model, and a matrix.
	for _, c := range []struct{ sweep, factors, extra, want string }{
		{`{max_tokens: [10, 20]}`, ``, ``, `cannot sweep "max_tokens"`},
		{`{temperature: [0, 3]}`, ``, ``, `3 is out of range`},
		{`{temperature: [0.5, 0.5]}`, ``, ``, `lists 0.5 twice`},
		{`{temperature: []}`, ``, ``, `lists no value`},
		{`{seed: [1.5]}`, ``, ``, `not a whole number`},
		{`{temperature: [0, 1]}`, `, factors: {temperature: hot}`, ``, `both a swept setting and a factor`},
		{`{temperature: [0, 1]}`, ``, "  - {name: other, provider: scripted, script: {replies: [{text: \"Answer: wrong\"}]}}\nmatrix: {models: [other]}\n",
			`runs no cell of the matrix`},
	} {
		files := studytest.BaseTree(nil)
		files["configs/run.yaml"] = `name: sweep-bad
models:
  - {name: bot, provider: scripted, script: {replies: [{text: "Answer: wrong"}]}, sweep: ` + c.sweep + c.factors + `}
` + c.extra + `tasks: [toy]
strategies: [one_shot]
`
		dir := studytest.WriteTree(t, files)
		_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "run.yaml:") {
			t.Errorf("sweep %s%s: %v; want an error naming the file and saying %q", c.sweep, c.factors, err, c.want)
		}
	}
}
