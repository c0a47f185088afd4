package engine_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// Configs that look well-formed but cannot run as written each fail at load
// time, naming the file, the line and the field, and saying what to do.
func TestValidationHoles(t *testing.T) {
	run := studytest.BaseTree(nil)["configs/run.yaml"]
	strat := func(body string) map[string]string {
		return map[string]string{"configs/strategies/one_shot.yaml": body}
	}
	key := "sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z"
	hugeName := strings.Repeat("n", 5<<20)
	cases := []struct {
		name  string
		files map[string]string
		want  []string
		// absent must not appear; once must appear exactly once.
		absent []string
		once   string
	}{
		{"null name", map[string]string{"configs/run.yaml": strings.Replace(run, "name: toy-run", "name: ~", 1)},
			[]string{"run.yaml:1", "name", `required field "name" is empty`}, nil, ""},
		{"second YAML document", map[string]string{"configs/run.yaml": run + "---\nsettings: {concurrency: 1}\n"},
			[]string{"run.yaml:15", "second YAML document"}, nil, ""},
		{"temperature 7", strat(strings.Replace(studytest.OneShotYAML, "temperature: 0", "temperature: 7", 1)),
			[]string{"one_shot.yaml:5", "stages[0].temperature", "7 is out of range", "from 0 to 2"}, nil, ""},
		{"top_p 3", strat(strings.Replace(studytest.OneShotYAML, "temperature: 0", "top_p: 3", 1)),
			[]string{"one_shot.yaml:5", "stages[0].top_p", "3 is out of range", "from 0 to 1"}, nil, ""},
		{"max_steps -1", map[string]string{"configs/run.yaml": strings.Replace(run, "concurrency: 3", "concurrency: 3, max_steps: -1", 1)},
			[]string{"run.yaml:", "settings.max_steps", "-1 is out of range"}, nil, ""},
		{"max_tokens 0", strat(strings.Replace(studytest.OneShotYAML, "temperature: 0", "max_tokens: 0", 1)),
			[]string{"one_shot.yaml:5", "stages[0].max_tokens", "0 is out of range", "leave the field out"}, nil, ""},
		{"expression type error in a branch", map[string]string{"configs/strategies/loop.yaml": strings.Replace(studytest.LoopYAML,
			"stages.again_parse.label == stages.parse.label", "stages.again_parse.label > 3", 1)},
			[]string{"loop.yaml:", "stages[stable].cases[0].when", "mismatched types string and int"}, nil, ""},
		{"label output of the wrong type", strat(strings.Replace(studytest.OneShotYAML, "label: stages.parse.label", "label: stages.parse.parsed", 1)),
			[]string{"one_shot.yaml:", "outputs.label", "gives bool", "must be text"}, nil, ""},
		{"field a stage never publishes", strat(strings.Replace(studytest.OneShotYAML, "label: stages.parse.label", "label: stages.parse.lable", 1)),
			[]string{"one_shot.yaml:", "outputs.label", "unknown field lable"}, nil, ""},
		{"template field missing from a later item", map[string]string{
			"data/items.jsonl": studytest.ItemsJSONL + `{"id":"g","gold":"0","scenario":"x"}` + "\n",
		}, []string{"toy.yaml:", "item g", `no entry for key "text"`}, nil, ""},
		{"typo in an extract stage's text", strat(strings.Replace(studytest.OneShotYAML, "    kind: extract\n", "    kind: extract\n    text: item.txet\n", 1)),
			[]string{"one_shot.yaml:9", "stages[parse]", "reads item.txet, which is not there", "item has: gold, id, text"}, nil, ""},
		{"openai-compatible without base_url", map[string]string{"configs/run.yaml": strings.Replace(run, "models:", "models:\n  - {name: local, provider: openai-compatible, model: llama}", 1)},
			[]string{"run.yaml:3", "models[0].base_url", "needs a base_url"}, nil, ""},
		{"key pasted into key_env", map[string]string{"configs/run.yaml": strings.Replace(run, "models:", "models:\n  - {name: o, provider: openai, model: gpt-4.1, key_env: "+key+"}", 1)},
			[]string{"run.yaml:3", "models[0].key_env", "looks like an API key"}, nil, ""},
		{"hex key pasted into key_env", map[string]string{"configs/run.yaml": strings.Replace(run, "models:", "models:\n  - {name: o, provider: openai, model: gpt-4.1, key_env: 3f9a0c1d2e4b5a6978c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a2}", 1)},
			[]string{"run.yaml:3", "models[0].key_env", "must be the name of an environment variable"}, nil, ""},
		{"key_env that is no variable name", map[string]string{"configs/run.yaml": strings.Replace(run, "models:", "models:\n  - {name: o, provider: openai, model: gpt-4.1, key_env: 'my key'}", 1)},
			[]string{"run.yaml:3", "models[0].key_env", "must be the name of an environment variable"}, nil, ""},
		{"reply bound over the limit", map[string]string{"configs/run.yaml": strings.Replace(run, "models:", "models:\n  - {name: o, provider: openai, model: gpt-4.1, limits: {max_reply_bytes: 99999999999}}", 1)},
			[]string{"run.yaml:3", "models[0].limits.max_reply_bytes", "out of range"}, nil, ""},
		// What validate let through and apply could not run, or ran to no end.
		{"only ---", map[string]string{"configs/run.yaml": "---\n"},
			[]string{"run.yaml:1", "empty YAML document"}, nil, ""},
		{"null document", map[string]string{"configs/run.yaml": "~\n"},
			[]string{"run.yaml:1", "empty YAML document"}, nil, ""},
		{"strategies: []", map[string]string{"configs/run.yaml": strings.Replace(run, "strategies: [one_shot, loop]", "strategies: []", 1)},
			[]string{"run.yaml:12", "strategies", "the study has no cases: no strategy is declared"}, nil, ""},
		{"a matrix that excludes every cell", map[string]string{"configs/run.yaml": run + "matrix: {exclude: [{model: bot}]}\n"},
			[]string{"run.yaml:14", "matrix", "the study has no cases", "leaves out every"}, nil, ""},
		{"a base_url that is no URL", map[string]string{"configs/run.yaml": strings.Replace(run, "models:", "models:\n  - {name: l, provider: openai-compatible, model: x, base_url: \"ht!tp://::::/v1\"}", 1)},
			[]string{"run.yaml:3", "models[0].base_url", "is not a URL", "http://127.0.0.1:8000/v1"}, nil, ""},
		{"a base_url that is not http", map[string]string{"configs/run.yaml": strings.Replace(run, "models:", "models:\n  - {name: l, provider: openai-compatible, model: x, base_url: \"ftp://example.com/v1\"}", 1)},
			[]string{"run.yaml:3", "models[0].base_url", "not an http(s) URL"}, nil, ""},
		{"a base_url without a host", map[string]string{"configs/run.yaml": strings.Replace(run, "models:", "models:\n  - {name: l, provider: openai, model: x, base_url: \"https:///v1\"}", 1)},
			[]string{"run.yaml:3", "models[0].base_url", "has no host"}, nil, ""},
		{"a base_url in a model file", map[string]string{
			"configs/models/far.yaml": "name: far\nprovider: openai-compatible\nmodel: x\nbase_url: \"localhost:8000/v1\"\n",
			"configs/run.yaml":        strings.Replace(run, "models:", "models:\n  - far", 1)},
			[]string{"far.yaml:4", "base_url", "not an http(s) URL"}, nil, ""},
		{"spend cap NaN", map[string]string{"configs/run.yaml": strings.Replace(run, "concurrency: 3", "concurrency: 3, max_cost: .nan", 1)},
			[]string{"run.yaml:13", "settings.max_cost", "not a finite number"}, nil, ""},
		{"spend cap Inf", map[string]string{"configs/run.yaml": strings.Replace(run, "concurrency: 3", "concurrency: 3, max_cost: .inf", 1)},
			[]string{"run.yaml:13", "settings.max_cost", "not a finite number"}, nil, ""},
		{"temperature NaN", strat(strings.Replace(studytest.OneShotYAML, "temperature: 0", "temperature: .NaN", 1)),
			[]string{"one_shot.yaml:5", "stages[0].temperature", "not a finite number"}, nil, ""},
		// A run's name is an identifier: it names the output folder.
		{"name that climbs out of out/", map[string]string{"configs/run.yaml": strings.Replace(run, "name: toy-run", "name: ../../../../elsewhere", 1)},
			[]string{"run.yaml:1", "name:", "path separator", "must be an identifier"}, nil, ""},
		{"absolute name", map[string]string{"configs/run.yaml": strings.Replace(run, "name: toy-run", "name: /tmp/elsewhere", 1)},
			[]string{"run.yaml:1", "name:", "path separator"}, nil, ""},
		{"name with ..", map[string]string{"configs/run.yaml": strings.Replace(run, "name: toy-run", "name: a..b", 1)},
			[]string{"run.yaml:1", "name:", `contains ".."`}, nil, ""},
		{"hidden name", map[string]string{"configs/run.yaml": strings.Replace(run, "name: toy-run", "name: .toy", 1)},
			[]string{"run.yaml:1", "name:", `starts with '.'`}, nil, ""},
		{"name starting with a dash", map[string]string{"configs/run.yaml": strings.Replace(run, "name: toy-run", "name: -rf", 1)},
			[]string{"run.yaml:1", "name:", `starts with '-'`}, nil, ""},
		{"name with a space", map[string]string{"configs/run.yaml": strings.Replace(run, "name: toy-run", "name: my run", 1)},
			[]string{"run.yaml:1", "name:", `contains ' '`}, nil, ""},
		{"5 MB name", map[string]string{"configs/run.yaml": strings.Replace(run, "name: toy-run", "name: "+hugeName, 1)},
			[]string{"run.yaml:1", "name:", "5242880 bytes long, over 100", "(5242880 bytes in all)"}, []string{strings.Repeat("n", 200)}, ""},
		{"metric block name that climbs out of the run folder", map[string]string{"configs/run.yaml": run + "metrics:\n  - {kind: classification, name: ../../../x, tasks: [toy]}\n"},
			[]string{"run.yaml:15", "metrics[0].name", "path separator", "CSV files"}, nil, ""},
		// Bounds are checked before anything is sized by them.
		{"settings.repeats 1000000000", map[string]string{"configs/run.yaml": strings.Replace(run, "concurrency: 3", "concurrency: 3, repeats: 1000000000", 1)},
			[]string{"run.yaml:13", "settings.repeats", "1000000000 is out of range", "1000"}, nil, ""},
		{"settings.repeats max int64", map[string]string{"configs/run.yaml": strings.Replace(run, "concurrency: 3", "concurrency: 3, repeats: 9223372036854775807", 1)},
			[]string{"run.yaml:13", "settings.repeats", "out of range"}, nil, ""},
		{"a model's repeats 1000000000", map[string]string{"configs/run.yaml": strings.Replace(run, "  - name: bot\n", "  - name: bot\n    repeats: 1000000000\n", 1)},
			[]string{"run.yaml:", "models[0].repeats", "out of range"}, nil, ""},
		{"a strategy's repeats max int64", strat(strings.Replace(studytest.OneShotYAML, "stages:", "repeats: 9223372036854775807\nstages:", 1)),
			[]string{"one_shot.yaml:2", "repeats", "out of range"}, nil, ""},
		// A strategy's reduce: is checked like a metric block's.
		{"a strategy's reduce: avg", strat(strings.Replace(studytest.OneShotYAML, "stages:", "reduce: avg\nstages:", 1)),
			[]string{"one_shot.yaml:2", "reduce", `unknown reduce "avg"`, "use none, majority, any, all or first"}, nil, ""},
		{"a strategy's reduce: majorty", strat(strings.Replace(studytest.OneShotYAML, "stages:", "reduce: majorty\nstages:", 1)),
			[]string{"one_shot.yaml:2", "reduce", `unknown reduce "majorty"`, `did you mean "majority"`}, nil, ""},
		{"a strategy's reduce: set in the run file", map[string]string{"configs/run.yaml": strings.Replace(run, "strategies: [one_shot, loop]", "strategies: [{use: one_shot, reduce: avg}, loop]", 1)},
			[]string{"run.yaml:12", "reduce", `unknown reduce "avg"`}, nil, ""},
		// Names from a config become paths in the dataset cache: none may climb out of it.
		{"a hub config that climbs out of the cache", hubTask("{id: evil/ds, split: test, config: ../../../../../../PWN_C, rows: 6}"),
			[]string{"toy.yaml:4", "dataset.hub.config", "../../../../../../PWN_C", "path"}, nil, ""},
		{"a hub split that climbs out of the cache", hubTask("{id: evil/ds, split: ../../x, rows: 6}"),
			[]string{"toy.yaml:4", "dataset.hub.split", "path"}, nil, ""},
		{"a hub revision with a newline", hubTask(`{id: evil/ds, split: test, revision: "main branch\nx", rows: 6}`),
			[]string{"toy.yaml:4", "dataset.hub.revision", "not a commit, branch or tag"}, []string{"branch\nx"}, ""},
		{"a hub revision with ..", hubTask("{id: evil/ds, split: test, revision: ../../../etc, rows: 6}"),
			[]string{"toy.yaml:4", "dataset.hub.revision", "not a commit, branch or tag"}, nil, ""},
		// The response cache's folder must be one.
		{"cache_dir a file", map[string]string{"configs/run.yaml": strings.Replace(run, "concurrency: 3", "concurrency: 3, cache_dir: ../data/items.jsonl", 1)},
			[]string{"run.yaml:13", "settings.cache_dir", "is a file, not a folder"}, nil, ""},
		{"cache_dir /etc/passwd", map[string]string{"configs/run.yaml": strings.Replace(run, "concurrency: 3", "concurrency: 3, cache_dir: /etc/passwd", 1)},
			[]string{"run.yaml:13", "settings.cache_dir", "/etc/passwd is a file, not a folder"}, nil, ""},
		{"cache_dir under a file", map[string]string{"configs/run.yaml": strings.Replace(run, "concurrency: 3", "concurrency: 3, cache_dir: ../data/items.jsonl/cache", 1)},
			[]string{"run.yaml:13", "settings.cache_dir", "items.jsonl is a file, not a folder"}, nil, ""},
		// Errors name the file the value was written in, once.
		{"a run file's dataset override", map[string]string{"configs/run.yaml": strings.Replace(run, "tasks: [toy]", "tasks: [{use: toy, dataset: {limit: -1}}]", 1)},
			[]string{"run.yaml:11", "tasks[0].dataset.limit", "is -1"}, []string{"toy.yaml"}, ""},
		{"a wrong type for concurrency", map[string]string{"configs/run.yaml": strings.Replace(run, "concurrency: 3", "concurrency: lots", 1)},
			[]string{"run.yaml:13", "settings.concurrency", "expected a whole number"}, []string{"out of range"}, "settings.concurrency"},
		{"a wrong type for a model's concurrency", map[string]string{"configs/run.yaml": strings.Replace(run, "models:", "models:\n  - {name: o, provider: openai, model: gpt-4.1, limits: {concurrency: four}}", 1)},
			[]string{"run.yaml:3", "models[0].limits.concurrency", "expected"}, nil, "limits.concurrency"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := studytest.WriteTree(t, studytest.BaseTree(tc.files))
			_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
			var ds yamlstrict.Diags
			if !errors.As(err, &ds) {
				t.Fatalf("want config problems, got %v", err)
			}
			msg := err.Error()
			for _, w := range tc.want {
				if !strings.Contains(msg, w) {
					t.Errorf("the problem list lacks %q:\n%.2000s", w, msg)
				}
			}
			for _, a := range tc.absent {
				if strings.Contains(msg, a) {
					t.Errorf("the problem list has %.60q:\n%.2000s", a, msg)
				}
			}
			if tc.once != "" && strings.Count(msg, tc.once) != 1 {
				t.Errorf("%q is reported %d times, want once:\n%s", tc.once, strings.Count(msg, tc.once), msg)
			}
			if len(msg) > 4000 {
				t.Errorf("the problem list is %d bytes long", len(msg))
			}
			if strings.Contains(msg, key) || strings.Contains(msg, "my key") || strings.Contains(msg, "3f9a0c1d2e4b") {
				t.Errorf("a key-like value is echoed:\n%s", msg)
			}
		})
	}
}

// hubTask is the toy task reading its data by the hub reference ref.
func hubTask(ref string) map[string]string {
	return map[string]string{"configs/tasks/toy.yaml": strings.Replace(studytest.TaskYAML, "  path: ../../data/items.jsonl\n", "  hub: "+ref+"\n", 1)}
}

// The shipped configs (and what the holes above reject) still validate.
func TestBoundsAcceptWhatIsValid(t *testing.T) {
	run := studytest.BaseTree(nil)["configs/run.yaml"]
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{
		"configs/strategies/one_shot.yaml": strings.Replace(studytest.OneShotYAML, "temperature: 0", "temperature: 2\n    top_p: 1\n    max_tokens: 1", 1),
		"configs/run.yaml":                 strings.Replace(run, "concurrency: 3", "concurrency: 3, max_steps: 1", 1),
	}))
	studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
}

// FuzzConfigDecoder: whatever bytes a config file holds, parsing and strict
// decoding into every config type report problems in that file and never
// panic.
func FuzzConfigDecoder(f *testing.F) {
	for _, p := range []string{"../../configs/quickstart.yaml", "../../configs/paper.yaml", "../../configs/strategies/self_correct.yaml",
		"../../configs/strategies/safety_judge.yaml", "../../configs/tasks/ethics.yaml", "../../configs/models/gpt-4.1.yaml"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	bomb := "a: &a [x, x, x, x, x, x, x, x, x]\n"
	for i, prev := 0, "a"; i < 9; i++ {
		name := string(rune('b' + i))
		bomb += fmt.Sprintf("%s: &%s [*%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s, *%s]\n", name, name, prev, prev, prev, prev, prev, prev, prev, prev, prev)
		prev = name
	}
	f.Add([]byte(bomb + "stages: *j\nmodels: *j\n"))
	for _, s := range []string{"", "name: ~\n", "a: [\n", "---\n---\n", "x: &a [*a]\n", "settings: {max_steps: -1}\n", "<<: *x\n", "name: x\n---\nfoo: 1\n"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ds := &yamlstrict.Diags{}
		n := yamlstrict.ParseYAML("fuzz.yaml", data, ds)
		if n != nil {
			dec := yamlstrict.NewDecoder("fuzz.yaml", ds)
			dec.Decode(n, &spec.RunFile{}, "")
			dec.Decode(n, &spec.StrategySpec{}, "")
			dec.Decode(n, &spec.TaskSpec{}, "")
			dec.Decode(n, &spec.ModelSpec{}, "")
		}
		for _, d := range *ds {
			if d.File != "fuzz.yaml" || d.Msg == "" {
				t.Fatalf("diagnostic %+v", d)
			}
		}
	})
}

// A cache_dir inside a folder this user cannot write is reported by
// validate, not first by apply.
func TestCacheDirUnwritableIsReported(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root writes any folder")
	}
	run := studytest.BaseTree(nil)["configs/run.yaml"]
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": strings.Replace(run, "concurrency: 3", "concurrency: 3, cache_dir: ../locked/cache", 1)}))
	locked := filepath.Join(dir, "locked")
	if err := os.Mkdir(locked, 0o555); err != nil {
		t.Fatal(err)
	}
	_, err := spec.LoadWith(filepath.Join(dir, "configs/run.yaml"), spec.LoadOptions{})
	studytest.WantErr(t, err, "run.yaml:13", "settings.cache_dir", "locked cannot be written")
}
