package metrics

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/promoral/promoral/internal/wrap"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/stats"
	"github.com/promoral/promoral/pipeline/yamlstrict"
	"github.com/promoral/promoral/runfolder/manifest"
)

func init() {
	spec.RegisterMetric(spec.MetricKind{
		Name: "reference",
		Doc: "Compares the run's figures with published ones from a CSV: classification figures (n, accuracy, F1, ECE, Brier per model x strategy; " +
			"on a multi-class task F1 is weighted_f1 and ECE the top-label ece) from a classification block, and safety figures (ASR and RTA with their " +
			"n and denominators) from a safety block (reference_comparison.csv, and a table printed after the run).",
		New: func() spec.MetricConfig { return &ReferenceConfig{} },
		Rows: spec.RowsDoc{
			Lead: "Published figures beside the run's, as a table rather than rows of `metrics.parquet` " +
				"(`reference_comparison.csv`, `<block>_reference_comparison.csv` for a named block): `accuracy`, " +
				"`f1` (`weighted_f1` on a multi-class task), `ece` (the block's table ECE; top-label on " +
				"multi-class) and `brier` from a classification block, `asr` and `rta` from a safety block with " +
				"both denominators (`n_harmful`, `n_benign`) stated; each with its `_published` value and `_diff`, " +
				"and `match` when accuracy and F1 (or ASR and RTA) are within `tolerance:`. The table is also " +
				"printed after the run.",
		},
	})
}

// ReferenceConfig is the YAML of a reference metric block.
type ReferenceConfig struct {
	spec.MetricBase `yaml:",inline"`
	File            string `yaml:"file" required:"true" doc:"CSV of published figures, relative to the run file, with columns dataset, model, strategy and any of n_eval, accuracy, f1, ece, brier, asr, rta, n_harmful, n_benign (e.g. data/promoral_reference/promoral_results_summary.csv)."`
	// Datasets joins the CSV's dataset column to the run's tasks.
	Datasets []RefDataset `yaml:"datasets" required:"true" doc:"Which published dataset each task (or task subset) corresponds to."`
	From     string       `yaml:"from,omitempty" doc:"Name of the block whose figures are compared (a classification block: its unparsed policy, confidence meaning and ece_promoral; a safety block for ASR and RTA); default: the first block of the right kind scoring the task. A dataset's own from: wins."`
	// Models and Strategies rename the run's names to the published ones.
	Models     map[string]string `yaml:"models,omitempty" doc:"Run model name -> published model name, where they differ."`
	Strategies map[string]string `yaml:"strategies,omitempty" doc:"Run strategy name -> published strategy name, where they differ."`
	Tolerance  float64           `yaml:"tolerance,omitempty" min:"0" default:"0.005" doc:"A run matches when accuracy and F1 (or ASR and RTA) are both within this of the published figures (default 0.005)."`
	// PublishedDenominator states how the published rates were counted.
	PublishedDenominator string `yaml:"published_denominator,omitempty" doc:"What the published ASR and RTA divide by, printed next to ours (default: all harmful (benign) prompts of the run, n_harmful (n_benign), a prompt without a verdict counting as neither)."`
}

// RefDataset maps one published dataset to a task of the run.
type RefDataset struct {
	Dataset string `yaml:"dataset" required:"true" doc:"Value of the CSV's dataset column, e.g. ETHICS."`
	Task    string `yaml:"task" required:"true" doc:"Task of the run scored against it."`
	Subset  string `yaml:"subset,omitempty" doc:"A subset of the task (its subsets:) instead of all its items, e.g. original for ETHICS-Contrast/originals."`
	From    string `yaml:"from,omitempty" doc:"Block whose figures are compared for this dataset (default: the block's from, else the first fitting block)."`
}

// refRow is one published run.
type refRow struct {
	dataset, model, strategy string
	n, nHarmful, nBenign     int // -1 when not given
	acc, f1, ece, brier      float64
	asr, rta                 float64
}

// safetyFigures: the published row has ASR or RTA and no accuracy.
func (r *refRow) safetyFigures() bool {
	return math.IsNaN(r.acc) && (!math.IsNaN(r.asr) || !math.IsNaN(r.rta))
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
	pubDenom   string
	tasks      map[string]*spec.Task
}

// Build reads the CSV and checks the joins.
func (c *ReferenceConfig) Build(b *spec.MetricBuild) spec.Metric {
	m := &reference{table: tableName(&c.MetricBase, "reference_comparison"), datasets: c.Datasets, from: c.From, models: c.Models, strategies: c.Strategies,
		tol: c.Tolerance, pubDenom: c.PublishedDenominator, tasks: map[string]*spec.Task{}}
	if m.pubDenom == "" {
		m.pubDenom = "of all harmful (benign) prompts, n_harmful (n_benign); no verdict counts as neither"
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
	var blocks []string
	for _, mn := range b.Study.Run.Metrics {
		switch mn.Config.(type) {
		case *ClassificationConfig, *SafetyConfig:
			blocks = append(blocks, mn.Config.Common().BlockName())
		}
	}
	blockNamed := func(name string) bool { return slices.Contains(blocks, name) }
	const fromHint = "name a classification or safety block of this run"
	if c.From != "" && !blockNamed(c.From) {
		b.Errf("from", yamlstrict.NameHint(c.From, blocks, fromHint), "no classification or safety block %q", c.From)
	}
	for i, d := range c.Datasets {
		t := b.Study.Task(d.Task)
		if t == nil {
			b.Errf(fmt.Sprintf("datasets[%d].task", i), yamlstrict.NameHint(d.Task, b.Study.TaskNames(), "name a task declared under tasks"), "no task %q", d.Task)
			continue
		}
		if d.Subset != "" {
			if _, ok := t.Spec.Subsets[d.Subset]; !ok {
				b.Errf(fmt.Sprintf("datasets[%d].subset", i), yamlstrict.NameHint(d.Subset, subsetNames(map[string]*spec.Task{t.Name: t}), "name a subset from the task's subsets:"), "task %s has no subset %q", d.Task, d.Subset)
			}
		}
		if err == nil && !have[d.Dataset] {
			b.Errf(fmt.Sprintf("datasets[%d].dataset", i), "use a value of the CSV's dataset column", "%s has no rows of dataset %q", c.File, d.Dataset)
		}
		if d.From != "" && !blockNamed(d.From) {
			b.Errf(fmt.Sprintf("datasets[%d].from", i), yamlstrict.NameHint(d.From, blocks, fromHint), "no classification or safety block %q", d.From)
		}
		m.tasks[t.Name] = t
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
	whole := func(rec []string, name string, line int) (int, error) {
		s := get(rec, name)
		if s == "" {
			return -1, nil
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			return 0, fmt.Errorf("%s:%d: %s %q is not a whole number", path, line, name, s)
		}
		return n, nil
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
		row := refRow{dataset: get(rec, "dataset"), model: get(rec, "model"), strategy: get(rec, "strategy")}
		for _, f := range []struct {
			name string
			dst  *int
		}{{"n_eval", &row.n}, {"n_harmful", &row.nHarmful}, {"n_benign", &row.nBenign}} {
			if *f.dst, err = whole(rec, f.name, line); err != nil {
				return nil, err
			}
		}
		for _, f := range []struct {
			name string
			dst  *float64
		}{{"accuracy", &row.acc}, {"f1", &row.f1}, {"ece", &row.ece}, {"brier", &row.brier}, {"asr", &row.asr}, {"rta", &row.rta}} {
			if *f.dst, err = num(rec, f.name, line); err != nil {
				return nil, err
			}
		}
		out = append(out, row)
	}
	return out, nil
}

// figure is one published figure kind and the metric of ours it is
// compared with.
type figure struct {
	name, ours string
	pub        func(*refRow) float64
}

// refLine is one joined run.
type refLine struct {
	dataset, model, strategy string
	safety                   bool
	// incomplete: the compared block gives this cell no figure (errored
	// cases under errors: incomplete), so neither is compared here.
	incomplete bool
	ours       map[string]spec.MetricRow
	pub        *refRow
	figs       []figure
}

func (l *refLine) val(metric string) float64 {
	if l.incomplete {
		return math.NaN()
	}
	if r, ok := l.ours[metric]; ok {
		return r.Value
	}
	return math.NaN()
}

func (l *refLine) nOf(metric string) int {
	if l.incomplete {
		return 0
	}
	if r, ok := l.ours[metric]; ok {
		return r.N
	}
	return 0
}

// blockFor finds the block to compare for a dataset: a classification
// block for classification figures, a safety block for ASR and RTA.
// BlockDraw tells the report, in place of policies of its own, whose
// figures the block compares.
func (m *reference) BlockDraw() manifest.BlockDraw {
	from := m.from
	if from == "" {
		from = "the first fitting block"
	}
	return manifest.BlockDraw{Summary: fmt.Sprintf("compares the figures of %s, counted as that block counts them, with published ones.", from)}
}

func (m *reference) blockFor(rs *spec.ResultSet, d RefDataset, safetyFigs bool) (spec.Metric, error) {
	from := d.From
	if from == "" {
		from = m.from
	}
	for i, mt := range rs.Study.Metrics {
		name := ""
		if i < len(rs.Study.Blocks) {
			name = rs.Study.Blocks[i].BlockName()
		}
		switch x := mt.(type) {
		case *classification:
			if name == "" {
				name = x.name
			}
			if !safetyFigs && x.tasks[d.Task] != nil && (from == "" || name == from) {
				return x, nil
			}
		case *safety:
			if safetyFigs && x.tasks[d.Task] != nil && (from == "" || name == from) {
				return x, nil
			}
		}
	}
	what := "classification"
	if safetyFigs {
		what = "safety"
	}
	if from != "" {
		return nil, fmt.Errorf("reference: no %s block %q scores task %s", what, from, d.Task)
	}
	return nil, fmt.Errorf("reference: no %s block scores task %s; add one (its settings say how to score)", what, d.Task)
}

func mapName(m map[string]string, s string) string {
	if v, ok := m[s]; ok {
		return v
	}
	return s
}

// Compute joins the run's figures with the published ones.
func (m *reference) Compute(rs *spec.ResultSet) (*spec.MetricOutput, error) {
	var lines []*refLine
	var text strings.Builder
	for _, d := range m.datasets {
		pub := map[[2]string]*refRow{}
		safetyFigs := false
		for i := range m.rows {
			r := &m.rows[i]
			if r.dataset == d.Dataset {
				pub[[2]string{r.model, r.strategy}] = r
				safetyFigs = safetyFigs || r.safetyFigures()
			}
		}
		blk, err := m.blockFor(rs, d, safetyFigs)
		if err != nil {
			return nil, err
		}
		task := map[string]*spec.Task{d.Task: m.tasks[d.Task]}
		var how string
		var figs []figure
		var cells []*cell
		var figures func(c *cell) (map[string]spec.MetricRow, error)
		var errs string
		switch b := blk.(type) {
		case *classification:
			t := m.tasks[d.Task]
			f1, ece := "f1", "ece"
			if isBinary(t) {
				ece = "ece_pos"
				if b.promoral {
					ece = "ece_pos_promoral"
				}
			} else {
				// Multi-class: the published F1 is support-weighted and the
				// published ECE top-label (confidence in the chosen answer).
				f1 = "weighted_f1"
			}
			figs = []figure{{"accuracy", "accuracy", func(r *refRow) float64 { return r.acc }}, {"f1", f1, func(r *refRow) float64 { return r.f1 }},
				{"ece", ece, func(r *refRow) float64 { return r.ece }}, {"brier", "brier", func(r *refRow) float64 { return r.brier }}}
			how = b.describe(rs) + "; F1 = " + f1 + "; ECE = " + ece + " (" + fmt.Sprintf("%d %s", b.bins, stats.BinConvention) + ")"
			cells, errs = groupCells(rs, task, b.errs), b.errs
			figures = func(c *cell) (map[string]spec.MetricRow, error) { return b.cellFigures(rs, c, d.Subset) }
		case *safety:
			policy := policyOf(b.policy, rs)
			figs = []figure{{"asr", "asr", func(r *refRow) float64 { return r.asr }}, {"rta", "rta", func(r *refRow) float64 { return r.rta }}}
			how = "ASR ours: share judged COMPLIANCE " + denominators(b.kinds.Harmful, policy) + "; RTA ours: share judged REFUSAL " +
				denominators(b.kinds.Benign, policy) + "; published: " + m.pubDenom
			cells, errs = groupCells(rs, task, b.errs), b.errs
			figures = func(c *cell) (map[string]spec.MetricRow, error) { return b.cellFigures(rs, c, d.Subset) }
		}
		used := map[*refRow]bool{}
		var ds []*refLine
		for _, c := range cells {
			ours, err := figures(c)
			if err != nil {
				return nil, err
			}
			l := &refLine{dataset: d.Dataset, model: c.Model, strategy: c.Strategy, safety: safetyFigs, ours: ours, figs: figs, incomplete: incomplete(c, errs)}
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
		m.writeText(&text, d, how, ds, missing)
		lines = append(lines, ds...)
	}
	out := &spec.MetricOutput{Text: strings.TrimRight(text.String(), "\n")}
	t := spec.CSVTable{Name: m.table, Header: []string{
		"dataset", "model", "strategy", "n", "n_published",
		"accuracy", "accuracy_published", "accuracy_diff", "f1", "f1_published", "f1_diff",
		"ece", "ece_published", "ece_diff", "brier", "brier_published", "brier_diff",
		"n_harmful", "n_harmful_published", "asr", "asr_published", "asr_diff",
		"n_benign", "n_benign_published", "rta", "rta_published", "rta_diff", "compared_as", "match"}}
	for _, l := range lines {
		p := l.pubOrNaN()
		ours := map[string]float64{}
		for _, f := range l.figs {
			ours[f.name] = l.val(f.ours)
		}
		get := func(name string) float64 {
			if v, ok := ours[name]; ok {
				return v
			}
			return math.NaN()
		}
		cnt := func(n int, ok bool) string {
			if !ok {
				return ""
			}
			return fmtI(n)
		}
		pn := func(n int) string {
			if l.pub == nil || n < 0 {
				return ""
			}
			return fmtI(n)
		}
		match := ""
		if l.pub != nil && !l.incomplete {
			match = strconv.FormatBool(m.matches(l))
		}
		if l.incomplete {
			match = spec.StatusIncomplete
		}
		var as []string
		for _, f := range l.figs {
			if f.name != f.ours {
				as = append(as, f.name+"="+f.ours)
			}
		}
		acc, f1, ece, br, asr, rta := get("accuracy"), get("f1"), get("ece"), get("brier"), get("asr"), get("rta")
		t.Rows = append(t.Rows, []string{l.dataset, l.model, l.strategy, cnt(l.nOf("accuracy"), !l.safety), pn(p.n),
			fmtF(acc), fmtF(p.acc), fmtF(acc - p.acc), fmtF(f1), fmtF(p.f1), fmtF(f1 - p.f1),
			fmtF(ece), fmtF(p.ece), fmtF(ece - p.ece), fmtF(br), fmtF(p.brier), fmtF(br - p.brier),
			cnt(l.nOf("asr"), l.safety), pn(p.nHarmful), fmtF(asr), fmtF(p.asr), fmtF(asr - p.asr),
			cnt(l.nOf("rta"), l.safety), pn(p.nBenign), fmtF(rta), fmtF(p.rta), fmtF(rta - p.rta),
			strings.Join(as, " "), match})
	}
	out.Tables = []spec.CSVTable{t}
	return out, nil
}

func (l *refLine) pubOrNaN() refRow {
	if l.pub != nil {
		return *l.pub
	}
	nan := math.NaN()
	return refRow{n: -1, nHarmful: -1, nBenign: -1, acc: nan, f1: nan, ece: nan, brier: nan, asr: nan, rta: nan}
}

// matches: the two headline figures (accuracy and F1, or ASR and RTA)
// within the tolerance (published figures are rounded to 4 decimals, so
// compare at that precision).
func (m *reference) matches(l *refLine) bool {
	if l.pub == nil {
		return false
	}
	within := func(ours, pub float64) bool {
		return !math.IsNaN(ours) && !math.IsNaN(pub) && math.Abs(math.Round(ours*1e4)/1e4-pub) <= m.tol+1e-9
	}
	a, b := l.figs[0], l.figs[1]
	return within(l.val(a.ours), a.pub(l.pub)) && within(l.val(b.ours), b.pub(l.pub))
}

func (m *reference) writeText(w *strings.Builder, d RefDataset, how string, lines []*refLine, missing []string) {
	target := d.Task
	if d.Subset != "" {
		target += " (" + d.Subset + ")"
	}
	// At most 80 columns for the usual names: the policy on lines of its
	// own, one line per run with this run's figures and the largest
	// difference from the published ones, and the published figures on a
	// second line only where they differ.
	fmt.Fprintf(w, "This run (task %s) vs the published figures\n  (dataset %s of %s):\n", target, d.Dataset, m.file)
	for _, l := range wrap.Clauses(how, 76) {
		fmt.Fprintf(w, "  %s\n", l)
	}
	f := func(x float64) string {
		if math.IsNaN(x) {
			return "     -"
		}
		return fmt.Sprintf("%6.4f", x)
	}
	if len(lines) == 0 {
		fmt.Fprintf(w, "  (this run scored no model x strategy of task %s)\n", d.Task)
		return
	}
	figs := lines[0].figs
	counted := func(name string) bool { return name == "asr" || name == "rta" || name == "accuracy" }
	pubN := func(l *refLine, name string) int {
		p := l.pubOrNaN()
		switch name {
		case "accuracy":
			return p.n
		case "asr":
			return p.nHarmful
		case "rta":
			return p.nBenign
		}
		return -1
	}
	// n is this run's count, "185/193" where the published one differs.
	nText := func(l *refLine, name string) string {
		n := strconv.Itoa(l.nOf(name))
		if pn := pubN(l, name); l.pub != nil && !l.incomplete && pn >= 0 && strconv.Itoa(pn) != n {
			n += "/" + strconv.Itoa(pn)
		}
		return n
	}
	mw, sw, nw := len("  ^ differs"), len("published"), 4
	for _, l := range lines {
		mw, sw = max(mw, len(l.model)), max(sw, len(l.strategy))
		for _, fg := range l.figs {
			if counted(fg.name) {
				nw = max(nw, len(nText(l, fg.name)))
			}
		}
	}
	fmt.Fprintf(w, "  %-*s %-*s", mw, "model", sw, "strategy")
	for _, fg := range figs {
		if counted(fg.name) {
			fmt.Fprintf(w, " %*s", nw, "n")
		}
		fmt.Fprintf(w, " %6s", map[string]string{"accuracy": "acc", "f1": "F1", "ece": "ECE", "brier": "Brier", "asr": "ASR", "rta": "RTA"}[fg.name])
	}
	fmt.Fprintf(w, " %6s\n", "|diff|")
	matched, compared := 0, 0
	var off []string
	for _, l := range lines {
		p := l.pubOrNaN()
		// A note goes on a line of its own below the run's, as does the
		// published line of a run that differs.
		note := ""
		differs := false
		if l.incomplete {
			note = "^ incomplete: errored cases (apply again to retry them)"
		} else if l.pub != nil {
			compared++
			if m.matches(l) {
				matched++
			} else {
				differs = true
				off = append(off, l.model+"/"+l.strategy)
			}
		} else {
			note = "^ no published run"
		}
		fmt.Fprintf(w, "  %-*s %-*s", mw, l.model, sw, l.strategy)
		worst := math.NaN()
		for _, fg := range l.figs {
			if counted(fg.name) {
				fmt.Fprintf(w, " %*s", nw, nText(l, fg.ours))
			}
			ours, pub := l.val(fg.ours), fg.pub(&p)
			fmt.Fprintf(w, " %s", f(ours))
			if d := math.Abs(math.Round(ours*1e4)/1e4 - pub); !math.IsNaN(d) && !(d <= worst) {
				worst = d
			}
		}
		if math.IsNaN(worst) {
			fmt.Fprintf(w, " %6s", "-")
		} else {
			fmt.Fprintf(w, " %6.4f", worst)
		}
		w.WriteString("\n")
		if note != "" {
			fmt.Fprintf(w, "    %s\n", note)
		}
		if differs {
			fmt.Fprintf(w, "    %-*s %-*s", mw-2, "^ differs", sw, "published")
			for _, fg := range l.figs {
				if counted(fg.name) {
					if pn := pubN(l, fg.name); pn >= 0 {
						fmt.Fprintf(w, " %*d", nw, pn)
					} else {
						fmt.Fprintf(w, " %*s", nw, "-")
					}
				}
				fmt.Fprintf(w, " %s", f(fg.pub(&p)))
			}
			w.WriteString("\n")
		}
	}
	fmt.Fprintf(w, "  %d of %d runs match the published %s and %s within %g.\n", matched, compared, headline(figs[0].name), headline(figs[1].name), m.tol)
	if len(off) > 0 {
		for i, l := range wrap.Words("Differ: "+strings.Join(off, ", ")+".", 76) {
			fmt.Fprintf(w, "%s%s\n", map[bool]string{true: "  ", false: "    "}[i == 0], l)
		}
	}
	w.WriteString("  n: this run's count, then the published one where it differs; |diff|: the\n  largest difference from a published figure on the line, at 4 decimals.\n")
	if len(missing) > 0 {
		for i, l := range wrap.Words("Published runs not in this run: "+strings.Join(missing, ", ")+".", 76) {
			fmt.Fprintf(w, "%s%s\n", map[bool]string{true: "  ", false: "    "}[i == 0], l)
		}
	}
}

func headline(name string) string {
	switch name {
	case "f1":
		return "F1"
	case "asr", "rta":
		return strings.ToUpper(name)
	}
	return name
}
