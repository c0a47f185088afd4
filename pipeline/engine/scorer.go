package engine

import (
	"errors"
	"path/filepath"

	"github.com/promoral/promoral/pipeline/spec"
)

// Scorer computes a study's metrics once an output set's results are
// written (package scoring's scoring.New is the one promoral uses). The
// engine knows no metric and no statistic: it writes results.parquet, hands
// the scorer what it wrote, and puts the texts the scorer returns in the
// summary (Summary.Report).
type Scorer interface {
	// Score computes the metric blocks of w.Study over the results in
	// w.Dir and writes metrics.parquet and the blocks' tables there. It
	// returns the texts the blocks want printed.
	Score(w Written) ([]string, error)
}

// Written is what an output set hands its Scorer: the results it wrote,
// not yet switched in.
type Written struct {
	Study *spec.Study
	// Dir is the output set's folder: results.parquet is there, and the
	// metrics go there.
	Dir string
	// Order is the case ordinal of each row of results.parquet, in the
	// order the file holds them.
	Order []int32
	// Journal is the path of the run's journal, for metrics that read
	// transcripts and for the labels people gave beside it.
	Journal string
}

// Results is the path of the results.parquet written.
func (w Written) Results() string { return filepath.Join(w.Dir, "results.parquet") }

// errNoScorer is the engine's refusal to run a study with metric blocks
// without a Scorer.
var errNoScorer = errors.New("the study has metric blocks but no scorer was given: pass one (scoring.New()) in Options.Scorer")

// needScorer is errNoScorer when st has metric blocks and sc is nil.
func needScorer(st *spec.Study, sc Scorer) error {
	if len(st.Metrics) > 0 && sc == nil {
		return errNoScorer
	}
	return nil
}
