package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/fake"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/runfolder/manifest"
)

// A selected apply reads and adds to the same journal, marks its outputs
// (manifest, summary, every metric row) as a part, and does not replace
// the whole study's last outputs for good: an apply without the selection
// rebuilds them from the journal without a new call.
func TestSelectedApplyIsMarkedAndKeepsTheJournal(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.ShardTree())
	cfg := filepath.Join(dir, "configs/run.yaml")
	out := filepath.Join(dir, "out")
	whole, _ := studytest.Apply(t, studytest.MustLoad(t, cfg), out)

	st := studytest.MustLoad(t, cfg)
	if err := st.Select(manifest.Selection{Strategies: []string{"one_shot"}, Limit: 3}); err != nil {
		t.Fatal(err)
	}
	sum, res := studytest.Apply(t, st, out)
	if sum.Cases != 3 || len(res) != 3 || sum.CallsNew != 0 {
		t.Fatalf("selected apply: %s (%d results)", sum, len(res))
	}
	text := sum.String()
	for _, p := range []string{"partial", "--strategy one_shot --limit 3: 3 of 16 cases", "these cases only"} {
		if !strings.Contains(text, p) {
			t.Errorf("summary does not say %q:\n%s", p, text)
		}
	}
	var man manifest.Manifest
	data, err := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &man); err != nil || !man.Selection.Partial() || man.Selection.Limit != 3 || man.Selection.CasesAll != 16 {
		t.Fatalf("manifest selection: %v %+v", err, man.Selection)
	}
	rows := studytest.ReadRows(t, filepath.Join(out, "results.parquet"))
	if len(rows) != 3 {
		t.Fatalf("results.parquet has %d rows", len(rows))
	}
	metrics := studytest.ReadRows(t, filepath.Join(out, "metrics.parquet"))
	for _, r := range metrics {
		if s, _ := r["selection"].(string); !strings.Contains(s, "3 of 16 cases") {
			t.Fatalf("metric row not marked: %v", r)
		}
	}
	again, _ := studytest.Apply(t, studytest.MustLoad(t, cfg), out)
	if again.Cases != whole.Cases || again.CallsNew != 0 || again.Selection != nil {
		t.Fatalf("whole apply after a selected one: %s", again)
	}
	for _, r := range studytest.ReadRows(t, filepath.Join(out, "metrics.parquet")) {
		if r["selection"] != nil {
			t.Fatalf("whole study's metric row marked: %v", r)
		}
	}
}

// A re-apply takes the rows in force only when they describe the same
// cases: two selections of equal size number different cases alike, so the
// second must walk its own (and the CLI's streaming apply, NoResults, is
// the path that takes rows).
func TestReapplyDoesNotTakeAnotherSelectionsRows(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.ShardTree())
	cfg := filepath.Join(dir, "configs/run.yaml")
	out := filepath.Join(dir, "out")
	run := func(strategy string) *engine.Summary {
		st := studytest.MustLoad(t, cfg)
		if err := st.Select(manifest.Selection{Strategies: []string{strategy}}); err != nil {
			t.Fatal(err)
		}
		sum, _, err := engine.NewEngine(st, engine.Options{OutDir: out, NoResults: true, Scorer: scoring.New()}).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	first := run("one_shot")
	second := run("loop")
	if first.Cases != second.Cases || first.Cases == 0 {
		t.Fatalf("the test needs two selections of one size: %d and %d cases", first.Cases, second.Cases)
	}
	if second.Reused != 0 {
		t.Errorf("the loop selection took %d rows of the one_shot selection", second.Reused)
	}
	for _, r := range studytest.ReadRows(t, filepath.Join(out, "results.parquet")) {
		if r["strategy"] != "loop" {
			t.Fatalf("results.parquet after the loop selection holds a %v row: %v", r["strategy"], r["case_id"])
		}
	}
	// The same selection again takes its own rows.
	if again := run("loop"); again.Reused == 0 || again.Reused != again.Cases-again.Errors-again.Kept {
		t.Errorf("the same selection again reused %d of %d rows (%d errored)", again.Reused, again.Cases, again.Errors)
	}
}

// Nor from another set of cells of the same size: an optional model
// skipped for want of its key in one apply and the other in the next leave
// equally many cases, numbered alike; the second apply must walk its own.
func TestReapplyDoesNotTakeAnotherModelsRows(t *testing.T) {
	t.Setenv(engine.CacheEnv, t.TempDir())
	srv := fake.New("openai", func(c fake.Call) []string { return []string{"Confidence: 0.7\nAnswer: wrong"} })
	defer srv.Close()
	models := fmt.Sprintf(`
  - {name: alpha, provider: openai, model: gpt-4.1, base_url: %[1]s, key_env: PROMORAL_TEST_KEY_ALPHA, optional: true}
  - {name: beta, provider: openai, model: gpt-4.1-mini, base_url: %[1]s, key_env: PROMORAL_TEST_KEY_BETA, optional: true}
`, srv.BaseURL())
	files := studytest.BaseTree(nil)
	files["configs/run.yaml"] = "name: toy-run\nmodels:" + models + "tasks: [toy]\nstrategies: [one_shot]\n"
	dir := studytest.WriteTree(t, files)
	cfg := filepath.Join(dir, "configs/run.yaml")
	out := filepath.Join(dir, "out")
	run := func(key string) *engine.Summary {
		t.Setenv("PROMORAL_TEST_KEY_ALPHA", "")
		t.Setenv("PROMORAL_TEST_KEY_BETA", "")
		t.Setenv(key, "sk-test-0000")
		st := studytest.MustLoad(t, cfg)
		if err := engine.Connect(st, false); err != nil {
			t.Fatal(err)
		}
		sum, _, err := engine.NewEngine(st, engine.Options{OutDir: out, NoResults: true, Doer: engine.TransportsShared(engine.RateOptions{Concurrency: 2}), Scorer: scoring.New()}).Run(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return sum
	}
	first := run("PROMORAL_TEST_KEY_ALPHA")
	second := run("PROMORAL_TEST_KEY_BETA")
	if first.Cases != second.Cases || first.Cases == 0 || len(second.Skipped) != 1 {
		t.Fatalf("the test needs two applies of one size, each skipping a model: %s / %s", first, second)
	}
	if second.Reused != 0 {
		t.Errorf("beta's apply took %d rows of alpha's", second.Reused)
	}
	for _, r := range studytest.ReadRows(t, filepath.Join(out, "results.parquet")) {
		if r["model"] != "beta" {
			t.Fatalf("results.parquet after beta's apply holds a %v row: %v", r["model"], r["case_id"])
		}
	}
	if again := run("PROMORAL_TEST_KEY_BETA"); again.Reused != again.Cases {
		t.Errorf("beta's apply again reused %d of %d rows", again.Reused, again.Cases)
	}
}
