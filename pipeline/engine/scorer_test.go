package engine_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/promoral/promoral/internal/studytest"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/scoring"
)

// The engine scores through the Scorer it is given and knows no metric
// itself: a study with metric blocks and no scorer is refused before
// anything is written, by an apply and by an output set; a study without
// metric blocks needs none; with one, metrics.parquet is written.
func TestEngineScoresThroughItsScorer(t *testing.T) {
	dir := studytest.WriteTree(t, studytest.BaseTree(map[string]string{
		"configs/scored.yaml": studytest.BaseTree(nil)["configs/run.yaml"] + "metrics: [{kind: classification, bootstrap: 0}]\n",
	}))
	scored := studytest.MustLoad(t, filepath.Join(dir, "configs/scored.yaml"))
	out := filepath.Join(dir, "out")
	_, _, err := engine.NewEngine(scored, engine.Options{OutDir: out}).Run(context.Background())
	studytest.WantErr(t, err, "metric blocks but no scorer", "Options.Scorer")
	if _, serr := os.Stat(out); !os.IsNotExist(serr) {
		t.Errorf("the refused apply left %s behind (%v)", out, serr)
	}

	plain := filepath.Join(dir, "plain")
	sum, _, err := engine.NewEngine(studytest.MustLoad(t, filepath.Join(dir, "configs/run.yaml")), engine.Options{OutDir: plain}).Run(context.Background())
	if err != nil || sum.Errors != 0 {
		t.Fatalf("a study without metric blocks: %v, %+v", err, sum)
	}
	if _, err := os.Stat(filepath.Join(plain, "metrics.parquet")); !os.IsNotExist(err) {
		t.Errorf("metrics.parquet without a metric block (%v)", err)
	}

	if _, _, err := engine.NewEngine(scored, engine.Options{OutDir: out, Scorer: scoring.New()}).Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if rows := studytest.ReadRows(t, filepath.Join(out, "metrics.parquet")); len(rows) == 0 {
		t.Error("metrics.parquet has no rows")
	}

	j, err := journal.OpenReadOnly(filepath.Join(out, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	set, err := engine.OpenOutputSet(scored, filepath.Join(dir, "set"), j, nil, nil)
	studytest.WantErr(t, err, "metric blocks but no scorer")
	if set != nil {
		set.Abort()
		t.Error("OpenOutputSet returned a set without a scorer")
	}
}
