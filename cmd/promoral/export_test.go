package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
)

// export --format eee writes a record and a samples file per model × task
// and says what it wrote; another format, or a folder that is no run,
// is refused with a message naming what to do.
func TestExportEEE(t *testing.T) {
	cfg := filepath.Join(studytest.WriteTree(t, studytest.ShardTree()), "configs/run.yaml")
	dir := t.TempDir()
	out := filepath.Join(dir, "out")
	studytest.Apply(t, studytest.MustLoad(t, cfg), out)
	eeeDir := filepath.Join(dir, "eee")
	stdout, stderr, code := runCLI(t, "export", "--format", "eee", out, eeeDir)
	if code != 0 {
		t.Fatalf("export: exit %d\n%s", code, stderr)
	}
	if !strings.Contains(stdout, "bot × safety: 6 metrics, 4 samples") || !strings.Contains(stdout, "2 records, 16 samples in "+eeeDir) {
		t.Errorf("export printed:\n%s", stdout)
	}
	samples, _ := filepath.Glob(filepath.Join(eeeDir, "data", "*", "*", "bot", "*_samples.jsonl"))
	if len(samples) != 2 {
		t.Errorf("samples files: %v", samples)
	}
	if _, stderr, code := runCLI(t, "export", "--format", "csv", out, eeeDir); code == 0 || !strings.Contains(stderr, "eee") {
		t.Errorf("--format csv: exit %d, %s", code, stderr)
	}
	os.MkdirAll(filepath.Join(dir, "empty"), 0o755)
	if _, stderr, code := runCLI(t, "export", "--format", "eee", filepath.Join(dir, "empty"), eeeDir); code == 0 || !strings.Contains(words(stderr), "no manifest.json") {
		t.Errorf("a folder that is no run: exit %d, %s", code, stderr)
	}
}
