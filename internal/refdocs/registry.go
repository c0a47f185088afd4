package refdocs

// Every use of spec's registry (pipeline/spec) is in this file: the kinds, their
// config structs and the field specs strict decoding reads.

import (
	"cmp"
	"reflect"

	_ "github.com/promoral/promoral/metrics" // registers the metric kinds
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/yamlstrict"
	_ "github.com/promoral/promoral/stages" // registers the stage kinds
)

// kind is one registered stage or metric kind as the generator sees it.
type kind struct {
	Name, Doc string
	Config    reflect.Type // the kind's config struct
}

// field is one YAML field of a config struct.
type field struct {
	Name, Doc, Default string
	// Inherited: Default names the setting the field takes its value
	// from (tag inherit:""), not a value decoding gives it.
	Inherited bool
	Required  bool
	Enum      []string
	Min, Max  *float64
	Type      reflect.Type
	// Base says the field comes from the fields every kind has
	// (StageBase, MetricBase), documented once at the top of a page.
	Base bool
}

var (
	stageBase  = reflect.TypeOf(spec.StageBase{})
	metricBase = reflect.TypeOf(spec.MetricBase{})
)

// fileKinds are the kinds of config file, each with its struct.
func fileKinds() []kind {
	return []kind{
		{Name: "run", Doc: "A run file (configs/*.yaml): the study's models, tasks, strategies, matrix, metric blocks and settings.", Config: reflect.TypeOf(spec.RunFile{})},
		{Name: "strategy", Doc: "A strategy file (configs/strategies/<name>.yaml): a graph of stages and the outputs a case reports.", Config: reflect.TypeOf(spec.StrategySpec{})},
		{Name: "task", Doc: "A task file (configs/tasks/<name>.yaml): a dataset bound to its answer space, gold labels, extraction rules and wording.", Config: reflect.TypeOf(spec.TaskSpec{})},
		{Name: "model", Doc: "A model file (configs/models/<name>.yaml): provider, model id, parameters, limits and prices.", Config: reflect.TypeOf(spec.ModelSpec{})},
	}
}

func stageKinds() []kind {
	var out []kind
	for _, k := range spec.Kinds() {
		out = append(out, kind{Name: k.Name, Doc: k.Doc, Config: k.ConfigType()})
	}
	return out
}

func metricKinds() []kind {
	var out []kind
	for _, k := range spec.MetricKinds() {
		out = append(out, kind{Name: k.Name, Doc: k.Doc, Config: reflect.TypeOf(k.New()).Elem()})
	}
	return out
}

// fields lists t's YAML fields as strict decoding sees them (inline
// structs flattened), with the default the field declares: its default:""
// tag, or the setting its inherit:"" tag names.
func fields(t reflect.Type) []field {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	var out []field
	for _, f := range yamlstrict.Fields(t) {
		top := t.Field(f.Index[0])
		out = append(out, field{
			Name: f.Name, Doc: f.Doc, Default: cmp.Or(f.Default, f.Inherit), Inherited: f.Default == "" && f.Inherit != "",
			Required: f.Required, Enum: f.Enum, Min: f.Min, Max: f.Max, Type: f.Type,
			Base: len(f.Index) > 1 && top.Anonymous && (top.Type == stageBase || top.Type == metricBase),
		})
	}
	return out
}

// rowDoc declares rows of one meaning (spec.RowDoc).
type rowDoc struct {
	Names  []string
	Def, N string
}

// kindRows is what a metric kind declares about its rows.
type kindRows struct {
	Name, Lead, Note string
	Rows             []rowDoc
}

func rowDocs(rs []spec.RowDoc) []rowDoc {
	out := make([]rowDoc, len(rs))
	for i, r := range rs {
		out[i] = rowDoc{Names: r.Names, Def: r.Def, N: r.N}
	}
	return out
}

func metricRows() []kindRows {
	var out []kindRows
	for _, k := range spec.MetricKinds() {
		out = append(out, kindRows{Name: k.Name, Lead: k.Rows.Lead, Note: k.Rows.Note, Rows: rowDocs(k.Rows.Rows)})
	}
	return out
}

func blockRows() []rowDoc { return rowDocs(spec.BlockRows) }
