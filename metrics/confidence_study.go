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
		Name: "confidence_study",
		Doc: "The confidence study per condition (model x strategy x its factors, e.g. reflection level x confidence instruction x thinking): " +
			"confidence summary and high_confidence_rate (every task, gold or not); on tasks with gold, calibration in the study's bins 0-20 ... 81-100 and " +
			"a top-label ece in ten bins (lo, hi] and the top-label brier, mean((confidence - correct)^2), overconfident errors (wrong with confidence > threshold), Spearman's rho of confidence against correctness " +
			"(from min_spearman_n answers) and a one-sided Mann-Whitney U of right against wrong answers' confidence (from min_group_n of each). " +
			"Confidences are on 0-1 everywhere; bootstrap 95% intervals (confidence_by_condition.csv, calibration.csv, reliability.csv, overconfidence.csv, " +
			"confidence_correct_vs_incorrect.csv).",
		New: func() spec.MetricConfig { return &ConfidenceStudyConfig{} },
		Rows: spec.RowsDoc{
			Lead: "Per condition (the conditions are the factors). The rows of the stated confidence are on every task, gold or not; " +
				"the others on tasks with gold. Below its minimum n a row says `too_few`.",
			Rows: []spec.RowDoc{
				{Names: []string{"mean_confidence", "median_confidence", "std_confidence"}, Def: "mean, median and standard deviation of the stated confidence",
					N: "answers with a confidence"},
				{Names: []string{"high_confidence_rate"}, Def: "share of answers with confidence > `threshold` (default 0.7, the study's 70%)", N: "answers with a confidence"},
				{Names: []string{"ece"}, Def: "top-label ECE in `bins:` equal-width bins (lo, hi] (default 10)", N: "answers with a confidence"},
				{Names: []string{"brier"}, Def: "the top-label Brier, mean((confidence − correct)²), an unparsed answer counting as wrong under `unparsed: wrong`",
					N: "answers with a confidence"},
				{Names: []string{"overconfident_error_rate"}, Def: "overconfident errors (wrong with confidence > threshold)", N: "answers with a confidence"},
				{Names: []string{"overconfident_share_of_errors"}, Def: "overconfident errors among the wrong answers", N: "wrong answers with a confidence"},
				{Names: []string{"confident_accuracy"}, Def: "accuracy of the answers with confidence > threshold", N: "answers with confidence > threshold"},
				{Names: []string{"spearman_rho", "spearman_p"}, Def: "Spearman's ρ of confidence against correctness, and its p, " +
					"from `min_spearman_n` answers (default 10)", N: "answers with a confidence"},
				{Names: []string{"mannwhitney_u", "mannwhitney_p"}, Def: "one-sided Mann–Whitney U of right against wrong answers' confidence, and its p, " +
					"from `min_group_n` right and wrong answers each (default 5)", N: "answers with a confidence"},
			},
			Note: "With gold, the study's five bins (0–20 … 81–100%) are in `calibration.csv`. Bootstrap intervals on the " +
				"confidence statistics, with ρ also withheld as `too_few` when too many replicates have no ρ (see undefined " +
				"replicates under [How the numbers are counted](#how-the-numbers-are-counted)).",
		},
	})
}

// ConfidenceStudyConfig is the YAML of a confidence_study metric block.
// Answers without a stated confidence are left out of every confidence
// statistic (and counted: n is the number with one).
type ConfidenceStudyConfig struct {
	spec.MetricBase `yaml:",inline"`
	Unparsed        string   `yaml:"unparsed,omitempty" enum:"wrong,exclude" inherit:"settings.unparsed" doc:"How an answer with a confidence but no parseable label counts: wrong (default) or exclude; default: the run's settings.unparsed."`
	Threshold       *float64 `yaml:"threshold,omitempty" default:"0.7" doc:"Confidence above which an answer is confident, on the 0-1 scale every confidence uses (default 0.7: the study's > 70%). high_confidence_rate and the overconfident errors use it."`
	MinSpearmanN    *int     `yaml:"min_spearman_n,omitempty" default:"10" doc:"Fewest answers with a confidence for Spearman's rho and its p (default 10, the study's); below it the rows say too_few."`
	MinGroupN       *int     `yaml:"min_group_n,omitempty" min:"1" default:"5" doc:"Fewest right and fewest wrong answers with a confidence for the Mann-Whitney test (default 5 each, the study's); below it the rows say too_few."`
	Bins            int      `yaml:"bins,omitempty" min:"1" default:"10" doc:"Equal-width bins (lo, hi] of the ece row and reliability.csv (default 10)."`
	Bootstrap       *int     `yaml:"bootstrap,omitempty" min:"0" default:"1000" doc:"Bootstrap replicates for the 95% intervals (answers resampled, seeded with settings.seed); default 1000, 0 turns intervals off."`
}

type confidenceStudy struct {
	base      spec.MetricBase
	errs      string
	tasks     map[string]*spec.Task
	policy    string
	threshold float64
	minRho    int
	minGroup  int
	bins      int
	reps      int
}

// Build picks every task with answer labels; tasks without gold get the
// descriptive statistics only.
func (c *ConfidenceStudyConfig) Build(b *spec.MetricBuild) spec.Metric {
	m := &confidenceStudy{base: c.MetricBase, errs: c.MetricBase.ErrorsPolicy(), policy: c.Unparsed, threshold: *c.Threshold,
		minRho: *c.MinSpearmanN, minGroup: *c.MinGroupN, bins: c.Bins, reps: *c.Bootstrap}
	if m.threshold < 0 || m.threshold > 1 {
		b.Errf("threshold", fmt.Sprintf("confidences are on the 0-1 scale: write %g for %g%%", m.threshold/100, m.threshold), "threshold %g is outside 0-1", m.threshold)
	}
	if m.minRho < 3 {
		b.Errf("min_spearman_n", "use 3 or more (a p-value needs n - 2 degrees of freedom)", "min_spearman_n must be at least 3")
	}
	m.tasks = selectTasks(b, func(t *spec.Task) string {
		if len(t.Labels) == 0 {
			return "it declares no answer labels"
		}
		return ""
	})
	return m
}

// UnparsedOverride is the block's unparsed: ("" = the run's).
func (m *confidenceStudy) UnparsedOverride() string { return m.policy }

// BlockDraw tells the report how the ECE bins and when an answer is
// confident.
func (m *confidenceStudy) BlockDraw() manifest.BlockDraw {
	return manifest.BlockDraw{Bins: m.bins, ConfidentAbove: &m.threshold, Counting: []string{eceBinsPhrase(m.bins),
		fmt.Sprintf("confident means a confidence above %g; Spearman's rho from %d answers, Mann-Whitney from %d right and %d wrong", m.threshold, m.minRho, m.minGroup, m.minGroup)}}
}

// The metrics.parquet rows of one condition, in the order the bootstrap
// computes them.
const (
	csMean = iota
	csMedian
	csHigh
	csOver
	csShare
	csConfAcc
	csRho
	csECE
	csBrier
	csCount
)

// Compute writes the tables and the long-format rows.
func (m *confidenceStudy) Compute(rs *spec.ResultSet) (*spec.MetricOutput, error) {
	policy := policyOf(m.policy, rs)
	seed := seedOf(rs)
	out := &spec.MetricOutput{}
	thr := fmtF(m.threshold)
	byCond := spec.CSVTable{Name: tableName(&m.base, "confidence_by_condition"), Header: idHeader(rs, "status", "n_cases", "n_errors", "n_answers", "n", "accuracy",
		"mean", "mean_ci_low", "mean_ci_high", "std", "median", "min", "max", "high_confidence_rate", "threshold")}
	calib := spec.CSVTable{Name: tableName(&m.base, "calibration"), Header: idHeader(rs, "bin_percent", "n", "accuracy", "mean_confidence", "gap")}
	rel := spec.CSVTable{Name: m.base.BlockName() + "_reliability", Header: idHeader(rs, "metric", "bin_lo_excl", "bin_hi_incl", "n", "mean_confidence", "observed", "observed_is", "bins")}
	over := spec.CSVTable{Name: tableName(&m.base, "overconfidence"), Header: idHeader(rs, "status", "n", "n_wrong", "n_overconfident_wrong",
		"overconfident_error_rate", "overconfident_share_of_errors", "n_confident", "confident_accuracy", "threshold")}
	cvi := spec.CSVTable{Name: tableName(&m.base, "confidence_correct_vs_incorrect"), Header: idHeader(rs, "status", "n_correct", "n_incorrect",
		"mean_confidence_correct", "mean_confidence_incorrect", "spearman_rho", "spearman_p", "spearman_n", "spearman_status",
		"mannwhitney_u", "mannwhitney_z", "mannwhitney_p", "mannwhitney_status")}
	scale := "confidence on 0-1"
	// Conditions are scored side by side, each into its own rows; they
	// are put together in order.
	type cellOut struct {
		rows                          []spec.MetricRow
		byCond, calib, rel, over, cvi [][]string
	}
	cells := groupCells(rs, m.tasks, m.errs)
	outs := make([]cellOut, len(cells))
	inParallel(len(cells), func(k int) {
		c, co := cells[k], &outs[k]
		graded := c.Task.Spec.Gold != ""
		var conf []float64
		var correct []bool
		nCorrect, answers := 0, 0
		for _, r := range c.Rows {
			if graded && r.Item.Gold == "" {
				continue
			}
			if !r.Parsed() && policy == stats.UnparsedExclude {
				continue
			}
			answers++
			ok := r.Parsed() && r.Label() == r.Item.Gold
			if ok {
				nCorrect++
			}
			cv := r.Conf
			if math.IsNaN(cv) {
				continue
			}
			conf = append(conf, cv)
			correct = append(correct, ok)
		}
		if !graded {
			correct = nil
		}
		tb, _ := stats.NewConfTable(conf, correct)
		d := tb.Summary()
		o := tb.Overconfident(m.threshold)
		sp := tb.Spearman()
		mw := tb.MannWhitney()
		// One bootstrap over the answers for every interval: each replicate
		// is a new set of counts per confidence value.
		ivs := make([]stats.Interval, csCount)
		for i := range ivs {
			ivs[i] = stats.NoInterval
		}
		if m.reps > 0 && d.N > 0 {
			var rt stats.ConfTable
			ivs = stats.BootstrapCountsIntervals(tb.Cells(), csCount, func(w []int, v []float64) {
				tb.Reweigh(w, &rt)
				s := rt.Summary()
				v[csMean], v[csMedian], v[csHigh] = s.Mean, s.Median, rt.Above(m.threshold)
				if graded {
					oc := rt.Overconfident(m.threshold)
					v[csOver], v[csShare], v[csConfAcc] = oc.OverconfidentErrorRate, oc.OverconfidentShareOfErrors, oc.ConfidentAccuracy
					v[csRho], v[csECE], v[csBrier] = rt.Spearman().Rho, rt.ECE(m.bins), rt.Brier()
				}
			}, m.reps, seed, stats.DefaultLevel)
		}
		add := func(metric, conv string, v float64, n, k int) *spec.MetricRow {
			r := row(c, subsetAll, metric, v, n)
			r.Convention = conv
			if k >= 0 {
				spec.SetCI(&r, ivs[k])
			}
			co.rows = append(co.rows, r)
			return &co.rows[len(co.rows)-1]
		}
		add("mean_confidence", scale, d.Mean, d.N, csMean)
		add("std_confidence", scale+"; sample standard deviation (n - 1)", d.Std, d.N, -1)
		add("median_confidence", scale, d.Median, d.N, csMedian)
		add("high_confidence_rate", fmt.Sprintf("share of answers with confidence > %s", thr), tb.Above(m.threshold), d.N, csHigh)
		acc := math.NaN()
		if answers > 0 {
			acc = float64(nCorrect) / float64(answers)
		}
		// Under errors: incomplete a cell with errored cases gives no figure
		// in the tables either: counts and a status, no numbers, no bins.
		inc := incomplete(c, m.errs)
		status := spec.StatusOK
		if inc {
			status = spec.StatusIncomplete
		}
		id := idCols(c)
		bc := append(id, status, fmtI(c.nCases()), fmtI(c.nErrors()), fmtI(answers), fmtI(d.N))
		bc = append(bc, withheld(inc, fmtFIf(acc, graded), fmtF(d.Mean), fmtF(ivs[csMean].Lo), fmtF(ivs[csMean].Hi),
			fmtF(d.Std), fmtF(d.Median), fmtF(d.Min), fmtF(d.Max), fmtF(tb.Above(m.threshold)))...)
		co.byCond = append(co.byCond, append(bc, thr))
		if !graded {
			return
		}
		add("overconfident_error_rate", fmt.Sprintf("wrong with confidence > %s, of all answers with a confidence", thr), o.OverconfidentErrorRate, o.N, csOver)
		add("overconfident_share_of_errors", fmt.Sprintf("wrong with confidence > %s, of the wrong answers", thr), o.OverconfidentShareOfErrors, o.NWrong, csShare)
		add("confident_accuracy", fmt.Sprintf("accuracy of the answers with confidence > %s", thr), o.ConfidentAccuracy, o.NConfident, csConfAcc)
		add("ece", eceConvention("confidence in the chosen answer against accuracy", m.bins), tb.ECE(m.bins), d.N, csECE)
		add("brier", stats.TopBrierConvention, tb.Brier(), d.N, csBrier)
		rhoStatus := ""
		if sp.N < m.minRho {
			rhoStatus = spec.StatusTooFew
		}
		if ivs[csRho].TooManyUndefined() {
			// Too many resamples have no ρ (no wrong answer, or all of one
			// confidence): neither ρ nor its p is given.
			rhoStatus = spec.StatusTooFew
		}
		mwStatus := ""
		if mw.N1 < m.minGroup || mw.N2 < m.minGroup {
			mwStatus = spec.StatusTooFew
		}
		rhoConv := fmt.Sprintf("confidence against correctness (1 right, 0 wrong); reported from %d answers", m.minRho)
		setStatus := func(r *spec.MetricRow, s string) {
			if s != "" {
				r.Status = s
			}
		}
		setStatus(add("spearman_rho", rhoConv, sp.Rho, sp.N, csRho), rhoStatus)
		pConv := rhoConv + "; two-sided"
		if ivs[csRho].TooManyUndefined() {
			pConv += fmt.Sprintf("; withheld with spearman_rho: %d of %d bootstrap replicates have no defined rho", ivs[csRho].Undefined, ivs[csRho].Reps)
		}
		setStatus(add("spearman_p", pConv, sp.P, sp.N, -1), rhoStatus)
		mwConv := fmt.Sprintf("right answers' confidence greater than wrong answers' (one-sided); reported from %d of each", m.minGroup)
		setStatus(add("mannwhitney_u", mwConv, mw.U, mw.N1+mw.N2, -1), mwStatus)
		setStatus(add("mannwhitney_p", mwConv, mw.P, mw.N1+mw.N2, -1), mwStatus)

		for _, b := range tb.StudyBins() {
			if inc {
				break
			}
			co.calib = append(co.calib, append(idCols(c), fmt.Sprintf("%d-%d", b.Lo, b.Hi), fmtI(b.N), fmtF(b.Accuracy), fmtF(b.MeanConf), fmtF(b.MeanConf-b.Accuracy)))
		}
		for _, b := range tb.Reliability(m.bins) {
			if inc {
				break
			}
			co.rel = append(co.rel, append(idCols(c), "ece", fmtF(b.Lo), fmtF(b.Hi), fmtI(b.N), fmtF(b.MeanConf), fmtF(b.Accuracy), "accuracy", fmtI(m.bins)))
		}
		oc := append(idCols(c), status, fmtI(o.N), fmtI(o.NWrong), fmtI(o.NOverconfidentWrong))
		oc = append(oc, withheld(inc, fmtF(o.OverconfidentErrorRate), fmtF(o.OverconfidentShareOfErrors))...)
		oc = append(oc, fmtI(o.NConfident))
		oc = append(oc, withheld(inc, fmtF(o.ConfidentAccuracy))...)
		co.over = append(co.over, append(oc, thr))
		var cc, ci []float64
		for i, v := range conf {
			if correct[i] {
				cc = append(cc, v)
			} else {
				ci = append(ci, v)
			}
		}
		dc, di := stats.Describe(cc), stats.Describe(ci)
		rho, rp, u, z, mp := sp.Rho, sp.P, mw.U, mw.Z, mw.P
		if rhoStatus != "" {
			rho, rp = math.NaN(), math.NaN()
		}
		if mwStatus != "" {
			u, z, mp = math.NaN(), math.NaN(), math.NaN()
		}
		if inc {
			dc.Mean, di.Mean, rho, rp, u, z, mp = math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()
		}
		co.cvi = append(co.cvi, append(idCols(c), status, fmtI(dc.N), fmtI(di.N), fmtF(dc.Mean), fmtF(di.Mean),
			fmtF(rho), fmtF(rp), fmtI(sp.N), orOK(rhoStatus), fmtF(u), fmtF(z), fmtF(mp), orOK(mwStatus)))
	})
	for _, co := range outs {
		out.Rows = append(out.Rows, co.rows...)
		byCond.Rows = append(byCond.Rows, co.byCond...)
		calib.Rows = append(calib.Rows, co.calib...)
		rel.Rows = append(rel.Rows, co.rel...)
		over.Rows = append(over.Rows, co.over...)
		cvi.Rows = append(cvi.Rows, co.cvi...)
	}
	out.Tables = []spec.CSVTable{byCond, calib, rel, over, cvi}
	return out, nil
}

func orOK(s string) string {
	if s == "" {
		return spec.StatusOK
	}
	return s
}

// fmtFIf is fmtF(x), or empty when the figure does not apply.
func fmtFIf(x float64, ok bool) string {
	if !ok {
		return ""
	}
	return fmtF(x)
}
