package scoring

import (
	"path/filepath"

	"github.com/promoral/promoral/pipeline/audit"
	"github.com/promoral/promoral/pipeline/spec"
)

// HumanLabels reads the audit labels in force for the run a result set
// belongs to (labels.jsonl beside its journal), for the metrics that
// measure judges against people. The verdicts a task's dataset records
// (human:, judge_columns:) are the task's: spec.Task.HumanLabel.
func HumanLabels(rs *spec.ResultSet) ([]audit.Label, error) {
	if rs.Journal == "" {
		return nil, nil
	}
	return audit.ReadLabels(filepath.Dir(rs.Journal))
}
