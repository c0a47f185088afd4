package scoring_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/expr-lang/expr"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
)

const subsetItems = `{"id":"a","text":"I stole a bike.","gold":"1","n":1}
{"id":"b","text":"I fed the cat.","gold":"0","n":2}
{"id":"c","text":"I lied to my boss.","gold":"1","n":3}
{"id":"d","text":"I watered the plants.","gold":"0","n":4}
{"id":"e","text":"I hit my brother.","gold":"1","n":5}
{"id":"f","text":"I read a book.","gold":"0","n":6}
`

// subsetTree is the toy study whose task declares subsets (extra: more of
// them), scored by classification per subset.
func subsetTree(extra string) map[string]string {
	task := studytest.TaskYAML + "subsets:\n  violent: 'item.text contains \"stole\" or item.text contains \"hit\"'\n  late: 'item.n > 3'\n" + extra
	return studytest.BaseTree(map[string]string{
		"data/items.jsonl":       subsetItems,
		"configs/tasks/toy.yaml": task,
		"configs/run.yaml": `name: subsets
models:` + studytest.ScriptedModel + `
tasks: [toy]
strategies: [one_shot, loop]
settings: {concurrency: 3, seed: 3}
metrics:
  - {kind: classification, bootstrap: 100}
`,
	})
}

func readOrderFile(t *testing.T, dir string) []int32 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, ".order"))
	if err != nil {
		t.Fatal(err)
	}
	out := make([]int32, len(b)/4)
	for i := range out {
		out[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}

// Scoring from results read back places each item in its subsets by the
// subsets column, not by evaluating the expressions on the item's fields
// again: the marks are those the expressions give, and the metrics equal
// those scored from results in memory, where every item is evaluated.
func TestSubsetsReadBackEqualTheExpressions(t *testing.T) {
	st, rs, run, out := readBackSubsetStudy(t)
	task := st.Task("toy")
	for name, src := range task.Spec.Subsets {
		prog, err := spec.CompileExpr(src, nil, true)
		if err != nil {
			t.Fatal(err)
		}
		for i := range task.Items {
			want, err := expr.Run(prog, map[string]any{"item": task.Items[i].Values(), "task": map[string]any{"name": "toy"}})
			if err != nil {
				t.Fatal(err)
			}
			got, ok := rs.SubsetMark(task, name, i)
			if !ok || got != want.(bool) {
				t.Errorf("item %s, subset %s: mark %v (known %v), the expression says %v", task.Items[i].ID, name, got, ok, want)
			}
		}
	}
	fast, err := scoring.ComputeScores(rs)
	if err != nil {
		t.Fatal(err)
	}
	slow, misses, err := scoring.ScoreFromJournal(studytest.MustLoad(t, run), filepath.Join(out, "journal.jsonl"))
	if err != nil || misses != 0 {
		t.Fatalf("in memory: %v, %d misses", err, misses)
	}
	if d := scoring.DiffScores(slow, fast); len(d) > 0 {
		for _, c := range d {
			t.Error(c.Describe())
		}
	}
	subsets := map[string]bool{}
	for _, r := range fast.Rows {
		if r.N > 0 {
			subsets[r.Subset] = true
		}
	}
	if !subsets["violent"] || !subsets["late"] {
		t.Errorf("scored subsets %v, want violent and late with cases", subsets)
	}
}

// The metrics place the items of results read back by the marks those
// results carry, not by reading the items' fields again: with every field
// blanked after reading, the per-subset rows stay as they were.
func TestSubsetMarksPlaceItemsWithoutTheirFields(t *testing.T) {
	st, rs, _, _ := readBackSubsetStudy(t)
	before, err := scoring.ComputeScores(rs)
	if err != nil {
		t.Fatal(err)
	}
	task := st.Task("toy")
	for i := range task.Items {
		task.Items[i].Fields = map[string]any{"text": "", "n": 0}
	}
	after, err := scoring.ComputeScores(rs)
	if err != nil {
		t.Fatal(err)
	}
	if d := scoring.DiffScores(before, after); len(d) > 0 {
		for _, c := range d {
			t.Error(c.Describe())
		}
	}
}

// An item on which a subset's expression fails is no mark: scoring
// evaluates it and fails as scoring in memory does, naming the item.
func TestSubsetFailingOnAnItemFailsScoringAlike(t *testing.T) {
	tree := subsetTree("  odd: 'item.n > 3 and item.text > 2'\n")
	dir := studytest.WriteTree(t, tree)
	run := filepath.Join(dir, "configs/run.yaml")
	out := filepath.Join(dir, "out")
	_, _, err := engine.NewEngine(studytest.MustLoad(t, run), engine.Options{OutDir: out, NoResults: true, Scorer: scoring.New()}).Run(context.Background())
	if err == nil {
		t.Fatal("a subset failing on items scored without error")
	}
	_, _, memErr := scoring.ScoreFromJournal(studytest.MustLoad(t, run), filepath.Join(out, "journal.jsonl"))
	if memErr == nil {
		t.Fatal("in memory, the failing subset scored without error")
	}
	if !strings.Contains(err.Error(), memErr.Error()) || !strings.Contains(err.Error(), "subset odd, item d") {
		t.Errorf("read back: %v\nin memory: %v", err, memErr)
	}
}

// readBackSubsetStudy applies the subset study and reads its results back
// for scoring; it returns the run file and output folder too.
func readBackSubsetStudy(t *testing.T) (st *spec.Study, rs *spec.ResultSet, run, out string) {
	t.Helper()
	dir := studytest.WriteTree(t, subsetTree(""))
	run = filepath.Join(dir, "configs/run.yaml")
	out = filepath.Join(dir, "out")
	studytest.ApplyFlat(t, run, out)
	cur := engine.CurrentGeneration(out)

	st = studytest.MustLoad(t, run)
	rs, err := scoring.ReadResultSet(st, filepath.Join(cur, "results.parquet"), readOrderFile(t, cur))
	if err != nil {
		t.Fatal(err)
	}
	return st, rs, run, out
}
