package metrics

import (
	"math"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/stats"
)

func init() {
	spec.RegisterMetric(spec.MetricKind{
		Name: "efficiency",
		Doc:  "Tokens per example (prompt + completion), accuracy per 1,000 tokens and cost per example, per task x model x strategy.",
		New:  func() spec.MetricConfig { return &EfficiencyConfig{} },
		Rows: spec.RowsDoc{
			Lead: "Per task × model × strategy.",
			Rows: []spec.RowDoc{
				{Names: []string{"total_tokens", "tokens_per_example"}, Def: "prompt + completion tokens, thinking included, of the calls made; " +
					"or the tokens recorded in the item fields (in all, and per case)", N: "every case"},
				{Names: []string{"accuracy_per_1k_tokens"}, Def: "accuracy over thousands of tokens per case", N: "every case"},
				{Names: []string{"cost_per_example"}, Def: "USD per case at the models' prices", N: "every case"},
			},
		},
	})
}

// EfficiencyConfig is the YAML of an efficiency metric block.
type EfficiencyConfig struct {
	spec.MetricBase `yaml:",inline"`
	Unparsed        string          `yaml:"unparsed,omitempty" enum:"wrong,exclude" inherit:"settings.unparsed" doc:"How unparsed answers count in the accuracy: wrong or exclude; default: the run's settings.unparsed."`
	IncludeJudge    bool            `yaml:"include_judge,omitempty" doc:"Add the judge's cost to the cost per example (its tokens are not counted: a judge is the study's, not the strategy's, spend)."`
	Tokens          *RecordedTokens `yaml:"tokens,omitempty" doc:"Read tokens from item fields instead of the calls made (for re-scored recorded replies, which make no call)."`
}

// RecordedTokens names the item fields holding recorded token counts.
type RecordedTokens struct {
	Prompt     string `yaml:"prompt,omitempty" doc:"Item field with the prompt tokens, e.g. prompt_tokens."`
	Completion string `yaml:"completion,omitempty" doc:"Item field with the completion tokens, e.g. completion_tokens."`
}

type efficiency struct {
	errs   string
	tasks  map[string]*spec.Task
	policy string
	judge  bool
	tokens *RecordedTokens
}

// Build takes every task (accuracy is NaN where there is no gold).
func (c *EfficiencyConfig) Build(b *spec.MetricBuild) spec.Metric {
	if c.Tokens != nil && c.Tokens.Prompt == "" && c.Tokens.Completion == "" {
		b.Errf("tokens", "name the prompt and/or completion token fields", "tokens names no field")
	}
	m := &efficiency{errs: c.MetricBase.ErrorsPolicy(), policy: c.Unparsed, judge: c.IncludeJudge, tokens: c.Tokens}
	m.tasks = selectTasks(b, func(*spec.Task) string { return "" })
	return m
}

func fieldInt(it *spec.Item, f string) int64 {
	if f == "" {
		return 0
	}
	switch v := it.Values()[f].(type) {
	case float64:
		return int64(v)
	case int64:
		return v
	case int:
		return int64(v)
	}
	return 0
}

// UnparsedOverride is the block's unparsed: ("" = the run's).
func (m *efficiency) UnparsedOverride() string { return m.policy }

// Compute reports each cell.
func (m *efficiency) Compute(rs *spec.ResultSet) (*spec.MetricOutput, error) {
	policy := policyOf(m.policy, rs)
	out := &spec.MetricOutput{}
	for _, c := range groupCells(rs, m.tasks, m.errs) {
		var tokens int64
		var cost float64
		// Accuracy counts the kinds of answer with a gold label (right,
		// wrong, unparsed): one stand-in answer of each kind, weighted by
		// its count, instead of every row's labels gathered in lists
		// (33 bytes a row, 8 MB a cell of 250,000 at scoring's peak).
		var kinds [3]int
		for _, r := range c.Rows {
			if m.tokens != nil {
				tokens += fieldInt(r.Item, m.tokens.Prompt) + fieldInt(r.Item, m.tokens.Completion)
			} else {
				tokens += int64(r.Tokens)
			}
			cost += r.Cost
			if m.judge {
				cost += r.JudgeCost()
			}
			if g := r.Item.Gold; g != "" {
				switch {
				case !r.Parsed():
					kinds[2]++
				case r.Label() == g:
					kinds[0]++
				default:
					kinds[1]++
				}
			}
		}
		acc := math.NaN()
		if kinds[0]+kinds[1]+kinds[2] > 0 {
			acc, _ = stats.AccuracyW([]string{"y", "n", ""}, []string{"y", "y", "y"}, []bool{true, true, false}, kinds[:], policy)
		}
		n := len(c.Rows)
		e := stats.EfficiencyOf(acc, tokens, cost, n)
		src := "prompt + completion tokens (thinking included) of the calls made"
		if m.tokens != nil {
			src = "prompt + completion tokens recorded in the item fields"
		}
		conv := func(r spec.MetricRow, s string) spec.MetricRow { r.Convention = s; return r }
		out.Rows = append(out.Rows,
			conv(row(c, subsetAll, "total_tokens", float64(tokens), n), src),
			conv(row(c, subsetAll, "tokens_per_example", e.TokensPerExample, n), src+", per case"),
			conv(row(c, subsetAll, "accuracy_per_1k_tokens", e.AccuracyPer1kTokens, n), "accuracy over thousands of tokens per case"),
			conv(row(c, subsetAll, "cost_per_example", e.CostPerExample, n), "USD per case at the models' prices"),
		)
	}
	return out, nil
}
