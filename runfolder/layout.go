package runfolder

import (
	"os"
	"path/filepath"
)

// A run folder holds one apply's outputs as a set that is switched in as a
// whole:
//
//	out/<run>/journal.jsonl                 the journal (appended, never replaced)
//	out/<run>/.gen/<id>/                    one apply's outputs: results.parquet,
//	                                        calls.parquet, metrics.parquet,
//	                                        manifest.json, the metric CSVs, …
//	out/<run>/.gen/current -> <id>          the generation in force
//	out/<run>/results.parquet -> .gen/current/results.parquet   (a link per file)
//
// An apply writes a new generation beside the current one, then replaces the
// `current` link in one rename: a reader following out/<run>/results.parquet
// sees the old set or the new one, never a mix, and a process killed at any
// point leaves the old set in force. The links at the top keep every path
// users and tools open (out/<run>/results.parquet) working.
const (
	// GenDir is the folder of the generations, GenCurrent the link to
	// the one in force.
	GenDir     = ".gen"
	GenCurrent = "current"
)

// CurrentGeneration is the folder of the outputs in force, or "" when the
// run folder has none in this layout.
func CurrentGeneration(runDir string) string {
	id, err := os.Readlink(filepath.Join(runDir, GenDir, GenCurrent))
	if err != nil {
		return ""
	}
	return filepath.Join(runDir, GenDir, id)
}
