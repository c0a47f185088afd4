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
	Kind  string   `yaml:"kind" required:"true" doc:"Metric kind."`
	Name  string   `yaml:"name,omitempty" doc:"Name for this metric block (default: the kind)."`
	Tasks []string `yaml:"tasks,omitempty" doc:"Tasks it scores (default: every task it applies to)."`
	Doc   string   `yaml:"doc,omitempty" doc:"What this metric block is for."`
	Line  int      `yaml:"-"`
}

// Common returns the common fields (a method name that an embedded
// MetricBase does not shadow).
func (m *MetricBase) Common() *MetricBase { return m }

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
}

// ResultRow is one case: names as reported (report_as applied) and the result.
type ResultRow struct {
	Case     *Case
	Model    string
	Strategy string
	Result   *Result
}

// MetricRow is one row of metrics.parquet (long format).
type MetricRow struct {
	Model, Strategy, Task, Subset, Metric string
	Value, CILow, CIHigh                  float64 // NaN = none
	N                                     int
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
