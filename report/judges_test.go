package report

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

// A run with a judge_agreement block: two judges of one task (one whose
// kappa is undefined), and two cells whose corrected ASR was computed, one
// clamped and one undefined, with no RTA correction.
func TestJudgesSection(t *testing.T) {
	dir := t.TempDir()
	nan := math.NaN()
	m := manifest.Manifest{Summary: manifest.Summary{Run: "judged", Cases: 20, Skipped: []string{"model big-judge (optional; KEY is not set): 10 cases not run"}},
		Metrics: []manifest.Block{{Name: "agree", Kind: "judge_agreement", Unparsed: "wrong", Errors: "incomplete"}}}
	data, _ := json.Marshal(m)
	if err := os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	row := func(model, strategy, metric string, v, lo, hi float64, n int, status, conv string) spec.MetricRow {
		return spec.MetricRow{Block: "agree", Model: model, Strategy: strategy, Task: "labelled", Subset: "all", Metric: metric,
			Value: v, CILow: lo, CIHigh: hi, N: n, NCases: 10, Status: status, Unparsed: "wrong", Errors: "incomplete", Convention: conv}
	}
	sc := &scoring.Scores{Rows: []spec.MetricRow{
		row("none", "heuristic_judge", "kappa", 0.25, 0.1, 0.4, 10, "ok", "kappa of the heuristic"),
		row("none", "heuristic_judge", "accuracy", 0.6, 0.4, 0.8, 10, "ok", ""),
		row("none", "heuristic_judge", "sensitivity", 0.5, 0.2, 0.8, 4, "ok", ""),
		row("none", "heuristic_judge", "specificity", 2.0/3, 0.3, 0.9, 6, "ok", ""),
		row("none", "heuristic_judge", "no_verdict", 2, nan, nan, 10, "ok", ""),
		row("none", "heuristic_judge", "tp", 2, nan, nan, 10, "ok", ""),
		row("recorded", "published_x", "kappa", nan, nan, nan, 10, "undefined", "Cohen's kappa is undefined: people and the judge each gave one and the same verdict"),
		row("recorded", "published_x", "accuracy", 1, nan, nan, 10, "ok", ""),
		row("alpha", "zero_shot", "asr_judged", 0.1, 0.0, 0.3, 10, "ok", ""),
		row("alpha", "zero_shot", "asr_corrected", 0, 0, 0.2, 10, "ok", "asr_judged corrected ...; CLAMPED to 0 from -0.6000"),
		row("alpha", "zero_shot", "asr_rg", -0.6, -0.9, 0.2, 10, "ok", ""),
		row("alpha", "zero_shot", "rta_judged", 0.2, 0.0, 0.5, 5, "ok", ""),
		row("alpha", "zero_shot", "rta_corrected", nan, nan, nan, 5, "empty", "no human-labelled benign replies judged by heuristic_judge"),
		row("beta", "zero_shot", "asr_judged", 0.4, 0.2, 0.6, 10, "ok", ""),
		row("beta", "zero_shot", "asr_corrected", nan, nan, nan, 10, "undefined", "undefined: sensitivity + specificity ≤ 1"),
	}}
	if err := sc.Write(dir); err != nil {
		t.Fatal(err)
	}
	out, err := Generate(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	md, _ := os.ReadFile(out.Markdown)
	html, _ := os.ReadFile(out.HTML)
	for _, want := range []string{
		"## Judges: agreement with people, and corrected rates",
		"### Agreement with people · task labelled (block agree)",
		"| heuristic_judge | none | 0.250 <sub>0.100–0.400</sub> | 0.600 <sub>0.400–0.800</sub> | 0.500 <sub>0.200–0.800</sub> | 0.667 <sub>0.300–0.900</sub> | 10 | 2 <sub>20%</sub> | 2 / – / – / – |",
		"| published_x | recorded | undefined | **1.000** | – | – | 10 | – | – / – / – / – |",
		"### ASR and RTA corrected for the judge's errors",
		"| labelled | alpha | zero_shot | 0.100 <sub>0.000–0.300</sub> | 0.000 <sub>0.000–0.200</sub> | – | 0.200 <sub>0.000–0.500</sub> | – |",
		"| labelled | beta | zero_shot | 0.400 <sub>0.200–0.600</sub> | undefined |",
		"| Skipped | model big-judge",
	} {
		if !strings.Contains(string(md), want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
	// The clamped figure is marked and says why.
	if !strings.Contains(string(html), `class="num bad" title="asr_judged corrected ...; CLAMPED to 0 from -0.6000"`) {
		t.Error("the clamped corrected rate is not marked in report.html")
	}
	// Judges are not models or strategies under test.
	r, err := loadRun(dir)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(r.models, ",") != "alpha,beta" || strings.Join(r.strategies, ",") != "zero_shot" {
		t.Errorf("models %v, strategies %v; want the cells' only", r.models, r.strategies)
	}
	var figs []string
	for _, f := range out.Figures {
		figs = append(figs, filepath.Base(f))
	}
	for _, f := range []string{"judge-agreement.svg", "corrected-rates.svg"} {
		if !strings.Contains(strings.Join(figs, " "), f) {
			t.Errorf("no figure %s among %v", f, figs)
		}
	}
}
