package runfolder

import "github.com/promoral/promoral/pipeline/parquetio"

// Result is one row of results.parquet, its own columns: the factor and
// flat columns a study declares follow them (ResultFamilies). The JSON
// columns (Outputs, Judge, Item, Subsets, Trace) hold their JSON text, ""
// for null.
type Result struct {
	CaseID, Model, Strategy, Task, ItemID string
	Repeat                                int
	Gold, Label                           string // "": null
	Confidence                            *float64
	Parsed                                bool
	Correct                               *bool
	Truncated, Blocked                    bool
	Outputs, Judge, Item                  string
	Calls                                 int
	PromptTokens, CompletionTokens        int
	ThinkingTokens                        int
	CostUSD                               float64
	JudgeTokens                           int
	JudgeCostUSD                          float64
	Steps                                 int
	Error, ErrorClass                     string // error class: null when Error is
	KeptFrom                              string
	Run, ConfigHash                       string
	Subsets, Trace                        string
}

// ResultSchema is results.parquet's own columns, in file order.
var ResultSchema = Schema[Result]{
	{"case_id", parquetio.ColString, false, "the case's id (model, strategy, task and item; `#r<i>` after it for repeat i > 0)", func(r *Result) any { return r.CaseID }},
	{"model", parquetio.ColString, true, "the model and strategy as reported (a task with `report_as` takes them from the item: re-scored published replies)", func(r *Result) any { return r.Model }},
	{"strategy", parquetio.ColString, true, "the model and strategy as reported (a task with `report_as` takes them from the item: re-scored published replies)", func(r *Result) any { return r.Strategy }},
	{"task", parquetio.ColString, true, "the task and the item's id in its dataset", func(r *Result) any { return r.Task }},
	{"item_id", parquetio.ColString, false, "the task and the item's id in its dataset", func(r *Result) any { return r.ItemID }},
	{"repeat", parquetio.ColInt, false, "the case's sample index, 0 to k−1 (`repeats: k`); 0 without repeats", func(r *Result) any { return r.Repeat }},
	{"gold", parquetio.ColString, true, "the item's gold label; null without one", func(r *Result) any { return nonEmpty(r.Gold) }},
	{"label", parquetio.ColString, true, "the strategy's answer (`outputs.label`); null when no label was read or the case errored", func(r *Result) any { return nonEmpty(r.Label) }},
	{"confidence", parquetio.ColFloat, false, "the stated confidence on 0–1, whatever scale the reply used; null without one", func(r *Result) any { return r.Confidence }}, // a nil *float64 is null
	{"parsed", parquetio.ColBool, false, "a label of the task's answer space was read", func(r *Result) any { return r.Parsed }},
	{"correct", parquetio.ColBool, false, "label equals gold; null without gold or without a label", func(r *Result) any {
		if r.Correct == nil {
			return nil
		}
		return *r.Correct
	}},
	{"truncated", parquetio.ColBool, false, "a reply of the case was cut off by `max_tokens`", func(r *Result) any { return r.Truncated }},
	{"blocked", parquetio.ColBool, false, "a provider's filter blocked a reply of the case", func(r *Result) any { return r.Blocked }},
	{"outputs", parquetio.ColString, false, "(JSON) every output the strategy declares (`outputs:`)", func(r *Result) any { return nonEmpty(r.Outputs) }},
	{"judge", parquetio.ColString, false, "(JSON) the judge strategy's outputs, for a judged task", func(r *Result) any { return nonEmpty(r.Judge) }},
	{"item", parquetio.ColString, false, "(JSON) all the item's fields, so a row reads without the dataset", func(r *Result) any { return nonEmpty(r.Item) }},
	{"calls", parquetio.ColInt, false, "model calls the case made or was served from the journal", func(r *Result) any { return r.Calls }},
	{"prompt_tokens", parquetio.ColInt, false, "the case's tokens, judge aside", func(r *Result) any { return r.PromptTokens }},
	{"completion_tokens", parquetio.ColInt, false, "the case's tokens, judge aside", func(r *Result) any { return r.CompletionTokens }},
	{"thinking_tokens", parquetio.ColInt, false, "the case's tokens, judge aside", func(r *Result) any { return r.ThinkingTokens }},
	{"total_tokens", parquetio.ColInt, false, "prompt plus completion tokens", func(r *Result) any { return r.PromptTokens + r.CompletionTokens }},
	{"cost_usd", parquetio.ColFloat, false, "the case's cost at the price table, judge aside; replies served from the journal count at their price, so the figure is what the case costs, not what this apply paid", func(r *Result) any { return r.CostUSD }},
	{"judge_tokens", parquetio.ColInt, false, "the judge's prompt plus completion tokens", func(r *Result) any { return r.JudgeTokens }},
	{"judge_cost_usd", parquetio.ColFloat, false, "the judge's cost", func(r *Result) any { return r.JudgeCostUSD }},
	{"steps", parquetio.ColInt, false, "stages the case ran (each visit of a loop counts)", func(r *Result) any { return r.Steps }},
	{"error", parquetio.ColString, false, "why the case failed and its class ([error classes](running.md#error-classes)); null for a case that finished", func(r *Result) any { return nonEmpty(r.Error) }},
	{"error_class", parquetio.ColString, true, "why the case failed and its class ([error classes](running.md#error-classes)); null for a case that finished", func(r *Result) any {
		if r.Error == "" {
			return nil
		}
		return r.ErrorClass
	}},
	{"kept_from", parquetio.ColString, true, "the output generation whose good row was kept instead of this apply's error ([Running a study](running.md#errored-cases-in-the-outputs))", func(r *Result) any { return nonEmpty(r.KeptFrom) }},
	{"run", parquetio.ColString, true, "the run's name and the hash of the config the row was computed from (below)", func(r *Result) any { return r.Run }},
	{"config_hash", parquetio.ColString, true, "the run's name and the hash of the config the row was computed from (below)", func(r *Result) any { return r.ConfigHash }},
	{"subsets", parquetio.ColString, true, "(JSON) the task subsets the item is in, as a list", func(r *Result) any { return nonEmpty(r.Subsets) }},
	{"trace", parquetio.ColString, false, "(JSON) every stage run in order (`stage`, its `kind`, `visit`) with what it published (long text clipped; replies are in `calls.parquet`), where a branch went, the reply an extract stage read and, when it read no label, why", func(r *Result) any { return nonEmpty(r.Trace) }},
}

// ResultFamilies are the columns of results.parquet a study declares,
// after ResultSchema's, in this order.
var ResultFamilies = []Family{
	{"one column per factor", "string", "each condition factor the strategy, model or task declares: the cell's value, or the item's own for a factor read from items; and each setting a model's `sweep:` varies; null where unset ([Writing a study](writing-studies.md#conditions-factors))"},
	{"`out_<name>`", "as the values are", "each output a strategy of the study declares (`outputs:`), as in `outputs` ([below](#flat-columns-read-without-parsing-json))"},
	{"`judge_<name>`", "as the values are", "each output a judge strategy of the study declares, as in `judge`; `judge_label` is the judge's verdict"},
	{"`item_<field>`", "as the values are", "each item field a task declares (`keep:`, `dataset.fields`, `dataset.types`), as in `item`"},
	{"`subset_<name>`", "boolean", "each task subset: true or false; null when the row's task does not declare it, or its expression failed on the item (`\"!name\"` in `subsets`)"},
}
