package stages

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/promoral/promoral/pipeline"
)

func init() {
	pipeline.RegisterMetric(pipeline.MetricKind{
		Name: "reference",
		Doc: "Compares the run's classification figures (n, accuracy, F1, ECE, Brier per model x strategy) with published ones from a CSV " +
			"(reference_comparison.csv, and a table printed after the run).",
		New: func() pipeline.MetricConfig { return &ReferenceConfig{} },
	})
}

// ReferenceConfig is the YAML of a reference metric block.
type ReferenceConfig struct {
	pipeline.MetricBase `yaml:",inline"`
	File                string `yaml:"file" required:"true" doc:"CSV of published figures, relative to the run file, with columns dataset, model, strategy and any of n_eval, accuracy, f1, ece, brier (e.g. data/promoral_reference/promoral_results_summary.csv)."`
	// Datasets joins the CSV's dataset column to the run's tasks.
	Datasets []RefDataset `yaml:"datasets" required:"true" doc:"Which published dataset each task (or task subset) corresponds to."`
	From     string       `yaml:"from,omitempty" doc:"Name of the classification block whose figures are compared (its unparsed policy, confidence meaning and ece_promoral); default: the first classification block scoring the task."`
	// Models and Strategies rename the run's names to the published ones.
	Models     map[string]string `yaml:"models,omitempty" doc:"Run model name -> published model name, where they differ."`
	Strategies map[string]string `yaml:"strategies,omitempty" doc:"Run strategy name -> published strategy name, where they differ."`
	Tolerance  float64           `yaml:"tolerance,omitempty" doc:"A run matches when accuracy and F1 are both within this of the published figures (default 0.005)."`
}

// RefDataset maps one published dataset to a task of the run.
type RefDataset struct {
	Dataset string `yaml:"dataset" required:"true" doc:"Value of the CSV's dataset column, e.g. ETHICS."`
	Task    string `yaml:"task" required:"true" doc:"Task of the run scored against it."`
	Subset  string `yaml:"subset,omitempty" doc:"A subset of the task (its subsets:) instead of all its items, e.g. original for ETHICS-Contrast/originals."`
}

// refRow is one published run.
type refRow struct {
	dataset, model, strategy string
	n                        int // -1 when not given
	acc, f1, ece, brier      float64
}

type reference struct {
	table      string
	file       string
	rows       []refRow
	datasets   []RefDataset
	from       string
	models     map[string]string
	strategies map[string]string
	tol        float64
	tasks      map[string]*pipeline.Task
}

// Build reads the CSV and checks the joins.
func (c *ReferenceConfig) Build(b *pipeline.MetricBuild) pipeline.Metric {
	m := &reference{table: tableName(&c.MetricBase, "reference_comparison"), datasets: c.Datasets, from: c.From, models: c.Models, strategies: c.Strategies, tol: c.Tolerance, tasks: map[string]*pipeline.Task{}}
	if m.tol == 0 {
		m.tol = 0.005
	}
	if c.Tolerance < 0 {
		b.Errf("tolerance", "use a positive number", "tolerance must not be negative")
	}
	path := c.File
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(b.File), path)
	}
	m.file = c.File
	rows, err := readRefCSV(path)
	if err != nil {
		b.Errf("file", "the path is relative to the run file", "%v", err)
	}
	m.rows = rows
	if len(c.Datasets) == 0 {
		b.Errf("datasets", "e.g. - {dataset: ETHICS, task: ethics}", "reference needs at least one dataset")
	}
	have := map[string]bool{}
	for _, r := range rows {
		have[r.dataset] = true
	}
	for i, d := range c.Datasets {
		t := b.Study.Task(d.Task)
		if t == nil {
			b.Errf(fmt.Sprintf("datasets[%d].task", i), pipeline.NameHint(d.Task, b.Study.TaskNames(), "name a task declared under tasks"), "no task %q", d.Task)
			continue
		}
		if d.Subset != "" {
			if _, ok := t.Spec.Subsets[d.Subset]; !ok {
				b.Errf(fmt.Sprintf("datasets[%d].subset", i), pipeline.NameHint(d.Subset, subsetNames(map[string]*pipeline.Task{t.Name: t}), "name a subset from the task's subsets:"), "task %s has no subset %q", d.Task, d.Subset)
			}
		}
		if err == nil && !have[d.Dataset] {
			b.Errf(fmt.Sprintf("datasets[%d].dataset", i), "use a value of the CSV's dataset column", "%s has no rows of dataset %q", c.File, d.Dataset)
		}
		m.tasks[t.Name] = t
	}
	// The classification block named by from must exist (in any position:
	// blocks are resolved when scoring, not in list order).
	if c.From != "" {
		found := false
		for _, mn := range b.Study.Run.Metrics {
			if cc, ok := mn.Config.(*ClassificationConfig); ok && (cc.MetricBase.Name == c.From || cc.MetricBase.Name == "" && c.From == cc.MetricBase.Kind) {
				found = true
			}
		}
		if !found {
			var blocks []string
			for _, mn := range b.Study.Run.Metrics {
				if cc, ok := mn.Config.(*ClassificationConfig); ok {
					blocks = append(blocks, orDefault(cc.MetricBase.Name, cc.MetricBase.Kind))
				}
			}
			b.Errf("from", pipeline.NameHint(c.From, blocks, "name a classification block of this run"), "no classification block %q", c.From)
		}
	}
	return m
}

func readRefCSV(path string) ([]refRow, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := csv.NewReader(f)
	header, err := r.Read()
	if err != nil {
		return nil, fmt.Errorf("%s: %v", path, err)
	}
	col := map[string]int{}
	for i, h := range header {
		col[strings.TrimSpace(h)] = i
	}
	for _, need := range []string{"dataset", "model", "strategy"} {
		if _, ok := col[need]; !ok {
			return nil, fmt.Errorf("%s: no %s column", path, need)
		}
	}
	get := func(rec []string, name string) string {
		if i, ok := col[name]; ok && i < len(rec) {
			return strings.TrimSpace(rec[i])
		}
		return ""
	}
	num := func(rec []string, name string, line int) (float64, error) {
		s := get(rec, name)
		if s == "" {
			return math.NaN(), nil
		}
		v, err := strconv.ParseFloat(s, 64)
		if err != nil {
			return 0, fmt.Errorf("%s:%d: %s %q is not a number", path, line, name, s)
		}
		return v, nil
	}
	var out []refRow
	for line := 2; ; line++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %v", path, err)
		}
		row := refRow{dataset: get(rec, "dataset"), model: get(rec, "model"), strategy: get(rec, "strategy"), n: -1}
		if s := get(rec, "n_eval"); s != "" {
			n, err := strconv.Atoi(s)
			if err != nil {
				return nil, fmt.Errorf("%s:%d: n_eval %q is not a whole number", path, line, s)
			}
			row.n = n
		}
		for _, f := range []struct {
			name string
			dst  *float64
		}{{"accuracy", &row.acc}, {"f1", &row.f1}, {"ece", &row.ece}, {"brier", &row.brier}} {
			if *f.dst, err = num(rec, f.name, line); err != nil {
				return nil, err
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// refLine is one joined run.
type refLine struct {
	dataset, model, strategy string
	ours                     map[string]pipeline.MetricRow
	pub                      *refRow
	eceMetric                string
}

func (l *refLine) val(metric string) float64 {
	if r, ok := l.ours[metric]; ok {
		return r.Value
	}
	return math.NaN()
}

func (l *refLine) n() int { return l.ours["accuracy"].N }

// classifier finds the classification block to compare for a task.
func (m *reference) classifier(rs *pipeline.ResultSet, task string) (*classification, error) {
	for _, mt := range rs.Study.Metrics {
		c, ok := mt.(*classification)
		if !ok || c.tasks[task] == nil {
			continue
		}
		if m.from == "" || c.name == m.from {
			return c, nil
		}
	}
	if m.from != "" {
		return nil, fmt.Errorf("reference: classification block %q does not score task %s", m.from, task)
	}
	return nil, fmt.Errorf("reference: no classification block scores task %s; add one (its settings say how to score)", task)
}

func mapName(m map[string]string, s string) string {
	if v, ok := m[s]; ok {
		return v
	}
	return s
}

// Compute joins the run's figures with the published ones.
func (m *reference) Compute(rs *pipeline.ResultSet) (*pipeline.MetricOutput, error) {
	var lines []*refLine
	var text strings.Builder
	for _, d := range m.datasets {
		cls, err := m.classifier(rs, d.Task)
		if err != nil {
			return nil, err
		}
		eceMetric := "ece_pos"
		if cls.promoral {
			eceMetric = "ece_pos_promoral"
		}
		pub := map[[2]string]*refRow{}
		for i := range m.rows {
			r := &m.rows[i]
			if r.dataset == d.Dataset {
				pub[[2]string{r.model, r.strategy}] = r
			}
		}
		used := map[*refRow]bool{}
		var ds []*refLine
		for _, c := range groupCells(rs, map[string]*pipeline.Task{d.Task: m.tasks[d.Task]}) {
			figs, err := cls.cellFigures(rs, c, d.Subset)
			if err != nil {
				return nil, err
			}
			l := &refLine{dataset: d.Dataset, model: c.Model, strategy: c.Strategy, ours: figs, eceMetric: eceMetric}
			if p := pub[[2]string{mapName(m.models, c.Model), mapName(m.strategies, c.Strategy)}]; p != nil {
				l.pub = p
				used[p] = true
			}
			ds = append(ds, l)
		}
		var missing []string
		for i := range m.rows {
			if r := &m.rows[i]; r.dataset == d.Dataset && !used[r] {
				missing = append(missing, r.model+"/"+r.strategy)
			}
		}
		sort.SliceStable(ds, func(i, j int) bool {
			if ds[i].model != ds[j].model {
				return ds[i].model < ds[j].model
			}
			return ds[i].strategy < ds[j].strategy
		})
		m.writeText(&text, d, cls.describe(rs), eceMetric, ds, missing)
		lines = append(lines, ds...)
	}
	out := &pipeline.MetricOutput{Text: strings.TrimRight(text.String(), "\n")}
	t := pipeline.CSVTable{Name: m.table, Header: []string{
		"dataset", "model", "strategy", "n", "n_published",
		"accuracy", "accuracy_published", "accuracy_diff", "f1", "f1_published", "f1_diff",
		"ece", "ece_published", "ece_diff", "brier", "brier_published", "brier_diff", "match"}}
	for _, l := range lines {
		p := l.pubOrNaN()
		acc, f1, ece, br := l.val("accuracy"), l.val("f1"), l.val(l.eceMetric), l.val("brier")
		npub := ""
		if l.pub != nil && l.pub.n >= 0 {
			npub = fmtI(l.pub.n)
		}
		match := ""
		if l.pub != nil {
			match = strconv.FormatBool(m.matches(l))
		}
		t.Rows = append(t.Rows, []string{l.dataset, l.model, l.strategy, fmtI(l.n()), npub,
			fmtF(acc), fmtF(p.acc), fmtF(acc - p.acc), fmtF(f1), fmtF(p.f1), fmtF(f1 - p.f1),
			fmtF(ece), fmtF(p.ece), fmtF(ece - p.ece), fmtF(br), fmtF(p.brier), fmtF(br - p.brier), match})
	}
	out.Tables = []pipeline.CSVTable{t}
	return out, nil
}

func (l *refLine) pubOrNaN() refRow {
	if l.pub != nil {
		return *l.pub
	}
	nan := math.NaN()
	return refRow{n: -1, acc: nan, f1: nan, ece: nan, brier: nan}
}

// matches: accuracy and F1 both within the tolerance (published figures
// are rounded to 4 decimals, so compare at that precision).
func (m *reference) matches(l *refLine) bool {
	if l.pub == nil {
		return false
	}
	within := func(ours, pub float64) bool {
		return !math.IsNaN(ours) && !math.IsNaN(pub) && math.Abs(math.Round(ours*1e4)/1e4-pub) <= m.tol+1e-9
	}
	return within(l.val("accuracy"), l.pub.acc) && within(l.val("f1"), l.pub.f1)
}

func (m *reference) writeText(w *strings.Builder, d RefDataset, how, eceMetric string, lines []*refLine, missing []string) {
	target := d.Task
	if d.Subset != "" {
		target += " (" + d.Subset + ")"
	}
	fmt.Fprintf(w, "Published figures (%s, dataset %s) vs this run (task %s; %s; ECE = %s):\n", m.file, d.Dataset, target, how, eceMetric)
	f := func(x float64) string {
		if math.IsNaN(x) {
			return "     -"
		}
		return fmt.Sprintf("%6.4f", x)
	}
	df := func(x float64) string {
		if math.IsNaN(x) {
			return "      -"
		}
		return fmt.Sprintf("%+7.4f", math.Round(x*1e4)/1e4+0) // +0: no "-0.0000"
	}
	fmt.Fprintf(w, "  %-16s %-20s %11s | %-21s | %-21s | %-21s | %-21s |\n", "model", "strategy", "n ours/pub",
		"acc ours pub diff", "F1 ours pub diff", "ECE ours pub diff", "Brier ours pub diff")
	matched, compared := 0, 0
	var off []string
	for _, l := range lines {
		p := l.pubOrNaN()
		npub := "-"
		if p.n >= 0 {
			npub = strconv.Itoa(p.n)
		}
		mark := ""
		if l.pub != nil {
			compared++
			if m.matches(l) {
				matched++
			} else {
				mark = "  <- differs"
				off = append(off, l.model+"/"+l.strategy)
			}
		} else {
			mark = "  (no published run)"
		}
		cols := func(ours, pub float64) string { return f(ours) + " " + f(pub) + " " + df(ours-pub) }
		fmt.Fprintf(w, "  %-16s %-20s %5d/%-5s | %s | %s | %s | %s |%s\n", l.model, l.strategy, l.n(), npub,
			cols(l.val("accuracy"), p.acc), cols(l.val("f1"), p.f1), cols(l.val(eceMetric), p.ece), cols(l.val("brier"), p.brier), mark)
	}
	fmt.Fprintf(w, "  %d of %d runs match the published accuracy and F1 within %g", matched, compared, m.tol)
	if len(off) > 0 {
		fmt.Fprintf(w, " (differ: %s)", strings.Join(off, ", "))
	}
	w.WriteString(".\n")
	if len(missing) > 0 {
		fmt.Fprintf(w, "  Published runs not in this run: %s.\n", strings.Join(missing, ", "))
	}
}
