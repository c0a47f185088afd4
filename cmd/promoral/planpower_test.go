package main

import (
	"encoding/json"
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
	// --json carries the power, a missing MDE range as null.
	js, _, code := runCLI(t, "plan", "--json", "--detect", "0.2", cfg)
	var raw struct {
		Power struct {
			Blocks []struct {
				Rows []map[string]any `json:"rows"`
			} `json:"blocks"`
		} `json:"power"`
	}
	if err := json.Unmarshal([]byte(js), &raw); err != nil || code != 0 || len(raw.Power.Blocks) != 1 {
		t.Fatalf("plan --json: exit %d, %v\n%s", code, err, js)
	}
	if r := raw.Power.Blocks[0].Rows[0]; r["mde_low"] != nil || r["items"] != 40.0 {
		t.Errorf("power row in JSON: %v", r)
	}
	if _, stderr, code := runCLI(t, "plan", "--detect", "3", cfg); code == 0 || !strings.Contains(stderr, "--detect 3") {
		t.Errorf("--detect 3: exit %d, %s", code, stderr)
	}
}
