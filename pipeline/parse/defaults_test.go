package parse

import (
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite testdata/*.yaml from the Go defaults")

// TestDefaultsYAML keeps testdata/*.yaml, the copy-paste versions of the
// default specs and example spaces, identical to the Go values. Regenerate
// with: go test ./pipeline/parse/ -run TestDefaultsYAML -update
func TestDefaultsYAML(t *testing.T) {
	files := []struct {
		file, comment string
		v             any
	}{
		{"answer_spec.yaml", "extract: rules for ETHICS (both formats), letter choices and Scruples", AnswerSpec()},
		{"judge_spec.yaml", "extract: rules for a safety judge (REFUSAL / COMPLIANCE)", JudgeSpec()},
		{"ethics_space.yaml", "answer space: ETHICS", ethicsSpace()},
		{"letters_space.yaml", "answer space: MoralChoice (MORABLES adds C, D, E)", letterSpace("A", "B")},
		{"scruples_space.yaml", "answer space: Scruples", scruplesSpace()},
		{"safety_space.yaml", "answer space: safety judge", safetySpace()},
	}
	for _, f := range files {
		got := "# " + f.comment + "\n" + renderYAML(reflect.ValueOf(f.v), "")
		path := filepath.Join("testdata", f.file)
		if *update {
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (run with -update to create)", err)
		}
		if got != string(want) {
			t.Errorf("%s is stale; run with -update. Got:\n%s", path, got)
		}
	}
}

// renderYAML writes config structs as block YAML, with rules (structs of
// scalars) and string lists in flow style so that rule lists read one rule
// per line. It supports exactly the shapes TestConfigTags allows.
func renderYAML(v reflect.Value, indent string) string {
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	var b strings.Builder
	switch v.Kind() {
	case reflect.Struct:
		for i := 0; i < v.NumField(); i++ {
			f := v.Field(i)
			if f.IsZero() {
				continue
			}
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
			b.WriteString(indent + name + ":")
			b.WriteString(renderValue(f, indent))
		}
	case reflect.Map:
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
		for _, k := range keys {
			b.WriteString(indent + yamlScalar(k.String()) + ":")
			b.WriteString(renderValue(v.MapIndex(k), indent))
		}
	}
	return b.String()
}

func renderValue(f reflect.Value, indent string) string {
	switch {
	case f.Kind() == reflect.Map:
		return "\n" + renderYAML(f, indent+"  ")
	case f.Kind() == reflect.Slice && f.Type().Elem().Kind() == reflect.Struct:
		var b strings.Builder
		b.WriteString("\n")
		for j := 0; j < f.Len(); j++ {
			if flat(f.Index(j)) {
				b.WriteString(indent + "  - " + renderFlow(f.Index(j)) + "\n")
				continue
			}
			item := renderYAML(f.Index(j), indent+"    ")
			b.WriteString(indent + "  - " + strings.TrimPrefix(item, indent+"    "))
		}
		return b.String()
	default:
		return " " + renderFlow(f) + "\n"
	}
}

// flat reports whether a struct has only scalar fields set.
func flat(v reflect.Value) bool {
	for i := 0; i < v.NumField(); i++ {
		if k := v.Field(i).Kind(); (k == reflect.Slice || k == reflect.Map) && !v.Field(i).IsZero() {
			return false
		}
	}
	return true
}

func renderFlow(v reflect.Value) string {
	switch v.Kind() {
	case reflect.Struct:
		var parts []string
		for i := 0; i < v.NumField(); i++ {
			if v.Field(i).IsZero() {
				continue
			}
			name, _, _ := strings.Cut(v.Type().Field(i).Tag.Get("yaml"), ",")
			parts = append(parts, name+": "+renderFlow(v.Field(i)))
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case reflect.Slice:
		var parts []string
		for i := 0; i < v.Len(); i++ {
			parts = append(parts, renderFlow(v.Index(i)))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case reflect.String:
		return yamlScalar(v.String())
	case reflect.Bool:
		return strconv.FormatBool(v.Bool())
	case reflect.Int:
		return strconv.FormatInt(v.Int(), 10)
	case reflect.Float64:
		return strconv.FormatFloat(v.Float(), 'g', -1, 64)
	}
	panic("renderFlow: unsupported " + v.Kind().String())
}

var plainScalar = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_ ]*$`)

// yamlScalar quotes a string unless YAML would read it back unchanged as a
// plain scalar (letters, digits, spaces, and not a YAML 1.1 boolean/null).
func yamlScalar(s string) string {
	switch strings.ToLower(s) {
	case "y", "n", "yes", "no", "on", "off", "true", "false", "null":
		return "'" + s + "'"
	}
	if plainScalar.MatchString(s) && !strings.HasSuffix(s, " ") {
		return s
	}
	if !strings.ContainsAny(s, "'\n") {
		return "'" + s + "'" // single quotes: backslashes stay literal
	}
	return strconv.Quote(s)
}
