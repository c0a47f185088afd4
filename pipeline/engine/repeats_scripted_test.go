package engine_test

import (
	"path/filepath"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
)

// A scripted model sees the repeat index (.repeat), so a script that varies
// by repeat makes a repeats study whose answers flip: the flip rate is the
// share of items whose repeats disagree, and the between-repeat SD is not 0.
func TestScriptedRepliesVaryByRepeat(t *testing.T) {
	files := studytest.BaseTree(map[string]string{
		"configs/run.yaml": `name: rep-run
models:
  - name: bot
    provider: scripted
    script:
      replies:
        # items a, c, e (bad) flip on repeat 1; the others never do.
        - match: "(stole|lied|hit)"
          text: "Answer: {{pick .repeat \"wrong\" \"not wrong\" \"wrong\"}}"
        - text: "Answer: not wrong"
tasks: [toy]
strategies: [one_shot]
settings: {repeats: 3}
metrics:
  - {kind: repeats, bootstrap: 0}
`,
	})
	dir := studytest.WriteTree(t, files)
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	out := filepath.Join(dir, "out")
	sum, _ := studytest.Apply(t, st, out)
	if sum.Cases != 18 || sum.Errors != 0 {
		t.Fatalf("6 items x 3 repeats: %s", sum)
	}
	got := map[string]float64{}
	for _, r := range studytest.ReadRows(t, filepath.Join(out, "metrics.parquet")) {
		if r["block"] == "repeats" && (r["subset"] == "all" || r["subset"] == nil) {
			if v, ok := r["value"].(float64); ok {
				got[r["metric"].(string)] = v
			}
		}
	}
	// Repeats 0 and 2 get 6/6 right, repeat 1 gets 3/6.
	if got["flip_rate"] != 0.5 {
		t.Errorf("flip_rate %v, want 3/6 items whose repeats disagree", got["flip_rate"])
	}
	if sd := got["accuracy_repeat_sd"]; sd < 0.28 || sd > 0.29 {
		t.Errorf("between-repeat SD %v, want sd(1, 0.5, 1) = 0.2887", sd)
	}
}
