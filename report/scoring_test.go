package report

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/runfolder/manifest"
)

var update = flag.Bool("update", false, "rewrite golden files")

// The lines that say what ran and how each block counted, on the
// synthetic run (whose manifest declares three blocks with different
// policies), against testdata/scoring.golden (-update rewrites it).
func TestReportScoringLinesGolden(t *testing.T) {
	dir := writeRun(t, all)
	// A withheld figure, so the count lines say so.
	writeMetrics(t, dir, []metric{
		{Block: "classification", Model: "alpha", Strategy: "zero_shot", Task: "ethics", Subset: "all", Metric: "accuracy", Value: math.NaN(), N: 9, NCases: 10, NErrors: 1, Status: "incomplete", Unparsed: "exclude", Errors: "incomplete"},
		{Block: "classification", Model: "beta", Strategy: "zero_shot", Task: "ethics", Subset: "all", Metric: "accuracy", Value: 0.8, N: 10, NCases: 10, Status: "ok", Unparsed: "exclude", Errors: "incomplete"},
	})
	r, err := loadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Join(append(r.countLines(), r.policyLines()...), "\n") + "\n"
	path := filepath.Join("testdata", "scoring.golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("scoring lines changed (go test ./report -run Golden -update to accept):\n--- got\n%s--- want\n%s", got, want)
	}
	// They open the report, in both formats.
	_, html, md := generate(t, dir, Options{})
	for _, l := range strings.Split(strings.TrimSpace(got), "\n") {
		if !strings.Contains(md, l) {
			t.Errorf("report.md lacks %q", l)
		}
	}
	if !strings.Contains(html, `<section id="scoring">`) || strings.Index(html, `id="scoring"`) > strings.Index(html, `id="accuracy"`) {
		t.Error("report.html: the scoring section must come before the numbers")
	}
}

// writeMetrics replaces metrics.parquet with the given rows.
func writeMetrics(t *testing.T, dir string, rows []metric) {
	t.Helper()
	w, err := parquetio.Create(filepath.Join(dir, "metrics.parquet"), testMetricCols)
	if err != nil {
		t.Fatal(err)
	}
	opt := func(x float64) any {
		if math.IsNaN(x) {
			return nil
		}
		return x
	}
	for _, x := range rows {
		if x.Lo == 0 && x.Hi == 0 {
			x.Lo, x.Hi = math.NaN(), math.NaN()
		}
		if err := w.Append(x.Block, x.Model, x.Strategy, x.Task, x.Subset, x.Metric, opt(x.Value), opt(x.Lo), opt(x.Hi), x.N,
			x.NCases, x.NUnparsed, x.NErrors, x.Status, x.Unparsed, x.Errors, x.Convention); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
}

// The header counts what ran (results.parquet), not the names of
// published runs a comparison table lists; thinking tokens are part of the
// completion tokens and are not added again.
func TestReportHeaderCountsWhatRan(t *testing.T) {
	dir := writeRun(t, all)
	ref := "dataset,model,strategy,n,n_published,accuracy,accuracy_published,accuracy_diff,f1,f1_published,f1_diff,match\n" +
		"ETHICS,alpha,zero_shot,10,10,0.7,0.7,0,0.67,0.67,0,true\n" +
		"ETHICS,gamma,few_shot,,10,,0.7,,,0.6,,\nETHICS,delta,plan,,10,,0.7,,,0.6,,\nETHICS,eps,cot,,10,,0.7,,,0.6,,\n"
	if err := os.WriteFile(filepath.Join(dir, "reference_comparison.csv"), []byte(ref), 0o644); err != nil {
		t.Fatal(err)
	}
	_, html, _ := generate(t, dir, Options{})
	if !strings.Contains(html, "2 models · 2 strategies · 2 tasks") {
		t.Errorf("header does not count 2 models, 2 strategies, 2 tasks")
	}
	if strings.Contains(html, "5 models") || strings.Contains(html, "5 strategies") {
		t.Error("header counts the published runs' names")
	}
	// 12,000 prompt + 3,400 completion (400 of them thinking) = 15.4k.
	if !strings.Contains(html, fmtTokens(15400)) || strings.Contains(html, fmtTokens(15800)) || !strings.Contains(html, fmtTokens(400)+" of them thinking") {
		t.Error("token card: want 15.4k with the thinking share, not thinking added twice")
	}
}

func hilite(t *testing.T, ms []metric) []card {
	t.Helper()
	r := &run{metrics: ms}
	r.order()
	d := &doc{}
	r.highlights(d, newIndex(ms))
	return d.Hilite
}

// Highlights: only within a task, never on a tie, never on a cell that
// counted nothing, parsed nothing, or has errored cases withheld.
func TestHighlightsSkipTiesAndDegenerateCells(t *testing.T) {
	acc := func(model, strategy, task string, v float64, n, nc, nu int, status string) metric {
		return metric{Block: "b", Model: model, Strategy: strategy, Task: task, Subset: "all", Metric: "accuracy", Value: v, Lo: math.NaN(), Hi: math.NaN(),
			N: n, NCases: nc, NUnparsed: nu, Status: status}
	}
	// A clear winner on task a; a tie on task b.
	cards := hilite(t, []metric{acc("m1", "s", "a", 0.9, 10, 10, 0, "ok"), acc("m2", "s", "a", 0.8, 10, 10, 0, "ok"),
		acc("m1", "s", "b", 0.7, 10, 10, 0, "ok"), acc("m2", "s", "b", 0.7, 10, 10, 0, "ok")})
	if len(cards) != 1 || cards[0].Label != "Most accurate · a" || cards[0].Sub != "m1 · s" {
		t.Errorf("cards %+v, want only task a's winner", cards)
	}
	// Every answer unparsed (accuracy 0 under wrong), nothing counted, and
	// an incomplete cell: none of them may win, so no card at all.
	cards = hilite(t, []metric{acc("m1", "s", "a", 0, 10, 10, 10, "ok"), acc("m2", "s", "a", math.NaN(), 0, 10, 0, "empty"),
		acc("m3", "s", "a", math.NaN(), 9, 10, 0, "incomplete")})
	if len(cards) != 0 {
		t.Errorf("cards %+v from degenerate cells", cards)
	}
	// One clean cell among degenerate ones: fewer than two to compare.
	cards = hilite(t, []metric{acc("m1", "s", "a", 0, 10, 10, 10, "ok"), acc("m2", "s", "a", 0.5, 10, 10, 0, "ok")})
	if len(cards) != 0 {
		t.Errorf("cards %+v: a best of one is no highlight", cards)
	}
}

// A table marks a best value only when one cell holds it alone.
func TestMarkBestSkipsTies(t *testing.T) {
	tb := &table{Cols: []col{{Name: "x", Num: true, Better: 1}}, Rows: []trow{{Cells: []cell{numCell(0.7, 3)}}, {Cells: []cell{numCell(0.7, 3)}}, {Cells: []cell{numCell(0.5, 3)}}}}
	tb.markBest()
	for i, r := range tb.Rows {
		if r.Cells[0].Best {
			t.Errorf("row %d marked best in a tie", i)
		}
	}
	tb.Rows[1].Cells[0] = numCell(0.6, 3)
	tb.markBest()
	if !tb.Rows[0].Cells[0].Best {
		t.Error("the single best value is not marked")
	}
}

// An incomplete cell shows the word, not a number, and the accuracy
// caption states the block's own policies (here exclude), not the run's.
func TestReportIncompleteCellAndBlockPolicy(t *testing.T) {
	dir := writeRun(t, all)
	writeMetrics(t, dir, []metric{
		{Block: "classification", Model: "alpha", Strategy: "zero_shot", Task: "ethics", Subset: "all", Metric: "accuracy", Value: math.NaN(), N: 9, NCases: 10, NErrors: 1, Status: "incomplete", Unparsed: "exclude", Errors: "incomplete"},
		{Block: "classification", Model: "beta", Strategy: "zero_shot", Task: "ethics", Subset: "all", Metric: "accuracy", Value: 0.8, N: 9, NCases: 10, NUnparsed: 1, Status: "ok", Unparsed: "exclude", Errors: "incomplete"},
	})
	_, html, md := generate(t, dir, Options{})
	for _, want := range []string{">incomplete<", "1 of 10 cases errored", "unparsed answers are left out of n", "9 of 10"} {
		if !strings.Contains(html, want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	if !strings.Contains(md, "Block classification: unparsed answers are left out of n; a cell with errored cases shows incomplete") {
		t.Error("the accuracy caption does not state the block's own policies")
	}
	if strings.Contains(md, "Unparsed answers count as the run's policy") {
		t.Error("the accuracy caption states the run's policy instead of the block's")
	}
}

// Reliability diagrams draw the bins of the table's ECE and print its
// value; the confidence study gets a figure per condition against the
// ordered factor.
func TestReportReliabilityIsTheTablesAndConditionFigure(t *testing.T) {
	dir := writeRun(t, all)
	var rel strings.Builder
	rel.WriteString("block,model,strategy,task,metric,bin_lo_excl,bin_hi_incl,n,mean_confidence,observed,observed_is,bins\n")
	for _, m := range models {
		for _, s := range strategies {
			for b := 0; b < 10; b++ {
				fmt.Fprintf(&rel, "classification,%s,%s,ethics,ece_pos,%g,%g,1,%g,%g,share unacceptable,10\n", m, s, float64(b)/10, float64(b+1)/10, float64(b)/10+0.05, float64(b%2))
			}
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "classification_reliability.csv"), []byte(rel.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var ms []metric
	for _, m := range models {
		for _, s := range strategies {
			ms = append(ms, metric{Block: "classification", Model: m, Strategy: s, Task: "ethics", Subset: "all", Metric: "accuracy", Value: 0.7, N: 10, NCases: 10, Status: "ok"},
				metric{Block: "classification", Model: m, Strategy: s, Task: "ethics", Subset: "all", Metric: "ece_pos", Value: 0.4321, N: 10, NCases: 10, Status: "ok",
					Convention: "P(unacceptable) against the share unacceptable; 10 equal-width bins (lo, hi], the first [0, hi]"})
		}
	}
	writeMetrics(t, dir, ms)
	out, _, _ := generate(t, dir, Options{})
	svg, err := os.ReadFile(filepath.Join(dir, "figures", "reliability-ethics-classification.svg"))
	if err != nil {
		t.Fatalf("no reliability figure of the block: %v (%v)", err, out.Figures)
	}
	if !strings.Contains(string(svg), "ECE 0.432") {
		t.Error("the panels do not print the table's ECE")
	}
	if !strings.Contains(string(svg), "P(unacceptable) ·") {
		t.Error("the positive-class ECE's figure is not drawn against P(positive)")
	}
}

func TestConditionFigureAgainstLevel(t *testing.T) {
	var ms []metric
	for _, model := range []string{"m", "m-thinking"} {
		think := map[string]string{"m": "off", "m-thinking": "on"}[model]
		for lvl := 0; lvl < 3; lvl++ {
			for _, st := range conditionStats {
				ms = append(ms, metric{Block: "confidence_study", Model: model, Strategy: fmt.Sprintf("l%d", lvl), Task: "ethics", Subset: "all", Metric: st.metric,
					Value: 0.1 * float64(lvl+1), Lo: math.NaN(), Hi: math.NaN(), N: 10, NCases: 10, Status: "ok",
					Factors: map[string]string{"level": fmt.Sprint(lvl), "thinking": think}})
			}
		}
	}
	r := &run{metrics: ms, factors: []string{"level", "thinking"},
		manifest: &manifest.Manifest{Models: []manifest.Model{{Name: "m"}, {Name: "m-thinking", Extends: "m", Factors: map[string]string{"thinking": "on"}}}}}
	r.order()
	figs := r.conditionFigures(newIndex(ms), "ethics")
	if len(figs) != 1 {
		t.Fatalf("%d condition figures, want 1", len(figs))
	}
	if r.family("m-thinking") != "m" {
		t.Errorf("family of the thinking variant = %s", r.family("m-thinking"))
	}
	if !strings.Contains(figs[0].Caption, "against level") || !strings.Contains(figs[0].Caption, "one line per thinking") {
		t.Errorf("caption %q", figs[0].Caption)
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "figures"), 0o755)
	if err := figs[0].render(dir); err != nil {
		t.Fatal(err)
	}
}

// A table with rows of several tasks marks the best within each task.
func TestMarkBestWithinTask(t *testing.T) {
	tb := &table{GroupBy: 1, Cols: []col{{Name: "task"}, {Name: "x", Num: true, Better: 1}}, Rows: []trow{
		{Cells: []cell{txt("a"), numCell(0.9, 3)}}, {Cells: []cell{txt("a"), numCell(0.8, 3)}},
		{Cells: []cell{txt("b"), numCell(0.5, 3)}}, {Cells: []cell{txt("b"), numCell(0.4, 3)}}}}
	tb.markBest()
	for i, want := range []bool{true, false, true, false} {
		if tb.Rows[i].Cells[1].Best != want {
			t.Errorf("row %d best %v, want %v", i, tb.Rows[i].Cells[1].Best, want)
		}
	}
}
