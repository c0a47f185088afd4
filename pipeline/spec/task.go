package spec

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/pipeline/dataset"
	"github.com/promoral/promoral/pipeline/parse"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// TaskSpec is one task file: a dataset bound to its answer space, gold
// labels, extraction rules and the wording blocks strategies reuse.
type TaskSpec struct {
	Name         string            `yaml:"name" required:"true" doc:"Task name, used in the matrix and outputs."`
	Description  string            `yaml:"description,omitempty" doc:"What the task measures."`
	Source       string            `yaml:"source,omitempty" doc:"Where the data comes from, its licence and citation."`
	Type         string            `yaml:"type,omitempty" enum:"label,letter,judge,none" doc:"Answer type strategies can key on: label (named labels), letter (multiple choice), judge (a judge decides), or none."`
	Dataset      dataset.Spec      `yaml:"dataset" required:"true" doc:"The data file and how to read it."`
	Gold         string            `yaml:"gold,omitempty" doc:"Item field holding the gold answer; its values are mapped to labels through answer.labels[].gold (or the label values themselves)."`
	Answer       parse.Space       `yaml:"answer,omitempty" doc:"The answer space: labels, their aliases and gold values, and the positive class."`
	Extract      parse.Spec        `yaml:"extract,omitempty" doc:"Default extraction rules for replies to this task (extract stages use them unless they give their own)."`
	Blocks       map[string]string `yaml:"blocks,omitempty" doc:"Wording blocks as templates over .item (and .task), rendered per item; strategies read them as .task.<name>."`
	Vars         map[string]any    `yaml:"vars,omitempty" doc:"Static values strategies read as .task.<name> (e.g. a role description)."`
	Demos        string            `yaml:"demos,omitempty" doc:"YAML list of few-shot demonstrations, relative to the prompts folder; read as .task.demos."`
	Subsets      map[string]string `yaml:"subsets,omitempty" doc:"Named item subsets as boolean expressions over item, for per-subset metrics."`
	Keep         []string          `yaml:"keep,omitempty" doc:"Item fields copied into results.parquet (as JSON in the item column)."`
	Judge        *JudgeSpec        `yaml:"judge,omitempty" doc:"A judge graph run after the strategy on every case; its label and confidence become the case's (e.g. the safety judge)."`
	Human        *HumanSpec        `yaml:"human,omitempty" doc:"Item field holding people's verdicts on the item's reply, against which judges are measured (metric judge_agreement)."`
	JudgeColumns map[string]string `yaml:"judge_columns,omitempty" doc:"Other judges' recorded verdicts on the item's reply: judge name -> item field (one of the answer labels or their aliases, any case, or empty for none); judge_agreement measures them beside the run's own judges."`
	Factors      Factors           `yaml:"factors,omitempty" doc:"Condition factors read from each item ({thinking: {from: item.thinking}}, or {expr: ...} over item and task), so the rows of one cell group by their own condition; or a value for every item of the task. Columns of results.parquet and metrics.parquet that the tables and figures group by."`
	ReportAs     *ReportAs         `yaml:"report_as,omitempty" doc:"Item fields that name the model and strategy results are reported under (for re-scoring recorded replies)."`
	Fixture      string            `yaml:"fixture,omitempty" doc:"Marks dataset.path as invented test data and says how to point the task at the real data. A run that uses the task fails validate, plan and apply unless it sets settings.allow_fixtures; a later layer that sets dataset.path (tasks: [{use: <task>, dataset: {path: ...}}]) lifts the mark."`
	File         string            `yaml:"-"`
	Line         int               `yaml:"-"`
}

// JudgeSpec names the judge strategy and the model it calls.
type JudgeSpec struct {
	Strategy string `yaml:"strategy" required:"true" doc:"Judge strategy (configs/strategies/<name>.yaml); it reads the judged outputs as subject.<field> (subject.reply, subject.model, ...)."`
	Model    string `yaml:"model,omitempty" doc:"Name of a model declared in the run file that the judge calls; a judge strategy without a prompt stage (it decides from the judged outputs alone) needs none."`
}

// ReportAs names item fields carrying the model and strategy of recorded replies.
type ReportAs struct {
	Model    string `yaml:"model,omitempty" doc:"Item field holding the model name to report."`
	Strategy string `yaml:"strategy,omitempty" doc:"Item field holding the strategy name to report."`
}

// TaskJudge is a resolved judge.
type TaskJudge struct {
	Strategy *Strategy
	Model    *Model
}

// itemDigest is what loading keeps of an item whose fields go to the
// store, by value: a million items' digests are a table of 8-byte entries,
// not a million allocations, and keep nothing of the decoded rows alive.
type itemDigest struct {
	shape uint32 // the place of the item's field names in digester.shapes, from 1
	gold  uint32 // noGold, emptyGold, badGold, or goldLabel + a place in digester.golds
}

const (
	noGold    uint32 = iota // the item has no gold field
	emptyGold               // its gold is null or ""
	badGold                 // its gold is not in the answer space (the message reads it back)
	goldLabel
)

// digester digests the items of one task as they load.
type digester struct {
	spec *TaskSpec
	// table holds the digests of the items whose fields went to the
	// store: dataset.Item.Digest is a place in it, from 1.
	table []itemDigest
	// shapes are the distinct lists of field names (sorted,
	// NUL-separated), each kept once.
	shapes  []string
	shapeAt map[string]uint32
	// keys are the last item's field names, sorted, and shape their
	// shape: the next item most likely has the same (a dataset's rows
	// share their columns), so most items sort nothing.
	keys  []string
	shape uint32
	// golds are the gold labels met, each once.
	golds  []string
	goldAt map[string]uint32
}

func newDigester(spec *TaskSpec) *digester {
	return &digester{spec: spec, shapeAt: map[string]uint32{}, goldAt: map[string]uint32{}}
}

func (g *digester) digest(f map[string]any) itemDigest {
	d := itemDigest{shape: g.shapeOf(f)}
	if g.spec.Gold != "" {
		d.gold = g.goldOf(f)
	}
	return d
}

// keep digests f into the table and returns its place there, from 1.
func (g *digester) keep(f map[string]any) uint32 {
	g.table = append(g.table, g.digest(f))
	return uint32(len(g.table))
}

func (g *digester) shapeOf(f map[string]any) uint32 {
	if g.shape != 0 && len(g.keys) == len(f) {
		same := true
		for _, k := range g.keys {
			if _, ok := f[k]; !ok {
				same = false
				break
			}
		}
		if same {
			return g.shape
		}
	}
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	sig := strings.Join(keys, "\x00")
	sh, ok := g.shapeAt[sig]
	if !ok {
		g.shapes = append(g.shapes, sig)
		sh = uint32(len(g.shapes))
		g.shapeAt[sig] = sh
	}
	g.keys, g.shape = keys, sh
	return sh
}

// goldOf maps the item's gold value to its label once, while the fields
// are at hand, so only a number is kept of it.
func (g *digester) goldOf(f map[string]any) uint32 {
	raw, ok := f[g.spec.Gold]
	switch {
	case !ok:
		return noGold
	case raw == nil || raw == "":
		return emptyGold
	}
	label, ok := g.spec.Answer.Gold(raw)
	if !ok {
		return badGold
	}
	at, ok := g.goldAt[label]
	if !ok {
		g.golds = append(g.golds, label)
		at = goldLabel + uint32(len(g.golds)-1)
		g.goldAt[label] = at
	}
	return at
}

var reservedTaskKeys = map[string]bool{"name": true, "labels": true, "positive": true, "type": true, "demos": true}

// compileTask loads the task's data and compiles its rules and blocks.
func compileTask(spec *TaskSpec, promptsDir string, ds *yamlstrict.Diags, where func(field string) (file string, line int, path string), store *dataset.Store) *Task {
	// add reports a problem of a field at the file and line where it was
	// written, or its nearest written parent (a run file's override of a
	// task file's field: at the override).
	add := func(field, hint, format string, args ...any) {
		file, line, path := where(field)
		ds.Addf(file, line, path, hint, format, args...)
	}
	t := &Task{Spec: spec, Name: spec.Name, File: spec.File, Positive: spec.Answer.Positive}
	before := len(*ds)
	addErrs := func(field string, errs []error) {
		for _, err := range errs {
			f, msg := field, err.Error()
			var se *dataset.SpecError
			if errors.As(err, &se) {
				f, msg = "dataset."+se.Field, se.Msg
			}
			add(f, "", "%s", msg)
		}
	}
	addErrs("dataset", spec.Dataset.Check())
	if len(spec.Answer.Labels) > 0 {
		addErrs("answer", spec.Answer.Check())
		t.Space = &spec.Answer
		for _, l := range spec.Answer.Labels {
			t.Labels = append(t.Labels, l.Value)
		}
		addErrs("extract", spec.Extract.Check(&spec.Answer))
		if len(*ds) == before {
			x, err := parse.Compile(&spec.Extract, &spec.Answer)
			if err != nil {
				add("extract", "", "%v", err)
			}
			t.Extract = x
		}
	} else if spec.Gold != "" {
		add("answer.labels", "declare the labels the gold values map to", "the task has a gold field but no answer labels")
	}
	t.static = map[string]any{"name": spec.Name, "labels": t.Labels, "positive": spec.Answer.Positive, "type": spec.Type}
	for k, v := range spec.Vars {
		if reservedTaskKeys[k] {
			add("vars."+k, "rename it", "%q is a reserved task key", k)
		}
		t.static[k] = v
	}
	if spec.Demos != "" {
		path := promptFile(promptsDir, spec.Demos)
		data, err := os.ReadFile(path)
		if err != nil {
			add("demos", fileHint(promptsDir, spec.Demos, "(demos paths are relative to the prompts folder)"), "%v", err)
		} else {
			var demos []map[string]any
			if err := yaml.Unmarshal(data, &demos); err != nil {
				var te *yaml.TypeError
				if errors.As(err, &te) {
					ds.Addf(path, 0, "", "write a YAML list of mappings", "demonstrations: %v", err)
				} else {
					ds.Add(yamlstrict.SyntaxDiag(path, data, err))
				}
			}
			list := make([]any, len(demos))
			for i, d := range demos {
				list[i] = d
			}
			t.static["demos"] = list
		}
	}
	names := make([]string, 0, len(spec.Blocks))
	for k := range spec.Blocks {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		if reservedTaskKeys[k] || spec.Vars[k] != nil {
			add("blocks."+k, "rename it", "block %q clashes with a reserved task key or a var", k)
			continue
		}
		tm, err := parseTemplate(fmt.Sprintf("%s blocks.%s", spec.File, k), spec.Blocks[k])
		if err != nil {
			add("blocks."+k, "fix the template", "%v", err)
			continue
		}
		t.blocks = append(t.blocks, newNamedTmpl(k, tm))
	}
	compileHuman(spec, t, ds, add)
	for name, src := range spec.Subsets {
		if _, err := CompileExpr(src, nil, true); err != nil {
			add("subsets."+name, "", "%v", err)
		}
	}
	if len(*ds) > before {
		return t
	}
	if spec.Dataset.Hub != nil && len(spec.Dataset.Files) == 0 {
		standIns(spec, t) // not fetched: see TaskData.Pending
		return t
	}
	g := newDigester(spec)
	var srcs []*itemSource // by shape number - 1
	var golds []uint32     // each item's gold, as digested, until checked below
	_, err := dataset.LoadWith(&spec.Dataset, filepath.Dir(spec.File), dataset.Options{Store: store, Digest: g.keep,
		// The items go straight into t.Items, so the loader's and the
		// task's copies of a million items are never held at once.
		Each: func(i, n int, it dataset.Item) {
			if i == 0 {
				t.Items = make([]Item, n)
				if spec.Gold != "" {
					golds = make([]uint32, n)
				}
			}
			var d itemDigest
			if it.Digest > 0 {
				d = g.table[it.Digest-1]
			} else {
				d = g.digest(it.Fields)
			}
			for len(srcs) < len(g.shapes) {
				srcs = append(srcs, &itemSource{store: store, shape: g.shapes[len(srcs)]})
			}
			t.Items[i] = Item{ID: it.ID, Row: it.Row, Fields: it.Fields, ref: it.Ref, src: srcs[d.shape-1]}
			if golds != nil {
				golds[i] = d.gold
			}
		}})
	g.table = nil
	if err != nil {
		t.Items = nil
		field := "dataset"
		var de *dataset.Error
		if errors.As(err, &de) && de.Row == 0 {
			field = "dataset.path" // not a row's problem: the file itself
		}
		add(field, "", "%v", err)
		return t
	}
	if len(t.Items) == 0 {
		add("dataset", "check the filter, limit and path", "the dataset has no items")
	}
	goldErrs := 0
	for i := range golds {
		it := &t.Items[i]
		switch code := golds[i]; code {
		case noGold:
			ds.Addf(spec.Dataset.Resolve(filepath.Dir(spec.File)), it.Row, spec.Gold, "fix the row, or the task's gold field", "row %d has no gold field %q", it.Row, spec.Gold)
			goldErrs++
		case emptyGold:
		case badGold:
			raw := it.Values()[spec.Gold]
			ds.Addf(spec.Dataset.Resolve(filepath.Dir(spec.File)), it.Row, spec.Gold, "add the value to answer.labels[].gold", "row %d: gold value %v is not in the answer space %v", it.Row, raw, t.Labels)
			goldErrs++
		default:
			it.Gold = g.golds[code-goldLabel]
		}
		if goldErrs >= 10 {
			add("gold", "", "stopped after 10 gold errors")
			// The items after the tenth error are left empty, as they
			// always were; checkHumanItems reads them so.
			clear(t.Items[i+1:])
			break
		}
	}
	checkHumanItems(spec, t, ds, add)
	return t
}
