package spec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/template"
	tparse "text/template/parse"
	"unsafe"

	"github.com/promoral/promoral/pipeline/dataset"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/parse"
	"github.com/promoral/promoral/runfolder/manifest"
)

// Study is a loaded, validated run file with everything it references.
type Study struct {
	File       string
	Dir        string
	Run        *RunFile
	Models     []*Model
	Tasks      []*Task
	Strategies []*Strategy
	Cells      []ResolvedCell
	// Notes are what validate and plan tell about a config that loads
	// but may not do what its author expects (varsnote.go).
	Notes   []string
	Metrics []Metric
	// Blocks are the metric blocks' common fields, parallel to Metrics.
	Blocks []*MetricBase
	// Factors are the condition factor names declared on the run's models
	// and strategies, sorted: the extra columns of results.parquet and
	// metrics.parquet.
	Factors []string
	OutDir  string
	// ConfigHash names the config a case's result is computed from: every
	// strategy, task and template file and the run file without what only
	// scoring and pacing read (withRunFileForResults), by name and
	// content, not path. Metric blocks are not in it: results rows of
	// configs that differ only in their metrics carry the same hash.
	ConfigHash string
	PromptsDir string
	// Files are the config, strategy, task and template files read, for the
	// manifest and for `diff`.
	Files []string
	// Skipped says which optional models Connect left out (no key) and
	// which cells and judged tasks went with them.
	Skipped []string
	// Selection is set when Select narrowed the study to part of its
	// cases (selection.go); nil for the whole study.
	Selection *manifest.Selection
	// ResultsKey names what the cases' results depend on (resultsKey).
	ResultsKey string
	// casesDigest: CasesDigest, computed once (Select and Connect change
	// the cases before any apply asks).
	digestOnce  sync.Once
	casesDigest string
}

// ResolvedCell is one matrix cell with its parts looked up.
type ResolvedCell struct {
	Model    *Model
	Strategy *Strategy
	Task     *Task
	// Factors are the cell's condition factor values, in Study.Factors
	// order ("" where neither its model nor its strategy sets one).
	Factors []string
	// Repeat is the cell's sample index, 0 to Repeats-1 (repeats.go): a
	// cell of k repeats is k cells, one per repeat, next to each other.
	Repeat int
	// Sweep is the cell's combination of its model's swept settings
	// (sweep.go); nil when the model sweeps none.
	Sweep *Sweep
}

// Model is a model entry ready to be called.
type Model struct {
	Spec *ModelSpec
	Name string
	// Identity distinguishes endpoints that share a model id (Together vs
	// DeepSeek for DeepSeek-V3); it is part of every cache key.
	Identity string
	Env      map[string]any
	Provider llm.Provider
	// Factors are the values of the entry's factors (derived ones
	// computed), for the manifest.
	Factors map[string]string
}

// Item is one dataset row as a task sees it.
type Item struct {
	ID  string
	Row int
	// Fields are the item's fields; nil when a large dataset keeps them in
	// its store (read them with Values).
	Fields map[string]any
	// Gold is the gold label in the task's answer space; "" when the item
	// has none (e.g. MoralChoice high ambiguity, safety prompts).
	Gold string
	ref  dataset.Ref
	// src is what the item shares with the task's other items of its
	// shape; nil for an item built by hand.
	src *itemSource
}

// StoredItem is an item whose fields store holds under ref, as a large
// dataset's items are kept: Values reads them from the store.
func StoredItem(id string, store *dataset.Store, ref dataset.Ref) Item {
	return Item{ID: id, ref: ref, src: &itemSource{store: store}}
}

// itemSource is what the items of a task with the same field names share,
// held once, not by each of a million items (an Item takes 64 bytes).
type itemSource struct {
	// store holds the fields of the items with a ref.
	store *dataset.Store
	// shape is the items' field names (sorted, NUL-separated), so
	// validation groups items by their fields without reading them back.
	shape string
}

// Values are the item's fields: Fields, or, for an item of a large dataset,
// its fields read back from the dataset's store (a new map each time).
func (it *Item) Values() map[string]any {
	if it.Fields != nil || it.src == nil || it.src.store == nil || it.ref.IsZero() {
		return it.Fields
	}
	m, err := it.src.store.Get(it.ref)
	if err != nil {
		// The store is this process's own temporary file: failing to read
		// it back is a broken disk, not a bad input.
		panic(fmt.Sprintf("item %s: %v", it.ID, err))
	}
	return m
}

// Task is a compiled task: its items, answer space and wording blocks.
type Task struct {
	Spec     *TaskSpec
	Name     string
	File     string
	Items    []Item
	Labels   []string
	Positive string
	Space    *parse.Space
	// Extract holds the task's default extraction rules, compiled.
	Extract *parse.Extractor
	Judge   *TaskJudge
	// Fixture: the task reads invented test data (TaskSpec.Fixture).
	Fixture bool
	// Data is where the items came from (nil for a task built by hand).
	Data *TaskData
	// From is the task file the task was made from ({use: <file>, name:
	// <variant>}), so strategies that apply to the file apply to its
	// variants; "" for a task declared inline in the run file.
	From string
	// human holds the task's human: and judge_columns: (human.go).
	human *humanRule
	// itemFactors are the factors read from the items (factorspec.go).
	itemFactors *itemFactors
	blocks      []namedTmpl
	static      map[string]any
	// head and rest: env's starting map and the blocks left to fill it
	// (makeHead).
	headOnce sync.Once
	head     map[string]any
	rest     []namedTmpl

	shapeOnce sync.Once
	shapeList []itemShape
	// faulty: loading the task reported a problem, so the dry run leaves
	// it out (what it would report may follow from that problem).
	faulty bool
}

type namedTmpl struct {
	name string
	t    *template.Template
	// fixed: the template is text alone, whatever the data, so every case
	// takes text instead of running it.
	fixed bool
	text  string
}

func newNamedTmpl(name string, t *template.Template) namedTmpl {
	n := namedTmpl{name: name, t: t}
	n.text, n.fixed = fixedText(t)
	return n
}

// fixedText is the output of a template made of text alone (no action,
// so running it always writes exactly that text, whatever the data).
func fixedText(t *template.Template) (string, bool) {
	if t == nil || t.Tree == nil || t.Tree.Root == nil {
		return "", false
	}
	var b strings.Builder
	for _, n := range t.Tree.Root.Nodes {
		tn, ok := n.(*tparse.TextNode)
		if !ok {
			return "", false
		}
		b.Write(tn.Text)
	}
	return b.String(), true
}

// Case is one model x strategy x task x item.
type Case struct {
	Ordinal  int
	Cell     int
	Model    *Model
	Strategy *Strategy
	Task     *Task
	Item     *Item
	// Repeat is the case's sample index (repeats.go); 0 without repeats.
	Repeat int
	// Sweep is the case's swept settings (sweep.go); nil for none.
	Sweep *Sweep
}

// ID is readable and stable across runs: model/strategy/task/item, the
// model followed by its swept settings ({temperature=0.7}) in a sweep, and
// #r<i> for a repeat i > 0 (repeat 0 keeps the id it had before repeats).
func (c *Case) ID() string {
	return caseID(c.Model.Name+c.Sweep.tag(), c.Strategy.Name, c.Task.Name, c.Item.ID, c.Repeat)
}

// FactorValues are the case's condition factor values (Study.Factors
// order): its cell's, and those its task reads from its item.
func (s *Study) FactorValues(c *Case) []string {
	if c.Cell >= len(s.Cells) {
		return nil
	}
	vs := s.Cells[c.Cell].Factors
	f := c.Task.itemFactors
	if f == nil || len(vs) == 0 {
		return vs
	}
	out := slices.Clone(vs)
	t := f.tuple(f.comboOf(c.Task, c.Item))
	for j, p := range f.at {
		out[p] = t[j]
	}
	return out
}

// ReportedNames are the model and strategy names results carry: the case's
// own, or, for re-scored recorded replies, the item's (task report_as).
func (c *Case) ReportedNames() (model, strategy string) {
	if c.Task.Spec.ReportAs == nil {
		return c.Model.Name, c.Strategy.Name
	}
	return c.ReportedNamesIn(c.Item.Values())
}

// ReportedNamesIn is ReportedNames with the item's fields at hand: a
// spilled item's fields are read back from the store at each Values.
func (c *Case) ReportedNamesIn(f map[string]any) (model, strategy string) {
	model, strategy = c.Model.Name, c.Strategy.Name
	if ra := c.Task.Spec.ReportAs; ra != nil {
		if v, ok := f[ra.Model].(string); ok && ra.Model != "" {
			model = v
		}
		if v, ok := f[ra.Strategy].(string); ok && ra.Strategy != "" {
			strategy = v
		}
	}
	return model, strategy
}

// NumCases is the number of cases the matrix expands to.
func (s *Study) NumCases() int {
	n := 0
	for _, c := range s.Cells {
		n += len(c.Task.Items)
	}
	return n
}

// NumItems is the number of items the study's tasks hold in memory.
func (s *Study) NumItems() int {
	n := 0
	for _, t := range s.Tasks {
		n += len(t.Items)
	}
	return n
}

// EachCase calls fn for every case in order, without materialising them all.
func (s *Study) EachCase(fn func(c *Case) bool) {
	ord := 0
	for ci, cell := range s.Cells {
		for i := range cell.Task.Items {
			c := &Case{Ordinal: ord, Cell: ci, Model: cell.Model, Strategy: cell.Strategy, Task: cell.Task, Item: &cell.Task.Items[i], Repeat: cell.Repeat, Sweep: cell.Sweep}
			ord++
			if !fn(c) {
				return
			}
		}
	}
}

// EachCaseOf is EachCase over the cells of one model, but the cases whose
// ordinal skip holds (skip may be nil).
func (s *Study) EachCaseOf(m *Model, skip func(ord int) bool, fn func(c *Case) bool) {
	ord := 0
	for ci, cell := range s.Cells {
		if cell.Model != m {
			ord += len(cell.Task.Items)
			continue
		}
		for i := range cell.Task.Items {
			if skip != nil && skip(ord) {
				ord++
				continue
			}
			c := &Case{Ordinal: ord, Cell: ci, Model: cell.Model, Strategy: cell.Strategy, Task: cell.Task, Item: &cell.Task.Items[i], Repeat: cell.Repeat, Sweep: cell.Sweep}
			ord++
			if !fn(c) {
				return
			}
		}
	}
}

// Model returns the model with that name.
func (s *Study) Model(name string) *Model {
	for _, m := range s.Models {
		if m.Name == name {
			return m
		}
	}
	return nil
}

// Strategy returns the strategy with that name.
func (s *Study) Strategy(name string) *Strategy {
	for _, x := range s.Strategies {
		if x.Name == name {
			return x
		}
	}
	return nil
}

// Task returns the task with that name.
func (s *Study) Task(name string) *Task {
	for _, t := range s.Tasks {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Index is an item's position in the task's Items; ok is false for an item
// that is not one of them.
func (t *Task) Index(it *Item) (int, bool) {
	if len(t.Items) == 0 {
		return 0, false
	}
	base := uintptr(unsafe.Pointer(&t.Items[0]))
	p := uintptr(unsafe.Pointer(it))
	if p < base {
		return 0, false
	}
	i := int((p - base) / unsafe.Sizeof(Item{}))
	if i >= len(t.Items) || &t.Items[i] != it {
		return 0, false
	}
	return i, true
}

// Env renders the task's wording blocks for one item (env is the case's
// environment) into the task environment strategies read as
// .task.<block>.
func (t *Task) Env(env map[string]any) (map[string]any, error) {
	t.headOnce.Do(t.makeHead)
	out := maps.Clone(t.head)
	if len(t.rest) == 0 {
		return out, nil
	}
	data := map[string]any{"item": env["item"], "task": out, "params": env["params"], "model": env["model"]}
	var buf []byte
	for _, b := range t.rest {
		if b.fixed {
			out[b.name] = b.text
			continue
		}
		w := &sliceWriter{buf: buf[:0]}
		if err := ExecTemplate(b.t, w, data); err != nil {
			return nil, fmt.Errorf("task %s, block %s: %w", t.Name, b.name, err)
		}
		out[b.name] = string(w.buf)
		buf = w.buf
	}
	return out, nil
}

// makeHead makes the map every case's wording starts from: the static
// values and the fixed blocks before the first block that runs (a block
// sees the blocks before it, so those after wait their turn), with room
// for the rest.
func (t *Task) makeHead() {
	t.head = make(map[string]any, len(t.static)+len(t.blocks))
	for k, v := range t.static {
		t.head[k] = v
	}
	t.rest = t.blocks
	for len(t.rest) > 0 && t.rest[0].fixed {
		t.head[t.rest[0].name] = t.rest[0].text
		t.rest = t.rest[1:]
	}
}

type sliceWriter struct{ buf []byte }

func (w *sliceWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	return len(p), nil
}

// CasesDigest is a digest of the study's case ids in ordinal order
// (computed once).
func (s *Study) CasesDigest() string {
	s.digestOnce.Do(func() {
		h := sha256.New()
		s.EachCase(func(c *Case) bool {
			io.WriteString(h, c.ID())
			h.Write([]byte{0})
			return true
		})
		s.casesDigest = hex.EncodeToString(h.Sum(nil)[:16])
	})
	return s.casesDigest
}

// UnparsedPolicy is "wrong" (default) or "exclude".
func (s *Study) UnparsedPolicy() string {
	if s.Run.Settings.Unparsed == "" {
		return "wrong"
	}
	return s.Run.Settings.Unparsed
}
