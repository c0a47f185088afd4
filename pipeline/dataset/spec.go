package dataset

import (
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"

	"github.com/expr-lang/expr"
)

// Spec is a task's `dataset:` mapping. Every knob is plain data so that
// adding a dataset in a known file format never needs Go code.
//
// Processing order (each step sees the output of the previous one):
//
//  1. read every row of Path (all rows, so duplicate ids and malformed rows
//     are reported even when Filter or Limit would hide them);
//  2. Fields: add the mapped item fields (source columns are kept too);
//  3. Types: convert the listed fields;
//  4. ID / IDColumns: give the row its id; ids must be unique in the file;
//  5. Filter, then Exclude, drop rows;
//  6. Limit keeps the first N rows, then Sample draws n of them;
//  7. Expand turns each kept row into one item per variant;
//  8. Shuffle permutes option fields per item.
//
// Limit and Sample count source rows, not expanded items, so the variants of
// a row (an ETHICS-Contrast pair) are always kept or dropped together.
type Spec struct {
	Path      string            `yaml:"path,omitempty" doc:"data file, relative to the folder of the YAML file that declares it; use this or hub"`
	Hub       *Hub              `yaml:"hub,omitempty" doc:"a Hugging Face dataset by reference (id, config, split, revision), fetched into the cache on first use, pinned in the run's lock file and verified at every load; use this or path"`
	Format    string            `yaml:"format,omitempty" enum:"jsonl,json,csv,tsv,parquet" doc:"jsonl, json (an array of objects), csv, tsv or parquet; inferred from the extension when empty (.jsonl/.ndjson, .json, .csv, .tsv/.tab, .parquet/.pq, each optionally + .gz); gzip is detected from the content"`
	ID        string            `yaml:"id,omitempty" doc:"column (dotted path allowed) holding a unique item id; when neither id nor id_columns is set the id is <file stem>:<row>"`
	IDColumns []string          `yaml:"id_columns,omitempty" doc:"columns whose values, joined with ':', form a unique item id, e.g. [model, strategy, item]; use instead of id"`
	Fields    map[string]string `yaml:"fields,omitempty" doc:"item field -> source column (dotted path into nested objects and lists, e.g. action1_violates.death); all source columns are kept under their own names too"`
	Types     map[string]string `yaml:"types,omitempty" enum:"int,float,bool,string" doc:"item field -> int, float, bool or string; converts the value (CSV and TSV cells are always strings); null, and an empty string for int/float/bool, become null"`
	Filter    string            `yaml:"filter,omitempty" doc:"expr-lang boolean over the row's fields after fields/types, e.g. kind == \"harmful\"; rows where it is false are dropped; a column that is not an identifier is $env[\"meta.lang\"]; a missing field is nil"`
	Exclude   *Exclude          `yaml:"exclude,omitempty" doc:"drop rows whose field value appears in a column of another file (keeps dev and test sets disjoint)"`
	Limit     int               `yaml:"limit,omitempty" doc:"keep only the first N rows after filter and exclude, in file order; fewer rows than N is not an error"`
	Sample    *Sample           `yaml:"sample,omitempty" doc:"seeded sample of n rows without replacement, kept in file order; n larger than the rows available is an error"`
	Expand    *Expand           `yaml:"expand,omitempty" doc:"turn each row into one item per variant (e.g. the original and edited halves of a contrast pair)"`
	Shuffle   *Shuffle          `yaml:"shuffle,omitempty" doc:"seeded per-item permutation of answer options, with the gold answer mapped to its new letter"`
	Match     *Match            `yaml:"match,omitempty" doc:"check the loaded items against a shipped index of the same rows (ids and text prefixes); a mismatch is an error"`

	// Files are the local files a hub reference resolved to (the cache's
	// verified copies), read in order instead of Path; set by the caller
	// that resolved the reference.
	Files []string `yaml:"-"`
}

// Sample draws a fixed-size random subset of rows.
type Sample struct {
	N    int    `yaml:"n,omitempty" required:"true" doc:"number of rows to draw"`
	Seed uint64 `yaml:"seed,omitempty" doc:"seed; the draw depends only on the seed and the row ids, so it is the same on every run and platform"`
}

// Exclude removes rows that also occur in another file.
type Exclude struct {
	Path   string `yaml:"path,omitempty" required:"true" doc:"the other data file, relative to the folder of the YAML file like dataset.path"`
	Format string `yaml:"format,omitempty" doc:"format of the other file; inferred from its extension when empty"`
	Field  string `yaml:"field,omitempty" required:"true" doc:"field of this dataset (after fields/types) whose value is looked up, e.g. scenario"`
	Column string `yaml:"column,omitempty" doc:"column of the other file (dotted path allowed) holding the values to exclude; defaults to field"`
}

// Expand makes several items from one row.
type Expand struct {
	As       string    `yaml:"as,omitempty" doc:"item field that receives the variant name (default variant)"`
	Link     string    `yaml:"link,omitempty" doc:"item field that receives the source row's id, linking the variants (default source_id)"`
	Variants []Variant `yaml:"variants,omitempty" required:"true" doc:"the variants, in output order; item id is <row id>:<variant name>"`
}

// Variant is one of the items an expanded row becomes.
type Variant struct {
	Name   string            `yaml:"name,omitempty" required:"true" doc:"variant name, stored in the expand.as field and appended to the item id"`
	Fields map[string]string `yaml:"fields,omitempty" required:"true" doc:"item field -> source column for this variant, e.g. scenario: contrast_scenario"`
}

// Shuffle permutes answer options per item. The permutation depends only on
// (seed, item id), so an item keeps its order when other rows are filtered
// out or sampled away.
type Shuffle struct {
	Seed      uint64   `yaml:"seed,omitempty" doc:"seed of the per-item permutation; record it so results can be traced"`
	Options   []string `yaml:"options,omitempty" doc:"fields holding the options in their original order, e.g. [action1, action2]; use this or list"`
	Into      []string `yaml:"into,omitempty" doc:"fields that receive the shuffled options, one per option, e.g. [option_a, option_b]; required with options"`
	List      string   `yaml:"list,omitempty" doc:"a field holding the options as a list, e.g. options; use this or options"`
	IntoList  string   `yaml:"into_list,omitempty" doc:"field that receives the shuffled list (default: the list field itself)"`
	Parallel  []string `yaml:"parallel,omitempty" doc:"other list fields permuted the same way as list, e.g. [option_types]"`
	Gold      string   `yaml:"gold,omitempty" doc:"field naming the correct option; when it is empty or null the item has no gold and gold_into is set to \"\""`
	GoldKind  string   `yaml:"gold_kind,omitempty" enum:"name,letter,index" doc:"how gold names the option: name (one of options; default with options), letter (A is the first; default with list) or index (0-based)"`
	GoldInto  string   `yaml:"gold_into,omitempty" doc:"field that receives the gold option's letter after shuffling (default gold_letter)"`
	OrderInto string   `yaml:"order_into,omitempty" doc:"field that receives, for each new position, the original option's name (options) or letter (list) (default option_order)"`
}

// Defaults for optional output field names.
const (
	DefaultExpandAs  = "variant"
	DefaultLink      = "source_id"
	DefaultGoldInto  = "gold_letter"
	DefaultOrderInto = "option_order"
)

// Formats lists the supported values of Spec.Format.
var Formats = []string{"jsonl", "json", "csv", "tsv", "parquet"}

// Known type names for Spec.Types.
var typeNames = []string{"int", "float", "bool", "string"}

// Resolve returns the data file's path: Path joined to baseDir unless it is
// absolute.
func (s *Spec) Resolve(baseDir string) string { return resolve(s.Path, baseDir) }

func resolve(p, baseDir string) string {
	if p == "" || filepath.IsAbs(p) {
		return p
	}
	return filepath.Join(baseDir, p)
}

// inferFormat maps a file name to a format. A trailing .gz is ignored here
// because compression is detected from the file's content.
func inferFormat(path string) string {
	name := strings.ToLower(filepath.Base(path))
	name = strings.TrimSuffix(name, ".gz")
	switch filepath.Ext(name) {
	case ".jsonl", ".ndjson":
		return "jsonl"
	case ".json":
		return "json"
	case ".csv":
		return "csv"
	case ".tsv", ".tab":
		return "tsv"
	case ".parquet", ".pq":
		return "parquet"
	}
	return ""
}

// fileFormat returns the explicit format or the inferred one ("" if neither).
func fileFormat(format, path string) string {
	if format != "" {
		return strings.ToLower(format)
	}
	return inferFormat(path)
}

// stem is the file name without compression and format extensions; it
// prefixes default ids so that they stay readable and stable.
func stem(path string) string {
	name := filepath.Base(path)
	name = strings.TrimSuffix(name, ".gz")
	return strings.TrimSuffix(name, filepath.Ext(name))
}

// SpecError is a problem in the spec itself, found without reading data.
// Field is the dotted path below the dataset mapping, e.g. "shuffle.into".
type SpecError struct {
	Field string
	Msg   string
}

func (e *SpecError) Error() string { return "dataset." + e.Field + ": " + e.Msg }

// Check validates the spec without touching the file system, so `validate`
// can report every spec problem at once before any data is read.
func (s *Spec) Check() []error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, &SpecError{Field: field, Msg: fmt.Sprintf(format, args...)})
	}
	join := func(parent, f string) string {
		if parent == "" {
			return f
		}
		return parent + "." + f
	}
	checkFormat := func(parent, format, path string) {
		switch f := fileFormat(format, path); {
		case format != "" && !slices.Contains(Formats, f):
			add(join(parent, "format"), "unknown format %q; use one of %s", format, strings.Join(Formats, ", "))
		case f == "" && path != "":
			add(join(parent, "format"), "cannot infer the format of %q from its extension; set format to one of %s", path, strings.Join(Formats, ", "))
		}
	}

	switch {
	case s.Path == "" && s.Hub == nil:
		add("path", "is empty; set it to the data file, relative to this YAML file, or name a Hugging Face dataset with hub: {id: owner/name, split: test}")
	case s.Path != "" && s.Hub != nil:
		add("hub", "cannot be combined with path; keep one of them (a run file that sets one drops the task file's other)")
	case s.Hub != nil:
		errs = append(errs, s.Hub.check(s.Format, checkFormat)...)
	default:
		checkFormat("", s.Format, s.Path)
	}
	if m := s.Match; m != nil {
		if m.Path == "" {
			add("match.path", "is empty; set it to the shipped index file")
		}
		if m.Row == "" && m.ID == "" {
			add("match.row", "is empty; name the index column holding each item's 0-based position (row) or its id (id)")
		}
		if (m.Field == "") != (m.Prefix == "") {
			add("match.prefix", "needs both field (the item's text field) and prefix (the index column holding its first characters)")
		}
	}

	if s.ID != "" && len(s.IDColumns) > 0 {
		add("id_columns", "cannot be combined with id; keep one of them")
	}
	for i, c := range s.IDColumns {
		if c == "" {
			add(fmt.Sprintf("id_columns[%d]", i), "is empty; name a column")
		} else if slices.Contains(s.IDColumns[:i], c) {
			add(fmt.Sprintf("id_columns[%d]", i), "repeats column %q; list each column once", c)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Fields)) {
		if k == "" {
			add("fields", "has an empty item field name; name the field")
		} else if s.Fields[k] == "" {
			add("fields."+k, "has no source column; write the column name")
		}
	}
	for _, k := range slices.Sorted(maps.Keys(s.Types)) {
		if !slices.Contains(typeNames, s.Types[k]) {
			add("types."+k, "unknown type %q; use one of %s", s.Types[k], strings.Join(typeNames, ", "))
		}
	}
	if s.Filter != "" {
		if _, err := compileFilter(s.Filter); err != nil {
			add("filter", "%v", err)
		}
	}
	if e := s.Exclude; e != nil {
		if e.Path == "" {
			add("exclude.path", "is empty; set it to the other data file")
		}
		if e.Field == "" {
			add("exclude.field", "is empty; name this dataset's field to compare")
		}
		checkFormat("exclude", e.Format, e.Path)
	}
	if s.Limit < 0 {
		add("limit", "is %d; use a positive number, or leave it out to keep every row", s.Limit)
	}
	if s.Sample != nil && s.Sample.N <= 0 {
		add("sample.n", "is %d; use a positive number of rows, or remove sample", s.Sample.N)
	}
	if x := s.Expand; x != nil {
		as, link := or(x.As, DefaultExpandAs), or(x.Link, DefaultLink)
		if as == link {
			add("expand.link", "is the same field as expand.as (%q); pick another name", as)
		}
		if len(x.Variants) == 0 {
			add("expand.variants", "is empty; list at least one variant with a name and fields")
		}
		for i, v := range x.Variants {
			p := fmt.Sprintf("expand.variants[%d]", i)
			switch {
			case v.Name == "":
				add(join(p, "name"), "is empty; give the variant a name (it becomes part of the item id)")
			case slices.ContainsFunc(x.Variants[:i], func(o Variant) bool { return o.Name == v.Name }):
				add(join(p, "name"), "repeats variant %q; names must be unique", v.Name)
			}
			if len(v.Fields) == 0 {
				add(join(p, "fields"), "is empty; map at least one item field to a source column")
			}
			for _, k := range slices.Sorted(maps.Keys(v.Fields)) {
				if k == "" || v.Fields[k] == "" {
					add(join(p, "fields"), "has an empty field or column name (%q: %q)", k, v.Fields[k])
				}
			}
		}
	}
	if sh := s.Shuffle; sh != nil {
		errs = append(errs, sh.check()...)
	}
	return errs
}

func (sh *Shuffle) check() []error {
	var errs []error
	add := func(field, format string, args ...any) {
		errs = append(errs, &SpecError{Field: "shuffle." + field, Msg: fmt.Sprintf(format, args...)})
	}
	named := len(sh.Options) > 0
	switch {
	case named && sh.List != "":
		add("list", "cannot be combined with shuffle.options; keep one of them")
	case !named && sh.List == "":
		add("options", "is empty; list the option fields (options: [action1, action2]) or name a list field (list: options)")
	}
	if named {
		if len(sh.Options) < 2 || len(sh.Options) > 26 {
			add("options", "has %d fields; list between 2 and 26 options", len(sh.Options))
		}
		for i, o := range sh.Options {
			if o == "" || slices.Contains(sh.Options[:i], o) {
				add(fmt.Sprintf("options[%d]", i), "is empty or repeated (%q); list each option field once", o)
			}
		}
		if len(sh.Into) != len(sh.Options) {
			add("into", "has %d fields but options has %d; list one output field per option, e.g. [option_a, option_b]", len(sh.Into), len(sh.Options))
		}
		if len(sh.Parallel) > 0 {
			add("parallel", "only works with shuffle.list; remove it or use list")
		}
		if sh.IntoList != "" {
			add("into_list", "only works with shuffle.list; use into for named options")
		}
	}
	for i, f := range sh.Into {
		if f == "" || slices.Contains(sh.Into[:i], f) {
			add(fmt.Sprintf("into[%d]", i), "is empty or repeated (%q); name each output field once", f)
		}
	}
	kind := sh.goldKind()
	switch {
	case !slices.Contains([]string{"name", "letter", "index"}, kind):
		add("gold_kind", "unknown kind %q; use name, letter or index", sh.GoldKind)
	case kind == "name" && !named:
		add("gold_kind", "name needs shuffle.options (the gold names one of those fields); use letter or index with list")
	}
	if sh.GoldKind != "" && sh.Gold == "" {
		add("gold", "is empty but gold_kind is set; name the field holding the correct option")
	}
	if sh.goldInto() == sh.orderInto() {
		add("order_into", "is the same field as gold_into (%q); pick another name", sh.goldInto())
	}
	return errs
}

func (sh *Shuffle) goldKind() string {
	if sh.GoldKind != "" {
		return sh.GoldKind
	}
	if len(sh.Options) > 0 {
		return "name"
	}
	return "letter"
}

func (sh *Shuffle) goldInto() string  { return or(sh.GoldInto, DefaultGoldInto) }
func (sh *Shuffle) orderInto() string { return or(sh.OrderInto, DefaultOrderInto) }
func (sh *Shuffle) intoList() string  { return or(sh.IntoList, sh.List) }

func or(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func compileFilter(code string) (*filterProgram, error) {
	p, err := expr.Compile(code, expr.AsBool())
	if err != nil {
		return nil, fmt.Errorf("expression `%s` does not compile as a boolean: %v; see https://expr-lang.org for the syntax", code, oneLine(err.Error()))
	}
	return &filterProgram{code: code, prog: p}, nil
}

// oneLine keeps only the first line of expr's multi-line errors (the rest is
// an ASCII caret drawing that garbles single-line diagnostics).
func oneLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
