package metrics

import (
	"fmt"
	"math"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/stats"
	"github.com/promoral/promoral/runfolder/manifest"
)

func init() {
	spec.RegisterMetric(spec.MetricKind{
		Name: "classification",
		Doc: "Accuracy; precision, recall and f1 of the positive class (answer.positive) where the task declares one; weighted_precision, weighted_recall, " +
			"weighted_f1 (support-weighted) and macro_f1 on multi-class tasks; unparsed_rate; calibration (brier and ece_pos of the positive class on binary tasks with answer.positive, a top-label brier on the others, ece top-label), every ECE in " +
			"ten equal-width bins (lo, hi] (the first [0, hi]) unless bins: says otherwise, with the bins in reliability.csv; per task x model x strategy x factors, " +
			"per task subset, and optionally on a binarized label space; bootstrap 95% intervals on the headline figures.",
		New: func() spec.MetricConfig { return &ClassificationConfig{} },
		Rows: spec.RowsDoc{
			Rows: []spec.RowDoc{
				{Names: []string{"accuracy"}, Def: "share of answers whose label equals gold",
					N: "answers counted under `unparsed:` (all cases under `wrong`, the parsed ones under `exclude`)"},
				{Names: []string{"precision", "recall", "f1"}, Def: "of the positive class (`answer.positive`, named in `convention`)", N: "as accuracy"},
				{Names: []string{"weighted_precision", "weighted_recall", "weighted_f1", "macro_f1"},
					Def: "multi-class tasks: support-weighted and unweighted means over the labels", N: "as accuracy"},
				{Names: []string{"unparsed_rate"}, Def: "share of cases from which no label was read (no label and confidence, with `require_confidence`)",
					N: "every case of the cell"},
				{Names: []string{"brier"}, Def: "binary tasks with `answer.positive`: mean squared difference of P(positive) and the gold label. " +
					"Other tasks (multi-class, or two labels without a positive class): the top-label Brier, mean((confidence − correct)²), " +
					"the confidence in the chosen answer against 1 if it is right and 0 if not; `convention` says which. " +
					"On a binary task the two agree answer for answer when the confidence is in the chosen answer",
					N: "answers with a confidence (top-label: answers with a label and a confidence)"},
				{Names: []string{"ece_pos"}, Def: "binary tasks: positive-class ECE, P(positive) against the share positive", N: "answers with a confidence"},
				{Names: []string{"ece_pos_promoral"}, Def: "`ece_pos` binned as the ProMoral study's code did (`ece_promoral: true`)", N: "answers with a confidence"},
				{Names: []string{"ece"}, Def: "top-label ECE: confidence in the chosen answer against accuracy", N: "answers with a confidence"},
			},
			Note: "Rows exist per subset (`all`, each task subset, `binarized` with `binarize:`); the bins of " +
				"every ECE are in `<block>_reliability.csv`.",
		},
	})
}

// ClassificationConfig is the YAML of a classification metric block.
type ClassificationConfig struct {
	spec.MetricBase `yaml:",inline"`
	Unparsed        string `yaml:"unparsed,omitempty" enum:"wrong,exclude" inherit:"settings.unparsed" doc:"How unparsed answers count: wrong (kept in n and counted wrong) or exclude (left out of n, the ProMoral study's policy); default: the run's settings.unparsed."`
	// Confidence says what a stated confidence means.
	Confidence string `yaml:"confidence,omitempty" enum:"chosen,positive" default:"chosen" doc:"What the stated confidence is: chosen (default; confidence that the chosen answer is right, as the confidence study asks) or positive (probability of the task's positive class, as the ProMoral ETHICS prompt asks: P(unacceptable)). Binary tasks only for positive."`
	// RequireConfidence treats an answer without a confidence as unparsed.
	RequireConfidence bool      `yaml:"require_confidence,omitempty" doc:"Count an answer with no parseable confidence as unparsed for accuracy/P/R/F1 and unparsed_rate too (ProMoral scored only replies with both a label and a confidence)."`
	Bins              int       `yaml:"bins,omitempty" min:"1" default:"10" doc:"Equal-width calibration bins (lo, hi] for ece_pos and ece (default 10)."`
	ECEPromoral       bool      `yaml:"ece_promoral,omitempty" doc:"Also report ece_pos_promoral: ece_pos with the binning of the ProMoral study's code (the same bins (lo, hi], but a stated 0.0 falls in no bin while it still counts in n), to compare with its published ECE."`
	Subsets           []string  `yaml:"subsets,omitempty" doc:"Task subsets to report separately (default: every subset the task declares)."`
	Binarize          *Binarize `yaml:"binarize,omitempty" doc:"Also score a two-class version of a multi-class task (subset: binarized), e.g. Scruples AUTHOR/EVERYBODY -> WRONG, OTHER/NOBODY -> RIGHT."`
	Bootstrap         *int      `yaml:"bootstrap,omitempty" min:"0" default:"1000" doc:"Bootstrap replicates for the 95% intervals (items resampled, seeded with settings.seed); default 1000, 0 turns intervals off."`
}

// Binarize maps a multi-class label space onto two classes.
type Binarize struct {
	Labels   map[string]string `yaml:"labels" required:"true" doc:"Task label -> binary label, e.g. AUTHOR: WRONG. Items whose gold label is not listed are left out of the binarized scores; an unlisted predicted label (e.g. INFO) counts as a wrong, negative answer."`
	Positive string            `yaml:"positive" required:"true" doc:"The binary label that is the positive class for precision, recall and F1."`
}

const (
	confChosen   = "chosen"
	confPositive = "positive"
)

type classification struct {
	name     string
	table    string
	errs     string
	tasks    map[string]*spec.Task
	policy   string
	conf     string
	reqConf  bool
	bins     int
	promoral bool
	reps     int
	subsets  *subsets
	binarize *Binarize
}

func isBinary(t *spec.Task) bool { return len(t.Labels) == 2 && t.Positive != "" }

// Build checks the fields against the study's tasks.
func (c *ClassificationConfig) Build(b *spec.MetricBuild) spec.Metric {
	m := &classification{name: c.MetricBase.Name, table: c.MetricBase.BlockName() + "_reliability", errs: c.MetricBase.ErrorsPolicy(),
		policy: c.Unparsed, conf: c.Confidence, reqConf: c.RequireConfidence, bins: c.Bins,
		promoral: c.ECEPromoral, reps: *c.Bootstrap, binarize: c.Binarize}
	if m.name == "" {
		m.name = c.MetricBase.Kind
	}
	m.tasks = selectTasks(b, func(t *spec.Task) string {
		switch {
		case len(t.Labels) == 0:
			return "it declares no answer labels"
		case t.Spec.Gold == "":
			return "it has no gold field (use the choice or safety metric)"
		case m.conf == confPositive && !isBinary(t):
			return "confidence: positive needs a binary task with answer.positive"
		}
		return ""
	})
	m.subsets = compileSubsets(b, m.tasks, c.Subsets)
	if bz := c.Binarize; bz != nil {
		if len(bz.Labels) == 0 {
			b.Errf("binarize.labels", "map each task label to a binary label", "binarize needs labels")
		}
		classes := map[string]bool{}
		for from, to := range bz.Labels {
			classes[to] = true
			known := false
			for _, t := range m.tasks {
				for _, l := range t.Labels {
					known = known || l == from
				}
			}
			if !known {
				b.Errf("binarize.labels."+from, "use a label value of the scored task", "%q is not a label of any scored task", from)
			}
		}
		if !classes[bz.Positive] {
			b.Errf("binarize.positive", "use one of the binary labels", "positive %q is not a binary label", bz.Positive)
		}
		if len(classes) != 2 {
			b.Errf("binarize.labels", "map onto exactly two labels", "binarize maps onto %d labels", len(classes))
		}
	}
	return m
}

// clsItem is one scored answer.
type clsItem struct {
	row        *spec.ResultRow
	gold, pred string
	labeled    bool    // the label parsed into the answer space
	parsed     bool    // scored as parsed (labeled, and a confidence when required)
	conf       float64 // stated confidence, NaN when none
	errored    bool    // an errored case counted as unparsed (errors: unparsed)
}

func (m *classification) items(rows []*spec.ResultRow) []clsItem {
	out := make([]clsItem, 0, len(rows))
	for _, r := range rows {
		g := r.Item.Gold
		if g == "" {
			continue // no gold: nothing to score against
		}
		it := clsItem{row: r, gold: g, labeled: r.Parsed(), conf: r.Conf, errored: r.Errored()}
		if it.labeled {
			it.pred = r.Label()
		}
		it.parsed = it.labeled && (!m.reqConf || !math.IsNaN(it.conf))
		out = append(out, it)
	}
	return out
}

// UnparsedOverride is the block's unparsed: ("" = the run's).
func (m *classification) UnparsedOverride() string { return m.policy }

// BlockDraw tells the report what a confidence means here and how the
// ECE bins.
func (m *classification) BlockDraw() manifest.BlockDraw {
	d := manifest.BlockDraw{Bins: m.bins, Confidence: m.conf}
	if m.conf == confPositive {
		d.Counting = append(d.Counting, "a stated confidence is the probability of the positive class")
	} else {
		d.Counting = append(d.Counting, "a stated confidence is the confidence in the chosen answer")
	}
	if m.reqConf {
		d.Counting = append(d.Counting, "a reply counts as parsed only with a label and a confidence")
	}
	ece := eceBinsPhrase(m.bins)
	if m.promoral {
		ece += "; ece_pos_promoral as ProMoral's code bins (a stated 0 in no bin)"
	}
	d.Counting = append(d.Counting, ece)
	return d
}

// eceBinsPhrase says how an ECE bins, for the report.
func eceBinsPhrase(bins int) string {
	return fmt.Sprintf("ECE in %d equal-width bins (lo, hi], the first [0, hi]", bins)
}

// Compute scores every cell, subset and the binarized space, and writes
// the bins of every ECE it reports (reliability.csv), so a figure draws the
// very bins its ECE was computed from.
func (m *classification) Compute(rs *spec.ResultSet) (*spec.MetricOutput, error) {
	out := &spec.MetricOutput{}
	policy := policyOf(m.policy, rs)
	seed := seedOf(rs)
	// With repeats, intervals resample items, each with its samples.
	repeated := rs.Study != nil && rs.Study.MaxRepeats() >= 2
	m.subsets.reset(rs)
	rel := spec.CSVTable{Name: m.table, Header: idHeader(rs, "metric", "bin_lo_excl", "bin_hi_incl", "n", "mean_confidence", "observed", "observed_is", "bins")}
	// The cells and subsets are scored side by side (the subsets are cut
	// first: their cache is not shared), their rows kept in order.
	type job struct {
		c         *cell
		subset    string
		binarized bool
		rows      []spec.MetricRow
		rel       spec.CSVTable
	}
	var jobs []*job
	for _, c := range groupCells(rs, m.tasks, m.errs) {
		jobs = append(jobs, &job{c: c, subset: subsetAll})
		for _, name := range m.subsets.names(c.Task) {
			sc, err := m.subsets.sub(c, name)
			if err != nil {
				return nil, err
			}
			jobs = append(jobs, &job{c: sc, subset: name})
		}
		if m.binarize != nil {
			jobs = append(jobs, &job{c: c, binarized: true})
		}
	}
	inParallel(len(jobs), func(i int) {
		j := jobs[i]
		switch {
		case j.binarized:
			j.rows = m.scoreBinarized(j.c, m.items(j.c.Rows), policy, seed, repeated)
		case j.subset == subsetAll:
			j.rows = m.score(j.c, subsetAll, policy, m.reps, seed, repeated, &j.rel)
		default:
			j.rows = m.score(j.c, j.subset, policy, m.reps, seed, repeated, nil)
		}
	})
	for _, j := range jobs {
		out.Rows = append(out.Rows, j.rows...)
		rel.Rows = append(rel.Rows, j.rel.Rows...)
	}
	if len(rel.Rows) > 0 {
		out.Tables = append(out.Tables, rel)
	}
	return out, nil
}

// eceConvention names what an ECE compares and how it bins.
func eceConvention(what string, bins int) string {
	return fmt.Sprintf("%s; %d %s", what, bins, stats.BinConvention)
}

// score is the rows of one cell (or subset of it). rel, when set, gets the
// bins of every ECE row. It reads the cell's rows once, in order: answers
// are counted by kind (gold, answer, parsed, and the two confidences each
// calibration figure reads), which is all the counts and the intervals
// need, and the calibration sums are made in item order, as over a list.
func (m *classification) score(c *cell, subset string, policy stats.UnparsedPolicy, reps int, seed uint64, repeated bool, rel *spec.CSVTable) []spec.MetricRow {
	t := c.Task
	if incomplete(c, m.errs) {
		rel = nil // no figure, so no bins to draw one from
	}
	binary, pos, bins := isBinary(t), t.Positive, m.bins
	var kinds stats.Kinds[clsKind]
	var items *stats.Clusters // with repeats: an item's samples resample together
	if repeated && reps > 0 {
		items = &stats.Clusters{}
	}
	n, unparsed, notParsed, nP, nTop, studyN, studyQ := 0, 0, 0, 0, 0, 0, 0
	hasConf := false
	posBins, topBins, studyBins := stats.NewBinAcc(bins), stats.NewBinAcc(bins), stats.NewBinAcc(bins)
	var brier, topBrier stats.BrierAcc
	for _, r := range c.Rows {
		g := r.Item.Gold
		if g == "" {
			continue // no gold: nothing to score against
		}
		n++
		labeled, conf := r.Parsed(), r.Conf
		pred := ""
		if labeled {
			pred = r.Label()
		}
		parsed := labeled && (!m.reqConf || !math.IsNaN(conf))
		if !parsed {
			notParsed++
			if !r.Errored() {
				unparsed++
			}
		}
		// p is the probability of the positive class, with y (gold is
		// positive); top the confidence in the chosen label, with correct.
		// NaN leaves the answer out.
		p, top := math.NaN(), math.NaN()
		y, correct := g == pos, labeled && pred == g
		if !math.IsNaN(conf) {
			hasConf = true
			switch {
			case m.conf == confPositive:
				// The confidence is P(positive) whatever the answer, so it
				// counts even when the label did not parse (as in the study).
				p = conf
				if labeled {
					// Confidence in the chosen label: p if it chose the
					// positive class, else 1 − p (PositiveProb's reflection).
					top = stats.PositiveProb(conf, pred, pos)
				}
			case labeled:
				top = conf
				if binary {
					p = stats.PositiveProb(conf, pred, pos)
				}
			}
		}
		if !math.IsNaN(p) {
			nP++
			brier.Add(p, y)
			posBins.Add(p, y)
			// ProMoral's binning: a p of exactly 0 is in n but in no bin.
			studyN++
			if p > 0 {
				studyQ++
				studyBins.Add(p, y)
			}
		}
		if !math.IsNaN(top) {
			nTop++
			topBins.Add(top, correct)
			topBrier.Add(top, correct)
		}
		kind := kinds.Add(clsKind{pred: pred, gold: g, parsed: parsed, p: math.Float64bits(p), top: math.Float64bits(top)})
		if items != nil {
			items.Add(itemKey(r), kind)
		}
	}
	// The block's own notion of unparsed: no label, or no confidence when
	// one is required (an errored case is counted as errored instead).
	own := func(r spec.MetricRow) spec.MetricRow {
		r.NUnparsed = unparsed
		if m.reqConf && r.Convention == "" {
			r.Convention = "parsed = a label and a confidence"
		}
		return r
	}
	if n == 0 {
		return []spec.MetricRow{own(row(c, subset, "accuracy", math.NaN(), 0))}
	}
	k := newKindCols(kinds.Keys, pos)
	w := kinds.Counts
	var rows []spec.MetricRow
	var cis []ciJob
	add := func(metric, conv string, v float64, nn int, stat func(w []int) float64) {
		r := row(c, subset, metric, v, nn)
		r.Convention = conv
		if stat != nil {
			cis = append(cis, ciJob{len(rows), stat})
		}
		rows = append(rows, own(r))
	}
	acc, an := stats.AccuracyW(k.pred, k.gold, k.parsed, w, policy)
	add("accuracy", "", acc, an, func(w []int) float64 { a, _ := stats.AccuracyW(k.pred, k.gold, k.parsed, w, policy); return a })
	if pos != "" {
		conv := "positive class: " + pos
		prf := stats.BinaryPRFW(k.pred, k.gold, k.parsed, w, policy, pos)
		add("precision", conv, prf.Precision, an, nil)
		add("recall", conv, prf.Recall, an, nil)
		add("f1", conv, prf.F1, an, func(w []int) float64 {
			return stats.BinaryPRFW(k.pred, k.gold, k.parsed, w, policy, pos).F1
		})
	}
	if !binary {
		mp := stats.MultiClassPRFW(k.pred, k.gold, k.parsed, w, policy, t.Labels)
		wt := "support-weighted mean over the labels"
		add("weighted_precision", wt, mp.WeightedPrecision, mp.N, nil)
		add("weighted_recall", wt, mp.WeightedRecall, mp.N, nil)
		add("weighted_f1", wt, mp.WeightedF1, mp.N, func(w []int) float64 {
			return stats.MultiClassPRFW(k.pred, k.gold, k.parsed, w, policy, t.Labels).WeightedF1
		})
		add("macro_f1", "unweighted mean over the labels", mp.MacroF1, mp.N, nil)
	}
	rows = append(rows, own(row(c, subset, "unparsed_rate", float64(notParsed)/float64(n), n)))

	if !hasConf {
		return withItemCIs(rows, cis, w, items, reps, seed)
	}
	// Intervals on the headline calibration figures (brier, ece_pos, and
	// ece where there is no ece_pos); the study-binned ece_pos is bare.
	binRows := func(metric, observed string, acc *stats.BinAcc) {
		if rel == nil {
			return
		}
		for _, b := range acc.Bins() {
			rel.Rows = append(rel.Rows, append(idCols(c), metric, fmtF(b.Lo), fmtF(b.Hi), fmtI(b.N), fmtF(b.MeanConf), fmtF(b.Accuracy), observed, fmtI(bins)))
		}
	}
	if binary {
		p := "P(" + pos + ")"
		add("brier", p+" against the gold label", brier.Score(), nP, func(w []int) float64 { return stats.BrierW(k.p, k.y, w) })
		add("ece_pos", eceConvention(p+" against the share "+pos, bins), posBins.ECE(), nP,
			func(w []int) float64 { return stats.ECEPosW(k.p, k.y, w, bins) })
		binRows("ece_pos", "share "+pos, posBins)
		if m.promoral {
			add("ece_pos_promoral", eceConvention(p+" against the share "+pos, bins)+", a stated 0 in no bin but in n (ProMoral's code)",
				eceStudyOf(studyBins, studyQ, studyN), nP, nil)
			binRows("ece_pos_promoral", "share "+pos, studyBins)
		}
	}
	var top func(w []int) float64
	if !binary {
		top = func(w []int) float64 { return stats.ECEW(k.top, k.correct, w, bins) }
		// No positive class to state a probability of: the top-label Brier.
		add("brier", stats.TopBrierConvention, topBrier.Score(), nTop, func(w []int) float64 { return stats.BrierW(k.top, k.correct, w) })
	}
	add("ece", eceConvention("confidence in the chosen answer against accuracy", bins), topBins.ECE(), nTop, top)
	binRows("ece", "accuracy", topBins)
	return withItemCIs(rows, cis, w, items, reps, seed)
}

// eceStudyOf is ECEPos with the ProMoral code's binning, of n answers, q
// of them (p > 0) in bins: the same right-closed bins (i/b, (i+1)/b],
// except that a p of exactly 0 falls in no bin (the study's first bin is
// open at 0 too) while n still counts it. So the binned ECE is rescaled by
// q/n.
func eceStudyOf(bins *stats.BinAcc, q, n int) float64 {
	if n == 0 {
		return math.NaN()
	}
	if q == 0 {
		return 0
	}
	return bins.ECE() * float64(q) / float64(n)
}

// clsKind is a kind of answer for the intervals: everything any figure of
// the cell reads from it (the confidences as bits, so NaN is one kind).
type clsKind struct {
	pred, gold string
	parsed     bool
	p, top     uint64
}

// kindCols are the kinds' fields as the parallel slices the statistics
// take.
type kindCols struct {
	pred, gold []string
	parsed     []bool
	p, top     []float64
	y, correct []bool
}

func newKindCols(keys []clsKind, positive string) kindCols {
	k := kindCols{pred: make([]string, len(keys)), gold: make([]string, len(keys)), parsed: make([]bool, len(keys)),
		p: make([]float64, len(keys)), top: make([]float64, len(keys)), y: make([]bool, len(keys)), correct: make([]bool, len(keys))}
	for i, key := range keys {
		k.pred[i], k.gold[i], k.parsed[i] = key.pred, key.gold, key.parsed
		k.p[i], k.top[i] = math.Float64frombits(key.p), math.Float64frombits(key.top)
		k.y[i] = key.gold == positive
		// As calibration reads it: the label parsed into the space (a
		// missing confidence leaves top NaN, so the kind is out anyway).
		k.correct[i] = key.pred != "" && key.pred == key.gold
	}
	return k
}

// scoreBinarized scores the items mapped onto the binary label space.
func (m *classification) scoreBinarized(c *cell, items []clsItem, policy stats.UnparsedPolicy, seed uint64, repeated bool) []spec.MetricRow {
	bz := m.binarize
	var pred, gold []string
	var rowsOf []*spec.ResultRow
	var parsed []bool
	for _, it := range items {
		g, ok := bz.Labels[it.gold]
		if !ok {
			continue
		}
		p := it.pred
		if bp, ok := bz.Labels[it.pred]; ok {
			p = bp
		} else if it.parsed {
			p = "\x00unmapped:" + it.pred // a real answer outside both classes
		}
		pred, gold, parsed, rowsOf = append(pred, p), append(gold, g), append(parsed, it.parsed), append(rowsOf, it.row)
	}
	const sub = "binarized"
	n := len(gold)
	if n == 0 {
		return []spec.MetricRow{row(c, sub, "accuracy", math.NaN(), 0)}
	}
	conv := "labels mapped by binarize; positive class: " + bz.Positive
	acc, an := stats.Accuracy(pred, gold, parsed, policy)
	prf := stats.BinaryPRF(pred, gold, parsed, policy, bz.Positive)
	var kinds stats.Kinds[clsKind]
	var itemsOf *stats.Clusters
	if repeated && m.reps > 0 {
		itemsOf = &stats.Clusters{}
	}
	for i := range gold {
		kind := kinds.Add(clsKind{pred: pred[i], gold: gold[i], parsed: parsed[i]})
		if itemsOf != nil {
			itemsOf.Add(itemKey(rowsOf[i]), kind)
		}
	}
	k := newKindCols(kinds.Keys, bz.Positive)
	mk := func(metric string, v float64) spec.MetricRow {
		r := row(c, sub, metric, v, an)
		r.Convention = conv
		return r
	}
	rows := []spec.MetricRow{mk("accuracy", acc), mk("precision", prf.Precision), mk("recall", prf.Recall), mk("f1", prf.F1)}
	return withItemCIs(rows, []ciJob{
		{0, func(w []int) float64 { a, _ := stats.AccuracyW(k.pred, k.gold, k.parsed, w, policy); return a }},
		{3, func(w []int) float64 { return stats.BinaryPRFW(k.pred, k.gold, k.parsed, w, policy, bz.Positive).F1 }},
	}, kinds.Counts, itemsOf, m.reps, seed)
}

// cellFigures is what the reference metric compares: one value per metric
// name for a cell (or one of its subsets), without intervals.
func (m *classification) cellFigures(rs *spec.ResultSet, c *cell, subset string) (map[string]spec.MetricRow, error) {
	if subset != "" && subset != subsetAll {
		if m.subsets.progs[c.Task.Name][subset] == nil {
			return nil, fmt.Errorf("task %s has no subset %q", c.Task.Name, subset)
		}
		var err error
		if c, err = m.subsets.sub(c, subset); err != nil {
			return nil, err
		}
	}
	out := map[string]spec.MetricRow{}
	for _, r := range m.score(c, subset, policyOf(m.policy, rs), 0, 0, false, nil) {
		out[r.Metric] = r
	}
	return out, nil
}

// describe says how the block scores, for reports.
func (m *classification) describe(rs *spec.ResultSet) string {
	p := m.policy
	if p == "" {
		p = rs.Policy
	}
	if p == "" {
		p = "wrong"
	}
	s := fmt.Sprintf("unparsed %s", p)
	if m.reqConf {
		s += " (a reply needs a label and a confidence)"
	}
	s += fmt.Sprintf("; confidence = %s", map[string]string{confChosen: "confidence in the chosen answer", confPositive: "P(positive class)"}[m.conf])
	return s
}
