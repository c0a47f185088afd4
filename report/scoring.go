package report

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/promoral/promoral/runfolder/manifest"
)

// The scoring section says, before any number, what ran and how every
// block counted: its unparsed and errors policies, what a confidence means
// in it, its bins and thresholds. Its lines come from the manifest and
// metrics.parquet, never from assumptions.

// ranLine counts what this run scored: the models, strategies and tasks
// of results.parquet (not the names a table of published figures or a
// pooled row mentions).
func (r *run) ranLine() string {
	models, strategies, tasks := r.ran.models, r.ran.strategies, r.ran.tasks
	if len(r.results) == 0 {
		models, strategies, tasks = r.metricNames()
	}
	var parts []string
	if len(models) > 0 {
		parts = append(parts, plural(len(models), "model"))
	}
	if len(strategies) > 0 {
		parts = append(parts, plural(len(strategies), "strategy"))
	}
	if len(tasks) > 0 {
		parts = append(parts, plural(len(tasks), "task"))
	}
	return strings.Join(parts, " · ")
}

// metricNames are the models, strategies and tasks of metrics.parquet's
// per-cell rows (pooled rows, "all" and "a vs b", left out).
func (r *run) metricNames() (models, strategies, tasks []string) {
	seen := map[string]bool{}
	add := func(list *[]string, kind, v string) {
		if v == "" || v == "all" || strings.Contains(v, " vs ") || seen[kind+v] {
			return
		}
		seen[kind+v] = true
		*list = append(*list, v)
	}
	for _, x := range r.metrics {
		if x.Model == "all" || x.Strategy == "all" || r.pooled[x.Task] {
			continue
		}
		add(&models, "m", x.Model)
		add(&strategies, "s", x.Strategy)
		add(&tasks, "t", x.Task)
	}
	sort.Strings(models)
	return
}

// countLines say how many cases ran and how they ended.
func (r *run) countLines() []string {
	models, strategies, tasks := r.ran.models, r.ran.strategies, r.ran.tasks
	if len(r.results) == 0 {
		models, strategies, tasks = r.metricNames()
	}
	var out []string
	if len(models)+len(strategies)+len(tasks) > 0 {
		out = append(out, fmt.Sprintf("Ran %s (%s) × %s (%s) on %s (%s).", plural(len(models), "model"), strings.Join(models, ", "),
			plural(len(strategies), "strategy"), strings.Join(strategies, ", "), plural(len(tasks), "task"), strings.Join(tasks, ", ")))
	}
	if len(r.results) > 0 {
		errored, unparsed := 0, 0
		for _, x := range r.results {
			switch {
			case x.Err != "":
				errored++
			case !x.Parsed:
				unparsed++
			}
		}
		out = append(out, fmt.Sprintf("Cases: %s, of which %s ended in an error and %s finished without a parsed answer.",
			groupDigits(int64(len(r.results))), groupDigits(int64(errored)), groupDigits(int64(unparsed))))
	} else if m := r.manifest; m != nil {
		out = append(out, fmt.Sprintf("Cases: %s, of which %s ended in an error and %s finished without a parsed answer (from manifest.json).",
			groupDigits(int64(m.Cases)), groupDigits(int64(m.Errors)), groupDigits(int64(m.Summary.Unparsed))))
	}
	if len(r.factors) > 0 {
		var fs []string
		for _, f := range r.factors {
			vals := map[string]bool{}
			for _, x := range r.metrics {
				if v := x.Factors[f]; v != "" {
					vals[v] = true
				}
			}
			fs = append(fs, fmt.Sprintf("%s (%s)", f, strings.Join(slices.Sorted(maps.Keys(vals)), ", ")))
		}
		out = append(out, "Conditions, as columns of every table: "+strings.Join(fs, "; ")+".")
	}
	withheld, tooFew := 0, 0
	for _, x := range r.metrics {
		switch x.Status {
		case "incomplete":
			withheld++
		case "too_few":
			tooFew++
		}
	}
	if withheld > 0 {
		out = append(out, fmt.Sprintf("Withheld as incomplete: %s, whose cells have errored cases (errors: incomplete). Apply again to retry them, or set the block's errors: to exclude or unparsed.", plural(withheld, "figure")))
	}
	if tooFew > 0 {
		out = append(out, fmt.Sprintf("Not given for too few answers (below the block's minimum, too_few): %s.", plural(tooFew, "statistic")))
	}
	return out
}

// policyLines say, block by block, how the numbers were counted.
func (r *run) policyLines() []string {
	var out []string
	for _, b := range r.blocks() {
		line := fmt.Sprintf("Block %s (%s", b.Name, b.Kind)
		if len(b.Tasks) > 0 {
			line += " on " + strings.Join(b.Tasks, ", ")
		}
		line += "): "
		d := b.Drawn()
		if d.Summary != "" {
			out = append(out, line+d.Summary)
			continue
		}
		var parts []string
		switch b.Unparsed {
		case "wrong":
			parts = append(parts, "unparsed answers count as wrong (kept in n)")
		case "exclude":
			parts = append(parts, "unparsed answers are left out of n")
		}
		switch b.Errors {
		case "incomplete":
			parts = append(parts, "errored cases: incomplete (a figure whose cell has any is withheld)")
		case "exclude":
			parts = append(parts, "errored cases: left out of n")
		case "unparsed":
			parts = append(parts, "errored cases: counted as unparsed answers")
		}
		parts = append(parts, d.Counting...)
		// bootstrap: is a field of every kind with intervals, alike in all.
		if v, ok := b.Settings["bootstrap"].(float64); ok && v == 0 {
			parts = append(parts, "no intervals (bootstrap: 0)")
		}
		out = append(out, line+strings.Join(parts, "; ")+".")
	}
	if len(out) > 0 {
		out = append(out, "Confidences are on the 0-1 scale in every Parquet and CSV output; a table that shows per cent says so. "+
			"F1 is the positive class's F1; weighted_f1 and macro_f1 are named as such.")
	}
	return out
}

// blocks are the run's metric blocks: from the manifest, else from the
// policy columns of metrics.parquet.
func (r *run) blocks() []manifest.Block {
	if r.manifest != nil && len(r.manifest.Metrics) > 0 {
		return r.manifest.Metrics
	}
	var out []manifest.Block
	idx := map[string]int{}
	for _, x := range r.metrics {
		if x.Block == "" {
			continue
		}
		i, ok := idx[x.Block]
		if !ok {
			i = len(out)
			idx[x.Block] = i
			out = append(out, manifest.Block{Name: x.Block, Kind: "metric block", Unparsed: x.Unparsed, Errors: x.Errors})
		}
		b := &out[i]
		if !r.pooled[x.Task] && !contains(b.Tasks, x.Task) {
			b.Tasks = append(b.Tasks, x.Task)
		}
	}
	return out
}

// namedBlock says whether a block has a name of its own, not its kind's:
// a run's only block of a kind goes by the kind's name, which a title
// need not repeat. A block the manifest does not record has its own.
func (r *run) namedBlock(block string) bool {
	for _, b := range r.blocks() {
		if b.Name == block {
			return b.Name != b.Kind
		}
	}
	return true
}

func contains(xs []string, s string) bool {
	for _, x := range xs {
		if x == s {
			return true
		}
	}
	return false
}

// scoringSection is the first section: what ran, and how it was counted.
func (r *run) scoringSection() *section {
	counts, policies := r.countLines(), r.policyLines()
	if len(counts)+len(policies) == 0 {
		return nil
	}
	s := &section{ID: "scoring", Title: "What ran and how it was counted"}
	for _, l := range counts {
		s.Blocks = append(s.Blocks, &note{Text: l, Kind: "info"})
	}
	for _, l := range policies {
		s.Blocks = append(s.Blocks, &note{Text: l, Kind: "info"})
	}
	return s
}
