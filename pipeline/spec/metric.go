package spec

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/promoral/promoral/pipeline/audit"
	"github.com/promoral/promoral/pipeline/yamlstrict"
	"github.com/promoral/promoral/runfolder/manifest"
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
	Errors string   `yaml:"errors,omitempty" enum:"incomplete,exclude,unparsed" default:"incomplete" doc:"How cases that ended in an error (a failed call, a template error) count: incomplete (default: a figure with errored cases in its cell is not given, its row says incomplete and how many errored; apply again retries them), exclude (left out of n, which shrinks; n_errors says by how much) or unparsed (counted as unparsed answers, so the unparsed: policy decides)."`
	Doc    string   `yaml:"doc,omitempty" doc:"What this metric block is for."`
	Reduce string   `yaml:"reduce,omitempty" enum:"none,majority,mean,any,all,first" inherit:"the strategy's reduce" doc:"How the samples of a repeated case (repeats: k) are scored (default: the strategy's reduce, none when it sets none): none (every sample is a row of its own), or one answer per item made by a reducer: majority (the label most samples gave; a tie is no answer, counted as unparsed and reported as majority_ties), first (the lowest repeat), any (a hit when any sample is correct, or gives the positive label on items without gold), all (a hit only when every sample is), mean (the per-item mean score; kind: repeats only). A reduced row costs its samples' sum."`
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
	ErrorsIncomplete = manifest.ErrorsIncomplete
	ErrorsExclude    = manifest.ErrorsExclude
	ErrorsUnparsed   = manifest.ErrorsUnparsed
)

// ErrorsPolicy is the block's errors: policy (decoding gives a block that
// sets none the field's default, incomplete).
func (m *MetricBase) ErrorsPolicy() string { return m.Errors }

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
	// Rows declares the rows of metrics.parquet the kind writes: their
	// names, meaning and denominator (docs/metrics.md is made from them).
	Rows RowsDoc
}

var metricKinds = &kindTable[MetricKind]{what: "metric kind"}

// RegisterMetric adds a metric kind; metric packages call it from init.
func RegisterMetric(k MetricKind) { metricKinds.register(k.Name, k) }

// MetricKinds returns every registered metric kind, sorted by name.
func MetricKinds() []MetricKind { return metricKinds.sorted() }

// MetricBuild is what a metric config gets while it compiles.
type MetricBuild struct {
	Diags *yamlstrict.Diags
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
	// People reads the labels people gave in the run's audit (what
	// HumanLabels returns); scoring sets it, so a kind does no I/O.
	People func() ([]audit.Label, error)
	// Seed seeds every bootstrap; scoring takes settings.seed.
	Seed uint64
	// Outputs says whether the rows carry the strategy's and the judge's
	// outputs. A result set read back from results.parquet carries them
	// only for the tasks a metric reads them from (OutputReader).
	Outputs func(t *Task) bool
	// Marks are, by task, the subsets each item is in as the results read
	// back recorded them (SubsetMark); none for a set built in memory.
	Marks map[*Task]SubsetMarker
}

// HumanLabels are the audit labels in force for the run the set belongs
// to, for the metrics that measure judges against people; none when the
// set has no run folder. The verdicts a task's dataset records (human:,
// judge_columns:) are the task's: Task.HumanLabel.
func (rs *ResultSet) HumanLabels() ([]audit.Label, error) {
	if rs.People == nil {
		return nil, nil
	}
	return rs.People()
}

// OutputReader is implemented by metrics that read the strategy's or the
// judge's outputs of a task's rows (ResultRow.Outputs, Judge): only then
// are those decoded when results are read back for scoring.
type OutputReader interface {
	ReadsOutputs(t *Task) bool
}

// ResultRow is one case as the metrics read it, kept small because a run
// may hold a million: its cell (names as reported, report_as applied; the
// condition factors), its item and its outcome. Build one with a RowCell's Row.
type ResultRow struct {
	*RowCell
	Item *Item
	// Conf is the case's confidence (NaN when none).
	Conf float64
	// Cost is the cost of the case's calls; Tokens their prompt and
	// completion tokens.
	Cost   float64
	Tokens int32
	label  uint16 // in the cell's label table; 0 is none, labelMore in more
	flags  rowFlags
	more   *rowMore
}

// labelMore marks a label beyond the table's numbers, kept in rowMore.
const labelMore = 1<<16 - 1

// RowCell is what the rows of one case cell share.
type RowCell struct {
	Task *Task
	// Model and Strategy are the names reported (report_as applied);
	// RunModel and RunStrategy the run's.
	Model, Strategy string
	Factors         []string
	RunModel        *Model
	RunStrategy     *Strategy
	// Repeat is the sample index of the cell's cases (repeats.go).
	Repeat int
	// Sweep is the cell's swept settings (sweep.go); nil for none.
	Sweep  *Sweep
	labels *labelTable
}

// labelTable numbers the labels rows carry, so a row holds a number, not a
// string (a label outside the answer space can be any text).
type labelTable struct {
	mu    sync.Mutex
	index map[string]uint32
	names []string
	// snap is names as readers see it: rows read labels from many
	// goroutines while scoring, without a lock.
	snap atomic.Pointer[[]string]
}

func newLabelTable() *labelTable {
	t := &labelTable{index: map[string]uint32{"": 0}, names: []string{""}}
	t.snap.Store(&[]string{""})
	return t
}

func (t *labelTable) number(s string) uint32 {
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.index[s]; ok {
		return i
	}
	if len(t.names) >= labelMore {
		return labelMore // the row keeps this one itself
	}
	s = strings.Clone(s) // not a column's buffer
	i := uint32(len(t.names))
	t.index[s] = i
	t.names = append(t.names, s)
	names := t.names
	t.snap.Store(&names)
	return i
}

func (t *labelTable) name(i uint32) string { return (*t.snap.Load())[i] }

type rowFlags uint8

const (
	rowParsed rowFlags = 1 << iota
	rowGraded          // Correct is known (the item has gold)
	rowCorrect
	rowErrored
)

// rowMore is what only some rows have and some metrics read: the
// strategy's and the judge's outputs (ResultSet.Outputs says whether they
// were read) and the judge's cost.
type rowMore struct {
	outputs, judge map[string]any
	judgeCost      float64
	label          string
}

// NewRowCell is the cell that the rows of c's model, strategy and task
// share (what a read-back of results.parquet builds once per cell).
func NewRowCell(c *Case, model, strategy string, factors []string) *RowCell {
	return &RowCell{Task: c.Task, Model: model, Strategy: strategy, Factors: factors, RunModel: c.Model, RunStrategy: c.Strategy, Repeat: c.Repeat, Sweep: c.Sweep, labels: newLabelTable()}
}

// RowCells shares one RowCell among the rows of a cell that report the
// same names, and one label table among them all: what a result set of
// many rows (scoring.NewResultSet, a read-back of results.parquet) builds
// its rows' cells with.
type RowCells struct {
	cells  map[rowCellKey]*RowCell
	labels *labelTable
}

// NewRowCells is an empty set of cells.
func NewRowCells() *RowCells {
	return &RowCells{cells: map[rowCellKey]*RowCell{}, labels: newLabelTable()}
}

type rowCellKey struct {
	cell            int
	model, strategy string
	// factors is the item's place in its task's item factor values (-1
	// when the task reads none).
	factors int
}

// Of is the cell of case c's row, names as reported.
func (rc *RowCells) Of(st *Study, c *Case) *RowCell {
	m, s := c.ReportedNames()
	return rc.Named(st, c, m, s)
}

// Named is Of for a case whose reported names are known (read back from
// its row); the names are copied when a new cell keeps them.
func (rc *RowCells) Named(st *Study, c *Case, m, s string) *RowCell {
	combo := -1
	if f := c.Task.itemFactors; f != nil {
		combo = int(f.comboOf(c.Task, c.Item))
	}
	k := rowCellKey{c.Cell, m, s, combo}
	cell := rc.cells[k]
	if cell == nil {
		m, s = strings.Clone(m), strings.Clone(s)
		k = rowCellKey{c.Cell, m, s, combo}
		cell = &RowCell{Task: c.Task, Model: m, Strategy: s, Factors: st.FactorValues(c), RunModel: c.Model, RunStrategy: c.Strategy, Repeat: c.Repeat, Sweep: c.Sweep, labels: rc.labels}
		rc.cells[k] = cell
	}
	return cell
}

// Row is the compact row of the cell's case on item it.
func (rc *RowCell) Row(it *Item, r *Result) ResultRow { return rowOf(rc, it, r) }

func rowOf(cell *RowCell, it *Item, r *Result) ResultRow {
	row := ResultRow{RowCell: cell, Item: it, Conf: math.NaN(),
		Tokens: int32(r.Acct.PromptTokens + r.Acct.CompletionTokens), Cost: r.Acct.CostUSD}
	row.setLabel(r.Label)
	if r.Confidence != nil {
		row.Conf = *r.Confidence
	}
	if r.Parsed {
		row.flags |= rowParsed
	}
	if r.Correct != nil {
		row.flags |= rowGraded
		if *r.Correct {
			row.flags |= rowCorrect
		}
	}
	if r.Err != "" {
		row.flags |= rowErrored
	}
	if r.Outputs != nil || r.Judge != nil || r.JudgeAcct.CostUSD != 0 {
		row.extra().outputs, row.extra().judge, row.extra().judgeCost = r.Outputs, r.Judge, r.JudgeAcct.CostUSD
	}
	return row
}

func (r *ResultRow) extra() *rowMore {
	if r.more == nil {
		r.more = &rowMore{}
	}
	return r.more
}

func (r *ResultRow) setLabel(s string) {
	if i := r.labels.number(s); i < labelMore {
		r.label = uint16(i)
	} else {
		r.label = labelMore
		r.extra().label = strings.Clone(s)
	}
}

// Label is the case's label ("" when none).
func (r *ResultRow) Label() string {
	if r.label == labelMore {
		return r.more.label
	}
	return r.labels.name(uint32(r.label))
}

// JudgeCost is the cost of the judge's calls.
func (r *ResultRow) JudgeCost() float64 {
	if r.more == nil {
		return 0
	}
	return r.more.judgeCost
}

// Parsed says the label is one of the task's answers.
func (r *ResultRow) Parsed() bool { return r.flags&rowParsed != 0 }

// Errored says the case ended in an error.
func (r *ResultRow) Errored() bool { return r.flags&rowErrored != 0 }

// Correct is whether the answer matched the gold label; ok is false when
// the item has none.
func (r *ResultRow) Correct() (correct, ok bool) {
	return r.flags&rowCorrect != 0, r.flags&rowGraded != 0
}

// Outputs are the strategy's outputs (nil when none, or not read: see
// ResultSet.Outputs).
func (r *ResultRow) Outputs() map[string]any {
	if r.more == nil {
		return nil
	}
	return r.more.outputs
}

// Judge holds the judge's outputs (nil when the task has no judge, or they
// were not read).
func (r *ResultRow) Judge() map[string]any {
	if r.more == nil {
		return nil
	}
	return r.more.judge
}

// ID is the case's id (model/strategy/task/item, the run's names).
func (r *ResultRow) ID() string {
	return caseID(r.RunModel.Name+r.Sweep.tag(), r.RunStrategy.Name, r.Task.Name, r.Item.ID, r.Repeat)
}

// AsUnparsed is the row as an unparsed answer: no label, no confidence,
// not correct, no judge verdict; an error stays an error.
func (r ResultRow) AsUnparsed() ResultRow {
	r.label, r.Conf = 0, math.NaN()
	r.flags &^= rowParsed | rowCorrect
	if r.more != nil {
		r.more = &rowMore{outputs: r.more.outputs, judgeCost: r.more.judgeCost}
	}
	return r
}

// MetricRow is one row of metrics.parquet (long format). Its key is
// (Block, Model, Strategy, Task, Subset, Factors..., Metric); scoring
// refuses to write two rows with one key.
type MetricRow struct {
	// Block is the metric block's name; scoring fills it.
	Block                                 string
	Model, Strategy, Task, Subset, Metric string
	// Factors are the values of Study.Factors, in that order, of the cell
	// the row describes ("" where a factor is not declared for it).
	Factors              []string
	Value, CILow, CIHigh float64 // NaN = none
	// CIReps is the number of bootstrap replicates drawn for the interval
	// (0: none drawn); CIUndefined of those, the replicates whose statistic
	// was undefined, left out of the interval (SetCI).
	CIReps, CIUndefined int
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
	// scoring fills them from the block when empty.
	Unparsed, Errors string
	// Convention says what the number is where its name alone does not:
	// the bins of an ECE, the scale of a confidence, the positive class of
	// an F1, the denominator of a rate.
	Convention string
}

// Key names a row for messages and diffs: block/model/strategy/task/subset
// [factors] metric.
func (r *MetricRow) Key() string {
	k := r.Block + "/" + r.Model + "/" + r.Strategy + "/" + r.Task + "/" + r.Subset
	if len(r.Factors) > 0 {
		k += " [" + strings.Join(r.Factors, ",") + "]"
	}
	return k + " " + r.Metric
}

// MetricOutput is what one metric block produced.
type MetricOutput struct {
	Rows   []MetricRow
	Tables []CSVTable
	// Files are written into the run folder (each Name relative to it)
	// with the block's tables, by scoring: a kind does no I/O, and scoring
	// in memory (diff, a re-score from the journal) writes none.
	Files []OutFile
	// Text is printed after the run's summary line (e.g. a comparison with
	// published figures); empty for none.
	Text string
}

// OutFile is a file a metric block writes into the run folder.
type OutFile struct {
	Name string
	Data []byte
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
	// node is the block as written, which says what was left out (and
	// took its default): the manifest records the fields written.
	node *yaml.Node
}

// DecodeNode reads the kind, then decodes the mapping into that kind's config.
func (m *MetricNode) DecodeNode(d *yamlstrict.Decoder, n *yaml.Node, path string) {
	n = yamlstrict.ResolveAlias(n)
	m.Line = n.Line
	k, ok := decodeKind(metricKinds, d, n, path)
	if !ok {
		return
	}
	cfg := k.New()
	d.Decode(n, cfg, path)
	cfg.Common().Line = n.Line
	m.Config, m.node = cfg, n
}
