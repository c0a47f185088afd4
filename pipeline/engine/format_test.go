package engine_test

import (
	"path/filepath"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/runfolder/manifest"

	"github.com/promoral/promoral/runfolder"
)

// An apply writes the run folder format runfolder declares: the manifest
// names it, and each file has the declared columns first.
func TestApplyWritesFormat(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(nil))
	out := filepath.Join(dir, "out")
	studytest.Apply(t, studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), out)
	m, err := manifest.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if m.Format != manifest.FormatVersion {
		t.Errorf("manifest format_version %d, want %d", m.Format, manifest.FormatVersion)
	}
	rows := studytest.ReadRows(t, filepath.Join(out, "calls.parquet"))
	if len(rows) == 0 {
		t.Fatal("no calls")
	}
	for _, c := range runfolder.CallSchema {
		if _, ok := rows[0][c.Name]; !ok {
			t.Errorf("calls.parquet has no column %s", c.Name)
		}
	}
}
