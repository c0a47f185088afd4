package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
)

// view --bundle writes a static site of a run (its page, its viewer compiled
// to WebAssembly, the marker that lets a later bundle replace it), writes it
// again over an earlier bundle, and refuses a folder that holds other files,
// leaving them as they were.
func TestViewBundleCommand(t *testing.T) {
	cfg := filepath.Join(studytest.WriteTree(t, studytest.ShardTree()), "configs/run.yaml")
	run := filepath.Join(t.TempDir(), "run")
	studytest.Apply(t, studytest.MustLoad(t, cfg), run)
	site := filepath.Join(t.TempDir(), "site")
	for i := range 2 {
		stdout, stderr, code := runCLI(t, "view", "--bundle", site, run)
		if code != 0 {
			t.Fatalf("bundle %d: exit %d\n%s%s", i+1, code, stdout, stderr)
		}
		fitsTerminal(t, "view --bundle", stdout+stderr)
	}
	for _, f := range []string{"index.html", "promoral-bundle.json", "view.wasm.gz", "assets/wasm_exec.js", "assets/bundle.js"} {
		if st, err := os.Stat(filepath.Join(site, f)); err != nil || st.Size() == 0 {
			t.Errorf("the bundle lacks %s: %v", f, err)
		}
	}
	other := t.TempDir()
	notes := filepath.Join(other, "notes.txt")
	if err := os.WriteFile(notes, []byte("mine"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runCLI(t, "view", "--bundle", other, run)
	if code == 0 || !strings.Contains(words(stderr), other) {
		t.Errorf("a folder holding other files: exit %d, %s", code, stderr)
	}
	if b, err := os.ReadFile(notes); err != nil || string(b) != "mine" {
		t.Errorf("the refused bundle touched %s: %q, %v", notes, b, err)
	}
}
