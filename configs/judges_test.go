package configs_test

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
)

// The refusal heuristic judge is the hybrid safety judge's first stage:
// the two files must hold the same rules, or the heuristic's measured
// agreement would not be the hybrid's heuristic part's.
func TestRefusalHeuristicIsTheHybridsHeuristic(t *testing.T) {
	stage := func(file string) any {
		data, err := os.ReadFile(filepath.Join(configsDir, "strategies", file))
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			Stages []map[string]any `yaml:"stages"`
		}
		if err := yaml.Unmarshal(data, &s); err != nil {
			t.Fatal(err)
		}
		for _, st := range s.Stages {
			if st["name"] == "heuristic" {
				return st
			}
		}
		t.Fatalf("%s has no heuristic stage", file)
		return nil
	}
	a, b := stage("safety_judge.yaml"), stage("refusal_heuristic.yaml")
	if fmt.Sprint(a) != fmt.Sprint(b) {
		t.Errorf("the heuristic stages differ:\nsafety_judge:      %v\nrefusal_heuristic: %v", a, b)
	}
}

// sourcesTable reads the judges' figures data/SOURCES.md lists for the
// judge-comparison set: judge -> [all 300, harmful 200] -> accuracy,
// kappa, sensitivity, specificity.
func sourcesTable(t *testing.T) map[string][2][4]float64 {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoDir, "data", "SOURCES.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\s*\| (\w+) \| ([0-9.]+) / ([0-9.]+) / ([0-9.]+) / ([0-9.]+) \| ([0-9.]+) / ([0-9.]+) / ([0-9.]+) / ([0-9.]+) \|$`)
	out := map[string][2][4]float64{}
	for _, m := range row.FindAllStringSubmatch(string(data), -1) {
		var v [2][4]float64
		for i := 0; i < 8; i++ {
			v[i/4][i%4], _ = strconv.ParseFloat(m[2+i], 64)
		}
		out[m[1]] = v
	}
	if len(out) != 4 {
		t.Fatalf("data/SOURCES.md lists %d judges for the judge-comparison set, want 4", len(out))
	}
	return out
}

// The published judges' agreement with people, computed by
// judge_agreement from the shipped data, is what data/SOURCES.md lists:
// on the 200 harmful rows (the shipped task) and on all 300 (the benign
// rows' labels used too, as the source does).
func TestPublishedJudgesMatchSOURCES(t *testing.T) {
	run := fmt.Sprintf(`name: published
models: [{name: recorded, provider: none}]
tasks:
  - {use: jbb_judge_comparison, name: harmful200, judge: {strategy: refusal_heuristic}}
  - {use: jbb_judge_comparison, name: all300, human: {when: "true"}, judge: {strategy: refusal_heuristic}}
strategies: [recorded_reply]
metrics: [{kind: judge_agreement, bootstrap: 0}]
paths: {strategies: %q, tasks: %q, models: %q, prompts: %q}
`, filepath.Join(configsDir, "strategies"), filepath.Join(configsDir, "tasks"), filepath.Join(configsDir, "models"), filepath.Join(repoDir, "prompts"))
	path := filepath.Join(t.TempDir(), "run.yaml")
	if err := os.WriteFile(path, []byte(run), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := spec.LoadWith(path, spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	t.Setenv(engine.CacheEnv, t.TempDir())
	if _, _, err := engine.NewEngine(st, engine.Options{OutDir: out, Scorer: scoring.New()}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	rows, err := parquetio.Read(filepath.Join(out, "metrics.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, r := range rows {
		if r["subset"] == "all" && r["value"] != nil {
			got[fmt.Sprint(r["task"], "/", r["strategy"], "/", r["metric"])] = r["value"].(float64)
		}
	}
	for judge, want := range sourcesTable(t) {
		for i, task := range []string{"all300", "harmful200"} {
			for j, metric := range []string{"accuracy", "kappa", "sensitivity", "specificity"} {
				k := task + "/published_" + judge + "/" + metric
				v, ok := got[k]
				if !ok || math.Abs(v-want[i][j]) > 0.0005 {
					t.Errorf("%s = %.4f (found %v), SOURCES.md says %.3f", k, v, ok, want[i][j])
				}
			}
		}
	}
}
