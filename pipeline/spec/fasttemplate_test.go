package spec

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// ExecTemplate must write exactly what text/template writes, and fail
// exactly when it fails, whether it takes its fast path or not.
func TestExecTemplateIsTextTemplate(t *testing.T) {
	sources := []string{
		"",
		"plain text only",
		"{{.task.question}}\n\n{{.task.scenario}}\n\n{{.task.answer_format}}",
		"Scenario: {{ .item.text }} ({{.item.id}})",
		"{{- .item.text -}}  trimmed  {{- .item.text }}",
		"{{.item.missing}}",
		"{{.nope.text}}",
		"{{.item}}",
		"{{.item.n}}",
		"{{.item.nilv}}",
		"{{.item.nested.deep}}",
		"{{.item.text | printf \"%q\"}}",
		"{{join \", \" .item.list}}",
		"{{if .item.text}}yes{{end}}",
		"{{range .item.list}}[{{.}}]{{end}}",
		"{{$x := .item.text}}{{$x}}",
		"{{/* a comment */}}{{.item.text}}",
		"{{.item.strs}}",
	}
	rng := rand.New(rand.NewPCG(7, 8))
	words := []string{"a", "<b>", "&amp;", "line\nbreak", "ünï", "{{.x}}", ""}
	word := func() string { return words[rng.IntN(len(words))] + words[rng.IntN(len(words))] }
	for i, src := range sources {
		tm, err := parseTemplate(fmt.Sprint("t", i), src)
		if err != nil {
			t.Fatalf("%q: %v", src, err)
		}
		for range 50 {
			item := map[string]any{"text": word(), "id": word(), "n": rng.IntN(100), "nilv": nil,
				"list": []string{word(), word()}, "strs": map[string]string{"k": word()},
				"nested": map[string]any{"deep": word()}}
			if rng.IntN(3) == 0 {
				delete(item, "text")
			}
			task := map[string]any{"question": word(), "scenario": word(), "answer_format": word()}
			env := map[string]any{"item": item, "task": task}
			var want, got strings.Builder
			werr := tm.Execute(&want, env)
			gerr := ExecTemplate(tm, &got, env)
			if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
				t.Fatalf("%q: error %v, text/template's %v", src, gerr, werr)
			}
			if got.String() != want.String() {
				t.Fatalf("%q on %v: wrote %q, text/template %q", src, env, got.String(), want.String())
			}
		}
	}
	// The shape promoral's prompts have takes the fast path.
	tm, _ := parseTemplate("p", "{{.task.question}}\n{{.item.text}}")
	if planOf(tm) == nil {
		t.Error("a template of text and field chains has no fast path")
	}
}
