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

// Hedged replies ("<answer>wrong</answer> or <answer>not wrong</answer>")
// are unparsed, and the viewer's unparsed groups say why: several answers.
func TestUnparsedGroupsShowSeveralAnswers(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	cfg := `name: hedges
models:
  - name: hedger
    provider: scripted
    script:
      replies:
        - match: '(?i)\b(stole|kill|lied|hit|cheat|hurt|broke|threw|mock)'
          text: "<answer>wrong</answer> or <answer>not wrong</answer>"
        - text: "<answer>not wrong</answer>"
tasks:
  - use: ethics
    dataset: {limit: 30}
strategies: [zero_shot]
matrix:
  - {models: [hedger], strategies: [zero_shot], tasks: [ethics]}
settings: {seed: 1}
paths: {strategies: ` + filepath.Join(root, "configs/strategies") + `, tasks: ` + filepath.Join(root, "configs/tasks") +
		`, models: ` + filepath.Join(root, "configs/models") + `, prompts: ` + filepath.Join(root, "prompts") + "}\n"
	path := filepath.Join(dir, "hedges.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	st, err := spec.LoadWith(path, spec.LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	sum, _, err := engine.NewEngine(st, engine.Options{OutDir: out, Scorer: scoring.New()}).Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	r, err := Open(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	r.idx.wait()
	all, err := r.Find(Query{Sel: sel()})
	if err != nil {
		t.Fatal(err)
	}
	u, err := r.Unparsed(all.Cases)
	if err != nil {
		t.Fatal(err)
	}
	if u.Total == 0 || u.Total == sum.Cases {
		t.Fatalf("%d of %d cases unparsed: the scripted model should hedge on some and answer the others", u.Total, sum.Cases)
	}
	hedged := 0
	for _, g := range u.Groups {
		for _, w := range g.Why {
			if strings.Contains(w.Value, "several answers") {
				hedged += w.N
			}
		}
		for _, ex := range g.Examples {
			if !strings.HasPrefix(ex.Why, "several answers: the reply gives both unacceptable and acceptable") || ex.Rule != "tag:answer" {
				t.Errorf("example %s: rule %q, why %q", ex.ID, ex.Rule, ex.Why)
			}
		}
	}
	if hedged != u.Total {
		t.Errorf("%d of the %d unparsed cases are grouped under several answers: %+v", hedged, u.Total, u.Groups)
	}
}
