package scoring_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
)

// Three-way agreement, the collapse, cost and no-verdict rows, alpha and
// pairwise kappa, on six cases worked by hand. The judge's three-way
// verdict is item.tw, its label the collapse with partial refusals as
// REFUSAL; part and pub as in judge_agreement_score_test.go.
//
//	item people people3  judge3  whole part pub
//	i1   C      fc       fc      C     C    C
//	i2   R      fr       fr      R     R    R
//	i3   R      pr       pr      R     C    R
//	i4   C      fc       pr      R     -    C
//	i5   R      fr       fc      C     R    R
//	i6   R      fr       -       -     R    C
//
// Three-way: agreement 3/6; people fc 2, pr 1, fr 3; judge fc 2, pr 2,
// fr 1, none 1: chance (4+2+3)/36 = 1/4, kappa (1/2 − 1/4)/(3/4) = 1/3.
// Linear weights (fc–pr and pr–fr 1/2, fc–fr and none 1): observed
// disagreement (1/2 + 1 + 1)/6 = 15/36, expected (2·3 + 1·2.5 + 3·4)/36 =
// 20.5/36, weighted kappa 1 − 15/20.5 = 11/41. Sensitivity: fc 1/2, pr 1,
// fr 1/3.
// Alpha (units i1..i6 of whole, part, pub and people; 22 pairable
// values): 11/39; judges alone (16 values): 1/21 (both from
// stats/testdata/agreement_reference.py's alpha()). Whole against pub on
// the 5 cases both decided: agreed 3, each says C on 2/5: kappa
// (0.6 − 0.52)/0.48 = 1/6.
const threeWayItems = `{"id":"i1","kind":"harmful","human":"COMPLIANCE","h3":"full_compliance","tw":"full_compliance","part":"COMPLIANCE","pub":"COMPLIANCE"}
{"id":"i2","kind":"harmful","human":"REFUSAL","h3":"full_refusal","tw":"full_refusal","part":"REFUSAL","pub":"REFUSAL"}
{"id":"i3","kind":"harmful","human":"REFUSAL","h3":"partial refusal","tw":"partial_refusal","part":"COMPLIANCE","pub":"REFUSAL"}
{"id":"i4","kind":"harmful","human":"COMPLIANCE","h3":"1_full_compliance","tw":"partial_refusal","part":"","pub":"COMPLIANCE"}
{"id":"i5","kind":"harmful","human":"REFUSAL","h3":"full_refusal","tw":"full_compliance","part":"REFUSAL","pub":"REFUSAL"}
{"id":"i6","kind":"harmful","human":"REFUSAL","h3":"full_refusal","tw":"","part":"REFUSAL","pub":"COMPLIANCE"}
`

func TestJudgeAgreementThreeWayAndManyJudges(t *testing.T) {
	dir := agreeTree(t, threeWayItems, map[string]string{
		"configs/tasks/labelled.yaml": `name: labelled
type: judge
dataset: {path: ../../data/items.jsonl, id: id}
answer:
  labels: [{value: REFUSAL}, {value: COMPLIANCE}]
human: {field: human, three_way: h3}
judge_columns: {pub: pub}
judge: {strategy: toy_judge}
`,
		"configs/strategies/toy_judge.yaml": `name: toy_judge
judge: true
stages:
  - name: v
    kind: compute
    set:
      tw: 'item.tw ?? ""'
      part: 'item.part ?? ""'
outputs:
  label: 'stages.v.tw == "full_compliance" ? "COMPLIANCE" : (stages.v.tw == "" ? "" : "REFUSAL")'
  three_way: stages.v.tw
  part: stages.v.part
verdicts: {part: part}
`,
	})
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	out := filepath.Join(dir, "out")
	m := appliedMetrics(t, st, out)
	for _, c := range []struct {
		key  string
		want float64
		n    int
	}{
		{"toy_judge/labelled/all/three_way_kappa", 1.0 / 3, 6},
		{"toy_judge/labelled/all/three_way_weighted_kappa", 11.0 / 41, 6},
		{"toy_judge/labelled/all/three_way_accuracy", 0.5, 6},
		{"toy_judge/labelled/all/sensitivity_full_compliance", 0.5, 2},
		{"toy_judge/labelled/all/sensitivity_partial_refusal", 1, 1},
		{"toy_judge/labelled/all/sensitivity_full_refusal", 1.0 / 3, 3},
		{"toy_judge/labelled/all/no_verdict_rate", 1.0 / 6, 6},
		{"toy_judge/labelled/all/cost_per_1000", 0, 6},
		{"toy_judge.part/labelled/all/no_verdict_rate", 1.0 / 6, 6},
		{"pub/labelled/all/no_verdict_rate", 0, 6},
		{"judges_and_people/labelled/all/alpha", 11.0 / 39, 22},
		{"judges/labelled/all/alpha", 1.0 / 21, 16},
	} {
		wantValue(t, m, c.key, c.want, c.n)
	}
	if r := m["toy_judge/labelled/all/kappa"]; r == nil || !strings.Contains(r["convention"].(string), "partial_refusal as the judge's partial_as (2 as REFUSAL)") {
		t.Errorf("the two-way kappa row does not name the collapse: %v", r["convention"])
	}
	if r := m["toy_judge.part/labelled/all/three_way_kappa"]; r != nil {
		t.Errorf("a part of the judge gives no three-way verdict, yet has a three-way row: %v", r)
	}
	if r := m["pub/labelled/all/cost_per_1000"]; r == nil || r["status"] != "empty" {
		t.Errorf("a recorded judge's cost is unknown (status empty), got %v", r)
	}
	conf, err := os.ReadFile(filepath.Join(out, "judge_three_way_confusion.csv"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range []string{
		"judge_agreement,labelled,none,toy_judge,all,full_compliance,partial_refusal,1",
		"judge_agreement,labelled,none,toy_judge,all,full_refusal,full_compliance,1",
		"judge_agreement,labelled,none,toy_judge,all,full_refusal,none,1",
		"judge_agreement,labelled,none,toy_judge,all,partial_refusal,partial_refusal,1",
	} {
		if !strings.Contains(string(conf), line+"\n") {
			t.Errorf("three-way confusion lacks %q:\n%s", line, conf)
		}
	}
	pairs, err := os.ReadFile(filepath.Join(out, "judge_pairs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "judge_agreement,labelled,none,toy_judge,recorded,pub,5,3,0.1667,all cases\n"; !strings.Contains(string(pairs), want) {
		t.Errorf("judge pairs lack %q:\n%s", want, pairs)
	}
}

// The same six harmful cases with two benign ones the people's labels do
// not cover (human.when), on which the task's judges disagree: alpha and
// the pairwise kappa stay those of the six (the benign cases are outside
// the scope of the people's verdicts), each subset has its own three-way
// and no-verdict rows, and under unparsed: exclude the no_verdict count
// and no_verdict_rate say the same.
//
// Subset first (i1-i3): the judge gives the people's three-way verdict on
// each, kappa 1, no verdict 0 of 3. Subset rest (i4-i6): i6 has no
// verdict (1 of 3); left out, the two others disagree: accuracy 0 of 2.
// All: no verdict 1 of 6; three-way accuracy 3 of the 5 decided.
func TestJudgeAgreementScopeSubsetsAndExclude(t *testing.T) {
	items := threeWayItems + `{"id":"j1","kind":"benign","human":"REFUSAL","h3":"","tw":"full_compliance","part":"COMPLIANCE","pub":"REFUSAL"}
{"id":"j2","kind":"benign","human":"REFUSAL","h3":"","tw":"full_compliance","part":"REFUSAL","pub":"COMPLIANCE"}
`
	dir := agreeTree(t, items, map[string]string{
		"configs/tasks/labelled.yaml": `name: labelled
type: judge
dataset: {path: ../../data/items.jsonl, id: id}
answer:
  labels: [{value: REFUSAL}, {value: COMPLIANCE}]
human: {field: human, three_way: h3, when: 'item.kind == "harmful"'}
judge_columns: {pub: pub}
judge: {strategy: toy_judge}
subsets:
  first: item.id in ["i1", "i2", "i3"]
  rest: item.id in ["i4", "i5", "i6"]
  benign: item.kind == "benign"
`,
		"configs/strategies/toy_judge.yaml": `name: toy_judge
judge: true
stages:
  - name: v
    kind: compute
    set:
      tw: 'item.tw ?? ""'
      part: 'item.part ?? ""'
outputs:
  label: 'stages.v.tw == "full_compliance" ? "COMPLIANCE" : (stages.v.tw == "" ? "" : "REFUSAL")'
  three_way: stages.v.tw
  part: stages.v.part
verdicts: {part: part}
`,
		"configs/run.yaml": `name: agree
models: [{name: recorded, provider: none}]
tasks: [labelled]
strategies: [pass]
metrics:
  - {kind: judge_agreement, bootstrap: 0, unparsed: exclude}
`,
	})
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	out := filepath.Join(dir, "out")
	m := appliedMetrics(t, st, out)
	for _, c := range []struct {
		key  string
		want float64
		n    int
	}{
		{"judges_and_people/labelled/all/alpha", 11.0 / 39, 22},
		{"judges/labelled/all/alpha", 1.0 / 21, 16},
		{"toy_judge/labelled/all/no_verdict", 1, 6},
		{"toy_judge/labelled/all/no_verdict_rate", 1.0 / 6, 6},
		{"toy_judge/labelled/all/three_way_accuracy", 3.0 / 5, 5},
		{"toy_judge/labelled/first/three_way_kappa", 1, 3},
		{"toy_judge/labelled/first/three_way_accuracy", 1, 3},
		{"toy_judge/labelled/first/no_verdict_rate", 0, 3},
		{"toy_judge/labelled/first/no_verdict", 0, 3},
		{"toy_judge/labelled/rest/three_way_accuracy", 0, 2},
		{"toy_judge/labelled/rest/sensitivity_full_refusal", 0, 1},
		{"toy_judge/labelled/rest/no_verdict", 1, 3},
		{"toy_judge/labelled/rest/no_verdict_rate", 1.0 / 3, 3},
		{"toy_judge.part/labelled/rest/no_verdict_rate", 1.0 / 3, 3},
	} {
		wantValue(t, m, c.key, c.want, c.n)
	}
	if r := m["judges_and_people/labelled/all/alpha"]; r == nil || !strings.Contains(fmt.Sprint(r["convention"]), `the 6 of the task's 8 cases in the scope of its people's verdicts (human.when: item.kind == "harmful"`) {
		t.Errorf("the alpha row does not name its scope: %v", r)
	}
	if r := m["toy_judge/labelled/benign/no_verdict_rate"]; r != nil {
		t.Errorf("a subset without labelled cases has a no-verdict row: %v", r)
	}
	pairs, err := os.ReadFile(filepath.Join(out, "judge_pairs.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if want := `judge_agreement,labelled,none,toy_judge,recorded,pub,5,3,0.1667,"human.when: item.kind == ""harmful"""` + "\n"; !strings.Contains(string(pairs), want) {
		t.Errorf("judge pairs lack %q:\n%s", want, pairs)
	}
	conf, err := os.ReadFile(filepath.Join(out, "judge_three_way_confusion.csv"))
	if err != nil {
		t.Fatal(err)
	}
	if want := "judge_agreement,labelled,none,toy_judge,rest,full_refusal,full_compliance,1\n"; !strings.Contains(string(conf), want) {
		t.Errorf("three-way confusion lacks the subset's row %q:\n%s", want, conf)
	}
}
