package view

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
)

// A case of a study with repeats shows every sample of its item, by
// repeat, each with its reply; a run without repeats shows none.
func TestCaseShowsEverySampleOfItsItem(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "rep.yaml")
	yaml := `name: rep
models:
  - name: bot
    provider: scripted
    script:
      replies:
        - text: "Reasoning: it depends.\nConfidence: 0.7\nFinal Answer: Acceptable"
tasks:
  - use: ethics
    dataset: {limit: 4}
strategies: [zero_shot_cot, zero_shot]
settings: {repeats: 3}
paths: {strategies: ` + filepath.Join(root, "configs/strategies") + `, tasks: ` + filepath.Join(root, "configs/tasks") +
		`, models: ` + filepath.Join(root, "configs/models") + `, prompts: ` + filepath.Join(root, "prompts") + "}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := spec.LoadWith(cfg, spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	if _, _, err := engine.NewEngine(st, engine.Options{OutDir: out, Scorer: scoring.New()}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	r, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Len() != 24 {
		t.Fatalf("%d cases, want 2 strategies x 4 items x 3 repeats", r.Len())
	}
	seen := 0
	for i := 0; i < r.Len(); i++ {
		c, err := r.Case(i)
		if err != nil {
			t.Fatal(err)
		}
		if len(c.Samples) != 3 {
			t.Fatalf("case %s shows %d samples, want 3", c.Row.ID, len(c.Samples))
		}
		for k, s := range c.Samples {
			if s.Repeat != int32(k) || s.Item != c.Row.Item || !strings.Contains(s.Reply, "Final Answer: Acceptable") {
				t.Errorf("case %s, sample %d: repeat %d, item %s, reply %q", c.Row.ID, k, s.Repeat, s.Item, s.Reply)
			}
			if s.I == int32(i) {
				seen++
			}
		}
	}
	if seen != 24 {
		t.Errorf("%d cases found themselves among their samples, want 24", seen)
	}
	// Comparing the strategies pairs repeat with repeat and scores per item.
	cmp, err := CompareRuns(r, r, Compare{By: "strategy", A: "zero_shot", B: "zero_shot_cot", Q: Query{Sel: map[string][]string{}, Limit: 100}})
	if err != nil {
		t.Fatal(err)
	}
	if cmp.Paired != 12 || len(cmp.Cells) != 1 || cmp.Cells[0].N != 4 || !cmp.Cells[0].Repeats {
		t.Errorf("compare: %d pairs, cells %+v; want 12 pairs in one cell of 4 items", cmp.Paired, cmp.Cells)
	}
	// The demo run has no repeats: no samples panel.
	d, _ := openDemo(t)
	if c, err := d.Case(0); err != nil || c.Samples != nil {
		t.Errorf("a run without repeats: samples %v, %v", c.Samples, err)
	}
}
