package scoring

import (
	"path/filepath"

	"github.com/promoral/promoral/pipeline"
	"github.com/promoral/promoral/pipeline/audit"
)

// HumanLabels reads the audit labels in force for the run a result set
// belongs to (labels.jsonl beside its journal), for the metrics that
// measure judges against people. The verdicts a task's dataset records
// (human:, judge_columns:) are the task's: pipeline.Task.HumanLabel.
func HumanLabels(rs *pipeline.ResultSet) ([]audit.Label, error) {
	if rs.Journal == "" {
		return nil, nil
	}
	return audit.ReadLabels(filepath.Dir(rs.Journal))
}
