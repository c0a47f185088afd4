package spec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A model whose optional vars_file is not written yet runs on its inline
// vars; when the study reads one of them, validate and plan say so and
// name the run file that writes the vars file. Once it is written, or
// when no strategy reads the var, there is nothing to say.
func TestNoteOnVarsFileNotWrittenYet(t *testing.T) {
	root, _ := filepath.Abs("../..")
	dir := t.TempDir()
	paths := "paths: {tasks: " + filepath.Join(root, "configs/tasks") + ", strategies: " + filepath.Join(root, "configs/strategies") + ", prompts: " + filepath.Join(root, "prompts") + "}\n"
	model := `  - name: bot
    provider: scripted
    script: {replies: [{text: "Final Answer: Acceptable"}]}
    vars: {greeting: Hello there.}
    vars_file: {path: out/pick/picked.yaml, optional: true}
`
	strategy := func(text string) string {
		return `  - name: greet
    stages:
      - name: answer
        kind: prompt
        messages:
          - {role: assistant, text: "` + text + `"}
          - {role: user, template: zero_shot/user.tmpl}
      - {name: answer_parse, kind: extract, from: answer}
    outputs: {label: stages.answer_parse.label}
`
	}
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	// The run that writes the vars file (only its output and metrics are
	// read to find it).
	write("pick.yaml", "name: pick\noutput: out/pick\nmetrics:\n  - {kind: select_candidate, write: picked.yaml}\n")
	main := write("main.yaml", "name: main\nmodels:\n"+model+"tasks: [{use: ethics, dataset: {limit: 2}}]\nstrategies:\n"+strategy("{{.model.vars.greeting}}")+paths)
	plain := write("plain.yaml", "name: plain\nmodels:\n"+model+"tasks: [{use: ethics, dataset: {limit: 2}}]\nstrategies:\n"+strategy("Sure.")+paths)
	load := func(p string) []string {
		t.Helper()
		st, err := LoadWith(p, LoadOptions{})
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		return st.Notes
	}
	notes := load(main)
	if len(notes) != 1 || !strings.Contains(notes[0], "model bot uses its inline vars.greeting: its vars_file") ||
		!strings.Contains(notes[0], "picked.yaml is not written yet; `promoral apply") || !strings.Contains(notes[0], "pick.yaml` writes it") {
		t.Errorf("notes of a study reading a var its vars_file would set: %q", notes)
	}
	if n := load(plain); len(n) != 0 {
		t.Errorf("a study that reads no var of the file got notes: %q", n)
	}
	os.MkdirAll(filepath.Join(dir, "out/pick"), 0o755)
	write("out/pick/picked.yaml", "bot: {greeting: Hi.}\n")
	if n := load(main); len(n) != 0 {
		t.Errorf("notes once the vars file is written: %q", n)
	}
}
