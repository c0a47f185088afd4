package view

// answerPolicy is how a run counts a task's answers in a paired
// comparison and in the Correct filter: the engine's rule
// (manifest.AnswerPolicy) written out as the table of its eight cases when
// the run is opened, so that a bundle's viewer, compiled without the
// engine, counts by the same rule.
type answerPolicy struct {
	Unparsed, Errors string
	// Incomplete: the errors policy gives no paired figure for a cell
	// with an errored case.
	Incomplete bool
	// Table is Score's answer (ok, right) for each errored, parsed,
	// correct (bits 2, 1, 0 of the index).
	Table [8][2]bool
}

func policyFrom(unparsed, errors string, incomplete bool, score func(errored, parsed, correct bool) (ok, right bool)) answerPolicy {
	p := answerPolicy{Unparsed: unparsed, Errors: errors, Incomplete: incomplete}
	for k := range p.Table {
		ok, right := score(k&4 != 0, k&2 != 0, k&1 != 0)
		p.Table[k] = [2]bool{ok, right}
	}
	return p
}

// Score says whether an answer with a gold label counts under the policy,
// and whether it counts as correct.
func (p answerPolicy) Score(errored, parsed, correct bool) (ok, right bool) {
	k := 0
	if errored {
		k |= 4
	}
	if parsed {
		k |= 2
	}
	if correct {
		k |= 1
	}
	return p.Table[k][0], p.Table[k][1]
}
