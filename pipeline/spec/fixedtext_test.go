package spec

import (
	"strings"
	"testing"
)

// A block taken as fixed text is exactly what running its template
// writes; a block with any action is run.
func TestFixedBlocksAreWhatTheTemplateWrites(t *testing.T) {
	data := map[string]any{"item": map[string]any{"x": "<X>"}, "task": map[string]any{"name": "t"}}
	for _, c := range []struct {
		src   string
		fixed bool
	}{
		{"plain text", true},
		{"line one\nline two\n\n", true},
		{"", true},
		{"a {{/* a comment */}} b", true},
		{"a   {{- /* trimmed */ -}}   b", true},
		{"{{define \"x\"}}hidden{{end}}shown", true},
		{"{{`raw`}}", false},
		{"scenario: {{.item.x}}", false},
		{"{{if true}}yes{{end}}", false},
		{"{{template \"x\"}}{{define \"x\"}}in{{end}}", false},
	} {
		tm, err := parseTemplate("t", c.src)
		if err != nil {
			t.Fatalf("%q: %v", c.src, err)
		}
		b := newNamedTmpl("b", tm)
		if b.fixed != c.fixed {
			t.Errorf("%q: fixed %v, want %v", c.src, b.fixed, c.fixed)
			continue
		}
		var sb strings.Builder
		err = tm.Execute(&sb, data)
		if b.fixed && (err != nil || sb.String() != b.text) {
			t.Errorf("%q: fixed text %q, the template writes %q (%v)", c.src, b.text, sb.String(), err)
		}
	}
}

// The task's wording is the same whether its fixed blocks are run or
// taken as text, later blocks reading earlier ones included.
func TestTaskEnvSameWithFixedBlocks(t *testing.T) {
	srcs := map[string]string{
		"a_intro":    "Read this.",
		"b_scenario": "Scenario: {{.item.s}} ({{.task.a_intro}})",
		"c_question": "Is it {{index .task.labels 0}}?",
		"d_format":   "Answer with one word.\n",
	}
	build := func(fast bool) *Task {
		task := &Task{Name: "t", static: map[string]any{"name": "t", "labels": []string{"ok", "bad"}}}
		for _, n := range []string{"a_intro", "b_scenario", "c_question", "d_format"} {
			tm, err := parseTemplate(n, srcs[n])
			if err != nil {
				t.Fatal(err)
			}
			b := newNamedTmpl(n, tm)
			b.fixed = b.fixed && fast
			task.blocks = append(task.blocks, b)
		}
		return task
	}
	env := map[string]any{"item": map[string]any{"s": "I helped"}}
	task := build(true)
	fast, err := task.Env(env)
	if err != nil {
		t.Fatal(err)
	}
	fixed := 0
	for i := range task.blocks {
		if task.blocks[i].fixed {
			fixed++
		}
	}
	slow, err := build(false).Env(env)
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := task.Env(env); len(again) != len(fast) || len(task.rest) != 3 {
		t.Fatalf("a second case's wording %v; blocks left to run %d, want 3", again, len(task.rest))
	}
	if fixed != 2 {
		t.Fatalf("%d blocks taken as fixed, want 2", fixed)
	}
	if len(fast) != len(slow) {
		t.Fatalf("fast %v, slow %v", fast, slow)
	}
	for k, v := range slow {
		if _, isStr := v.(string); isStr && fast[k] != v {
			t.Errorf("%s: fast %q, slow %q", k, fast[k], v)
		}
	}
	if fast["b_scenario"] != "Scenario: I helped (Read this.)" {
		t.Errorf("b_scenario = %q", fast["b_scenario"])
	}
}
