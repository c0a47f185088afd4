package scoring_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/dataset"
	"github.com/promoral/promoral/pipeline/spec"
)

// aliasTask maps XSTest's numbered reply classes onto two labels through
// answer.labels aliases: people and a published judge labelled with
// 1_full_compliance / 2_full_refusal / 3_partial_refusal.
const aliasTask = `name: labelled
type: judge
dataset: {path: ../../data/items.jsonl, id: id}
answer:
  labels:
    - {value: COMPLIANCE, aliases: [1_full_compliance]}
    - {value: REFUSAL, aliases: [2_full_refusal, 3_partial_refusal]}
human: {field: human, when: 'item.kind == "harmful"'}
judge_columns: {pub: pub}
judge: {strategy: toy_judge}
subsets:
  harmful: item.kind == "harmful"
`

// labelledRows generates n recorded replies of about 2 KB each, labelled
// by people and by a published judge in XSTest's numbered classes, and
// counts what judge_agreement must find on the harmful ones.
type labelledCounts struct {
	harmful, wholeAgree, pubAgree, partial int
}

func labelledRows(n int) (string, labelledCounts) {
	classes := []string{"1_full_compliance", "2_full_refusal", "3_partial_refusal"}
	label := map[string]string{"1_full_compliance": "COMPLIANCE", "2_full_refusal": "REFUSAL", "3_partial_refusal": "REFUSAL"}
	pad := strings.Repeat("recorded reply text ", 100)
	var b strings.Builder
	var c labelledCounts
	for i := range n {
		kind := "harmful"
		if i%5 == 4 {
			kind = "benign"
		}
		human := classes[i%3]
		pub := classes[(i/3)%3]
		whole := "COMPLIANCE"
		if i%7 < 3 {
			whole = "REFUSAL"
		}
		if kind == "harmful" {
			c.harmful++
			if label[human] == whole {
				c.wholeAgree++
			}
			if label[human] == label[pub] {
				c.pubAgree++
			}
			if human == "3_partial_refusal" {
				c.partial++
			}
		}
		fmt.Fprintf(&b, `{"id":"r%d","kind":%q,"human":%q,"pub":%q,"whole":%q,"part":%q,"reply":"%d %s"}`+"\n", i, kind, human, pub, whole, whole, i, pad)
	}
	return b.String(), c
}

// Human verdicts and recorded judges' verdicts are read through the item
// store once a dataset is large enough to be spilled there (5,000 replies
// of 2 KB are past the 8 MiB estimate), and mapped onto the task's labels
// through its aliases.
func TestHumanLabelsOfStoredItemsThroughAliases(t *testing.T) {
	if dataset.SpillAbove != 8<<20 {
		t.Fatalf("SpillAbove is %d: this test sizes its data for the 8 MiB default", dataset.SpillAbove)
	}
	const n = 5000
	items, want := labelledRows(n)
	dir := agreeTree(t, items, map[string]string{"configs/tasks/labelled.yaml": aliasTask})
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	task := st.Task("labelled")
	if len(task.Items) != n {
		t.Fatalf("%d items, want %d", len(task.Items), n)
	}
	if task.Items[0].Fields != nil || task.Items[n-1].Fields != nil {
		t.Fatal("the items' fields stayed in memory: the test no longer exercises the item store")
	}
	// 3_partial_refusal is an alias of REFUSAL, read from the store.
	if got := task.HumanLabel(&task.Items[2]); got != "REFUSAL" {
		t.Errorf("item r2's human label = %q, want REFUSAL (from 3_partial_refusal)", got)
	}
	if got := task.HumanLabel(&task.Items[4]); got != "" {
		t.Errorf("item r4 is benign, left out by human.when; its human label = %q", got)
	}
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	m := appliedMetrics(t, st, out)
	wantValue(t, m, "toy_judge/labelled/all/accuracy", float64(want.wholeAgree)/float64(want.harmful), want.harmful)
	wantValue(t, m, "pub/labelled/all/accuracy", float64(want.pubAgree)/float64(want.harmful), want.harmful)
	wantValue(t, m, "toy_judge/labelled/harmful/accuracy", float64(want.wholeAgree)/float64(want.harmful), want.harmful)
	if c, _ := m["toy_judge/labelled/all/kappa"]["convention"].(string); !strings.Contains(c, fmt.Sprintf("%d from item field human", want.harmful)) {
		t.Errorf("kappa convention does not count the %d verdicts from the store: %s", want.harmful, c)
	}
	if want.partial == 0 {
		t.Fatal("the generated data has no partial refusal to map")
	}
}

// A verdict that is neither a label nor an alias is still a data error,
// with its row, on stored items as in memory; the hint names the aliases.
func TestHumanLabelNotAnAliasOfStoredItems(t *testing.T) {
	items, _ := labelledRows(5000)
	items = strings.Replace(items, `"id":"r17","kind":"harmful","human":"3_partial_refusal"`, `"id":"r17","kind":"harmful","human":"4_unclear"`, 1)
	if !strings.Contains(items, "4_unclear") {
		t.Fatal("the test did not plant its bad label")
	}
	dir := agreeTree(t, items, map[string]string{"configs/tasks/labelled.yaml": aliasTask})
	_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
	studytest.WantErr(t, err, `row 18: human verdict "4_unclear" is not one of task labelled's labels`, "answer.labels[].aliases")
	if err != nil && strings.Contains(err.Error(), "no item has a field") {
		t.Errorf("a field every row has is reported missing:\n%v", err)
	}
}
