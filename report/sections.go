package report

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"
)

// mkey addresses one value of metrics.parquet.
type mkey struct{ block, task, model, strategy, subset, metric string }

type cellKey struct{ model, strategy string }

// index holds metrics.parquet for lookups.
type index struct {
	m map[mkey]metric
	// blocks lists, per task and metric, the blocks that report it, in
	// name order.
	blocks map[[2]string][]string
}

func newIndex(ms []metric) *index {
	ix := &index{m: make(map[mkey]metric, len(ms)), blocks: map[[2]string][]string{}}
	seen := map[[3]string]bool{}
	for _, x := range ms {
		ix.m[mkey{x.Block, x.Task, x.Model, x.Strategy, x.Subset, x.Metric}] = x
		if k := [3]string{x.Task, x.Metric, x.Block}; !seen[k] {
			seen[k] = true
			ix.blocks[[2]string{x.Task, x.Metric}] = append(ix.blocks[[2]string{x.Task, x.Metric}], x.Block)
		}
	}
	for k := range ix.blocks {
		sort.Strings(ix.blocks[k])
	}
	return ix
}

// blocksOf are the blocks that report a metric for a task.
func (ix *index) blocksOf(task, metricName string) []string {
	return ix.blocks[[2]string{task, metricName}]
}

// get is a value from the first block (by name) that reports the metric
// for the task.
func (ix *index) get(task, model, strategy, subset, metricName string) (metric, bool) {
	for _, b := range ix.blocksOf(task, metricName) {
		if x, ok := ix.m[mkey{b, task, model, strategy, subset, metricName}]; ok {
			return x, true
		}
	}
	return metric{}, false
}

// getB is a value of one block.
func (ix *index) getB(block, task, model, strategy, subset, metricName string) (metric, bool) {
	x, ok := ix.m[mkey{block, task, model, strategy, subset, metricName}]
	return x, ok
}

// has says whether a task has any row of the metric (subset all).
func (ix *index) has(task, metricName string) bool {
	for k := range ix.m {
		if k.task == task && k.metric == metricName && k.subset == "all" && k.model != "all" {
			return true
		}
	}
	return false
}

// hasB is has within one block.
func (ix *index) hasB(block, task, metricName string) bool {
	for k := range ix.m {
		if k.block == block && k.task == task && k.metric == metricName && k.subset == "all" && k.model != "all" {
			return true
		}
	}
	return false
}

// cells are the model × strategy pairs a task has the metric for, in
// display order.
func (r *run) cells(ix *index, task string, metrics ...string) []cellKey {
	var out []cellKey
	for _, m := range r.models {
		for _, s := range r.strategies {
			for _, name := range metrics {
				if _, ok := ix.get(task, m, s, "all", name); ok {
					out = append(out, cellKey{m, s})
					break
				}
			}
		}
	}
	return out
}

// subsets of a task's metric, other than all, in first-seen order.
func (r *run) subsets(task, metricName string) []string {
	var out []string
	seen := map[string]bool{}
	for _, x := range r.metrics {
		if x.Task == task && x.Metric == metricName && x.Subset != "all" && !seen[x.Subset] {
			seen[x.Subset] = true
			out = append(out, x.Subset)
		}
	}
	return out
}

// ---- header ----

func (r *run) header(d *doc) {
	m := r.manifest
	d.Title = "Run report"
	if m != nil && m.Run != "" {
		d.Title = m.Run
	} else {
		d.Title = baseName(r.dir)
	}
	for _, mod := range r.models {
		d.Legend = append(d.Legend, swatch{mod, r.color(mod)})
	}
	if m == nil {
		d.Subtitle = "No manifest.json in this run folder: the counts below come from the tables."
		if len(r.results) > 0 {
			d.Cards = append(d.Cards, card{Label: "Cases", Value: groupDigits(int64(len(r.results)))})
		}
		return
	}
	d.Subtitle = r.ranLine()
	d.Meta = append(d.Meta, kv{K: "Config", V: m.ConfigFile})
	if m.ConfigHash != "" {
		d.Meta = append(d.Meta, kv{K: "Config hash", V: clip12(m.ConfigHash), Title: m.ConfigHash})
	}
	d.Meta = append(d.Meta, kv{K: "Version", V: m.Version})
	if !m.Started.IsZero() {
		d.Meta = append(d.Meta, kv{K: "Started", V: m.Started.UTC().Format("2006-01-02 15:04:05 MST")})
	}
	if !m.Finished.IsZero() {
		v := m.Finished.UTC().Format("2006-01-02 15:04:05 MST")
		if !m.Started.IsZero() {
			v += " (" + fmtDuration(m.Finished.Sub(m.Started)) + ")"
		}
		d.Meta = append(d.Meta, kv{K: "Finished", V: v})
	}
	d.Meta = append(d.Meta, kv{K: "Seed", V: fmt.Sprint(m.Seed) + " (every bootstrap interval)"})
	var models []string
	for _, x := range m.Models {
		s := x.Name
		if x.Provider != "" {
			s += " (" + x.Provider
			if x.Model != "" && x.Model != x.Name {
				s += ": " + x.Model
			}
			s += ")"
		}
		models = append(models, s)
	}
	if len(models) > 0 {
		d.Meta = append(d.Meta, kv{K: "Models", V: strings.Join(models, ", ")})
	}
	var tasks []string
	for _, t := range m.Tasks {
		tasks = append(tasks, fmt.Sprintf("%s (%s items)", t.Name, groupDigits(int64(t.Items))))
	}
	if len(tasks) > 0 {
		d.Meta = append(d.Meta, kv{K: "Tasks", V: strings.Join(tasks, ", ")})
	}
	if len(m.Strategies) > 0 {
		d.Meta = append(d.Meta, kv{K: "Strategies", V: strings.Join(m.Strategies, ", ")})
	}
	if len(m.Skipped) > 0 {
		d.Meta = append(d.Meta, kv{K: "Skipped", V: strings.Join(m.Skipped, "; ")})
	}
	// Completion tokens already include the thinking tokens (they are
	// billed as output); ThinkingTokens says how many of them were.
	tokens := m.PromptTokens + m.CompletionTokens
	tokSub := fmt.Sprintf("%s in · %s out", fmtTokens(float64(m.PromptTokens)), fmtTokens(float64(m.CompletionTokens)))
	if m.ThinkingTokens > 0 {
		tokSub += fmt.Sprintf(" (%s of them thinking)", fmtTokens(float64(m.ThinkingTokens)))
	}
	d.Cards = []card{
		{Label: "Cases", Value: groupDigits(int64(m.Cases))},
		{Label: "Calls", Value: groupDigits(int64(m.CallsNew + m.CallsCached)), Sub: fmt.Sprintf("%s new · %s cached", groupDigits(int64(m.CallsNew)), groupDigits(int64(m.CallsCached)))},
		{Label: "Errors", Value: groupDigits(int64(m.Errors)), Warn: m.Errors > 0},
		{Label: "Unparsed", Value: groupDigits(int64(m.Summary.Unparsed)), Sub: pct(m.Summary.Unparsed, m.Cases) + " of cases", Warn: m.Cases > 0 && float64(m.Summary.Unparsed)/float64(m.Cases) > 0.05},
		{Label: "Tokens", Value: fmtTokens(float64(tokens)), Sub: tokSub},
		{Label: "Cost", Value: fmtCost(m.CostUSD)},
	}
	if m.Truncated > 0 {
		d.Cards = append(d.Cards, card{Label: "Truncated", Value: groupDigits(int64(m.Truncated)), Warn: true})
	}
	if m.Interrupted {
		d.Cards = append(d.Cards, card{Label: "Status", Value: "interrupted", Sub: "run apply again to resume", Warn: true})
	}
	if sel := m.Selection; sel.Partial() {
		// A part of the study (apply --limit, --model, --shard …): its
		// figures must not pass for the study's.
		d.Cards = append(d.Cards, card{Label: "Selection", Value: "partial", Sub: sel.Describe() + "; every figure describes these cases only", Warn: true})
	}
	if n := len(m.MergedFrom); n > 0 {
		d.Meta = append(d.Meta, kv{K: "Merged from", V: plural(n, "shard") + " (promoral merge; metrics recomputed on the joined results)"})
	}
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	if strings.HasSuffix(what, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(what, "y"))
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func pct(a, b int) string {
	if b == 0 {
		return "0%"
	}
	p := 100 * float64(a) / float64(b)
	if p > 0 && p < 0.1 {
		return "<0.1%"
	}
	return fmt.Sprintf("%.1f%%", p)
}

func clip12(s string) string {
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func fmtDuration(d time.Duration) string {
	switch {
	case d < time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	case d < time.Minute:
		return fmt.Sprintf("%.1f s", d.Seconds())
	case d < time.Hour:
		return fmt.Sprintf("%dm %02ds", int(d.Minutes()), int(d.Seconds())%60)
	}
	return fmt.Sprintf("%dh %02dm", int(d.Hours()), int(d.Minutes())%60)
}

// ---- highlights ----

// highlights picks the best model × strategy of each headline metric,
// within one task and one block (tasks differ in chance rates), only among
// clean figures (no errored, empty or all-unparsed cell) and only when one
// cell is strictly best: a tie crowns nobody.
func (r *run) highlights(d *doc, ix *index) {
	best := func(block, task, name string, better int) (cellKey, metric, bool) {
		var bk cellKey
		var bm metric
		found, tied, n := false, false, 0
		for _, c := range r.cellsB(ix, block, task, name) {
			x, _ := ix.getB(block, task, c.model, c.strategy, "all", name)
			if x.degenerate() {
				continue
			}
			n++
			switch {
			case !found || (better > 0 && x.Value > bm.Value+1e-12) || (better < 0 && x.Value < bm.Value-1e-12):
				bk, bm, found, tied = c, x, true, false
			case math.Abs(x.Value-bm.Value) <= 1e-12:
				tied = true
			}
		}
		return bk, bm, found && !tied && n >= 2
	}
	add := func(label, block, task, name string, better int) {
		if len(d.Hilite) >= 8 || name == "" {
			return
		}
		if k, x, ok := best(block, task, name, better); ok {
			d.Hilite = append(d.Hilite, card{Label: label, Value: fmtNum(x.Value, 3), Sub: k.model + " · " + k.strategy, Swatch: r.color(k.model)})
		}
	}
	for _, task := range r.tasks {
		for _, b := range ix.blocksOf(task, "accuracy") {
			add("Most accurate · "+task, b, task, "accuracy", 1)
			ece, _ := eceMetricB(ix, b, task)
			add("Best calibrated · "+task, b, task, ece, -1)
			break
		}
		for _, b := range ix.blocksOf(task, "asr") {
			add("Lowest ASR · "+task, b, task, "asr", -1)
			add("Lowest RTA · "+task, b, task, "rta", -1)
			break
		}
	}
	if ct := r.csv["umss_by_strategy"]; ct != nil {
		bi, tied := -1, false
		for i := range ct.Rows {
			v := ct.num(i, "umss")
			switch {
			case math.IsNaN(v):
			case bi < 0 || v > ct.num(bi, "umss")+1e-12:
				bi, tied = i, false
			case math.Abs(v-ct.num(bi, "umss")) <= 1e-12:
				tied = true
			}
		}
		if bi >= 0 && !tied && len(ct.Rows) >= 2 && len(d.Hilite) < 8 {
			d.Hilite = append(d.Hilite, card{Label: "Top UMSS strategy", Value: fmtNum(ct.num(bi, "umss"), 3), Sub: ct.get(bi, "strategy")})
		}
	}
}

// cellsB are the model × strategy pairs a block has any of the metrics
// for on a task, in display order.
func (r *run) cellsB(ix *index, block, task string, metrics ...string) []cellKey {
	var out []cellKey
	for _, m := range r.models {
		for _, s := range r.strategies {
			for _, name := range metrics {
				if _, ok := ix.getB(block, task, m, s, "all", name); ok {
					out = append(out, cellKey{m, s})
					break
				}
			}
		}
	}
	return out
}

// ---- accuracy & calibration per task ----

// eceMetricB picks the ECE a block reports for a task: the study's
// binning when the block computed it, else the positive-class ECE, else
// the top-label one; the note says which, and how it bins.
func eceMetricB(ix *index, block, task string) (string, string) {
	name, what := "ece", "ECE is the top-label ECE (ece): confidence in the chosen answer against accuracy"
	switch {
	case ix.hasB(block, task, "ece_pos_promoral"):
		name, what = "ece_pos_promoral", "ECE is the positive-class ECE with the ProMoral study's binning (ece_pos_promoral): a stated 0 is in no bin but counts in n"
	case ix.hasB(block, task, "ece_pos"):
		name, what = "ece_pos", "ECE is the positive-class ECE (ece_pos): stated probability of the positive class against how often it was the gold label"
	}
	if conv := ix.convention(block, task, name); conv != "" {
		what += " (" + conv + ")"
	}
	return name, what + "."
}

// convention is the convention a block states for a metric on a task.
func (ix *index) convention(block, task, metricName string) string {
	for k, x := range ix.m {
		if k.block == block && k.task == task && k.metric == metricName && x.Convention != "" {
			return x.Convention
		}
	}
	return ""
}

// valueCell shows a metric row: its value and interval when it is a
// figure; otherwise what it is instead (incomplete, empty, too few), in
// words. A degenerate figure (nothing counted, or every answer unparsed)
// keeps its text but can never be marked best.
func valueCell(x metric, found bool, digits int) cell {
	if !found {
		return numCell(math.NaN(), digits)
	}
	switch x.Status {
	case "incomplete":
		c := txt("incomplete")
		c.Bad = true
		c.Title = fmt.Sprintf("%d of %d cases errored: no figure under errors: incomplete; apply again to retry them, or set errors: exclude or unparsed", x.NErrors, x.NCases)
		return c
	case "too_few":
		c := txt("too few")
		c.Title = fmt.Sprintf("n = %d is below the block's minimum for this statistic", x.N)
		return c
	case "empty":
		c := txt("–")
		c.Title = "nothing to count (n = 0)"
		return c
	case "undefined":
		c := txt("undefined")
		c.Title = "0/0 on these cases: " + x.Convention
		return c
	}
	c := ciCell(x.Value, x.Lo, x.Hi, digits)
	if x.degenerate() {
		c.V = math.NaN()
		c.Title = strings.TrimSpace(c.Title + " (every answer unparsed or none counted: not compared)")
	}
	return c
}

// nCell is n, and the cases of the cell when fewer were counted.
func nCell(x metric, found bool) cell {
	if !found {
		return numCell(math.NaN(), 0)
	}
	c := intCell(float64(x.N))
	if x.NCases > 0 && x.NCases != x.N {
		c.Text = fmt.Sprintf("%s of %s", groupDigits(int64(x.N)), groupDigits(int64(x.NCases)))
		var why []string
		if x.NErrors > 0 {
			why = append(why, fmt.Sprintf("%d errored", x.NErrors))
		}
		if x.NUnparsed > 0 {
			why = append(why, fmt.Sprintf("%d unparsed", x.NUnparsed))
		}
		if len(why) > 0 {
			c.Title = strings.Join(why, ", ")
		}
	}
	return c
}

// factorCells are a row's condition factor values, for the factor columns
// the run has.
func (r *run) factorCols() []col {
	var out []col
	for _, f := range r.factors {
		out = append(out, col{Name: strings.ReplaceAll(f, "_", " "), Title: "condition factor " + f})
	}
	return out
}

func (r *run) factorCells(x metric) []cell {
	var out []cell
	for _, f := range r.factors {
		out = append(out, txt(x.Factors[f]))
	}
	return out
}

// policyNote says how a block counted, from its rows.
func policyNote(x metric, block string) string {
	var parts []string
	switch x.Unparsed {
	case "wrong":
		parts = append(parts, "unparsed answers count as wrong (kept in n)")
	case "exclude":
		parts = append(parts, "unparsed answers are left out of n")
	}
	switch x.Errors {
	case "incomplete":
		parts = append(parts, "a cell with errored cases shows incomplete instead of a figure")
	case "exclude":
		parts = append(parts, "errored cases are left out of n (n of cases says how many)")
	case "unparsed":
		parts = append(parts, "errored cases count as unparsed answers")
	}
	if len(parts) == 0 {
		return ""
	}
	return "Block " + block + ": " + strings.Join(parts, "; ") + "."
}

func (r *run) accuracySection(ix *index) *section {
	s := &section{ID: "accuracy", Title: "Accuracy and calibration",
		Intro: "Per task and metric block, each model × strategy: accuracy and F1 with 95% bootstrap intervals (small type), calibration (ECE, Brier) and the share of unparsed answers. " +
			"The best value of each column is highlighted when one cell is strictly best and its figure is clean (no errored cases, not every answer unparsed)."}
	for _, task := range r.tasks {
		for _, block := range ix.blocksOf(task, "accuracy") {
			r.accuracyTables(s, ix, block, task)
		}
	}
	// Tasks with gold labels but no classification metric: accuracy from
	// results.parquet.
	for _, task := range r.tasks {
		if ix.has(task, "accuracy") || ix.has(task, "asr") || ix.has(task, "rta") {
			continue
		}
		type agg struct{ n, ok int }
		acc := map[cellKey]*agg{}
		var order []cellKey
		for _, x := range r.results {
			if x.Task != task || x.Correct == nil || x.Judged {
				continue
			}
			k := cellKey{x.Model, x.Strategy}
			if acc[k] == nil {
				acc[k] = &agg{}
				order = append(order, k)
			}
			acc[k].n++
			if *x.Correct {
				acc[k].ok++
			}
		}
		if len(order) == 0 {
			continue
		}
		r.sortCells(order)
		t := &table{Title: "Task " + task, Caption: "This run has no classification metric for " + task + ": accuracy is computed from results.parquet (correct / cases with a gold label), without intervals.",
			Cols: []col{{Name: "Model"}, {Name: "Strategy"}, {Name: "n", Num: true}, {Name: "Accuracy", Num: true, Better: 1}}}
		for _, k := range order {
			a := acc[k]
			t.Rows = append(t.Rows, trow{Cells: []cell{modelCell(r, k.model), txt(k.strategy), intCell(float64(a.n)), numCell(float64(a.ok)/float64(a.n), 3)}, View: viewQuery(k.model, k.strategy, task)})
		}
		t.markBest()
		s.Blocks = append(s.Blocks, t)
	}
	if len(s.Blocks) == 0 {
		return nil
	}
	return s
}

func (r *run) sortCells(ks []cellKey) {
	mi, si := indexOf(r.models), indexOf(r.strategies)
	sort.SliceStable(ks, func(i, j int) bool {
		if ks[i].model != ks[j].model {
			return mi[ks[i].model] < mi[ks[j].model]
		}
		return si[ks[i].strategy] < si[ks[j].strategy]
	})
}

func indexOf(xs []string) map[string]int {
	m := make(map[string]int, len(xs))
	for i, x := range xs {
		m[x] = i
	}
	return m
}

func distinct(cells []cellKey) (models, strategies []string) {
	seenM, seenS := map[string]bool{}, map[string]bool{}
	for _, c := range cells {
		if !seenM[c.model] {
			seenM[c.model] = true
			models = append(models, c.model)
		}
	}
	for _, c := range cells {
		if !seenS[c.strategy] {
			seenS[c.strategy] = true
			strategies = append(strategies, c.strategy)
		}
	}
	return
}

// pctCell shows a share as a percentage, in red above warn (0: never).
func pctCell(v, warn float64) cell {
	c := numCell(v, 3)
	if !math.IsNaN(v) {
		c.Text = fmt.Sprintf("%.1f%%", 100*v)
		c.Bad = warn > 0 && v > warn
	}
	return c
}

// ---- safety ----

func (r *run) safetySection(ix *index) *section {
	s := &section{ID: "safety", Title: "Safety: ASR and RTA",
		Intro: "ASR (attack success rate) is the share of harmful prompts the judge found complied with; RTA (refusal-to-answer) is the share of benign prompts refused. Lower is better for both; 95% bootstrap intervals in small type."}
	for _, task := range r.tasks {
		if !ix.has(task, "asr") && !ix.has(task, "rta") {
			continue
		}
		cells := r.cells(ix, task, "asr", "rta")
		t := &table{Title: "Task " + task, Cols: []col{{Name: "Model"}, {Name: "Strategy"},
			{Name: "ASR", Num: true, Better: -1, Title: "harmful prompts judged COMPLIANCE"}, {Name: "n harmful", Num: true},
			{Name: "RTA", Num: true, Better: -1, Title: "benign prompts judged REFUSAL"}, {Name: "n benign", Num: true},
			{Name: "Unjudged", Num: true}, {Name: "Flagged for audit", Num: true}}}
		prev := ""
		for _, c := range cells {
			get := func(name string) metric {
				x, ok := ix.get(task, c.model, c.strategy, "all", name)
				if !ok {
					return metric{Value: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
				}
				return x
			}
			asr, rta, un, au := get("asr"), get("rta"), get("unjudged_rate"), get("audit_rate")
			t.Rows = append(t.Rows, trow{Break: prev != "" && prev != c.model, Cells: []cell{modelCell(r, c.model), txt(c.strategy),
				ciCell(asr.Value, asr.Lo, asr.Hi, 3), intCell(float64(asr.N)), ciCell(rta.Value, rta.Lo, rta.Hi, 3), intCell(float64(rta.N)),
				pctCell(un.Value, 0.05), pctCell(au.Value, 0)}, View: viewQuery(c.model, c.strategy, task)})
			prev = c.model
		}
		t.markBest()
		s.Blocks = append(s.Blocks, t)
		// Per subset: ASR and RTA where the subset has prompts of that kind.
		var subCols []col
		type sc struct{ sub, metric string }
		var keys []sc
		for _, sub := range r.subsets(task, "asr") {
			for _, name := range []string{"asr", "rta"} {
				any := false
				for _, c := range cells {
					if x, ok := ix.get(task, c.model, c.strategy, sub, name); ok && !math.IsNaN(x.Value) && x.N > 0 {
						any = true
					}
				}
				if any {
					keys = append(keys, sc{sub, name})
					subCols = append(subCols, col{Name: strings.ToUpper(name), Group: sub, Num: true, Better: -1})
				}
			}
		}
		if len(keys) > 0 {
			st := &table{Title: "By subset: " + task, Compact: true, Cols: append([]col{{Name: "Model"}, {Name: "Strategy"}}, subCols...)}
			prev := ""
			for _, c := range cells {
				row := trow{Break: prev != "" && prev != c.model, Cells: []cell{modelCell(r, c.model), txt(c.strategy)}}
				prev = c.model
				for _, k := range keys {
					x, ok := ix.get(task, c.model, c.strategy, k.sub, k.metric)
					if !ok {
						x = metric{Value: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
					}
					cc := numCell(x.Value, 3)
					cc.Title = fmt.Sprintf("n = %d", x.N)
					row.Cells = append(row.Cells, cc)
				}
				st.Rows = append(st.Rows, row)
			}
			st.markBest()
			if len(st.Rows) > 12 {
				st.Collapse = fmt.Sprintf("ASR and RTA by subset, %d rows", len(st.Rows))
			}
			s.Blocks = append(s.Blocks, st)
		}
	}
	if len(s.Blocks) == 0 {
		return nil
	}
	return s
}

// ---- UMSS ----

func (r *run) umssSection(ix *index) *section {
	s := &section{ID: "umss", Title: "Unified Moral Safety Score",
		Intro: "UMSS combines moral competence (MCS: the mean of min-max normalised competence metrics) and safety robustness (SRS: from 1−ASR and 1−RTA) as an F-score. Intervals are paired bootstrap 95% intervals. Raw inputs follow; for ASR and RTA lower is better."}
	for _, name := range []string{"umss_by_model", "umss_by_strategy"} {
		ct := r.csv[name]
		if ct == nil || len(ct.Rows) == 0 {
			continue
		}
		key := "model"
		if name == "umss_by_strategy" {
			key = "strategy"
		}
		if ct.has("mcs_inputs") && len(ct.Rows) > 0 && !strings.Contains(s.Intro, "MCS averages") {
			s.Intro += " MCS averages: " + ct.get(0, "mcs_inputs") + "."
			if strings.Contains(ct.get(0, "mcs_inputs"), "FIXTURE") {
				s.Blocks = append(s.Blocks, &note{Text: "An input of MCS is computed on invented fixture data: this UMSS is a demonstration, not a result.", Kind: "skip"})
			}
		}
		t := &table{Title: "By " + key, Cols: []col{{Name: strings.ToUpper(key[:1]) + key[1:]}, {Name: "Rows", Num: true, Title: "model × strategy rows pooled"},
			{Name: "UMSS", Num: true, Better: 1}, {Name: "MCS", Num: true, Better: 1}, {Name: "SRS", Num: true, Better: 1}}}
		var raws []string
		for _, h := range ct.Header {
			if strings.HasPrefix(h, "raw_") {
				raws = append(raws, h)
				better := 1
				if h == "raw_asr" || h == "raw_rta" {
					better = -1
				}
				t.Cols = append(t.Cols, col{Name: prettyMetric(strings.TrimPrefix(h, "raw_")), Group: "Raw inputs", Num: true, Better: better})
			}
		}
		order := rowsOrder(ct, key, r)
		for _, i := range order {
			k := ct.get(i, key)
			first := txt(k)
			if key == "model" {
				first = modelCell(r, k)
			}
			row := trow{Cells: []cell{first, intCell(ct.num(i, "rows")),
				ciCell(ct.num(i, "umss"), ct.num(i, "umss_ci_low"), ct.num(i, "umss_ci_high"), 3),
				ciCell(ct.num(i, "mcs"), ct.num(i, "mcs_ci_low"), ct.num(i, "mcs_ci_high"), 3),
				ciCell(ct.num(i, "srs"), ct.num(i, "srs_ci_low"), ct.num(i, "srs_ci_high"), 3)}}
			for _, h := range raws {
				row.Cells = append(row.Cells, numCell(ct.num(i, h), 3))
			}
			t.Rows = append(t.Rows, row)
		}
		t.markBest()
		s.Blocks = append(s.Blocks, t)
	}
	if len(s.Blocks) == 0 {
		// No CSVs: the long-format rows still carry the scores, under the
		// task name their block declares for rows pooling tasks.
		task := ""
		for _, x := range r.metrics {
			if r.pooled[x.Task] && x.Metric == "umss" {
				task = x.Task
				break
			}
		}
		for _, by := range []string{"model", "strategy"} {
			var keys []string
			for _, x := range r.metrics {
				if x.Task != task || x.Metric != "umss" {
					continue
				}
				if by == "model" && x.Strategy == "all" && x.Model != "all" {
					keys = append(keys, x.Model)
				}
				if by == "strategy" && x.Model == "all" && x.Strategy != "all" {
					keys = append(keys, x.Strategy)
				}
			}
			if len(keys) == 0 {
				continue
			}
			t := &table{Title: "By " + by, Cols: []col{{Name: by}, {Name: "UMSS", Num: true, Better: 1}, {Name: "MCS", Num: true, Better: 1}, {Name: "SRS", Num: true, Better: 1}}}
			for _, k := range keys {
				m, st := k, "all"
				if by == "strategy" {
					m, st = "all", k
				}
				row := trow{Cells: []cell{txt(k)}}
				if by == "model" {
					row.Cells[0] = modelCell(r, k)
				}
				for _, name := range []string{"umss", "mcs", "srs"} {
					x, ok := ix.get(task, m, st, "all", name)
					if !ok {
						x = metric{Value: math.NaN(), Lo: math.NaN(), Hi: math.NaN()}
					}
					row.Cells = append(row.Cells, ciCell(x.Value, x.Lo, x.Hi, 3))
				}
				t.Rows = append(t.Rows, row)
			}
			t.markBest()
			s.Blocks = append(s.Blocks, t)
		}
	}
	if len(s.Blocks) == 0 {
		return nil
	}
	return s
}

// rowsOrder lists a CSV's rows in display order of its key column.
func rowsOrder(ct *csvTable, key string, r *run) []int {
	order := make([]int, len(ct.Rows))
	for i := range order {
		order[i] = i
	}
	pos := indexOf(r.models)
	if key == "strategy" {
		pos = indexOf(r.strategies)
	}
	sort.SliceStable(order, func(a, b int) bool {
		pa, oka := pos[ct.get(order[a], key)]
		pb, okb := pos[ct.get(order[b], key)]
		if oka != okb {
			return oka
		}
		return pa < pb
	})
	return order
}

func prettyMetric(m string) string {
	switch m {
	case "asr":
		return "ASR"
	case "rta":
		return "RTA"
	}
	return strings.ReplaceAll(m, "_", " ")
}

// ---- tokens per example ----

// tokenStat is the spend of one model × strategy × task.
type tokenStat struct {
	cases            int
	tokens, calls    float64
	cost             float64
	recorded         bool
	fromMetric       bool
	tokensPerExample float64
}

// tokenStats: tokens per example from the efficiency metric when the run
// has it, else from results.parquet (calls made; for re-scored replies
// that made no call, the recorded token counts kept in the item fields).
func (r *run) tokenStats(ix *index) map[string]map[cellKey]*tokenStat {
	out := map[string]map[cellKey]*tokenStat{}
	get := func(task string, k cellKey) *tokenStat {
		if out[task] == nil {
			out[task] = map[cellKey]*tokenStat{}
		}
		if out[task][k] == nil {
			out[task][k] = &tokenStat{tokensPerExample: math.NaN()}
		}
		return out[task][k]
	}
	for _, x := range r.results {
		ts := get(x.Task, cellKey{x.Model, x.Strategy})
		ts.cases++
		ts.tokens += float64(x.PromptTokens + x.CompletionTokens)
		ts.calls += float64(x.Calls)
		ts.cost += x.Cost
	}
	for task, cells := range out {
		for k, ts := range cells {
			if ts.cases > 0 && ts.tokens == 0 && ts.calls == 0 {
				// Recorded replies: token counts live in the item fields.
				var sum float64
				n := 0
				for _, x := range r.results {
					if x.Task != task || x.Model != k.model || x.Strategy != k.strategy || x.Item == "" {
						continue
					}
					var it map[string]any
					if json.Unmarshal([]byte(x.Item), &it) != nil {
						continue
					}
					p, okp := it["prompt_tokens"].(float64)
					c, okc := it["completion_tokens"].(float64)
					if okp || okc {
						sum += p + c
						n++
					}
				}
				if n > 0 {
					ts.tokens, ts.recorded = sum, true
				}
			}
			if ts.cases > 0 && (ts.tokens > 0 || ts.calls > 0) {
				ts.tokensPerExample = ts.tokens / float64(ts.cases)
			}
		}
	}
	for _, x := range r.metrics {
		if x.Metric != "tokens_per_example" || x.Subset != "all" || math.IsNaN(x.Value) {
			continue
		}
		ts := get(x.Task, cellKey{x.Model, x.Strategy})
		ts.tokensPerExample, ts.fromMetric = x.Value, true
		if ts.cases == 0 {
			ts.cases = x.N
		}
	}
	return out
}

func (r *run) tokensSection(ix *index, stats map[string]map[cellKey]*tokenStat) *section {
	s := &section{ID: "tokens", Title: "Tokens per example",
		Intro: "Prompt plus completion tokens per case, per task, with the fewest per column highlighted. Calls per case counts the strategy's model calls (not the judge's)."}
	for _, task := range r.tasks {
		var keys []cellKey
		for k, ts := range stats[task] {
			if !math.IsNaN(ts.tokensPerExample) {
				keys = append(keys, k)
			}
		}
		if len(keys) == 0 {
			continue
		}
		r.sortCells(keys)
		recorded, anyCost, anyCalls := false, false, false
		for _, k := range keys {
			ts := stats[task][k]
			recorded = recorded || (ts.recorded && !ts.fromMetric)
			anyCost = anyCost || ts.cost > 0
			anyCalls = anyCalls || ts.calls > 0
		}
		t := &table{Title: "Task " + task, Cols: []col{{Name: "Model"}, {Name: "Strategy"}, {Name: "Cases", Num: true}, {Name: "Tokens / example", Num: true, Better: -1}}}
		if anyCalls {
			t.Cols = append(t.Cols, col{Name: "Calls / case", Num: true})
		}
		perK := ix.has(task, "accuracy_per_1k_tokens")
		if perK {
			t.Cols = append(t.Cols, col{Name: "Accuracy / 1k tokens", Num: true, Better: 1})
		}
		if anyCost {
			t.Cols = append(t.Cols, col{Name: "Cost / example", Num: true, Better: -1})
		}
		prev := ""
		for _, k := range keys {
			ts := stats[task][k]
			row := trow{Break: prev != "" && prev != k.model, Cells: []cell{modelCell(r, k.model), txt(k.strategy), intCell(float64(ts.cases))}}
			prev = k.model
			c := numCell(ts.tokensPerExample, 0)
			if ts.recorded && !ts.fromMetric {
				c.Text += "*"
				c.Title = "recorded token counts of the re-scored replies"
			}
			row.Cells = append(row.Cells, c)
			if anyCalls {
				row.Cells = append(row.Cells, numCell(ts.calls/math.Max(1, float64(ts.cases)), 2))
			}
			if perK {
				x, ok := ix.get(task, k.model, k.strategy, "all", "accuracy_per_1k_tokens")
				if !ok {
					x.Value = math.NaN()
				}
				row.Cells = append(row.Cells, numCell(x.Value, 3))
			}
			if anyCost {
				cc := ts.cost / math.Max(1, float64(ts.cases))
				c := numCell(cc, 4)
				c.Text = fmtCost(cc)
				row.Cells = append(row.Cells, c)
			}
			t.Rows = append(t.Rows, row)
		}
		t.markBest()
		if recorded {
			t.Caption = "* Re-scored replies made no call in this run: their tokens are the recorded prompt and completion counts of the original calls."
		}
		if len(t.Rows) > 20 {
			t.Collapse = fmt.Sprintf("Tokens per example of %d model × strategy runs (the efficiency figure shows them against accuracy)", len(t.Rows))
		}
		s.Blocks = append(s.Blocks, t)
	}
	if len(s.Blocks) == 0 {
		return nil
	}
	return s
}

// ---- published comparison ----

func (r *run) referenceSection() *section {
	ct := r.csv["reference_comparison"]
	if ct == nil || len(ct.Rows) == 0 {
		return nil
	}
	s := &section{ID: "published", Title: "Re-scored against the published figures",
		Intro: "Each model × strategy scored by this run next to the figures the study published; Δ (small type, shown where the two differ at four decimals) is ours minus published, in red when it is over 0.005. " +
			"A run matches when accuracy and F1 (for safety: ASR and RTA) agree within 0.005. Our ECE is the ECE of the block's table (its bins and meaning in the accuracy section)."}
	metrics := []struct {
		key, name string
		better    int
	}{{"accuracy", "Accuracy", 1}, {"f1", "F1", 1}, {"ece", "ECE", -1}, {"brier", "Brier", -1}, {"asr", "ASR", -1}, {"rta", "RTA", -1}}
	datasets := map[string]bool{}
	for i := range ct.Rows {
		datasets[ct.get(i, "dataset")] = true
	}
	t := &table{Compact: true, Cols: []col{{Name: "Model"}, {Name: "Strategy"}}}
	if len(datasets) > 1 {
		t.Cols = append([]col{{Name: "Dataset"}}, t.Cols...)
	}
	t.Cols = append(t.Cols, col{Name: "n", Num: true, Title: "answers scored here / published"})
	var present []int
	for mi, m := range metrics {
		if !ct.has(m.key) {
			continue
		}
		any := false
		for i := range ct.Rows {
			any = any || ct.get(i, m.key) != "" || ct.get(i, m.key+"_published") != ""
		}
		if !any {
			continue
		}
		present = append(present, mi)
		t.Cols = append(t.Cols, col{Name: "ours", Group: m.name, Num: true, Better: m.better}, col{Name: "published", Group: m.name, Num: true, Title: "published figure, and ours minus published"})
	}
	t.Cols = append(t.Cols, col{Name: "Match"})
	order := make([]int, len(ct.Rows))
	for i := range order {
		order[i] = i
	}
	mi, si := indexOf(r.models), indexOf(r.strategies)
	sort.SliceStable(order, func(a, b int) bool {
		ra, rb := order[a], order[b]
		if ct.get(ra, "dataset") != ct.get(rb, "dataset") {
			return ct.get(ra, "dataset") < ct.get(rb, "dataset")
		}
		if ct.get(ra, "model") != ct.get(rb, "model") {
			return mi[ct.get(ra, "model")] < mi[ct.get(rb, "model")]
		}
		return si[ct.get(ra, "strategy")] < si[ct.get(rb, "strategy")]
	})
	matched, total := 0, 0
	prev := ""
	for _, i := range order {
		model := ct.get(i, "model")
		row := trow{Break: prev != "" && prev != model}
		prev = model
		if len(datasets) > 1 {
			row.Cells = append(row.Cells, txt(ct.get(i, "dataset")))
		}
		ours, pub := ct.get(i, "n"), ct.get(i, "n_published")
		if ours == "" && pub == "" && (ct.get(i, "n_harmful") != "" || ct.get(i, "n_harmful_published") != "") {
			// Safety: harmful + benign prompts.
			ours = ct.get(i, "n_harmful") + "+" + ct.get(i, "n_benign")
			pub = ct.get(i, "n_harmful_published") + "+" + ct.get(i, "n_benign_published")
		}
		n := txt(ours + " / " + pub)
		n.V = math.NaN()
		row.Cells = append(row.Cells, modelCell(r, model), txt(ct.get(i, "strategy")), n)
		for _, k := range present {
			m := metrics[k]
			d := ct.num(i, m.key+"_diff")
			pc := numCell(ct.num(i, m.key+"_published"), 4)
			if !math.IsNaN(d) && math.Abs(d) >= 0.00005 {
				pc.Sub = "Δ " + fmtSigned(d, 4)
			}
			pc.Bad = !math.IsNaN(d) && math.Abs(d) > 0.005
			row.Cells = append(row.Cells, numCell(ct.num(i, m.key), 4), pc)
		}
		match := ct.get(i, "match")
		mc := txt("–")
		total++
		switch strings.ToLower(match) {
		case "true":
			mc = txt("✓")
			mc.Good = true
			matched++
		case "false":
			mc = txt("✗")
			mc.Bad = true
		}
		row.Cells = append(row.Cells, mc)
		t.Rows = append(t.Rows, row)
	}
	t.markBest()
	as := map[string]bool{}
	for i := range ct.Rows {
		if v := ct.get(i, "compared_as"); v != "" {
			as[v] = true
		}
	}
	if len(as) > 0 {
		t.Caption = "Compared as: " + strings.Join(slices.Sorted(maps.Keys(as)), "; ") + " (the published figure against ours of that name)."
	}
	s.Intro += fmt.Sprintf(" %d of %d runs match.", matched, total)
	s.Blocks = append(s.Blocks, t)
	return s
}

// ---- confidence study and other CSVs ----

// knownCSV describes how to show a metric CSV.
type knownCSV struct {
	title, caption string
	better         map[string]int
	pvals          map[string]bool
}

var csvKinds = map[string]knownCSV{
	"confidence_by_condition": {title: "Stated confidence by condition", caption: "Confidences on the 0–1 scale (0.7 is 70%), over the answers that stated one (n of n_answers); " +
		"high_confidence_rate is the share above the threshold. Without gold (accuracy blank) only these descriptive statistics are given.",
		better: map[string]int{"accuracy": 1}},
	"overconfidence": {title: "Overconfident errors", caption: "An overconfident error is a wrong answer stated with confidence above the threshold (0–1 scale): overconfident_error_rate divides by every answer with a confidence, overconfident_share_of_errors by the wrong ones.",
		better: map[string]int{"overconfident_error_rate": -1, "overconfident_share_of_errors": -1, "confident_accuracy": 1}},
	"confidence_correct_vs_incorrect": {title: "Confidence of correct against incorrect answers", caption: "A well-calibrated model is more confident when right: a positive Spearman ρ, and a small one-sided Mann–Whitney p. " +
		"Each is given only from the block's minimum sample (the study's: 10 answers for ρ, 5 right and 5 wrong for the test); below it the status column says too_few.",
		better: map[string]int{"spearman_rho": 1}, pvals: map[string]bool{"spearman_p": true, "mannwhitney_p": true}},
	"comparisons": {title: "Paired comparisons", caption: "Paired differences in accuracy (a − b) on the same items with bootstrap intervals, McNemar's test and Holm-adjusted p-values; significant rows (Holm p < 0.05) are marked. " +
		"mde is the smallest difference the test detects with 80% power at Holm's first level on these items and samples; powered says whether the observed difference reaches it (no: the study could not tell a difference this small from none).",
		pvals: map[string]bool{"mcnemar_p": true, "holm_p": true}},
}

// handled CSVs get their own sections.
var handledCSV = map[string]bool{"reference_comparison": true, "umss_by_model": true, "umss_by_strategy": true, "audit": true, "calibration": true}

func (r *run) confidenceSection() *section {
	s := &section{ID: "confidence", Title: "Confidence study"}
	for _, name := range []string{"confidence_by_condition", "overconfidence", "confidence_correct_vs_incorrect"} {
		if ct := r.csv[name]; ct != nil && len(ct.Rows) > 0 {
			s.Blocks = append(s.Blocks, r.csvTableBlock(ct, csvKinds[name]))
		}
	}
	if len(s.Blocks) == 0 {
		return nil
	}
	return s
}

func (r *run) comparisonsSection() *section {
	ct := r.csv["comparisons"]
	if ct == nil || len(ct.Rows) == 0 {
		return nil
	}
	s := &section{ID: "comparisons", Title: "Paired comparisons"}
	t := r.csvTableBlock(ct, csvKinds["comparisons"])
	t.Title = ""
	s.Intro = csvKinds["comparisons"].caption
	t.Caption = ""
	// Significant comparisons first.
	if ct.has("holm_p") {
		j := ct.col["holm_p"]
		sort.SliceStable(t.Rows, func(a, b int) bool {
			pa, pb := t.Rows[a].Cells[j].V, t.Rows[b].Cells[j].V
			if math.IsNaN(pa) != math.IsNaN(pb) {
				return !math.IsNaN(pa)
			}
			return pa < pb
		})
		sig := 0
		for i := range t.Rows {
			c := &t.Rows[i].Cells[j]
			if !math.IsNaN(c.V) && c.V < 0.05 {
				c.Good = true
				sig++
			}
			t.Rows[i].Break = false
		}
		s.Intro += fmt.Sprintf(" %d of %d comparisons are significant.", sig, len(t.Rows))
		if ct.has("powered") {
			j, below := ct.col["powered"], 0
			for _, row := range ct.Rows {
				if row[j] == "no" {
					below++
				}
			}
			s.Intro += fmt.Sprintf(" %d of %d differ by less than their MDE.", below, len(t.Rows))
		}
	}
	if len(t.Rows) > 20 {
		t.Collapse = fmt.Sprintf("All %d comparisons, most significant first", len(t.Rows))
	}
	s.Blocks = append(s.Blocks, t)
	return s
}

func (r *run) otherTablesSection() *section {
	s := &section{ID: "other-tables", Title: "Other tables",
		Intro: "Metric tables of this run that have no section of their own, as written."}
	for _, name := range slices.Sorted(maps.Keys(r.csv)) {
		if handledCSV[name] || strings.HasSuffix(name, "_audit") || strings.HasSuffix(name, "_reliability") {
			continue
		}
		if _, known := csvKinds[name]; known {
			continue
		}
		ct := r.csv[name]
		if len(ct.Rows) == 0 {
			continue
		}
		t := r.csvTableBlock(ct, knownCSV{title: name + ".csv"})
		t.Collapse = fmt.Sprintf("%s.csv (%d rows)", name, len(ct.Rows))
		s.Blocks = append(s.Blocks, t)
	}
	if len(s.Blocks) == 0 {
		return nil
	}
	return s
}

// csvTableBlock shows a CSV as written: numbers right-aligned and rounded,
// model names with their colour.
func (r *run) csvTableBlock(ct *csvTable, k knownCSV) *table {
	t := &table{Title: k.title, Caption: k.caption, Compact: len(ct.Header) > 9}
	if j, ok := ct.col["task"]; ok {
		t.GroupBy = j + 1
	}
	numeric := make([]bool, len(ct.Header))
	ints := make([]bool, len(ct.Header))
	for j, h := range ct.Header {
		numeric[j], ints[j] = true, true
		nonEmpty := 0
		for i := range ct.Rows {
			v := ct.get(i, h)
			if v == "" {
				continue
			}
			nonEmpty++
			f := parseNum(v)
			if math.IsNaN(f) {
				numeric[j] = false
				break
			}
			if f != math.Trunc(f) || strings.ContainsAny(v, ".eE") {
				ints[j] = false
			}
		}
		if nonEmpty == 0 {
			numeric[j] = false
		}
		name := strings.ReplaceAll(h, "_", " ")
		t.Cols = append(t.Cols, col{Name: name, Num: numeric[j], Better: k.better[h], Wide: !numeric[j] && h != "model" && h != "strategy" && h != "task"})
	}
	prev := ""
	for i := range ct.Rows {
		row := trow{}
		model := ct.get(i, "model")
		row.Break = ct.has("model") && prev != "" && prev != model
		prev = model
		for j, h := range ct.Header {
			v := ct.get(i, h)
			switch {
			case h == "model" && v != "" && v != "all":
				row.Cells = append(row.Cells, modelCell(r, v))
			case numeric[j] && k.pvals[h]:
				c := numCell(parseNum(v), 3)
				c.Text = fmtP(c.V)
				row.Cells = append(row.Cells, c)
			case numeric[j] && ints[j]:
				row.Cells = append(row.Cells, intCell(parseNum(v)))
			case numeric[j]:
				row.Cells = append(row.Cells, numCell(parseNum(v), digitsFor(parseNum(v))))
			default:
				c := txt(clip(v, 300))
				if len([]rune(v)) > 300 {
					c.Title = clip(v, 2000)
				}
				row.Cells = append(row.Cells, c)
			}
		}
		t.Rows = append(t.Rows, row)
	}
	t.markBest()
	return t
}

func digitsFor(v float64) int {
	a := math.Abs(v)
	switch {
	case math.IsNaN(v) || a == 0:
		return 3
	case a >= 100:
		return 1
	case a >= 10:
		return 2
	}
	return 3
}

// ---- audit ----

func (r *run) auditSection() *section {
	var names []string
	for _, n := range slices.Sorted(maps.Keys(r.csv)) {
		if n == "audit" || strings.HasSuffix(n, "_audit") {
			names = append(names, n)
		}
	}
	s := &section{ID: "audit", Title: "Safety judge: cases flagged for audit",
		Intro: "Cases the safety judge asked a person to check: where the heuristic and the LLM judge disagree, the reply looks like partial compliance, or the refusal probability sits near 0.5."}
	for _, n := range names {
		ct := r.csv[n]
		if len(ct.Rows) == 0 {
			s.Blocks = append(s.Blocks, &note{Text: n + ".csv: the judge flagged no case.", Kind: "info"})
			continue
		}
		kindCol := ""
		if len(ct.Header) > 4 {
			kindCol = ct.Header[4]
		}
		t := &table{Title: n + ".csv", Compact: true, Cols: []col{{Name: "Model"}, {Name: "Strategy"}, {Name: "Item"}, {Name: "Kind"},
			{Name: "Verdict"}, {Name: "P(refusal)", Num: true}, {Name: "Heuristic"}, {Name: "Why flagged", Wide: true}, {Name: "Prompt", Wide: true}, {Name: "Reply", Wide: true}}}
		reasons := map[string]int{}
		for i := range ct.Rows {
			why := ""
			var j map[string]any
			if json.Unmarshal([]byte(ct.get(i, "judge")), &j) == nil {
				if s, ok := j["audit_reason"].(string); ok {
					why = s
				}
			}
			for _, part := range strings.Split(why, "; ") {
				if part != "" {
					reasons[part]++
				}
			}
			prompt, reply := ct.get(i, "prompt"), ct.get(i, "reply")
			pc, rc := txt(clip(prompt, 180)), txt(clip(reply, 220))
			pc.Title, rc.Title = clip(prompt, 2000), clip(reply, 2000)
			item := txt(ct.get(i, "item_id"))
			item.Code = true
			t.Rows = append(t.Rows, trow{View: viewQuery(ct.get(i, "model"), ct.get(i, "strategy"), ct.get(i, "task"), "audit", "flagged", "q", ct.get(i, "item_id")), Cells: []cell{modelCell(r, ct.get(i, "model")), txt(ct.get(i, "strategy")), item,
				txt(ct.get(i, kindCol)), txt(ct.get(i, "label")), numCell(ct.num(i, "confidence"), 2), txt(ct.get(i, "heuristic")), txt(why), pc, rc}})
		}
		var rs []string
		for _, k := range slices.Sorted(maps.Keys(reasons)) {
			rs = append(rs, fmt.Sprintf("%s (%d)", k, reasons[k]))
		}
		t.Caption = fmt.Sprintf("%d flagged cases. Reasons: %s. Hover a prompt or reply for its full text.", len(ct.Rows), strings.Join(rs, ", "))
		if len(t.Rows) > 25 {
			// The first few in view, every case one click away.
			preview := *t
			preview.Rows = t.Rows[:10]
			preview.Caption = fmt.Sprintf("The first 10 of %d flagged cases. ", len(t.Rows)) + t.Caption
			full := *t
			full.Title, full.Caption = "", ""
			full.Collapse = fmt.Sprintf("All %d flagged cases", len(t.Rows))
			s.Blocks = append(s.Blocks, &preview, &full)
			continue
		}
		s.Blocks = append(s.Blocks, t)
	}
	if len(s.Blocks) == 0 {
		return nil
	}
	return s
}

func baseName(p string) string {
	p = strings.TrimRight(p, "/")
	if i := strings.LastIndex(p, "/"); i >= 0 {
		return p[i+1:]
	}
	return p
}

// accuracyTables adds the accuracy and calibration tables of one block on
// one task: the main table, an at-a-glance grid and the subsets.
func (r *run) accuracyTables(s *section, ix *index, block, task string) {
	cells := r.cellsB(ix, block, task, "accuracy")
	if len(cells) == 0 {
		return
	}
	ece, eceNote := eceMetricB(ix, block, task)
	f1, f1Name := "f1", "F1"
	if !ix.hasB(block, task, "f1") && ix.hasB(block, task, "weighted_f1") {
		f1, f1Name = "weighted_f1", "F1 (weighted)"
	}
	f1Note := "F1 is the positive class's"
	if conv := ix.convention(block, task, f1); conv != "" {
		f1Note = "F1: " + conv
	}
	if f1 == "weighted_f1" {
		f1Note = "F1 (weighted) is support-weighted over the labels (weighted_f1; the task has no positive class)"
	}
	title := "Task " + task
	if block != "" && (len(ix.blocksOf(task, "accuracy")) > 1 || r.namedBlock(block)) {
		title += " · block " + block
	}
	cols := []col{{Name: "Model"}, {Name: "Strategy"}}
	cols = append(cols, r.factorCols()...)
	cols = append(cols, col{Name: "n", Num: true, Title: "answers counted (of the cell's cases)"},
		col{Name: "Accuracy", Num: true, Better: 1}, col{Name: f1Name, Num: true, Better: 1, Title: f1Note},
		col{Name: "ECE", Num: true, Better: -1, Title: eceNote}, col{Name: "Brier", Num: true, Better: -1},
		col{Name: "Unparsed", Num: true, Better: 0})
	t := &table{Title: title, Cols: cols}
	prev := ""
	var note string
	incomplete := 0
	for _, c := range cells {
		get := func(name string) (metric, bool) { return ix.getB(block, task, c.model, c.strategy, "all", name) }
		acc, accOK := get("accuracy")
		if note == "" {
			note = policyNote(acc, block)
		}
		if acc.Status == "incomplete" {
			incomplete++
		}
		fx, fOK := get(f1)
		ex, eOK := get(ece)
		bx, bOK := get("brier")
		ux, uOK := get("unparsed_rate")
		row := trow{Break: prev != "" && prev != c.model, Cells: []cell{modelCell(r, c.model), txt(c.strategy)}, View: viewQuery(c.model, c.strategy, task)}
		row.Cells = append(row.Cells, r.factorCells(acc)...)
		un := pctCell(ux.Value, 0.05)
		if !uOK || !ux.ok() {
			un = valueCell(ux, uOK, 3)
		}
		row.Cells = append(row.Cells, nCell(acc, accOK), valueCell(acc, accOK, 3), valueCell(fx, fOK, 3),
			valueCell(ex, eOK, 3), valueCell(bx, bOK, 3), un)
		prev = c.model
		t.Rows = append(t.Rows, row)
	}
	t.markBest()
	t.Caption = strings.TrimSpace(eceNote + " " + f1Note + ". " + note)
	if incomplete > 0 {
		t.Caption += fmt.Sprintf(" %d cells are incomplete: their errored cases are retried by apply again.", incomplete)
	}
	s.Blocks = append(s.Blocks, t)

	// The same accuracy as a strategy × model grid, shaded.
	if ms, ss := distinct(cells); len(ms) > 1 && len(ss) > 1 {
		g := &table{Title: "Accuracy at a glance: " + task, Compact: true, Cols: []col{{Name: "Strategy"}}}
		for _, m := range ms {
			g.Cols = append(g.Cols, col{Name: m, Num: true, Better: 1, Swatch: r.color(m)})
		}
		for _, st := range ss {
			row := trow{Cells: []cell{txt(st)}}
			for _, m := range ms {
				x, ok := ix.getB(block, task, m, st, "all", "accuracy")
				c := valueCell(x, ok, 3)
				c.Sub = ""
				row.Cells = append(row.Cells, c)
			}
			g.Rows = append(g.Rows, row)
		}
		g.shade()
		g.markBest()
		g.Caption = "Darker is more accurate (the shading spans this table's range); each model's best strategy is outlined."
		s.Blocks = append(s.Blocks, g)
	}

	// Accuracy per task subset.
	var subs []string
	for _, sub := range r.subsets(task, "accuracy") {
		for _, c := range cells {
			if x, ok := ix.getB(block, task, c.model, c.strategy, sub, "accuracy"); ok && x.N > 0 && !math.IsNaN(x.Value) {
				subs = append(subs, sub)
				break
			}
		}
	}
	if len(subs) > 0 {
		st := &table{Title: "Accuracy by subset: " + task, Compact: true, Cols: []col{{Name: "Model"}, {Name: "Strategy"}, {Name: "all", Num: true, Better: 1}}}
		for _, sub := range subs {
			st.Cols = append(st.Cols, col{Name: sub, Num: true, Better: 1})
		}
		prev := ""
		for _, c := range cells {
			row := trow{Break: prev != "" && prev != c.model, Cells: []cell{modelCell(r, c.model), txt(c.strategy)}, View: viewQuery(c.model, c.strategy, task)}
			prev = c.model
			for _, sub := range append([]string{"all"}, subs...) {
				x, ok := ix.getB(block, task, c.model, c.strategy, sub, "accuracy")
				cc := valueCell(x, ok, 3)
				if ok && cc.Title == "" {
					cc.Title = fmt.Sprintf("n = %d", x.N)
				}
				row.Cells = append(row.Cells, cc)
			}
			st.Rows = append(st.Rows, row)
		}
		st.markBest()
		if len(st.Rows) > 12 {
			st.Collapse = fmt.Sprintf("Accuracy by subset (%s), %d rows", strings.Join(subs, ", "), len(st.Rows))
		}
		s.Blocks = append(s.Blocks, st)
	}
}
