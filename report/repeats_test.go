package report

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	_ "github.com/promoral/promoral/metrics" // registers the metric kinds
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/fake"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
	_ "github.com/promoral/promoral/stages"
)

// A run with repeats gets the run-to-run variance section (each cell's
// flip rate as metrics.parquet has it) and the per-repeat accuracy figure.
func TestReportRepeats(t *testing.T) {
	var mu sync.Mutex
	rng := rand.New(rand.NewPCG(4, 4))
	srv := fake.New("openai", func(c fake.Call) []string {
		mu.Lock()
		defer mu.Unlock()
		if rng.IntN(3) == 0 {
			return []string{"Confidence: 0.6\nFinal Answer: Acceptable"}
		}
		return []string{"Confidence: 0.8\nFinal Answer: Unacceptable"}
	})
	defer srv.Close()
	t.Setenv("PROMORAL_TEST_KEY_REPORT", "sk-test-0000")
	t.Setenv(engine.CacheEnv, t.TempDir())
	root, _ := filepath.Abs("..")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "rep.yaml")
	yaml := fmt.Sprintf(`name: rep
models:
  - {name: rnd, provider: openai, model: gpt-4.1, base_url: %s, key_env: PROMORAL_TEST_KEY_REPORT}
tasks:
  - use: ethics
    dataset: {limit: 12}
strategies: [zero_shot, zero_shot_cot]
settings: {repeats: 4, seed: 3}
metrics:
  - {kind: repeats, bootstrap: 200}
paths: {strategies: %[2]s/configs/strategies, tasks: %[2]s/configs/tasks, models: %[2]s/configs/models, prompts: %[2]s/prompts}
`, srv.BaseURL(), root)
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := spec.LoadWith(cfg, spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := engine.Connect(st, false); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "out")
	if _, _, err := engine.NewEngine(st, engine.Options{OutDir: run, Doer: engine.TransportsShared(engine.RateOptions{Concurrency: 2}), Scorer: scoring.New()}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	out, html, md := generate(t, run, Options{})
	if !hasSection(out, "repeats") {
		t.Fatalf("no repeats section: %v", out.Sections)
	}
	checkPNG(t, filepath.Join(run, "figures", "repeats-ethics.png"))
	checkSVG(t, filepath.Join(run, "figures", "repeats-ethics.svg"))
	rows, err := parquetio.Read(filepath.Join(run, "metrics.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, r := range rows {
		if r["metric"] == "flip_rate" {
			n++
			want := fmt.Sprintf("%.3f", r["value"].(float64))
			if !strings.Contains(md, want) {
				t.Errorf("report.md lacks %s's flip rate %s", r["strategy"], want)
			}
		}
	}
	if n != 2 || !strings.Contains(html, "Run-to-run variance") {
		t.Errorf("%d flip_rate rows; section in html: %v", n, strings.Contains(html, "Run-to-run variance"))
	}
}
