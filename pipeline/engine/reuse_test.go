package engine_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/parquetio"
)

// A study with a model that fails on some items, so a re-apply has errored
// cases to retry beside good rows to take, and two metric blocks.
func reuseTree(metrics string) map[string]string {
	return studytest.BaseTree(map[string]string{
		"configs/run.yaml": `name: reuse
models:` + studytest.ScriptedModel + flakyModel + `
tasks: [toy]
strategies: [one_shot, loop]
settings: {concurrency: 3, seed: 5}
metrics:
` + metrics,
	})
}

const flakyModel = `
  - name: flaky
    provider: scripted
    script:
      replies:
        - {match: "lied", status: 400}
        - {text: "Confidence: 0.7\nAnswer: {{if find \"(stole|hit)\" .last}}wrong{{else}}not wrong{{end}}"}
`

const twoBlocks = `  - {kind: classification, bootstrap: 200}
  - {kind: efficiency}
`

// applyWalked is an apply that walks every case (results in memory).
func applyWalked(t *testing.T, run, out string) *engine.Summary {
	t.Helper()
	sum, _ := studytest.Apply(t, studytest.MustLoad(t, run), out)
	return sum
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	if out, err := exec.Command("cp", "-a", from, to).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
}

// rowsByKey reads a Parquet file into rows keyed by the named columns, with
// the columns in skip left out.
func rowsByKey(t *testing.T, path string, key []string, skip ...string) map[string]map[string]any {
	t.Helper()
	rows, err := parquetio.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, r := range rows {
		var k []string
		for _, c := range key {
			k = append(k, fmt.Sprint(r[c]))
		}
		for _, c := range skip {
			delete(r, c)
		}
		ks := strings.Join(k, "|")
		if _, dup := out[ks]; dup {
			t.Fatalf("%s: two rows for %s", path, ks)
		}
		out[ks] = r
	}
	return out
}

// untimed drops the time and latency of the attempts made in this apply,
// which no two applies share.
func untimed(rows map[string]map[string]any) map[string]map[string]any {
	for _, r := range rows {
		if r["cached"] == false {
			delete(r, "time")
			delete(r, "latency_ms")
		}
	}
	return rows
}

func sameRows(t *testing.T, what string, walked, reused map[string]map[string]any) {
	t.Helper()
	if len(walked) != len(reused) {
		t.Errorf("%s: %d rows walked, %d reused", what, len(walked), len(reused))
	}
	keys := make([]string, 0, len(walked))
	for k := range walked {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	bad := 0
	for _, k := range keys {
		if r, ok := reused[k]; !ok || !reflect.DeepEqual(walked[k], r) {
			if bad++; bad <= 3 {
				t.Errorf("%s: row %s\nwalked %v\nreused %v", what, k, walked[k], r)
			}
		}
	}
}

// A re-apply that takes the good rows of the outputs in force writes what
// walking every case again writes: the same results, calls (served from
// the journal), metrics and counts; the errored cases are walked again. It
// does so after a change to the metric blocks too, and not after a change
// to anything a result depends on.
func TestReapplyTakesGoodRowsAndWritesWhatAWalkWrites(t *testing.T) {
	t.Run("errored cases", func(t *testing.T) { reapplyLikeAWalk(t, reuseTree(twoBlocks), true) })
	t.Run("no error", func(t *testing.T) {
		tree := reuseTree(twoBlocks)
		tree["configs/run.yaml"] = strings.Replace(tree["configs/run.yaml"], flakyModel, "\n", 1)
		reapplyLikeAWalk(t, tree, false)
	})
}

func reapplyLikeAWalk(t *testing.T, tree map[string]string, errored bool) {
	dir := studytest.WriteTree(t, tree)
	run := filepath.Join(dir, "configs/run.yaml")
	out := filepath.Join(dir, "out")
	first := studytest.ApplyFlat(t, run, out)
	if (first.Errors > 0) != errored || first.Reused != 0 {
		t.Fatalf("first apply: %+v", first)
	}
	check := func(name string) {
		t.Helper()
		walkedOut, reusedOut := filepath.Join(dir, name+"-walked"), filepath.Join(dir, name+"-reused")
		copyDir(t, out, walkedOut)
		copyDir(t, out, reusedOut)
		walked := applyWalked(t, run, walkedOut)
		reused := studytest.ApplyFlat(t, run, reusedOut)
		if walked.Reused != 0 {
			t.Errorf("%s: the walking apply took %d rows", name, walked.Reused)
		}
		if want := first.Cases - first.Errors - first.Kept; reused.Reused != want {
			t.Errorf("%s: %d cases' rows taken, want the %d good ones", name, reused.Reused, want)
		}
		if reused.CallsNew != walked.CallsNew || reused.Attempts != walked.Attempts {
			t.Errorf("%s: the errored cases were not walked again alike: %+v vs %+v", name, reused, walked)
		}
		w, r := *walked, *reused
		w.Reused, r.Reused, w.OutDir, r.OutDir, w.LastComplete, r.LastComplete = 0, 0, "", "", "", ""
		w.Report, r.Report = nil, nil
		if !reflect.DeepEqual(w, r) {
			t.Errorf("%s: summaries differ\nwalked %+v\nreused %+v", name, w, r)
		}
		sameRows(t, name+" results", rowsByKey(t, filepath.Join(walkedOut, "results.parquet"), []string{"case_id"}, "kept_from"),
			rowsByKey(t, filepath.Join(reusedOut, "results.parquet"), []string{"case_id"}, "kept_from"))
		callKey := []string{"case_id", "stage", "request_hash", "attempt", "final", "error"}
		sameRows(t, name+" calls", untimed(rowsByKey(t, filepath.Join(walkedOut, "calls.parquet"), callKey)),
			untimed(rowsByKey(t, filepath.Join(reusedOut, "calls.parquet"), callKey)))
		key := []string{"block", "model", "strategy", "task", "subset", "metric"}
		sameRows(t, name+" metrics", rowsByKey(t, filepath.Join(walkedOut, "metrics.parquet"), key), rowsByKey(t, filepath.Join(reusedOut, "metrics.parquet"), key))
	}
	check("same")
	if !errored {
		// Nothing to walk and nothing to change: the results file in force
		// is linked, not rewritten; after a second re-apply the calls too.
		stat := func(f string) os.FileInfo {
			fi, err := os.Stat(filepath.Join(engine.CurrentGeneration(out), f))
			if err != nil {
				t.Fatal(err)
			}
			return fi
		}
		res, calls := stat("results.parquet"), stat("calls.parquet")
		again := studytest.ApplyFlat(t, run, out)
		if again.Reused != first.Cases {
			t.Fatalf("re-apply took %d rows of %d", again.Reused, first.Cases)
		}
		if !os.SameFile(res, stat("results.parquet")) || os.SameFile(calls, stat("calls.parquet")) {
			t.Errorf("first re-apply: results linked %v (want true), calls linked %v (want false: they become served)",
				os.SameFile(res, stat("results.parquet")), os.SameFile(calls, stat("calls.parquet")))
		}
		res, calls = stat("results.parquet"), stat("calls.parquet")
		studytest.ApplyFlat(t, run, out)
		if !os.SameFile(res, stat("results.parquet")) || !os.SameFile(calls, stat("calls.parquet")) {
			t.Errorf("second re-apply: results linked %v, calls linked %v (want both)", os.SameFile(res, stat("results.parquet")), os.SameFile(calls, stat("calls.parquet")))
		}
		check("again")
	}

	// Another metric block: the rows are taken, the metrics are the new
	// blocks'.
	withBlock := strings.Replace(tree["configs/run.yaml"], twoBlocks, twoBlocks+"  - {kind: classification, name: excluded, unparsed: exclude, bootstrap: 0}\n", 1)
	if err := os.WriteFile(run, []byte(withBlock), 0o644); err != nil {
		t.Fatal(err)
	}
	if !errored {
		// Nothing a result depends on changed: the results and calls in
		// force are linked, not rewritten, and the rows keep their
		// config_hash, which is the new config's too.
		before := filepath.Join(engine.CurrentGeneration(out), "results.parquet")
		beforeCalls := filepath.Join(engine.CurrentGeneration(out), "calls.parquet")
		res, err := os.Stat(before)
		if err != nil {
			t.Fatal(err)
		}
		calls, err := os.Stat(beforeCalls)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := parquetio.Read(before)
		if err != nil {
			t.Fatal(err)
		}
		copyDir(t, out, filepath.Join(dir, "before-metric"))
		again := studytest.ApplyFlat(t, run, out)
		if again.Reused != first.Cases || again.CallsNew != 0 {
			t.Fatalf("re-apply after a metric change: %+v", again)
		}
		cur := engine.CurrentGeneration(out)
		for f, was := range map[string]os.FileInfo{"results.parquet": res, "calls.parquet": calls} {
			now, err := os.Stat(filepath.Join(cur, f))
			if err != nil {
				t.Fatal(err)
			}
			if !os.SameFile(was, now) {
				t.Errorf("after a metric-only change %s was rewritten, want it linked", f)
			}
		}
		want := studytest.MustLoad(t, run).ConfigHash
		for _, r := range rows {
			if r["config_hash"] != want {
				t.Fatalf("a row's config_hash %v is not the metric-changed config's %s", r["config_hash"], want)
			}
		}
		os.RemoveAll(out)
		if err := os.Rename(filepath.Join(dir, "before-metric"), out); err != nil {
			t.Fatal(err)
		}
	}
	check("metric")
	m := rowsByKey(t, filepath.Join(dir, "metric-reused", "metrics.parquet"), []string{"block", "model", "strategy", "task", "subset", "metric"})
	if _, ok := m["excluded|bot|one_shot|toy|all|accuracy"]; !ok {
		t.Error("the new metric block wrote no row")
	}

	if !errored {
		return
	}
	// A changed template is another computation: nothing is taken.
	tree["configs/tasks/toy.yaml"] = strings.Replace(studytest.TaskYAML, "Is this wrong?", "Is this morally wrong?", 1)
	os.WriteFile(run, []byte(tree["configs/run.yaml"]), 0o644)
	os.WriteFile(filepath.Join(dir, "configs/tasks/toy.yaml"), []byte(tree["configs/tasks/toy.yaml"]), 0o644)
	if s := studytest.ApplyFlat(t, run, out); s.Reused != 0 || s.CallsNew == 0 {
		t.Errorf("after a template change: %d rows taken, %d new calls", s.Reused, s.CallsNew)
	}
	// A changed dataset too.
	os.WriteFile(filepath.Join(dir, "data/items.jsonl"), []byte(strings.Replace(studytest.ItemsJSONL, "I read a book.", "I read a novel.", 1)), 0o644)
	if s := studytest.ApplyFlat(t, run, out); s.Reused != 0 {
		t.Errorf("after a data change: %d rows taken", s.Reused)
	}
	if s := studytest.ApplyFlat(t, run, out); s.Reused == 0 {
		t.Error("nothing changed, yet no row was taken")
	}
}

// config_hash names what a case's result is computed from: the metric
// blocks and the concurrency are not in it, anything else in the run file
// (or another file) is.
func TestConfigHashLeavesOutOnlyScoring(t *testing.T) {
	hash := func(tree map[string]string) string {
		dir := studytest.WriteTree(t, tree)
		return studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")).ConfigHash
	}
	base := reuseTree(twoBlocks)
	h := hash(base)
	edit := func(from, to string) map[string]string {
		tree := reuseTree(twoBlocks)
		if !strings.Contains(tree["configs/run.yaml"], from) {
			t.Fatalf("the run file has no %q", from)
		}
		tree["configs/run.yaml"] = strings.Replace(tree["configs/run.yaml"], from, to, 1)
		return tree
	}
	for name, tree := range map[string]map[string]string{
		"another metric block": edit(twoBlocks, twoBlocks+"  - {kind: classification, name: more, bootstrap: 0}\n"),
		"no metric block":      edit("metrics:\n"+twoBlocks, ""),
		"another concurrency":  edit("concurrency: 3", "concurrency: 9"),
	} {
		if got := hash(tree); got != h {
			t.Errorf("%s changed the config hash", name)
		}
	}
	other := reuseTree(twoBlocks)
	other["configs/tasks/toy.yaml"] = strings.Replace(studytest.TaskYAML, "Is this wrong?", "Is this morally wrong?", 1)
	for name, tree := range map[string]map[string]string{
		"another seed":     edit("seed: 5", "seed: 6"),
		"another strategy": edit("strategies: [one_shot, loop]", "strategies: [one_shot]"),
		"another template": other,
	} {
		if got := hash(tree); got == h {
			t.Errorf("%s left the config hash as it was", name)
		}
	}
}
