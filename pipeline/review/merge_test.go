package review_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/audit"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/runfolder/manifest"
)

// N shards merged equal one process: results row for row in case order,
// metrics recomputed (not averaged) equal, calls equal as a set; the merged
// folder's journal is the union of the shards' and an apply on it finds
// every reply there.
func TestShardsMergedEqualOneProcess(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.ShardTree())
	cfg := filepath.Join(dir, "configs/run.yaml")
	one := filepath.Join(dir, "out/one")
	sumOne, _ := studytest.Apply(t, studytest.MustLoad(t, cfg), one)
	// Item d fails (a permanent 400) under both toy strategies: the
	// shards report their errors and the merge carries them.
	if sumOne.Errors != 2 || sumOne.Cases != 16 {
		t.Fatalf("one process: %s", sumOne)
	}
	for _, n := range []int{1, 3, 5} {
		t.Run(fmt.Sprintf("N=%d", n), func(t *testing.T) {
			var dirs []string
			cases, nonEmpty, journal, errs := 0, 0, 0, 0
			for k := 0; k < n; k++ {
				d := filepath.Join(dir, fmt.Sprintf("out/n%d-shard-%d", n, k))
				sum := studytest.ShardApply(t, cfg, d, k, n)
				cases += sum.Cases
				errs += sum.Errors
				if sum.Cases > 0 {
					nonEmpty++
					journal += studytest.CountLines(t, filepath.Join(d, "journal.jsonl"))
				}
				dirs = append(dirs, d)
				if n > 1 && sum.Cases > 0 {
					m := studytest.ReadRows(t, filepath.Join(d, "metrics.parquet"))
					if s, _ := m[0]["selection"].(string); !strings.Contains(s, fmt.Sprintf("--shard %d/%d", k, n)) {
						t.Errorf("shard %d/%d metrics not marked as a part: selection %q", k, n, s)
					}
				}
			}
			if cases != sumOne.Cases || errs != sumOne.Errors {
				t.Fatalf("shards hold %d cases, the study %d", cases, sumOne.Cases)
			}
			if n > 1 && nonEmpty < 2 {
				t.Fatalf("only %d of %d shards got cases: the test proves nothing", nonEmpty, n)
			}
			// An audit label given in a shard's folder follows its case.
			labelled := ""
			for _, d := range dirs {
				rows := studytest.ReadRows(t, filepath.Join(d, "results.parquet"))
				if len(rows) > 0 {
					labelled = rows[0]["case_id"].(string)
					if err := audit.AppendLabel(d, audit.Label{CaseID: labelled, Annotator: "ann", Label: "bad"}); err != nil {
						t.Fatal(err)
					}
					break
				}
			}
			merged := filepath.Join(dir, fmt.Sprintf("out/merged-%d", n))
			// Given in reverse: the order of the folders does not matter.
			rev := append([]string(nil), dirs...)
			sort.Sort(sort.Reverse(sort.StringSlice(rev)))
			sum, err := review.Merge(studytest.MustLoad(t, cfg), merged, rev, nil)
			if err != nil {
				t.Fatal(err)
			}
			if sum.Cases != sumOne.Cases || sum.Errors != sumOne.Errors || len(sum.MergedFrom) != n || sum.Selection.Partial() ||
				!reflect.DeepEqual(sum.ErrorClasses, sumOne.ErrorClasses) {
				t.Fatalf("merged summary %s (%d shards, selection %+v)", sum, len(sum.MergedFrom), sum.Selection)
			}
			a, b := studytest.ReadRows(t, filepath.Join(one, "results.parquet")), studytest.ReadRows(t, filepath.Join(merged, "results.parquet"))
			if len(a) != len(b) {
				t.Fatalf("results: %d rows, merged %d", len(a), len(b))
			}
			for i := range a {
				if !reflect.DeepEqual(a[i], b[i]) {
					t.Fatalf("results row %d differs:\none    %v\nmerged %v", i, a[i], b[i])
				}
			}
			ma, mb := studytest.ReadRows(t, filepath.Join(one, "metrics.parquet")), studytest.ReadRows(t, filepath.Join(merged, "metrics.parquet"))
			if len(ma) == 0 || !reflect.DeepEqual(ma, mb) {
				t.Fatalf("metrics differ:\none    %v\nmerged %v", ma, mb)
			}
			ca := studytest.RowSet(t, filepath.Join(one, "calls.parquet"), "latency_ms", "time")
			cb := studytest.RowSet(t, filepath.Join(merged, "calls.parquet"), "latency_ms", "time")
			if !reflect.DeepEqual(ca, cb) {
				t.Fatalf("calls differ: %d rows vs merged %d", len(ca), len(cb))
			}
			if got := studytest.CountLines(t, filepath.Join(merged, "journal.jsonl")); got != journal {
				t.Errorf("merged journal has %d lines, the shards %d", got, journal)
			}
			var man manifest.Manifest
			data, _ := os.ReadFile(filepath.Join(merged, "manifest.json"))
			if err := json.Unmarshal(data, &man); err != nil || len(man.MergedFrom) != n {
				t.Fatalf("merged manifest: %v %+v", err, man.MergedFrom)
			}
			labels, err := audit.ReadLabels(merged)
			if err != nil || len(labels) != 1 || labels[0].CaseID != labelled {
				t.Errorf("labels of the merged folder: %v %+v, want the one on %s", err, labels, labelled)
			}
			// apply on the merged folder resumes from its journal: nothing new.
			again, _, err := engine.NewEngine(studytest.MustLoad(t, cfg), engine.Options{OutDir: merged, Offline: true, Scorer: scoring.New()}).Run(t.Context())
			if err != nil || again.Errors != sumOne.Errors || again.Cases != sumOne.Cases || again.CallsNew != 0 {
				t.Fatalf("apply on the merged folder: %v %s", err, again)
			}
		})
	}
}

// merge refuses what is not one whole study, saying which folder and what
// to do, and writes nothing then.
func TestMergeRefuses(t *testing.T) {
	files := studytest.ShardTree()
	dir := studytest.WriteTree(t, files)
	cfg := filepath.Join(dir, "configs/run.yaml")
	var dirs []string
	for k := 0; k < 3; k++ {
		d := filepath.Join(dir, fmt.Sprintf("out/s%d", k))
		studytest.ShardApply(t, cfg, d, k, 3)
		dirs = append(dirs, d)
	}
	// The same study with one prompt reworded: another config.
	files["configs/strategies/one_shot.yaml"] = strings.Replace(files["configs/strategies/one_shot.yaml"], "{{.task.question}}", "Please: {{.task.question}}", 1)
	other := studytest.WriteTree(t, files)
	otherShard := filepath.Join(other, "out/s1")
	studytest.ShardApply(t, filepath.Join(other, "configs/run.yaml"), otherShard, 1, 3)
	four := filepath.Join(dir, "out/four-0")
	studytest.ShardApply(t, cfg, four, 0, 4)
	limited := filepath.Join(dir, "out/limited-1")
	{
		st := studytest.MustLoad(t, cfg)
		if err := st.Select(manifest.Selection{Limit: 2, Shard: &manifest.Shard{K: 1, N: 3}}); err != nil {
			t.Fatal(err)
		}
		studytest.Apply(t, st, limited)
	}
	whole := filepath.Join(dir, "out/whole")
	studytest.Apply(t, studytest.MustLoad(t, cfg), whole)
	busy := filepath.Join(dir, "out/busy")
	os.MkdirAll(busy, 0o755)
	os.WriteFile(filepath.Join(busy, "notes.txt"), []byte("mine"), 0o644)

	for _, c := range []struct {
		name  string
		out   string
		dirs  []string
		parts []string
	}{
		{"other config", "m1", []string{dirs[0], otherShard, dirs[2]}, []string{otherShard, "another config", "config_hash"}},
		{"overlap", "m2", []string{dirs[0], dirs[1], dirs[1], dirs[2]}, []string{"both shard 1/3", "overlap"}},
		{"missing", "m3", []string{dirs[0], dirs[2]}, []string{"shard 1/3 missing", "--shard 1/3"}},
		{"other N", "m4", []string{dirs[0], dirs[1], dirs[2], four}, []string{four, "same N"}},
		{"other cells", "m5", []string{dirs[0], limited, dirs[2]}, []string{limited, "--limit 2", "same --model"}},
		{"not a shard", "m6", []string{whole, dirs[0]}, []string{whole, "is not a shard"}},
		{"unfinished", "m7", []string{dirs[0], filepath.Join(dir, "configs"), dirs[2]}, []string{"not a run folder"}},
		{"output folder in use", "busy", dirs, []string{busy, "already holds files"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			out := filepath.Join(dir, "out", c.out)
			_, err := review.Merge(studytest.MustLoad(t, cfg), out, c.dirs, nil)
			studytest.WantErr(t, err, c.parts...)
			if c.out != "busy" {
				if _, serr := os.Stat(out); serr == nil {
					t.Errorf("a refused merge left %s behind", out)
				}
			}
		})
	}
	// A shard whose apply stopped early: journal, no outputs.
	stopped := filepath.Join(dir, "out/stopped")
	os.MkdirAll(stopped, 0o755)
	os.WriteFile(filepath.Join(stopped, "journal.jsonl"), nil, 0o644)
	_, err := review.Merge(studytest.MustLoad(t, cfg), filepath.Join(dir, "out/m8"), []string{dirs[0], stopped, dirs[2]}, nil)
	studytest.WantErr(t, err, stopped, "no finished outputs", "--shard k/N --out "+stopped)
}

// Shards of a study with repeats keep an item's repeats together, and
// merged they equal one process row for row.
func TestRepeatsShardsMergedEqualOneProcess(t *testing.T) {
	files := studytest.ShardTree()
	files["configs/run.yaml"] = strings.Replace(files["configs/run.yaml"], "settings: {concurrency: 3}", "settings: {concurrency: 3, repeats: 2}", 1)
	dir := studytest.WriteTree(t, files)
	cfg := filepath.Join(dir, "configs/run.yaml")
	one := filepath.Join(dir, "out/one")
	sumOne, _ := studytest.Apply(t, studytest.MustLoad(t, cfg), one)
	if sumOne.Cases != 32 {
		t.Fatalf("one process: %s", sumOne)
	}
	var dirs []string
	for k := 0; k < 3; k++ {
		d := filepath.Join(dir, fmt.Sprintf("out/shard-%d", k))
		studytest.ShardApply(t, cfg, d, k, 3)
		dirs = append(dirs, d)
		items := map[string]int{}
		for _, r := range studytest.ReadRows(t, filepath.Join(d, "results.parquet")) {
			items[fmt.Sprint(r["strategy"], "/", r["item_id"])]++
		}
		for it, n := range items {
			if n != 2 {
				t.Errorf("shard %d holds %d of the 2 repeats of %s", k, n, it)
			}
		}
	}
	merged := filepath.Join(dir, "out/merged")
	sum, err := review.Merge(studytest.MustLoad(t, cfg), merged, dirs, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Cases != sumOne.Cases || sum.Errors != sumOne.Errors {
		t.Fatalf("merged %s; one process %s", sum, sumOne)
	}
	a, b := studytest.ReadRows(t, filepath.Join(one, "results.parquet")), studytest.ReadRows(t, filepath.Join(merged, "results.parquet"))
	if len(a) != len(b) {
		t.Fatalf("results: %d rows, merged %d", len(a), len(b))
	}
	for i := range a {
		if !reflect.DeepEqual(a[i], b[i]) {
			t.Fatalf("results row %d differs:\none    %v\nmerged %v", i, a[i], b[i])
		}
	}
}
