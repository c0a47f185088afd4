package pipeline_test

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
	"github.com/promoral/promoral/pipeline/spec"
)

// A recorded study whose condition varies by row: each recorded reply
// carries the model that wrote it, the thinking level it was produced at
// and the prompt variant it answered. One task, one model entry, one
// matrix cell; the model name (report_as) and the factors come from the
// rows.
const recordedTaskYAML = `name: recorded
type: label
dataset: {path: ../../data/replies.jsonl, id: id}
gold: gold
answer:
  positive: bad
  labels:
    - {value: bad, aliases: [wrong], gold: ["1"]}
    - {value: fine, aliases: [not wrong], gold: ["0"]}
extract:
  label: [{kind: prefix, prefix: Answer}]
factors:
  thinking: {from: item.thinking}
  variant: {expr: 'item.prompt == "b" ? "terse" : "plain"'}
report_as: {model: model}
`

const rescoreYAML = `name: rescore
stages:
  - {name: parse, kind: extract, text: item.reply}
outputs:
  label: stages.parse.label
`

const recordedRun = `name: recorded-run
models:
  - {name: recorded, provider: none}
tasks: [recorded]
strategies: [rescore]
settings: {seed: 5}
metrics:
  - {kind: classification, bootstrap: 0}
`

// recordedReplies generates n replies: thinking cycles off, low, high
// (every 50th row has none), the prompt variant alternates every three
// rows, and a row's answer is right for (i mod 5) below 2, 3 or 4 by
// thinking level (and below 1 for a row without one); the model is m1 or
// m2, alternating every six rows. It returns the data and, per
// "model/thinking/variant" ("" for no thinking), the cases and right
// answers.
func recordedReplies(n int) (string, map[string][2]int) {
	levels := []string{"off", "low", "high"}
	var b strings.Builder
	want := map[string][2]int{}
	for i := 0; i < n; i++ {
		gold, right, wrong := "1", "wrong", "not wrong"
		if i%2 == 1 {
			gold, right, wrong = "0", "not wrong", "wrong"
		}
		prompt, variant := "a", "plain"
		if (i/3)%2 == 1 {
			prompt, variant = "b", "terse"
		}
		level, think, ok := levels[i%3], fmt.Sprintf(`"thinking":%q,`, levels[i%3]), i%3+2
		if i%50 == 0 {
			level, think, ok = "", "", 1
		}
		answer := wrong
		if i%5 < ok {
			answer = right
		}
		model := fmt.Sprint("m", (i/6)%2+1)
		k := model + "/" + level + "/" + variant
		w := want[k]
		w[0]++
		if answer == right {
			w[1]++
		}
		want[k] = w
		fmt.Fprintf(&b, `{"id":"r%d","model":%q,"gold":%q,%s"prompt":%q,"reply":"Reasoning %s.\nAnswer: %s"}`+"\n", i, model, gold, think, prompt, strings.Repeat("x", i%40), answer)
	}
	return b.String(), want
}

func TestFactorsFromItemsGroupMetrics(t *testing.T) {
	data, want := recordedReplies(600)
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
				"configs/tasks/recorded.yaml":     recordedTaskYAML,
				"configs/strategies/rescore.yaml": rescoreYAML,
				"configs/run.yaml":                recordedRun,
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

// A selection (a shard) keeps each kept item's own factor values.
func TestFactorsFromItemsUnderShard(t *testing.T) {
	data, _ := recordedReplies(90)
	dir := studytest.WriteTree(t, map[string]string{
		"data/replies.jsonl":              data,
		"configs/tasks/recorded.yaml":     recordedTaskYAML,
		"configs/strategies/rescore.yaml": rescoreYAML,
		"configs/run.yaml":                recordedRun,
	})
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	if err := st.Select(spec.Selection{Shard: &spec.Shard{K: 1, N: 3}}); err != nil {
		t.Fatal(err)
	}
	n := 0
	levels := []string{"off", "low", "high"}
	st.EachCase(func(c *spec.Case) bool {
		var i int
		fmt.Sscanf(c.Item.ID, "r%d", &i)
		want := levels[i%3]
		if i%50 == 0 {
			want = ""
		}
		if got := st.FactorValues(c); got[0] != want {
			t.Errorf("%s: thinking %q, want %q", c.Item.ID, got[0], want)
		}
		n++
		return true
	})
	if n == 0 || n == 90 {
		t.Fatalf("the shard kept %d of 90 items", n)
	}
}
