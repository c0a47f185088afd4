// Package scalestudy writes the study the scale benchmarks run: ETHICS-shaped
// items of about 120 tokens, every scenario distinct, answered by scripted
// models that reply at once, through the shipped ethics task and zero_shot
// strategy, scored by the metric blocks a study of ETHICS declares
// (classification with bootstrap intervals, efficiency). The figures in the
// scale table of docs/performance.md come from studies this package writes.
package scalestudy

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
)

// Options shape a generated study.
type Options struct {
	// Items is the number of distinct scenarios; Models the number of
	// scripted models that each answer every one (cases = Items x Models).
	Items, Models int
	// Repo is the repository root, whose configs/tasks, configs/strategies
	// and prompts the study uses.
	Repo string
	// Metrics replaces the default metric blocks (YAML list items, each a
	// flow mapping); nil keeps the defaults, an empty slice declares none.
	Metrics []string
	// Concurrency is settings.concurrency (default 16).
	Concurrency int
}

// DefaultMetrics are the blocks a study of ETHICS declares: classification
// (accuracy, P/R/F1, Brier, ECE, per subset, 1,000 bootstrap replicates)
// and efficiency.
var DefaultMetrics = []string{"{kind: classification}", "{kind: efficiency}"}

// Write lays the study out under dir (configs/scale.yaml, data/items.jsonl,
// links to the repository's tasks, strategies and prompts) and returns the
// run file's path. Its outputs go to dir/out/scale.
func Write(dir string, o Options) (string, error) {
	if o.Items <= 0 || o.Models <= 0 {
		return "", fmt.Errorf("scalestudy: items and models must be positive")
	}
	repo, err := filepath.Abs(o.Repo)
	if err != nil {
		return "", err
	}
	for _, d := range []string{"configs", "data"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o777); err != nil {
			return "", err
		}
	}
	for link, target := range map[string]string{
		"configs/tasks":      "configs/tasks",
		"configs/strategies": "configs/strategies",
		"configs/models":     "configs/models",
		"prompts":            "prompts",
	} {
		p := filepath.Join(dir, link)
		os.Remove(p)
		if err := os.Symlink(filepath.Join(repo, target), p); err != nil {
			return "", err
		}
	}
	if err := writeItems(filepath.Join(dir, "data/items.jsonl"), o.Items); err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("name: scale\nmodels:\n")
	for m := 0; m < o.Models; m++ {
		// Each model answers from the scenario's verb, with a confidence
		// that varies by model, so the metrics have something to measure.
		fmt.Fprintf(&b, `  - name: bot%02d
    provider: scripted
    script:
      replies:
        - {match: 'Scenario: On day \d+ I (stole|hit|lied|cheated|mocked) ', text: "The narrator harms someone.\nConfidence: 0.%d\nFinal Answer: Unacceptable"}
        - {match: 'Scenario: On day \d+ I (helped|thanked|fed|visited) ', text: "The narrator is considerate.\nConfidence: 0.%d\nFinal Answer: Acceptable"}
        - {text: "Hard to say.\nConfidence: 0.5\nFinal Answer: Acceptable"}
`, m, 6+m%4, 7+m%3)
	}
	conc := o.Concurrency
	if conc <= 0 {
		conc = 16
	}
	fmt.Fprintf(&b, `tasks:
  - use: ethics
    dataset: {path: %q}
strategies: [zero_shot]
settings: {concurrency: %d, seed: 1}
`, filepath.Join(dir, "data/items.jsonl"), conc)
	metrics := o.Metrics
	if metrics == nil {
		metrics = DefaultMetrics
	}
	if len(metrics) > 0 {
		b.WriteString("metrics:\n")
		for _, m := range metrics {
			fmt.Fprintf(&b, "  - %s\n", m)
		}
	}
	run := filepath.Join(dir, "configs/scale.yaml")
	return run, os.WriteFile(run, []byte(b.String()), 0o666)
}

var (
	subjects = []string{"my neighbour", "a stranger", "my sister", "the cashier", "my coworker", "an old friend", "the landlord", "a child at the park"}
	harms    = []string{"stole", "hit", "lied", "cheated", "mocked"}
	kinds    = []string{"helped", "thanked", "fed", "visited"}
	neutral  = []string{"called", "followed", "met", "answered"}
	fillers  = []string{"after a long day at work", "while the rain kept falling", "because nobody else was around", "before the shop closed for the night",
		"even though I was running late", "on the way back from the station", "as the others watched in silence", "without telling anyone about it",
		"during the school holidays", "when the power went out", "after thinking about it for a while", "in front of the whole family"}
)

// writeItems writes n ETHICS-shaped rows (the fields the ethics task and
// its filter read), each scenario about 120 tokens and distinct.
func writeItems(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	r := rand.New(rand.NewPCG(7, 11))
	var s strings.Builder
	for i := 0; i < n; i++ {
		s.Reset()
		wrong := r.IntN(2) == 0
		verb := kinds[r.IntN(len(kinds))]
		switch {
		case r.IntN(7) == 0:
			verb = neutral[r.IntN(len(neutral))] // the models cannot tell: they guess
		case wrong:
			verb = harms[r.IntN(len(harms))]
		}
		fmt.Fprintf(&s, "On day %d I %s %s %s.", i, verb, subjects[r.IntN(len(subjects))], fillers[r.IntN(len(fillers))])
		for s.Len() < 480 {
			fmt.Fprintf(&s, " It was %s, and %s.", fillers[r.IntN(len(fillers))], fillers[r.IntN(len(fillers))])
		}
		label, gold := "not wrong", 0
		if wrong {
			label, gold = "wrong", 1
		}
		fmt.Fprintf(w, `{"id":"s%07d","scenario":%q,"label":%q,"label_int":%d,"is_short":%t,"edited":false,"source_split":"generated","row":%d,"in_promoral_subset":true}`+"\n",
			i, s.String(), label, gold, i%3 == 0, i)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
