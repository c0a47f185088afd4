package manifest

import "fmt"

// BlockDraw is what a metric kind declares about its block's rows for the
// report: every field is optional, and a kind fills in those that apply.
type BlockDraw struct {
	// Summary, when set, is the one sentence that says what the block
	// does, in place of its policies (a block that counts nothing itself).
	Summary string `json:"summary,omitempty"`
	// Counting says how the block counts beyond its unparsed and errors
	// policies, one phrase each, in the kind's words.
	Counting []string `json:"counting,omitempty"`
	// Bins is the number of equal-width bins of the block's ECE rows and
	// reliability table; 0 when it bins no confidence.
	Bins int `json:"bins,omitempty"`
	// Confidence is what a stated confidence is in the block: "positive"
	// (the probability of the task's positive class) or "chosen" (the
	// confidence in the chosen answer); empty when it reads none.
	Confidence string `json:"confidence,omitempty"`
	// ConfidentAbove is the confidence above which the block counts an
	// answer as confident (0-1); nil when it has no such threshold.
	ConfidentAbove *float64 `json:"confident_above,omitempty"`
	// Judges says that the model and strategy columns of the block's rows
	// name a judge, not a cell under test (except its asr_ and rta_ rows,
	// which are a cell's rates corrected for its judge).
	Judges bool `json:"judges,omitempty"`
	// PooledTask is the task column of the block's rows that pool several
	// tasks into one score: a name that is not one of the run's tasks.
	PooledTask string `json:"pooled_task,omitempty"`
}

// BlockDrawer is implemented by a metric kind that declares its BlockDraw;
// the engine writes it into the block's entry of manifest.json.
type BlockDrawer interface {
	BlockDraw() BlockDraw
}

// Drawn is what the block declares for the report: its Draw, or, in a
// folder written before blocks declared one, the same facts read from the
// kind and settings that folder recorded (the kinds that had any then).
func (b Block) Drawn() BlockDraw {
	if b.Draw != nil {
		return *b.Draw
	}
	set := b.Settings
	num := func(k string, d float64) float64 {
		if v, ok := set[k].(float64); ok {
			return v
		}
		return d
	}
	eceBins := func(d *BlockDraw) string {
		d.Bins = 10
		if v := num("bins", 0); v > 0 {
			d.Bins = int(v)
		}
		return fmt.Sprintf("ECE in %d equal-width bins (lo, hi], the first [0, hi]", d.Bins)
	}
	var d BlockDraw
	if set["require_confidence"] == true {
		d.Counting = append(d.Counting, "a reply counts as parsed only with a label and a confidence")
	}
	switch b.Kind {
	case "reference":
		from, _ := set["from"].(string)
		if from == "" {
			from = "the first fitting block"
		}
		d.Counting = nil
		d.Summary = fmt.Sprintf("compares the figures of %s, counted as that block counts them, with published ones.", from)
	case "classification":
		d.Confidence = "chosen"
		conf := "a stated confidence is the confidence in the chosen answer"
		if set["confidence"] == "positive" {
			d.Confidence, conf = "positive", "a stated confidence is the probability of the positive class"
		}
		d.Counting = append([]string{conf}, d.Counting...)
		ece := eceBins(&d)
		if set["ece_promoral"] == true {
			ece += "; ece_pos_promoral as ProMoral's code bins (a stated 0 in no bin)"
		}
		d.Counting = append(d.Counting, ece)
	case "confidence_study":
		thr := num("threshold", 0.7)
		d.ConfidentAbove = &thr
		d.Counting = append(d.Counting, eceBins(&d), fmt.Sprintf("confident means a confidence above %g; Spearman's rho from %g answers, Mann-Whitney from %g right and %g wrong",
			thr, num("min_spearman_n", 10), num("min_group_n", 5), num("min_group_n", 5)))
	case "judge_agreement":
		d.Judges = true
	case "umss":
		d.PooledTask = "umss"
	}
	return d
}
