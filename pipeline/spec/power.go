package spec

import (
	"github.com/promoral/promoral/pipeline/stats"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// PowerSpec is what a compare block assumes of its pairs for the power
// analysis plan makes (and the MDE the block reports beside each pair):
// a pilot run, when plan is given one, measures the same three.
type PowerSpec struct {
	Accuracy    *float64 `yaml:"accuracy,omitempty" min:"0" max:"1" default:"0.75" doc:"Accuracy of the first strategy (a) of each pair (default 0.75)."`
	Correlation *float64 `yaml:"correlation,omitempty" min:"0" max:"1" default:"0.5" doc:"Correlation (phi) of a's and b's correctness on one item, one sample each (default 0.5): the more the two strategies find the same items hard, the smaller the difference the paired test detects."`
	Consistency *float64 `yaml:"consistency,omitempty" min:"0" max:"1" default:"0.7" doc:"Correlation (phi) of two samples of one strategy on one item (default 0.7, and at least the correlation): how much repeats agree; it decides how much repeats help."`
}

// Assumptions are the spec's values, the defaults of its tags where it
// sets none (a nil spec, a block without power:, is every default).
func (p *PowerSpec) Assumptions() stats.PowerAssumptions {
	var q PowerSpec
	if p != nil {
		q = *p
	}
	yamlstrict.ApplyDefaults(&q) // decoding did for a written power:
	return stats.PowerAssumptions{Accuracy: *q.Accuracy, Correlation: *q.Correlation, Consistency: max(*q.Consistency, *q.Correlation)}
}

// Declared says whether the block declares any assumption.
func (p *PowerSpec) Declared() bool {
	return p != nil && (p.Accuracy != nil || p.Correlation != nil || p.Consistency != nil)
}

// Comparer is a metric block that tests paired comparisons (kind compare):
// plan reads its pairs to say what the study can detect.
type Comparer interface {
	Comparisons() Comparisons
}

// Comparisons are a compare block's pairs as plan needs them.
type Comparisons struct {
	Block string
	// ByModel: the pairs name models (compared within each strategy and
	// task), else strategies (within each model and task).
	ByModel bool
	// Pairs are [a, b]; empty means every pair in order of appearance.
	Pairs [][2]string
	// Tasks the block scores, by name.
	Tasks map[string]*Task
	Power *PowerSpec
}
