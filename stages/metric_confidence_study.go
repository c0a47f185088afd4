package stages

import (
	"math"

	"github.com/promoral/promoral/pipeline"
	"github.com/promoral/promoral/pipeline/stats"
)

func init() {
	pipeline.RegisterMetric(pipeline.MetricKind{
		Name: "confidence_study",
		Doc: "The confidence study per condition (model x strategy, i.e. thinking x reflection level): confidence summary, calibration in the bins 0-20 ... 81-100, " +
			"overconfident errors (> threshold and wrong), Spearman of confidence vs correctness, and a one-sided Mann-Whitney U of correct vs incorrect confidence " +
			"(confidence_by_condition.csv, calibration.csv, overconfidence.csv, confidence_correct_vs_incorrect.csv).",
		New: func() pipeline.MetricConfig { return &ConfidenceStudyConfig{} },
	})
}

// ConfidenceStudyConfig is the YAML of a confidence_study metric block.
// Confidences are analysed on the 0–100 scale the study asks for: the
// extracted 0–1 confidence times scale. Answers without a stated confidence
// are left out (and counted: n is the number with one).
type ConfidenceStudyConfig struct {
	pipeline.MetricBase `yaml:",inline"`
	Unparsed            string  `yaml:"unparsed,omitempty" doc:"How an answer with a confidence but no parseable label counts: wrong (default) or exclude; default: the run's settings.unparsed."`
	Threshold           float64 `yaml:"threshold,omitempty" doc:"Confidence above which an answer is confident (default 70, on the 0-100 scale)."`
	Scale               float64 `yaml:"scale,omitempty" doc:"Factor from the extracted confidence (0-1) to the study's scale (default 100)."`
}

type confidenceStudy struct {
	base      pipeline.MetricBase
	tasks     map[string]*pipeline.Task
	policy    string
	threshold float64
	scale     float64
}

// Build picks tasks with gold labels.
func (c *ConfidenceStudyConfig) Build(b *pipeline.MetricBuild) pipeline.Metric {
	checkPolicy(b, c.Unparsed)
	m := &confidenceStudy{base: c.MetricBase, policy: c.Unparsed, threshold: c.Threshold, scale: c.Scale}
	if m.threshold == 0 {
		m.threshold = stats.OverconfidenceThreshold
	}
	if m.scale == 0 {
		m.scale = 100
	}
	if c.Scale < 0 || c.Threshold < 0 {
		b.Errf("", "use positive numbers", "threshold and scale must be positive")
	}
	m.tasks = selectTasks(b, func(t *pipeline.Task) string {
		if t.Spec.Gold == "" {
			return "it has no gold labels"
		}
		return ""
	})
	return m
}

// Compute writes the four tables and the long-format rows.
func (m *confidenceStudy) Compute(rs *pipeline.ResultSet) (*pipeline.MetricOutput, error) {
	policy := policyOf(m.policy, rs)
	out := &pipeline.MetricOutput{}
	byCond := pipeline.CSVTable{Name: tableName(&m.base, "confidence_by_condition"), Header: []string{"model", "strategy", "task", "n", "n_answers", "accuracy", "mean", "std", "median", "min", "max"}}
	calib := pipeline.CSVTable{Name: tableName(&m.base, "calibration"), Header: []string{"model", "strategy", "task", "bin", "n", "accuracy", "mean_confidence", "gap"}}
	over := pipeline.CSVTable{Name: tableName(&m.base, "overconfidence"), Header: []string{"model", "strategy", "task", "n", "n_wrong", "n_overconfident_wrong",
		"overconfident_error_rate", "overconfident_share_of_errors", "n_confident", "confident_accuracy", "threshold"}}
	cvi := pipeline.CSVTable{Name: tableName(&m.base, "confidence_correct_vs_incorrect"), Header: []string{"model", "strategy", "task", "n_correct", "n_incorrect",
		"mean_confidence_correct", "mean_confidence_incorrect", "spearman_rho", "spearman_p", "spearman_n", "mannwhitney_u", "mannwhitney_z", "mannwhitney_p"}}
	for _, c := range groupCells(rs, m.tasks) {
		out.Rows = append(out.Rows, errorRows(c)...)
		var conf []float64
		var correct []bool
		nCorrect, answers := 0, 0
		for _, r := range c.Rows {
			if r.Case.Item.Gold == "" {
				continue
			}
			if !r.Result.Parsed && policy == stats.UnparsedExclude {
				continue
			}
			answers++
			ok := r.Result.Parsed && r.Result.Label == r.Case.Item.Gold
			if ok {
				nCorrect++
			}
			cv := confOf(r.Result)
			if math.IsNaN(cv) {
				continue
			}
			// Rounded to 1e-9 so that 0.29·100 is 29, not 28.999999999999996,
			// on the study's integer bin edges.
			conf = append(conf, math.Round(cv*m.scale*1e9)/1e9)
			correct = append(correct, ok)
		}
		acc := math.NaN()
		if answers > 0 {
			acc = float64(nCorrect) / float64(answers)
		}
		id := []string{c.Model, c.Strategy, c.Task.Name}
		d := stats.Describe(conf)
		byCond.Rows = append(byCond.Rows, append(id[:3:3], fmtI(d.N), fmtI(answers), fmtF(acc), fmtF(d.Mean), fmtF(d.Std), fmtF(d.Median), fmtF(d.Min), fmtF(d.Max)))
		for _, b := range stats.ConfidenceBins(conf, correct) {
			calib.Rows = append(calib.Rows, append(id[:3:3], fmtI(b.Lo)+"-"+fmtI(b.Hi), fmtI(b.N), fmtF(b.Accuracy), fmtF(b.MeanConf), fmtF(b.MeanConf-b.Accuracy*100)))
		}
		o := stats.Overconfident(conf, correct, m.threshold)
		over.Rows = append(over.Rows, append(id[:3:3], fmtI(o.N), fmtI(o.NWrong), fmtI(o.NOverconfidentWrong), fmtF(o.OverconfidentErrorRate),
			fmtF(o.OverconfidentShareOfErrors), fmtI(o.NConfident), fmtF(o.ConfidentAccuracy), fmtF(m.threshold)))
		sp := stats.Spearman(conf, stats.Bools(correct))
		mw := stats.MannWhitneyConfidence(conf, correct)
		var cc, ci []float64
		for i, v := range conf {
			if correct[i] {
				cc = append(cc, v)
			} else {
				ci = append(ci, v)
			}
		}
		dc, di := stats.Describe(cc), stats.Describe(ci)
		cvi.Rows = append(cvi.Rows, append(id[:3:3], fmtI(dc.N), fmtI(di.N), fmtF(dc.Mean), fmtF(di.Mean),
			fmtF(sp.Rho), fmtF(sp.P), fmtI(sp.N), fmtF(mw.U), fmtF(mw.Z), fmtF(mw.P)))
		out.Rows = append(out.Rows,
			row(c, subsetAll, "mean_confidence", d.Mean, d.N),
			row(c, subsetAll, "std_confidence", d.Std, d.N),
			row(c, subsetAll, "median_confidence", d.Median, d.N),
			row(c, subsetAll, "overconfident_error_rate", o.OverconfidentErrorRate, o.N),
			row(c, subsetAll, "confident_accuracy", o.ConfidentAccuracy, o.NConfident),
			row(c, subsetAll, "spearman_rho", sp.Rho, sp.N),
			row(c, subsetAll, "spearman_p", sp.P, sp.N),
			row(c, subsetAll, "mannwhitney_u", mw.U, mw.N1+mw.N2),
			row(c, subsetAll, "mannwhitney_p", mw.P, mw.N1+mw.N2),
		)
	}
	out.Tables = []pipeline.CSVTable{byCond, calib, over, cvi}
	return out, nil
}
