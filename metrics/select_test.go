package metrics

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
	"gopkg.in/yaml.v3"
)

const (
	u = "unacceptable" // the positive class
	a = "acceptable"
)

// selectFixture is a result set of one task with four gold items
// [u, u, a, a]; labels[model][i] are item i's candidate labels.
func selectFixture(t *testing.T, texts map[string][]any, labels map[string][][]any, policy string) *spec.ResultSet {
	t.Helper()
	task := &spec.Task{Name: "dev", Labels: []string{u, a}, Positive: u, Spec: &spec.TaskSpec{Gold: "g"}}
	strat := &spec.Strategy{Name: "sel"}
	gold := []string{u, u, a, a}
	rs := &spec.ResultSet{Study: &spec.Study{Run: &spec.RunFile{Name: "fixture"}}, Policy: policy, OutDir: t.TempDir()}
	for _, name := range []string{"m1", "m2"} {
		model := &spec.Model{Name: name}
		for i, g := range gold {
			item := &spec.Item{ID: string(rune('a' + i)), Gold: g}
			c := &spec.Case{Model: model, Strategy: strat, Task: task, Item: item}
			res := &spec.Result{Done: true, Outputs: map[string]any{outCandidates: texts[name], outCandidateLabels: labels[name][i]}}
			rs.Rows = append(rs.Rows, spec.NewRowCell(c, name, strat.Name, nil).Row(c.Item, res))
		}
	}
	return rs
}

func selectMetric(rs *spec.ResultSet) *selectCandidate {
	return &selectCandidate{tasks: map[string]*spec.Task{"dev": rs.Rows[0].Task}, write: "sel/chosen.yaml", varN: "role_confirmation", table: "role_candidates"}
}

// The arithmetic by hand. Gold [u, u, a, a], positive u.
//
// m1:
//
//	cand 0 [u u u u]: acc 2/4 = .5;   TP 2 FP 2 FN 0, F1 = 2*2/(4+2+0) = 2/3; score 7/6
//	cand 1 [u a a a]: acc 3/4 = .75;  TP 1 FP 0 FN 1, F1 = 2/(2+0+1) = 2/3;   score 17/12  <- best
//	cand 2 [u - a u]: ("-" unparsed; policy wrong) acc 2/4 = .5;
//	                  TP 1 FP 1 FN 1 (the unparsed positive), F1 = 2/4 = .5; score 1
//	cand 3 [u a a a]: as cand 1, a tie: the lower index (1) wins
//
// Under policy exclude, cand 2 drops item 1: acc 2/3, TP 1 FP 1 FN 0,
// F1 = 2/3, score 4/3, still below cand 1.
//
// m2: cand 0 and cand 1 both [u u a a]: acc 1, F1 1, score 2; a tie, so 0.
// Cand 2 is missing on the last item (a short list): unparsed there, so
// [u u a -]: acc 3/4, TP 2 FP 0 FN 0, F1 1, score 1.75 (under exclude
// acc 3/3 and score 2, a three-way tie that candidate 0 still wins).
func TestSelectCandidateByHand(t *testing.T) {
	texts := map[string][]any{
		"m1": {" first\n", "second: \"quoted\"", "third", "fourth"},
		"m2": {"alpha", "beta", "gamma"},
	}
	labels := map[string][][]any{
		"m1": {{u, u, u, u}, {u, a, "", a}, {u, a, a, a}, {u, a, u, a}},
		"m2": {{u, u, u}, {u, u, u}, {a, a, a}, {a, a}},
	}
	for _, tc := range []struct {
		policy string
		m1     []float64 // score per candidate
		acc2   float64   // m1 candidate 2's accuracy
		acc2m2 float64   // m2 candidate 2's accuracy (3/3 under exclude: still a tie lost to 0)
	}{
		{"wrong", []float64{7.0 / 6, 17.0 / 12, 1, 17.0 / 12}, 0.5, 0.75},
		{"exclude", []float64{7.0 / 6, 17.0 / 12, 4.0 / 3, 17.0 / 12}, 2.0 / 3, 1},
	} {
		rs := selectFixture(t, texts, labels, tc.policy)
		out, err := selectMetric(rs).Compute(rs)
		if err != nil {
			t.Fatal(err)
		}
		checkKindRows(t, "select_candidate", out)
		got := map[string]float64{}
		for _, r := range out.Rows {
			got[r.Model+"/"+r.Subset+"/"+r.Metric] = r.Value
		}
		near := func(key string, want float64) {
			t.Helper()
			if v, ok := got[key]; !ok || math.Abs(v-want) > 1e-12 {
				t.Errorf("%s %s = %v (present %v), want %v", tc.policy, key, v, ok, want)
			}
		}
		for k, s := range tc.m1 {
			near("m1/candidate_"+string(rune('0'+k))+"/score", s)
		}
		near("m1/candidate_0/accuracy", 0.5)
		near("m1/candidate_0/f1", 2.0/3)
		near("m1/candidate_1/accuracy", 0.75)
		near("m1/candidate_2/accuracy", tc.acc2)
		near("m1/all/chosen_candidate", 1)
		near("m2/candidate_0/score", 2)
		near("m2/candidate_1/score", 2)
		near("m2/candidate_2/accuracy", tc.acc2m2)
		near("m2/candidate_2/f1", 1)
		near("m2/all/chosen_candidate", 0)

		var chosen map[string]map[string]string
		// The kind hands the file to scoring, which writes it; it writes
		// nothing itself.
		if _, err := os.Stat(filepath.Join(rs.OutDir, "sel")); !os.IsNotExist(err) {
			t.Errorf("the kind wrote into the run folder itself: %v", err)
		}
		if len(out.Files) != 1 || out.Files[0].Name != "sel/chosen.yaml" {
			t.Fatalf("files: %+v", out.Files)
		}
		data := out.Files[0].Data
		if err := yaml.Unmarshal(data, &chosen); err != nil {
			t.Fatal(err)
		}
		if chosen["m1"]["role_confirmation"] != `second: "quoted"` || chosen["m2"]["role_confirmation"] != "alpha" || len(chosen) != 2 {
			t.Errorf("written: %v", chosen)
		}
		tbl := out.Tables[0]
		if tbl.Name != "role_candidates" || len(tbl.Rows) != 4+3 {
			t.Fatalf("table %s with %d rows", tbl.Name, len(tbl.Rows))
		}
		if r := tbl.Rows[0]; strings.Join(r, "|") != "m1|0|ok|0.5|0.6666666666666666|1.1666666666666665|false|first" {
			t.Errorf("first table row: %q", r)
		}
		if r := tbl.Rows[1]; r[6] != "true" || r[7] != `second: "quoted"` {
			t.Errorf("chosen row: %q", r)
		}
		if !strings.Contains(out.Text, "m1: candidate 1 of 4") || !strings.Contains(out.Text, "m2: candidate 0 of 3") {
			t.Errorf("text: %s", out.Text)
		}
	}
}

// Candidates that differ between items of a model mean the candidates
// request depended on the item: the selection refuses to choose.
func TestSelectCandidateRejectsItemDependentCandidates(t *testing.T) {
	labels := map[string][][]any{"m1": {{u}, {u}, {a}, {a}}, "m2": {{u}, {u}, {a}, {a}}}
	rs := selectFixture(t, map[string][]any{"m1": {"x"}, "m2": {"y"}}, labels, "wrong")
	rs.Rows[2].Outputs()[outCandidates] = []any{"z"}
	if _, err := selectMetric(rs).Compute(rs); err == nil || !strings.Contains(err.Error(), "must not depend on the item") {
		t.Errorf("err = %v", err)
	}
}
