package main

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/spec/schema"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"gopkg.in/yaml.v3"
)

var update = flag.Bool("update", false, "rewrite golden files")

// schema/*.json are checked in for yaml-language-server; they must match
// what `promoral schema` generates from the stage kinds' specs.
func TestSchemaFilesAreCurrent(t *testing.T) {
	for _, kind := range schema.Kinds {
		data, _ := json.MarshalIndent(schema.Of(kind), "", "  ")
		data = append(data, '\n')
		path := filepath.Join("..", "..", "schema", kind+".json")
		if *update {
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(path)
		if err != nil || string(old) != string(data) {
			t.Errorf("%s is out of date: run go test ./cmd/promoral -run Schema -update", path)
		}
	}
}

func compileSchema(t *testing.T, kind string) *jsonschema.Schema {
	t.Helper()
	data, _ := json.Marshal(schema.Of(kind))
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(kind+".json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(kind + ".json")
	if err != nil {
		t.Fatalf("schema %s does not compile: %v", kind, err)
	}
	return s
}

// yamlToJSON converts a YAML document to the JSON data model.
func yamlToJSON(t *testing.T, path string) any {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := yaml.Unmarshal(data, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out, _ := jsonschema.UnmarshalJSON(strings.NewReader(string(b)))
	return out
}

func TestSchemaValidatesEveryShippedConfig(t *testing.T) {
	root := filepath.Join("..", "..", "configs")
	kinds := map[string]string{"strategies": "strategy", "tasks": "task", "models": "model"}
	checked := 0
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(path, ".yaml") || strings.Contains(path, "testdata") {
			return err
		}
		kind := "run"
		if k, ok := kinds[filepath.Base(filepath.Dir(path))]; ok {
			kind = k
		}
		if err := compileSchema(t, kind).Validate(yamlToJSON(t, path)); err != nil {
			t.Errorf("%s does not validate against the %s schema:\n%v", path, kind, err)
		}
		checked++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked < 4 {
		t.Fatalf("only %d configs checked", checked)
	}
}

func TestSchemaRejectsWhatValidateRejects(t *testing.T) {
	bad := map[string]any{"name": "x", "stages": []any{map[string]any{"name": "a", "kind": "prompt", "messages": []any{map[string]any{"role": "user", "text": "hi"}}, "temprature": 0}}, "outputs": map[string]any{"label": "x"}}
	if err := compileSchema(t, "strategy").Validate(bad); err == nil {
		t.Fatal("a misspelt field passed the schema")
	}
	good := map[string]any{"name": "x", "stages": []any{map[string]any{"name": "a", "kind": "prompt", "messages": []any{map[string]any{"role": "user", "text": "hi"}}, "temperature": 0}}, "outputs": map[string]any{"label": "x"}}
	if err := compileSchema(t, "strategy").Validate(good); err != nil {
		t.Fatalf("a good strategy failed the schema: %v", err)
	}
}

// Every closed set is an enum in the schema, so a typo in a role, a
// provider, a policy, a rule kind, a scale or a confidence meaning fails in
// the editor as it fails validate.
func TestSchemaEnumsCatchTypos(t *testing.T) {
	strategy := func(role string) map[string]any {
		return map[string]any{"name": "x", "stages": []any{map[string]any{"name": "a", "kind": "prompt",
			"messages": []any{map[string]any{"role": role, "text": "hi"}}}}, "outputs": map[string]any{"label": "x"}}
	}
	run := func(metric map[string]any, settings map[string]any) map[string]any {
		return map[string]any{"name": "x", "models": []any{"m"}, "tasks": []any{"t"}, "strategies": []any{"s"},
			"metrics": []any{metric}, "settings": settings}
	}
	task := func(rule map[string]any) map[string]any {
		return map[string]any{"name": "t", "dataset": map[string]any{"path": "x.jsonl"}, "extract": map[string]any{"confidence": []any{rule}}}
	}
	for _, tc := range []struct {
		kind      string
		good, bad any
	}{
		{"strategy", strategy("user"), strategy("usr")},
		{"model", map[string]any{"name": "m", "provider": "openai"}, map[string]any{"name": "m", "provider": "opnai"}},
		{"run", run(map[string]any{"kind": "classification", "unparsed": "exclude"}, map[string]any{}),
			run(map[string]any{"kind": "classification", "unparsed": "skip"}, map[string]any{})},
		{"run", run(map[string]any{"kind": "classification", "confidence": "positive"}, map[string]any{}),
			run(map[string]any{"kind": "classification", "confidence": "postive"}, map[string]any{})},
		{"run", run(map[string]any{"kind": "safety", "errors": "exclude"}, map[string]any{}),
			run(map[string]any{"kind": "safety", "errors": "ignore"}, map[string]any{})},
		{"run", run(map[string]any{"kind": "efficiency"}, map[string]any{"unparsed": "wrong"}),
			run(map[string]any{"kind": "efficiency"}, map[string]any{"unparsed": "wrongg"})},
		{"task", task(map[string]any{"kind": "tag", "tag": "confidence", "scale": "percent"}),
			task(map[string]any{"kind": "tags", "tag": "confidence", "scale": "percent"})},
		{"task", task(map[string]any{"kind": "tag", "tag": "confidence", "scale": "percent"}),
			task(map[string]any{"kind": "tag", "tag": "confidence", "scale": "percents"})},
	} {
		s := compileSchema(t, tc.kind)
		if err := s.Validate(tc.good); err != nil {
			t.Errorf("%s: the good value fails: %v", tc.kind, err)
		}
		if err := s.Validate(tc.bad); err == nil {
			t.Errorf("%s: %v passes the schema", tc.kind, tc.bad)
		}
	}
}

// Bounded numbers carry their bounds into the schema, so `temperature: 7`
// or `max_steps: -1` fails in the editor as it fails validate; a duration,
// written as text, is not bounded there.
func TestSchemaBoundsCatchOutOfRange(t *testing.T) {
	model := func(params, limits map[string]any) map[string]any {
		return map[string]any{"name": "m", "provider": "openai", "params": params, "limits": limits}
	}
	run := func(settings map[string]any) map[string]any {
		return map[string]any{"name": "x", "models": []any{"m"}, "tasks": []any{"t"}, "strategies": []any{"s"}, "settings": settings}
	}
	for _, tc := range []struct {
		kind      string
		good, bad any
	}{
		{"model", model(map[string]any{"temperature": 0.7}, nil), model(map[string]any{"temperature": 7}, nil)},
		{"model", model(map[string]any{"top_p": 1}, nil), model(map[string]any{"top_p": 3}, nil)},
		{"model", model(map[string]any{"max_tokens": 1}, nil), model(map[string]any{"max_tokens": 0}, nil)},
		{"model", model(nil, map[string]any{"timeout": "30s", "max_reply_bytes": 1024}), model(nil, map[string]any{"max_reply_bytes": 10})},
		{"run", run(map[string]any{"max_steps": 1}), run(map[string]any{"max_steps": -1})},
		{"run", run(map[string]any{"max_cost": 0}), run(map[string]any{"max_cost": -5})},
	} {
		s := compileSchema(t, tc.kind)
		if err := s.Validate(tc.good); err != nil {
			t.Errorf("%s: the good value %v fails: %v", tc.kind, tc.good, err)
		}
		if err := s.Validate(tc.bad); err == nil {
			t.Errorf("%s: %v passes the schema", tc.kind, tc.bad)
		}
	}
}
