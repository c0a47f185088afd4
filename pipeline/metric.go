package pipeline

import (
	"fmt"

	"gopkg.in/yaml.v3"
)

// Metric kinds are registered like stage kinds and declared in the run
// file's metrics: list. They run after the cases, over the results (so a
// changed metric re-scores from the journal without a model call), and
// produce long-format rows for metrics.parquet plus optional CSV tables.

// MetricConfig is the decoded YAML of one metric. Every kind's config embeds
// MetricBase with `yaml:",inline"`.
type MetricConfig interface {
	Common() *MetricBase
	// Build checks the config against the study; problems go to the
	// diagnostics. It may return nil when there were any.
	Build(b *MetricBuild) Metric
}

// Metric computes over a result set.
type Metric interface {
	Compute(rs *ResultSet) (*MetricOutput, error)
}

// MetricBase holds the fields every metric kind has.
type MetricBase struct {
	Kind   string   `yaml:"kind" required:"true" doc:"Metric kind."`
	Name   string   `yaml:"name,omitempty" doc:"Name for this metric block, the block column of metrics.parquet and the prefix of its CSV tables (default: the kind). Two blocks of a run need two names."`
	Tasks  []string `yaml:"tasks,omitempty" doc:"Tasks it scores (default: every task it applies to)."`
	Errors string   `yaml:"errors,omitempty" enum:"incomplete,exclude,unparsed" doc:"How cases that ended in an error (a failed call, a template error) count: incomplete (default: a figure with errored cases in its cell is not given, its row says incomplete and how many errored; apply again retries them), exclude (left out of n, which shrinks; n_errors says by how much) or unparsed (counted as unparsed answers, so the unparsed: policy decides)."`
	Doc    string   `yaml:"doc,omitempty" doc:"What this metric block is for."`
	Line   int      `yaml:"-"`
}

// Common returns the common fields (a method name that an embedded
// MetricBase does not shadow).
func (m *MetricBase) Common() *MetricBase { return m }

// BlockName is the block's name: its name:, else its kind.
func (m *MetricBase) BlockName() string {
	if m.Name != "" {
		return m.Name
	}
	return m.Kind
}

// Errors policies of a metric block (errors:).
const (
	ErrorsIncomplete = "incomplete"
	ErrorsExclude    = "exclude"
	ErrorsUnparsed   = "unparsed"
)

// ErrorsPolicy is the block's errors: policy, incomplete when unset.
func (m *MetricBase) ErrorsPolicy() string {
	if m.Errors == "" {
		return ErrorsIncomplete
	}
	return m.Errors
}

// Row statuses: why a row's value is what it is. A row whose status is not
// ok has no value (null), so no one reads a figure that is not one.
const (
	StatusOK         = "ok"
	StatusIncomplete = "incomplete" // errored cases under errors: incomplete
	StatusEmpty      = "empty"      // nothing to count (n = 0)
	StatusTooFew     = "too_few"    // below the block's minimum n for this statistic
	// StatusUndefined: there were cases, but the statistic is 0/0 on them
	// (a kappa where people and judge each said one and the same class; a
	// correction for a judge no better than chance). Convention says why.
	StatusUndefined = "undefined"
)

// UnparsedPolicier is implemented by metrics that have an unparsed: policy;
// it returns the block's own setting ("" = the run's settings.unparsed).
type UnparsedPolicier interface {
	UnparsedOverride() string
}

// MetricKind is a registered metric kind.
type MetricKind struct {
	Name string
	Doc  string
	New  func() MetricConfig
}

var metricKinds = &kindTable[MetricKind]{what: "metric kind"}

// RegisterMetric adds a metric kind; metric packages call it from init.
func RegisterMetric(k MetricKind) { metricKinds.register(k.Name, k) }

// MetricKinds returns every registered metric kind, sorted by name.
func MetricKinds() []MetricKind { return metricKinds.sorted() }

// MetricBuild is what a metric config gets while it compiles.
type MetricBuild struct {
	Diags *Diags
	File  string
	Index int
	Study *Study
	Base  *MetricBase
	Lines map[string]int
}

// Errf records a problem with a field of the current metric block.
func (b *MetricBuild) Errf(field, hint, format string, args ...any) {
	path := fmt.Sprintf("metrics[%d]", b.Index)
	if field != "" {
		path += "." + field
	}
	line := b.Base.Line
	if l, ok := b.Lines[path]; ok {
		line = l
	}
	b.Diags.Addf(b.File, line, path, hint, format, args...)
}

// ResultSet is what metrics read: every case with its outcome.
type ResultSet struct {
	Study   *Study
	Rows    []ResultRow
	Policy  string // unparsed policy: "wrong" or "exclude"
	OutDir  string
	Journal string // path of the journal, for metrics that need transcripts
	// Seed seeds every bootstrap; NewResultSet takes settings.seed.
	Seed uint64
}

// ResultRow is one case: names as reported (report_as applied), the
// case's condition factors (Study.Factors order) and the result.
type ResultRow struct {
	Case     *Case
	Model    string
	Strategy string
	Factors  []string
	Result   *Result
}

// MetricRow is one row of metrics.parquet (long format). Its key is
// (Block, Model, Strategy, Task, Subset, Factors..., Metric); Score refuses
// to write two rows with one key.
type MetricRow struct {
	// Block is the metric block's name; Score fills it.
	Block                                 string
	Model, Strategy, Task, Subset, Metric string
	// Factors are the values of Study.Factors, in that order, of the cell
	// the row describes ("" where a factor is not declared for it).
	Factors              []string
	Value, CILow, CIHigh float64 // NaN = none
	// N is the number of cases (or pairs, prompts, ...) the value counts.
	N int
	// NCases is the number of cases of the cell (or subset) the row
	// describes, errored ones included; NUnparsed of those finished without
	// a parsed answer; NErrors ended in an error. -1 = not applicable (a
	// row over published figures, say).
	NCases, NUnparsed, NErrors int
	// Status is StatusOK (or "", read as ok) when Value is a figure.
	Status string
	// Unparsed and Errors are the policies the row was computed under;
	// Score fills them from the block when empty.
	Unparsed, Errors string
	// Convention says what the number is where its name alone does not:
	// the bins of an ECE, the scale of a confidence, the positive class of
	// an F1, the denominator of a rate.
	Convention string
}

// MetricOutput is what one metric block produced.
type MetricOutput struct {
	Rows   []MetricRow
	Tables []CSVTable
	// Text is printed after the run's summary line (e.g. a comparison with
	// published figures); empty for none.
	Text string
}

// CSVTable is written as <name>.csv in the run folder.
type CSVTable struct {
	Name   string
	Header []string
	Rows   [][]string
}

// MetricNode holds one decoded metric config of whatever kind it names.
type MetricNode struct {
	Config MetricConfig
	Line   int
}

// DecodeNode reads the kind, then decodes the mapping into that kind's config.
func (m *MetricNode) DecodeNode(d *Decoder, n *yaml.Node, path string) {
	n = resolveAlias(n)
	m.Line = n.Line
	k, ok := decodeKind(metricKinds, d, n, path)
	if !ok {
		return
	}
	cfg := k.New()
	d.Decode(n, cfg, path)
	cfg.Common().Line = n.Line
	m.Config = cfg
}
