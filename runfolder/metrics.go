package runfolder

import (
	"math"

	"github.com/promoral/promoral/pipeline/parquetio"
)

// Metric is one row of metrics.parquet: a figure, keyed on block, model,
// strategy, task, subset, the factors and the metric. NaN or an infinity
// in Value, CILow or CIHigh is null; a count below 0 (not applicable) is
// null; CIReps and CIUndefined are null when no interval was drawn
// (CIReps 0).
type Metric struct {
	Block, Model, Strategy, Task, Subset string
	// Factors are the study's factor values, in the manifest's order
	// ("": null); they are written between Subset and Metric.
	Factors                    []string
	Metric                     string
	Value, CILow, CIHigh       float64
	CIReps, CIUndefined, N     int
	NCases, NUnparsed, NErrors int
	Status, Unparsed, Errors   string
	Convention, Selection      string
}

func figure(x float64) any {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return nil
	}
	return x
}

func count(n int) any {
	if n < 0 {
		return nil
	}
	return n
}

func interval(r *Metric, n int) any {
	if r.CIReps <= 0 {
		return nil
	}
	return n
}

// MetricKeySchema is metrics.parquet's key columns before the factors.
var MetricKeySchema = Schema[Metric]{
	{"block", parquetio.ColString, true, "the metric block's name (`name:`, default its kind)", func(r *Metric) any { return r.Block }},
	{"model", parquetio.ColString, true, "the cell; a judge's rows carry the judge in `strategy` and its model in `model` ([Judges](judges.md))", func(r *Metric) any { return r.Model }},
	{"strategy", parquetio.ColString, true, "the cell; a judge's rows carry the judge in `strategy` and its model in `model` ([Judges](judges.md))", func(r *Metric) any { return r.Strategy }},
	{"task", parquetio.ColString, true, "the cell; a judge's rows carry the judge in `strategy` and its model in `model` ([Judges](judges.md))", func(r *Metric) any { return r.Task }},
	{"subset", parquetio.ColString, true, "`all`, a task subset, or `binarized`", func(r *Metric) any { return r.Subset }},
}

// MetricFactors documents the factor columns between MetricKeySchema and
// MetricSchema.
var MetricFactors = Family{"one column per factor", "string", "the condition ([Writing a study](writing-studies.md#conditions-factors))"}

// MetricSchema is metrics.parquet's columns after the factors.
var MetricSchema = Schema[Metric]{
	{"metric", parquetio.ColString, true, "the metric's name (`accuracy`, `ece`, `asr`, …)", func(r *Metric) any { return r.Metric }},
	{"value", parquetio.ColFloat, false, "the figure; null when `status` is not `ok`", func(r *Metric) any { return figure(r.Value) }},
	{"ci_low", parquetio.ColFloat, false, "the 95% bootstrap interval; null without one", func(r *Metric) any { return figure(r.CILow) }},
	{"ci_high", parquetio.ColFloat, false, "the 95% bootstrap interval; null without one", func(r *Metric) any { return figure(r.CIHigh) }},
	{"ci_reps", parquetio.ColInt, false, "replicates drawn for the interval, and how many of them had no defined value (left out of it); null without an interval. Past 5% undefined the row has no value (`too_few`): [Metrics](metrics.md#how-the-numbers-are-counted)", func(r *Metric) any { return interval(r, r.CIReps) }},
	{"ci_undefined", parquetio.ColInt, false, "replicates drawn for the interval, and how many of them had no defined value (left out of it); null without an interval. Past 5% undefined the row has no value (`too_few`): [Metrics](metrics.md#how-the-numbers-are-counted)", func(r *Metric) any { return interval(r, r.CIUndefined) }},
	{"n", parquetio.ColInt, false, "what the value counts (its denominator)", func(r *Metric) any { return r.N }},
	{"n_cases", parquetio.ColInt, false, "the cases of the cell", func(r *Metric) any { return count(r.NCases) }},
	{"n_unparsed", parquetio.ColInt, false, "answers from which no label was read", func(r *Metric) any { return count(r.NUnparsed) }},
	{"n_errors", parquetio.ColInt, false, "errored cases", func(r *Metric) any { return count(r.NErrors) }},
	{"status", parquetio.ColString, true, "`ok`, or why there is no value: `incomplete`, `empty`, `too_few`, `undefined`", func(r *Metric) any { return r.Status }},
	{"unparsed_policy", parquetio.ColString, true, "the policies the figure was computed under ([Metrics](metrics.md#how-the-numbers-are-counted))", func(r *Metric) any { return nonEmpty(r.Unparsed) }},
	{"errors_policy", parquetio.ColString, true, "the policies the figure was computed under ([Metrics](metrics.md#how-the-numbers-are-counted))", func(r *Metric) any { return nonEmpty(r.Errors) }},
	{"convention", parquetio.ColString, true, "bins, scale, positive class or denominator where the name alone does not say", func(r *Metric) any { return nonEmpty(r.Convention) }},
	{"selection", parquetio.ColString, true, "the filters of a partial run (`--model gpt-4.1 --limit 20: 120 of 5760 cases`); null for a whole study", func(r *Metric) any { return nonEmpty(r.Selection) }},
}

// MetricColumns are metrics.parquet's columns for a study with these
// factors.
func MetricColumns(factors []string) []parquetio.Column {
	cols := MetricKeySchema.Columns()
	for _, f := range factors {
		cols = append(cols, parquetio.Column{Name: f, Type: parquetio.ColString, Dict: true})
	}
	return append(cols, MetricSchema.Columns()...)
}

// AppendMetric appends r's values, in MetricColumns' order for nFactors
// factors, to dst.
func AppendMetric(dst []any, r *Metric, nFactors int) []any {
	dst = MetricKeySchema.Append(dst, r)
	for i := range nFactors {
		if i < len(r.Factors) {
			dst = append(dst, nonEmpty(r.Factors[i]))
		} else {
			dst = append(dst, nil)
		}
	}
	return MetricSchema.Append(dst, r)
}
