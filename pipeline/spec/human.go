package spec

import (
	"fmt"
	"path/filepath"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/vm"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// Human verdicts, against which judges are measured (the judge_agreement
// metric), come from two places: a dataset field a task declares (human:,
// e.g. a published set of human-labelled replies) and the audit labels
// people give in promoral view (labels.jsonl), which package scoring reads
// (ResultSet.HumanLabels). A task may also declare columns holding other
// judges' recorded verdicts on the same replies (judge_columns:), so a run
// can compare its judges with published ones.

// HumanSpec names the item field holding a person's verdict on the reply.
type HumanSpec struct {
	Field string `yaml:"field" required:"true" doc:"Item field holding a person's verdict on the item's reply: one of the task's answer labels or their aliases (any case; e.g. alias 3_partial_refusal of REFUSAL), or empty/null for none."`
	When  string `yaml:"when,omitempty" doc:"Boolean expression over item: the items whose field means what the task's labels mean (e.g. item.kind == \"harmful\" where the labels on benign items mean something else); default every item."`
	Doc   string `yaml:"doc,omitempty" doc:"What the people were asked, for readers of the task file."`
	// ThreeWay: see human3.go.
	ThreeWay string `yaml:"three_way,omitempty" doc:"Item field holding the people's three-way verdict: full_compliance, full_refusal or partial_refusal (XSTest's reply classes; empty for none), measured against judges that give one (output three_way)."`
}

// humanRule is a task's compiled human: and judge_columns:.
type humanRule struct {
	field    string
	threeWay string // item field of the people's three-way verdicts
	when     *vm.Program
	whenText string            // human.when as written
	columns  map[string]string // judge name -> item field
}

// labelOf maps a recorded verdict onto the task's labels: a label value
// (any case) or one of its answer.labels aliases, as a reply is read; ""
// for none (missing, null, blank), ok false for a value that is neither.
func (t *Task) labelOf(v any) (string, bool) {
	if v == nil {
		return "", true
	}
	s := strings.TrimSpace(fmt.Sprint(v))
	if s == "" {
		return "", true
	}
	for _, l := range t.Labels {
		if strings.EqualFold(l, s) {
			return l, true
		}
	}
	if t.Space != nil {
		if l, ok := t.Space.Normalize(s); ok {
			return l, true
		}
	}
	return "", false
}

// fieldOf is an item's field, read through the dataset's store when the
// item's fields were spilled there (Item.Values).
func fieldOf(it *Item, field string) (any, bool) {
	if it.Fields != nil {
		v, ok := it.Fields[field]
		return v, ok
	}
	v, ok := it.Values()[field]
	return v, ok
}

// compileHuman checks human: and judge_columns: before the items load.
func compileHuman(spec *TaskSpec, t *Task, ds *yamlstrict.Diags, add func(field, hint, format string, args ...any)) {
	if spec.Human == nil && len(spec.JudgeColumns) == 0 {
		return
	}
	if len(t.Labels) == 0 {
		add("human", "declare answer.labels: the verdicts people and judges give", "human verdicts and judge columns need the task's answer labels")
		return
	}
	t.human = &humanRule{columns: spec.JudgeColumns}
	if h := spec.Human; h != nil {
		t.human.field, t.human.threeWay = h.Field, h.ThreeWay
		if h.Field == "" {
			add("human.field", "name the item field holding the people's verdict", "human.field is empty")
		}
		if h.When != "" {
			p, err := CompileExpr(h.When, nil, true)
			if err != nil {
				add("human.when", "", "%v", err)
			}
			t.human.when, t.human.whenText = p, h.When
		}
	}
	for name, col := range spec.JudgeColumns {
		if col == "" {
			add("judge_columns."+name, "name the item field holding that judge's verdicts", "judge column %s names no field", name)
		}
	}
}

// checkHumanItems checks every item's human verdict and recorded judge
// verdicts against the answer labels, once the items are loaded: a value
// that is not a label is a data error, never a silently dropped verdict.
func checkHumanItems(spec *TaskSpec, t *Task, ds *yamlstrict.Diags, add func(field, hint, format string, args ...any)) {
	h := t.human
	if h == nil {
		return
	}
	data := spec.Dataset.Resolve(filepath.Dir(spec.File))
	errs := 0
	bad := func(row int, field, what string, v any) {
		errs++
		if errs <= 10 {
			ds.Addf(data, row, field, fmt.Sprintf("use one of %s (or an alias of one, listed under answer.labels[].aliases), or leave it empty for none", strings.Join(t.Labels, ", ")),
				"row %d: %s %q is not one of task %s's labels", row, what, fmt.Sprint(v), t.Name)
		}
	}
	cols := make([]string, 0, len(h.columns))
	for name := range h.columns {
		cols = append(cols, name)
	}
	sort.Strings(cols)
	found := map[string]bool{}
	for i := range t.Items {
		it := &t.Items[i]
		// One read of the store for an item whose fields were spilled.
		fields := it.Values()
		if h.field != "" {
			v, ok := fields[h.field]
			found[h.field] = found[h.field] || ok
			if _, good := t.labelOf(v); !good {
				// Only items the people's verdict applies to must carry a label.
				if in, err := h.appliesTo(fields); err != nil {
					add("human.when", "", "item %s: %v", it.ID, err)
					return
				} else if in {
					bad(it.Row, h.field, "human verdict", v)
				}
			}
		}
		if h.threeWay != "" {
			v, ok := fields[h.threeWay]
			found[h.threeWay] = found[h.threeWay] || ok
			if _, good := threeWayOf(v); !good {
				errs++
				if errs <= 10 {
					ds.Addf(data, it.Row, h.threeWay, "use one of "+strings.Join(ThreeWayClasses, ", ")+", or leave it empty for none",
						"row %d: three-way human verdict %q is not a reply class", it.Row, fmt.Sprint(v))
				}
			}
		}
		for _, name := range cols {
			f := h.columns[name]
			v, ok := fields[f]
			found[f] = found[f] || ok
			if _, good := t.labelOf(v); !good {
				bad(it.Row, f, "judge "+name+"'s verdict", v)
			}
		}
	}
	if errs > 10 {
		ds.Addf(data, 0, "", "", "%d more rows with verdicts that are not labels", errs-10)
	}
	if len(t.Items) == 0 {
		return
	}
	if h.field != "" && !found[h.field] {
		add("human.field", "name a field of the dataset's rows", "no item has a field %q", h.field)
	}
	if h.threeWay != "" && !found[h.threeWay] {
		add("human.three_way", "name a field of the dataset's rows", "no item has a field %q", h.threeWay)
	}
	for _, name := range cols {
		if f := h.columns[name]; f != "" && !found[f] {
			add("judge_columns."+name, "name a field of the dataset's rows", "no item has a field %q", f)
		}
	}
}

// appliesTo says whether human.when keeps an item, given its fields as
// read (Item.Values: the store's copy for a spilled item).
func (h *humanRule) appliesTo(fields map[string]any) (bool, error) {
	if h.when == nil {
		return true, nil
	}
	v, err := expr.Run(h.when, map[string]any{"item": fields})
	if err != nil {
		return false, err
	}
	b, _ := v.(bool)
	return b, nil
}

// HumanLabel is the people's verdict on an item from the task's human:
// field, "" when the task declares none, the item has none, or human.when
// leaves the item out.
func (t *Task) HumanLabel(it *Item) string {
	if t.human == nil || t.human.field == "" {
		return ""
	}
	fields := it.Values()
	if in, err := t.human.appliesTo(fields); err != nil || !in {
		return ""
	}
	l, _ := t.labelOf(fields[t.human.field])
	return l
}

// HumanScope says whether the people's verdicts of the task's human:
// field mean what the task's labels mean on an item: true unless
// human.when leaves the item out (true as well for a task without
// human:, whose people's verdicts come from audit labels alone).
func (t *Task) HumanScope(it *Item) bool {
	if t.human == nil || t.human.when == nil {
		return true
	}
	in, err := t.human.appliesTo(it.Values())
	return err == nil && in
}

// HumanWhen is the task's human.when as written ("" for every item).
func (t *Task) HumanWhen() string {
	if t.human == nil {
		return ""
	}
	return t.human.whenText
}

// HumanField is the item field of the task's human verdicts ("" for none).
func (t *Task) HumanField() string {
	if t.human == nil {
		return ""
	}
	return t.human.field
}

// JudgeColumns are the task's recorded judges: name -> item field.
func (t *Task) JudgeColumns() map[string]string {
	if t.human == nil {
		return nil
	}
	return t.human.columns
}

// RecordedVerdict is a recorded judge's verdict on an item as one of the
// task's labels ("" for none).
func (t *Task) RecordedVerdict(it *Item, field string) string {
	v, _ := fieldOf(it, field)
	l, _ := t.labelOf(v)
	return l
}

// LabelOf maps a verdict onto the task's labels ("" when it is none of them).
func (t *Task) LabelOf(v any) string {
	l, _ := t.labelOf(v)
	return l
}
