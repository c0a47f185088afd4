package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// plan with a compare block says what the study can detect, and --detect
// lists designs, all within 80 columns; a bad --detect is an error.
func TestPlanPowerAndDetect(t *testing.T) {
	dir := killStudy(t, 40)
	cfg := filepath.Join(dir, "configs/run.yaml")
	data, _ := os.ReadFile(cfg)
	os.WriteFile(cfg, append(data, []byte("metrics:\n  - {kind: compare, pairs: [[once, loop]]}\n")...), 0o644)
	out, stderr, code := runCLI(t, "plan", "--detect", "0.2", cfg)
	if code != 0 {
		t.Fatal(stderr)
	}
	for _, want := range []string{"power of compare block compare: 1 tests", "MDE 80%", "toy", "to detect 0.2 with 80% power", "x 1"} {
		if !strings.Contains(words(out), want) {
			t.Errorf("plan lacks %q:\n%s", want, out)
		}
	}
	fitsEighty(t, out[strings.Index(out, "power of"):]) // the heading names a temp path
	if _, stderr, code := runCLI(t, "plan", "--detect", "3", cfg); code == 0 || !strings.Contains(stderr, "--detect 3") {
		t.Errorf("--detect 3: exit %d, %s", code, stderr)
	}
}
