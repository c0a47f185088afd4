// Package schema writes the JSON Schema of each kind of config file from
// the same struct tags that drive strict decoding (package spec and every
// registered stage and metric kind), so editors complete and check what
// promoral accepts. It reads spec's exported field specs only.
package schema

import (
	"reflect"
	"strings"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/yamlstrict"
	"gopkg.in/yaml.v3"
)

// Kinds are the kinds of config file, one JSON Schema each.
var Kinds = []string{"run", "strategy", "task", "model"}

// Of returns the JSON Schema (draft 2020-12) of one kind of config file,
// generated from the same struct tags that drive strict decoding, and from
// every registered stage and metric kind's own config struct, so editors
// (yaml-language-server) complete and check what promoral accepts.
func Of(kind string) map[string]any {
	g := &schemaGen{defs: map[string]any{}}
	var root map[string]any
	switch kind {
	case "run":
		root = g.of(reflect.TypeOf(spec.RunFile{}))
	case "strategy":
		root = g.of(reflect.TypeOf(spec.StrategySpec{}))
	case "task":
		root = g.of(reflect.TypeOf(spec.TaskSpec{}))
	case "model":
		root = g.of(reflect.TypeOf(spec.ModelSpec{}))
	default:
		return nil
	}
	root["$schema"] = "https://json-schema.org/draft/2020-12/schema"
	root["title"] = "promoral " + kind + " file"
	if len(g.defs) > 0 {
		root["$defs"] = g.defs
	}
	return root
}

type schemaGen struct{ defs map[string]any }

var (
	stageNodeType  = reflect.TypeOf(spec.StageNode{})
	metricNodeType = reflect.TypeOf(spec.MetricNode{})
	matrixType     = reflect.TypeOf(spec.Matrix{})
	stringListType = reflect.TypeOf(spec.StringList{})
	factorType     = reflect.TypeOf(spec.FactorValue{})
)

// ref returns a $ref to a named definition, generating it once.
func (g *schemaGen) ref(name string, build func() map[string]any) map[string]any {
	if _, ok := g.defs[name]; !ok {
		g.defs[name] = map[string]any{} // placeholder against recursion
		g.defs[name] = build()
	}
	return map[string]any{"$ref": "#/$defs/" + name}
}

func (g *schemaGen) of(t reflect.Type) map[string]any {
	switch t {
	case yamlstrict.DurationType:
		return map[string]any{"type": "string", "pattern": `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`, "description": "a duration like 30s or 2m"}
	case stageNodeType:
		return g.ref("stage", func() map[string]any {
			var alts []any
			for _, k := range spec.Kinds() {
				s := g.of(k.ConfigType())
				s["description"] = k.Doc
				props := s["properties"].(map[string]any)
				props["kind"] = map[string]any{"const": k.Name, "description": "Stage kind."}
				alts = append(alts, g.ref("stage_"+k.Name, func() map[string]any { return s }))
			}
			return map[string]any{"oneOf": alts}
		})
	case metricNodeType:
		return g.ref("metric", func() map[string]any {
			var alts []any
			for _, k := range spec.MetricKinds() {
				s := g.of(reflect.TypeOf(k.New()).Elem())
				s["description"] = k.Doc
				props := s["properties"].(map[string]any)
				props["kind"] = map[string]any{"const": k.Name, "description": "Metric kind."}
				alts = append(alts, g.ref("metric_"+k.Name, func() map[string]any { return s }))
			}
			if len(alts) == 0 {
				return map[string]any{"type": "object"}
			}
			return map[string]any{"oneOf": alts}
		})
	case matrixType:
		block := g.of(reflect.TypeOf(spec.MatrixBlock{}))
		return map[string]any{"oneOf": []any{block, map[string]any{"type": "array", "items": block}}}
	case factorType:
		return g.ref("factor", func() map[string]any {
			derive := func(field string) map[string]any {
				f, _ := reflect.TypeOf(spec.FactorValue{}).FieldByName(field)
				name := strings.Split(f.Tag.Get("yaml"), ",")[0]
				return map[string]any{"type": "object", "required": []any{name}, "additionalProperties": false,
					"properties": map[string]any{name: map[string]any{"type": "string", "description": f.Tag.Get("doc")}}}
			}
			return map[string]any{"description": "A factor's value as written, or derived from a field (from:) or an expression (expr:).",
				"oneOf": []any{map[string]any{"type": []any{"string", "number", "boolean"}}, derive("From"), derive("Expr")}}
		})
	case stringListType:
		return map[string]any{"oneOf": []any{map[string]any{"type": "string"}, map[string]any{"type": "array", "items": map[string]any{"type": "string"}}}}
	}
	switch t.Kind() {
	case reflect.Pointer:
		return g.of(t.Elem())
	case reflect.String:
		return map[string]any{"type": "string"}
	case reflect.Bool:
		return map[string]any{"type": "boolean"}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return map[string]any{"type": "integer"}
	case reflect.Float32, reflect.Float64:
		return map[string]any{"type": "number"}
	case reflect.Slice:
		return map[string]any{"type": "array", "items": g.of(t.Elem())}
	case reflect.Map:
		return map[string]any{"type": "object", "additionalProperties": g.of(t.Elem())}
	case reflect.Interface:
		return map[string]any{}
	case reflect.Struct:
		if t == reflect.TypeOf(yaml.Node{}) {
			return map[string]any{}
		}
		props := map[string]any{}
		var req []any
		for _, f := range yamlstrict.Fields(t) {
			var s map[string]any
			if f.Type == reflect.TypeOf([]yaml.Node{}) {
				s = refList(f.Name)
			} else {
				s = g.of(f.Type)
			}
			if len(f.Enum) > 0 {
				s = withEnum(s, f.Enum)
			}
			s = withBounds(s, f.Min, f.Max)
			if f.Doc != "" {
				s = withDoc(s, f.Doc)
			}
			props[f.Name] = s
			if f.Required {
				req = append(req, f.Name)
			}
		}
		out := map[string]any{"type": "object", "properties": props, "additionalProperties": false}
		if len(req) > 0 {
			out["required"] = req
		}
		return out
	}
	return map[string]any{}
}

// withEnum puts a closed set of values on a string field, on the items of
// a list of strings, or on the values of a map of strings.
func withEnum(s map[string]any, values []string) map[string]any {
	enum := make([]any, len(values))
	for i, v := range values {
		enum[i] = v
	}
	out := make(map[string]any, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	switch s["type"] {
	case "array":
		out["items"] = map[string]any{"type": "string", "enum": enum}
	case "object":
		out["additionalProperties"] = map[string]any{"type": "string", "enum": enum}
	default:
		out["enum"] = enum
	}
	return out
}

// withBounds puts a number field's min:"" and max:"" tags on its schema,
// so the editor flags `temperature: 7` as validate does. A field written
// otherwise (a duration is a string) keeps its schema.
func withBounds(s map[string]any, lo, hi *float64) map[string]any {
	if (lo == nil && hi == nil) || (s["type"] != "number" && s["type"] != "integer") {
		return s
	}
	out := make(map[string]any, len(s)+2)
	for k, v := range s {
		out[k] = v
	}
	if lo != nil {
		out["minimum"] = *lo
	}
	if hi != nil {
		out["maximum"] = *hi
	}
	return out
}

// withDoc adds a description without disturbing a $ref (2020-12 allows
// siblings of $ref).
func withDoc(s map[string]any, doc string) map[string]any {
	out := make(map[string]any, len(s)+1)
	for k, v := range s {
		out[k] = v
	}
	out["description"] = doc
	return out
}

// refList is the schema of models/tasks/strategies lists: a name, or a
// mapping (inline, or {use: name, ...overrides}); the referenced files are
// checked by their own schemas.
func refList(field string) map[string]any {
	return map[string]any{"type": "array", "items": map[string]any{
		"oneOf": []any{
			map[string]any{"type": "string", "description": "name of a file under " + field + "/"},
			map[string]any{"type": "object"},
		},
	}}
}
