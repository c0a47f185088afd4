package engine_test

import (
	"path/filepath"
	"reflect"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/runfolder/manifest"
)

// Each metric block's entry of manifest.json carries what its kind
// declares for the report (draw), and that is what a folder written before
// draw existed implies from the kind and settings it recorded: the report
// of a new folder and of an old one say the same.
func TestManifestBlocksDeclareTheirDraw(t *testing.T) {
	run := `name: toy-run
models:` + studytest.ScriptedModel + `
tasks: [toy]
strategies: [one_shot, loop]
settings: {concurrency: 3, seed: 5}
metrics:
  - {kind: classification, bootstrap: 0}
  - {kind: classification, name: pos, confidence: positive, bins: 7, require_confidence: true, ece_promoral: true, bootstrap: 0}
  - {kind: confidence_study, threshold: 0.6, min_spearman_n: 12, min_group_n: 4, bins: 5, bootstrap: 0}
  - {kind: efficiency}
  - {kind: compare, pairs: [[one_shot, loop]], bootstrap: 0}
`
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{"configs/run.yaml": run}))
	st := studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml"))
	out := filepath.Join(dir, "out")
	studytest.Apply(t, st, out)
	m, err := manifest.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]func(d manifest.BlockDraw) bool{
		"classification": func(d manifest.BlockDraw) bool { return d.Bins == 10 && d.Confidence == "chosen" },
		"pos": func(d manifest.BlockDraw) bool {
			return d.Bins == 7 && d.Confidence == "positive" && len(d.Counting) == 3
		},
		"confidence_study": func(d manifest.BlockDraw) bool {
			return d.Bins == 5 && d.ConfidentAbove != nil && *d.ConfidentAbove == 0.6
		},
	}
	for _, b := range m.Metrics {
		var declared manifest.BlockDraw
		if b.Draw != nil {
			declared = *b.Draw
		}
		if ok := want[b.Name]; ok != nil && (b.Draw == nil || !ok(declared)) {
			t.Errorf("block %s declares %+v", b.Name, b.Draw)
		}
		old := b
		old.Draw = nil
		if implied := old.Drawn(); !reflect.DeepEqual(declared, implied) {
			t.Errorf("block %s (%s) declares\n%+v\nbut a folder without draw implies\n%+v", b.Name, b.Kind, declared, implied)
		}
	}
	if len(m.Metrics) != 5 {
		t.Errorf("%d blocks in the manifest, want 5", len(m.Metrics))
	}
}
