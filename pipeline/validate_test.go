package pipeline_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
)

// A bad config, or an output folder that cannot be written, must not touch
// the outputs of an earlier good run.
func TestBadInputLosesNothingAlreadyWritten(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(nil))
	out := filepath.Join(dir, "out")
	studytest.Apply(t, studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), out)
	before := snapshot(t, out)

	os.WriteFile(filepath.Join(dir, "configs/strategies/loop.yaml"), []byte("name: loop\nstages: [\n"), 0o644)
	if _, err := spec.Load(filepath.Join(dir, "configs/run.yaml")); err == nil {
		t.Fatal("broken strategy loaded")
	}
	if after := snapshot(t, out); !equalMaps(before, after) {
		t.Fatal("a failed load changed the outputs")
	}
}

func TestUnwritableOutputFolderFailsBeforeAnyCall(t *testing.T) {
	if os.Getuid() == 0 {
		// root can write anywhere; use a path under a regular file instead.
	}
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"blocker": "a file, not a folder"}))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	_, _, err := pipeline.NewEngine(st, pipeline.Options{OutDir: filepath.Join(dir, "blocker", "out"), Scorer: scoring.New()}).Run(context.Background())
	studytest.WantErr(t, err, "output folder", "--out")
	if calls := st.Model("bot").Provider.(interface{ Calls() int64 }).Calls(); calls != 0 {
		t.Fatalf("%d model calls before the output folder was checked", calls)
	}
}

func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, _ := os.ReadFile(filepath.Join(dir, e.Name()))
		out[e.Name()] = string(data)
	}
	return out
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}
