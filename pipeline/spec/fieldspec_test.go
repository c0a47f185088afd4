package spec_test

import (
	"encoding/json"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// A field's spec is what decoding enforces: for every registered stage
// kind and metric kind (and the config file kinds), each field with an
// enum rejects a value off its list, each field with a default holds the
// default once left out, each bound rejects a value past it, and each
// field that inherits its value stays empty for the setting it names.
func TestDecodingEnforcesEveryFieldSpec(t *testing.T) {
	type kindCase struct {
		what, name string
		path       string // the field path of the config in its file
		head       string // the lines every config of the kind needs
		typ        reflect.Type
		decode     func(src string) (reflect.Value, yamlstrict.Diags)
	}
	decodeInto := func(path string, v any) func(string) (reflect.Value, yamlstrict.Diags) {
		return func(src string) (reflect.Value, yamlstrict.Diags) {
			var ds yamlstrict.Diags
			n := yamlstrict.ParseYAML("f.yaml", []byte(src), &ds)
			fresh := reflect.New(reflect.TypeOf(v).Elem())
			yamlstrict.NewDecoder("f.yaml", &ds).Decode(n, fresh.Interface(), path)
			return fresh, ds
		}
	}
	var kinds []kindCase
	for _, k := range spec.Kinds() {
		kinds = append(kinds, kindCase{"stage kind", k.Name, "stages[0]", "kind: " + k.Name + "\nname: s\n", k.ConfigType(),
			func(src string) (reflect.Value, yamlstrict.Diags) {
				v, ds := decodeInto("stages[0]", &spec.StageNode{})(src)
				return reflect.ValueOf(v.Interface().(*spec.StageNode).Config), ds
			}})
	}
	for _, k := range spec.MetricKinds() {
		kinds = append(kinds, kindCase{"metric kind", k.Name, "metrics[0]", "kind: " + k.Name + "\n", reflect.TypeOf(k.New()).Elem(),
			func(src string) (reflect.Value, yamlstrict.Diags) {
				v, ds := decodeInto("metrics[0]", &spec.MetricNode{})(src)
				return reflect.ValueOf(v.Interface().(*spec.MetricNode).Config), ds
			}})
	}
	for name, v := range map[string]any{"run": &spec.RunFile{}, "strategy": &spec.StrategySpec{}, "task": &spec.TaskSpec{}, "model": &spec.ModelSpec{}} {
		kinds = append(kinds, kindCase{"file kind", name, "", "", reflect.TypeOf(v).Elem(), decodeInto("", v)})
	}
	if len(spec.Kinds()) < 4 || len(spec.MetricKinds()) < 10 {
		t.Fatalf("the registries hold %d stage and %d metric kinds: the kinds did not register", len(spec.Kinds()), len(spec.MetricKinds()))
	}

	var enums, defaults, bounds, inherits int
	for _, k := range kinds {
		walkFields(k.typ, nil, func(steps []step, f yamlstrict.FieldInfo) {
			path := fieldPath(k.path, steps, f.Name)
			label := fmt.Sprintf("%s %s: %s", k.what, k.name, path)
			// The enum of a map's values (a dataset's types:) is the
			// dataset's to check; every enum of a kind is on a scalar.
			if len(f.Enum) > 0 && scalar(f.Type) {
				enums++
				_, ds := k.decode(k.head + nest(steps, f.Name+": zz_off_list"))
				d, ok := diagAt(ds, path)
				switch {
				case !ok:
					t.Errorf("%s: an off-list value gave no diagnostic at the field (got %v)", label, ds)
				case !strings.Contains(d.Msg, `"zz_off_list"`) || d.Line == 0 || d.File != "f.yaml":
					t.Errorf("%s: the diagnostic names neither the value nor its file and line: %v", label, d)
				default:
					for _, e := range f.Enum {
						if !strings.Contains(d.Hint, e) {
							t.Errorf("%s: the diagnostic does not list the value %q: %v", label, e, d)
						}
					}
				}
				near := f.Enum[0][:len(f.Enum[0])-1] + "x" // one letter off
				if _, ds := k.decode(k.head + nest(steps, f.Name+": "+near)); true {
					if d, ok := diagAt(ds, path); !ok || !strings.Contains(d.Hint, fmt.Sprintf("did you mean %q", f.Enum[0])) {
						t.Errorf("%s: %q got no did-you-mean for %q: %v", label, near, f.Enum[0], ds)
					}
				}
			}
			if f.Default != "" || f.Inherit != "" {
				v, _ := k.decode(k.head + nest(steps, ""))
				got, ok := valueAt(v, steps, f)
				switch {
				case !ok:
					t.Errorf("%s: the decoded config does not reach the field", label)
				case f.Default != "":
					defaults++
					if want := canonical(f.Default, got); !ok || show(got) != want {
						t.Errorf("%s: left out, it holds %s, want its default %s", label, show(got), want)
					}
				default:
					inherits++
					if !got.IsZero() {
						t.Errorf("%s: left out, it holds %s, want nothing (it takes %s)", label, show(got), f.Inherit)
					}
				}
			}
			for _, b := range []struct {
				at  *float64
				off float64
			}{{f.Min, -1}, {f.Max, 1}} {
				if b.at == nil || f.Type == yamlstrict.DurationType {
					continue
				}
				bounds++
				x := strconv.FormatFloat(*b.at+b.off, 'f', -1, 64)
				_, ds := k.decode(k.head + nest(steps, f.Name+": "+x))
				if d, ok := diagAt(ds, path); !ok || !strings.Contains(d.Msg, "out of range") {
					t.Errorf("%s: %s, past its bound %g, gave no out-of-range diagnostic: %v", label, x, *b.at, ds)
				}
			}
		})
	}
	t.Logf("%d enums, %d defaults, %d inherited defaults, %d bounds checked", enums, defaults, inherits, bounds)
	if enums == 0 || defaults == 0 || bounds == 0 || inherits == 0 {
		t.Fatalf("the walk checked %d enums, %d defaults, %d inherited defaults, %d bounds: it missed the tags", enums, defaults, inherits, bounds)
	}
}

// step is one struct field on the way from a config to a nested field.
type step struct {
	f    yamlstrict.FieldInfo
	list bool // a list of structs: its first element
}

var nodeDecoder = reflect.TypeOf((*yamlstrict.NodeDecoder)(nil)).Elem()

// walkFields calls fn for every YAML field of struct t and of the structs
// it holds (directly, by pointer or in a list), but not through a type that
// decodes itself (a stage or metric of whatever kind, a name or a block).
func walkFields(t reflect.Type, steps []step, fn func([]step, yamlstrict.FieldInfo)) {
	for _, f := range yamlstrict.Fields(t) {
		fn(steps, f)
		ft, list := f.Type, false
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		if ft.Kind() == reflect.Slice && !reflect.PointerTo(ft).Implements(nodeDecoder) {
			ft, list = ft.Elem(), true
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
		}
		if ft.Kind() != reflect.Struct || reflect.PointerTo(ft).Implements(nodeDecoder) || ft == reflect.TypeOf(yaml.Node{}) || len(steps) > 4 {
			continue
		}
		walkFields(ft, append(append([]step(nil), steps...), step{f, list}), fn)
	}
}

// nest writes leaf (a "field: value" pair, or nothing) inside the mappings
// steps lead through, in flow style: power: {accuracy: 2}.
func nest(steps []step, leaf string) string {
	if len(steps) == 0 {
		if leaf == "" {
			return ""
		}
		return leaf + "\n"
	}
	inner := "{" + leaf + "}"
	for i := len(steps) - 1; i >= 0; i-- {
		if steps[i].list {
			inner = "[" + inner + "]"
		}
		if i > 0 {
			inner = "{" + steps[i].f.Name + ": " + inner + "}"
		}
	}
	return steps[0].f.Name + ": " + inner + "\n"
}

func fieldPath(prefix string, steps []step, name string) string {
	p := prefix
	for _, s := range steps {
		p = yamlstrict.JoinPath(p, s.f.Name)
		if s.list {
			p += "[0]"
		}
	}
	return yamlstrict.JoinPath(p, name)
}

// valueAt follows steps from the decoded config to field f.
func valueAt(v reflect.Value, steps []step, f yamlstrict.FieldInfo) (reflect.Value, bool) {
	deref := func(v reflect.Value) (reflect.Value, bool) {
		for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
			if v.IsNil() {
				return v, false
			}
			v = v.Elem()
		}
		return v, true
	}
	var ok bool
	for _, s := range steps {
		if v, ok = deref(v); !ok {
			return v, false
		}
		v = v.FieldByIndex(s.f.Index)
		if s.list {
			if v, ok = deref(v); !ok || v.Len() == 0 {
				return v, false
			}
			v = v.Index(0)
		}
	}
	if v, ok = deref(v); !ok {
		return v, false
	}
	return v.FieldByIndex(f.Index), true
}

// show writes a field's value (through a pointer) as a tag would.
func show(v reflect.Value) string {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "nothing"
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	case reflect.String:
		return strconv.Quote(v.String())
	}
	return fmt.Sprint(v.Interface())
}

// canonical writes a default tag as show writes a value of like's type.
func canonical(tag string, like reflect.Value) string {
	t := like.Type()
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		x, err := strconv.ParseFloat(tag, 64)
		if err != nil || math.IsNaN(x) {
			return "a number, not " + tag
		}
		return strconv.FormatFloat(x, 'g', -1, 64)
	case reflect.String:
		return strconv.Quote(tag)
	}
	return tag
}

// diagAt is the first diagnostic about the field at path.
func diagAt(ds yamlstrict.Diags, path string) (yamlstrict.Diag, bool) {
	for _, d := range ds {
		if d.Field == path {
			return d, true
		}
	}
	return yamlstrict.Diag{}, false
}

func scalar(t reflect.Type) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Map, reflect.Slice, reflect.Array, reflect.Struct:
		return false
	}
	return true
}

// Decoding fills in what a metric block leaves out, but the manifest lists
// a block's settings as the run file writes them: no default shows there
// as if it had been set.
func TestManifestListsTheSettingsWritten(t *testing.T) {
	run := studytest.BaseTree(nil)["configs/run.yaml"] + `metrics:
  - {kind: classification, name: c, bins: 5}
  - {kind: compare, name: p, power: {accuracy: 0.8}}
`
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": run}))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	if len(st.Blocks) != 2 || st.Blocks[0].Errors != spec.ErrorsIncomplete {
		t.Fatalf("blocks %v: want two, their errors: policy the default (incomplete)", st.Blocks)
	}
	got := map[string]string{}
	for _, b := range spec.ManifestBlocks(st) {
		j, _ := json.Marshal(b.Settings)
		got[b.Name] = string(j)
	}
	if want := map[string]string{"c": `{"bins":5}`, "p": `{"power":{"accuracy":0.8}}`}; !reflect.DeepEqual(got, want) {
		t.Errorf("manifest settings %v, want %v", got, want)
	}
}
