package metrics

import (
	"flag"
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/promoral/promoral/pipeline/spec"
)

// Every row a kind writes is one it declares (spec.MetricKind.Rows, from
// which docs/metrics.md's rows section is made), and every declared row is
// written by some scored fixture of this package or listed below with the
// reason why not.
//
// The fixtures' rows are checked as they are written: build records the
// kind of each metric it compiles and run checks the rows of its output
// (checkRows), failing the test that wrote an undeclared name. TestMain
// then checks, when the whole package ran, that each declaration was
// written by some test.

// notExercised are the kinds whose declared rows no scored fixture of
// this package writes, each with the reason and the tests that write them.
// (spec.BlockRows are written by scoring, not by a kind: pipeline/scoring's
// reduce tests.)
var notExercised = map[string]string{
	"judge_agreement": "needs people's labels and judges' verdicts of a judged task: written by configs " +
		"(judge_agreement.yaml in TestShippedConfigsMetricKeysAreUnique, which checks each row is declared) " +
		"and by pipeline/scoring's judge agreement tests",
	"reference": "writes a table, no rows of metrics.parquet: it declares none",
}

var written = struct {
	sync.Mutex
	kindOf map[reflect.Type]string   // metric type -> kind, recorded by build
	rows   map[string]map[string]int // kind -> metric name -> rows written
}{kindOf: map[reflect.Type]string{}, rows: map[string]map[string]int{}}

// kindOfConfig is the registered kind whose config type cfg has.
func kindOfConfig(cfg spec.MetricConfig) string {
	for _, k := range spec.MetricKinds() {
		if reflect.TypeOf(k.New()) == reflect.TypeOf(cfg) {
			return k.Name
		}
	}
	return ""
}

// noteBuilt records the kind of a metric build compiled.
func noteBuilt(cfg spec.MetricConfig, m spec.Metric) {
	if m == nil {
		return
	}
	written.Lock()
	defer written.Unlock()
	written.kindOf[reflect.TypeOf(m)] = kindOfConfig(cfg)
}

// checkRows fails t for each row of out whose metric the kind of m does
// not declare, and records the rows for TestMain.
func checkRows(t *testing.T, m spec.Metric, out *spec.MetricOutput) {
	t.Helper()
	written.Lock()
	kind, ok := written.kindOf[reflect.TypeOf(m)]
	written.Unlock()
	if !ok {
		t.Errorf("metric %T was not compiled by build: its rows cannot be checked against its kind's declarations", m)
		return
	}
	checkKindRows(t, kind, out)
}

func checkKindRows(t *testing.T, kind string, out *spec.MetricOutput) {
	t.Helper()
	var decl spec.RowsDoc
	for _, k := range spec.MetricKinds() {
		if k.Name == kind {
			decl = k.Rows
		}
	}
	written.Lock()
	defer written.Unlock()
	if written.rows[kind] == nil {
		written.rows[kind] = map[string]int{}
	}
	undeclared := map[string]int{}
	var order []string
	for _, r := range out.Rows {
		if !decl.Declares(r.Metric) {
			if undeclared[r.Metric] == 0 {
				order = append(order, r.Metric)
			}
			undeclared[r.Metric]++
		}
		written.rows[kind][r.Metric]++
	}
	for _, name := range order {
		t.Errorf("kind %s writes metric %q (%d rows), which it does not declare: add it to the Rows of its spec.RegisterMetric (and run go run ./cmd/promoral docs)", kind, name, undeclared[name])
	}
}

// undeclaredCoverage lists the declared names no fixture wrote and no
// entry of notExercised explains.
func undeclaredCoverage() []string {
	var out []string
	for _, k := range spec.MetricKinds() {
		if _, ok := notExercised[k.Name]; ok {
			continue
		}
		if len(k.Rows.Rows) == 0 && k.Rows.Lead == "" {
			out = append(out, fmt.Sprintf("kind %s declares no rows and no lead", k.Name))
		}
		for _, r := range k.Rows.Rows {
			for _, name := range r.Names {
				hit := false
				for m := range written.rows[k.Name] {
					if spec.NameMatches(name, m) {
						hit = true
					}
				}
				if !hit {
					out = append(out, fmt.Sprintf("kind %s declares %s, which no test of this package writes: write it in a scored fixture, or list it in notExercised with the reason", k.Name, name))
				}
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	// Only a run of every test can say no test writes a row.
	all := true
	for _, f := range []string{"test.run", "test.skip", "test.list"} {
		if fl := flag.Lookup(f); fl != nil && fl.Value.String() != "" {
			all = false
		}
	}
	if code == 0 && all {
		if missing := undeclaredCoverage(); len(missing) > 0 {
			fmt.Fprintln(os.Stderr, "--- FAIL: declared metric rows no test writes:\n\t"+strings.Join(missing, "\n\t"))
			code = 1
		}
	}
	os.Exit(code)
}

// A repeats block over two items answered three times each: the fixture
// that writes the repeats kind's rows.
func TestRepeatsRowsAreDeclared(t *testing.T) {
	task := mkTask("t", []string{"a", "b"}, "a", []tItem{{id: "1", gold: "a"}, {id: "2", gold: "b"}}, nil)
	st := mkStudy(3, task)
	var answers []ans
	for rep, labels := range [][2]string{{"a", "b"}, {"b", "b"}, {"a", "b"}} {
		for i, l := range labels {
			answers = append(answers, ans{model: "m", strategy: "s", item: task.Items[i].ID, label: l, repeat: rep})
		}
	}
	out := run(t, build(t, st, &RepeatsConfig{MetricBase: spec.MetricBase{Kind: "repeats"}, Bootstrap: intp(50)}), mkRS(st, "wrong", task, answers...))
	var got []string
	for _, r := range out.Rows {
		got = append(got, r.Metric)
	}
	for _, w := range []string{"accuracy", "accuracy_repeat_mean", "accuracy_repeat_sd", "flip_rate", "repeats"} {
		if !slices.Contains(got, w) {
			t.Errorf("no %s row; have %v", w, got)
		}
	}
	want(t, find(t, out, "m", "s", "all", "flip_rate"), 0.5, 2) // item 1 answered a, b, a; item 2 b every time
}

// The check finds a name a kind does not declare, and a declared pattern
// matches the names it stands for.
func TestRowDeclarationsMatch(t *testing.T) {
	var choice spec.RowsDoc
	for _, k := range spec.MetricKinds() {
		if k.Name == "choice" {
			choice = k.Rows
		}
	}
	for name, ok := range map[string]bool{"share:action1": true, "share:": false, "entropy_bits": true, "entropy": false,
		"accuracy": false, "majority_ties": true} {
		if choice.Declares(name) != ok {
			t.Errorf("choice declares %q: %v, want %v", name, !ok, ok)
		}
	}
}
