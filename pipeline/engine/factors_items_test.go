package engine_test

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/dataset"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/scoring"
)

func TestFactorsFromItemsGroupMetrics(t *testing.T) {
	data, want := studytest.RecordedReplies(600)
	if len(want) != 16 {
		t.Fatalf("%d groups generated, want 16 (2 models x 3 levels and none x 2 variants)", len(want))
	}
	defer func(v int64) { dataset.SpillAbove = v }(dataset.SpillAbove)
	// In memory, and with every item's fields in the dataset's store (a
	// large recorded set): the same columns and rows.
	for _, spill := range []int64{1 << 40, 0} {
		t.Run(fmt.Sprint("spill", spill), func(t *testing.T) {
			dataset.SpillAbove = spill
			dir := studytest.WriteTree(t, map[string]string{
				"data/replies.jsonl":              data,
				"configs/tasks/recorded.yaml":     studytest.RecordedTaskYAML,
				"configs/strategies/rescore.yaml": studytest.RescoreYAML,
				"configs/run.yaml":                studytest.RecordedRun,
			})
			st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
			if got := strings.Join(st.Factors, ","); got != "thinking,variant" {
				t.Fatalf("factors %s", got)
			}
			if len(st.Cells) != 1 {
				t.Fatalf("%d cells, want one", len(st.Cells))
			}
			if spill == 0 && st.Tasks[0].Items[1].Fields != nil {
				t.Fatal("the items were not spilled to the store")
			}
			out := filepath.Join(dir, "out")
			studytest.Apply(t, st, out)

			res, err := parquetio.Read(filepath.Join(out, "results.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			if len(res) != 600 {
				t.Fatalf("%d results", len(res))
			}
			levels := []string{"off", "low", "high"}
			for _, r := range res {
				var i int
				fmt.Sscanf(fmt.Sprint(r["item_id"]), "r%d", &i)
				var wantT any = levels[i%3]
				if i%50 == 0 {
					wantT = nil // no field: the factor is unset, a null
				}
				wantV := "plain"
				if (i/3)%2 == 1 {
					wantV = "terse"
				}
				if r["thinking"] != wantT || r["variant"] != wantV {
					t.Fatalf("%v: thinking %v variant %v, want %v %v", r["item_id"], r["thinking"], r["variant"], wantT, wantV)
				}
			}

			rows, err := parquetio.Read(filepath.Join(out, "metrics.parquet"))
			if err != nil {
				t.Fatal(err)
			}
			studytest.AssertUniqueKeys(t, rows, st.Factors)
			seen := map[string]bool{}
			for _, r := range rows {
				if r["metric"] != "accuracy" || r["subset"] != "all" {
					continue
				}
				th, _ := r["thinking"].(string)
				k := fmt.Sprint(r["model"], "/", th, "/", r["variant"])
				w, ok := want[k]
				if !ok {
					t.Errorf("accuracy row for %s, which the data has not", k)
					continue
				}
				seen[k] = true
				if n := r["n"].(int64); int(n) != w[0] || math.Abs(r["value"].(float64)-float64(w[1])/float64(w[0])) > 1e-12 {
					t.Errorf("%s: accuracy %v of %v, want %d/%d", k, r["value"], r["n"], w[1], w[0])
				}
				if r["strategy"] != "rescore" {
					t.Errorf("%s: strategy %v", k, r["strategy"])
				}
			}
			if len(seen) != len(want) {
				t.Errorf("accuracy rows for %d groups, want %d", len(seen), len(want))
			}

			// Re-scored from the journal (rows built from the study, not read
			// back): the same rows.
			sc, misses, err := scoring.ScoreFromJournal(studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), filepath.Join(out, "journal.jsonl"))
			if err != nil || misses != 0 {
				t.Fatalf("rescore: %v, %d misses", err, misses)
			}
			if len(sc.Rows) != len(rows) {
				t.Fatalf("%d rows re-scored, %d written", len(sc.Rows), len(rows))
			}
			for i, r := range sc.Rows {
				w := rows[i]
				th, _ := w["thinking"].(string)
				if r.Metric != w["metric"] || strings.Join(r.Factors, "/") != th+"/"+fmt.Sprint(w["variant"]) {
					t.Errorf("row %d: re-scored %s, written %v %v/%v", i, r.Key(), w["metric"], w["thinking"], w["variant"])
				}
			}
		})
	}
}
