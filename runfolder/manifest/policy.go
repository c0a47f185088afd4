package manifest

// Errors policies of a metric block (errors:), as the manifest's
// errors_policy names them.
const (
	ErrorsIncomplete = "incomplete"
	ErrorsExclude    = "exclude"
	ErrorsUnparsed   = "unparsed"
)

// AnswerPolicy is how a run folder counts a task's answers in a paired
// comparison: the unparsed and errors policies of its first classification
// block scoring the task (else the run's settings). `promoral diff` and
// `promoral view` pair cases with it.
type AnswerPolicy struct{ unparsed, errors string }

// AnswerPolicyOf reads the policy from the run folder's manifest (the
// defaults when it has none or it cannot be read).
func AnswerPolicyOf(runDir, task string) AnswerPolicy {
	m, err := Read(runDir)
	if err != nil {
		m = nil
	}
	return PolicyFor(m, task)
}

// PolicyFor is the unparsed and errors policy the run's first
// classification block scoring the task used (else the run's settings,
// errors exclude for a run from before errors: existed); m may be nil.
func PolicyFor(m *Manifest, task string) AnswerPolicy {
	p := AnswerPolicy{unparsed: "wrong", errors: ErrorsExclude}
	if m == nil {
		return p
	}
	if m.Unparsed != "" {
		p.unparsed = m.Unparsed
	}
	for _, b := range m.Metrics {
		if b.Kind != "classification" || (len(b.Tasks) > 0 && !contains(b.Tasks, task)) {
			continue
		}
		if b.Unparsed != "" {
			p.unparsed = b.Unparsed
		}
		p.errors = b.Errors
		break
	}
	return p
}

// Unparsed names the unparsed policy.
func (a AnswerPolicy) Unparsed() string { return a.unparsed }

// Errors names the errors policy.
func (a AnswerPolicy) Errors() string { return a.errors }

// Score says whether an answer with a gold label enters the paired
// comparison under this policy, and whether it counts as correct: an
// errored answer counts only under errors: unparsed (as an unparsed one);
// an unparsed one is left out under unparsed: exclude.
func (a AnswerPolicy) Score(errored, parsed, correct bool) (ok, right bool) {
	if errored {
		if a.errors != ErrorsUnparsed {
			return false, false
		}
		parsed = false
	}
	if !parsed && a.unparsed == "exclude" {
		return false, false
	}
	return true, parsed && correct
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}
