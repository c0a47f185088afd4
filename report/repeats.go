package report

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Run-to-run variance: the rows of a repeats metric block (repeats: k),
// as a table per task and a figure of each repeat's accuracy.

// repeatedCells are the cells of a task that a repeats block reports with
// more than one sample per item.
func (r *run) repeatedCells(ix *index, task string) []cellKey {
	var out []cellKey
	for _, k := range r.cells(ix, task, "flip_rate") {
		if x, ok := ix.getB(ix.blockOf(task, k, "flip_rate"), task, k.model, k.strategy, "all", "repeats"); ok && x.Value >= 2 {
			out = append(out, k)
		}
	}
	return out
}

// repeatsSection tabulates, per task, each cell's accuracy per item with
// its item-clustered interval, the spread of the per-repeat accuracies and
// the flip rate.
func (r *run) repeatsSection(ix *index) *section {
	s := &section{ID: "repeats", Title: "Run-to-run variance",
		Intro: "Cells sampled more than once (repeats: k). Accuracy is per item (the block's reducer; by default each item's share of right samples) with a 95% interval that resamples items, not samples. " +
			"The per-repeat columns are each repeat's own accuracy: their SD (n−1) and range. The flip rate is the share of items whose answer is not the same in every repeat."}
	for _, task := range r.tasks {
		keys := r.repeatedCells(ix, task)
		if len(keys) == 0 {
			continue
		}
		t := &table{Title: "Task " + task, Cols: []col{{Name: "Model"}, {Name: "Strategy"}, {Name: "Repeats", Num: true}, {Name: "Items", Num: true},
			{Name: "Accuracy (95% CI)", Num: true, Better: 1}, {Name: "Per-repeat SD", Num: true}, {Name: "Per-repeat range", Num: true}, {Name: "Flip rate", Num: true}}}
		prev := ""
		for _, k := range keys {
			b := ix.blockOf(task, k, "flip_rate")
			acc, okA := ix.getB(b, task, k.model, k.strategy, "all", "accuracy")
			reps, okR := ix.getB(b, task, k.model, k.strategy, "all", "repeats")
			sd, okS := ix.getB(b, task, k.model, k.strategy, "all", "accuracy_repeat_sd")
			lo, okL := ix.getB(b, task, k.model, k.strategy, "all", "accuracy_repeat_min")
			hi, okH := ix.getB(b, task, k.model, k.strategy, "all", "accuracy_repeat_max")
			fr, okF := ix.getB(b, task, k.model, k.strategy, "all", "flip_rate")
			rng := txt("–")
			if okL && okH && lo.ok() && hi.ok() {
				rng = txt(fmt.Sprintf("%.3f–%.3f", lo.Value, hi.Value))
				rng.V = hi.Value - lo.Value
			}
			kc := numCell(math.NaN(), 0)
			if okR && reps.ok() {
				kc = intCell(reps.Value)
			}
			items := numCell(math.NaN(), 0)
			if okA {
				items = intCell(float64(acc.N))
			}
			frc := valueCell(fr, okF, 3)
			if okF {
				frc.Title = fr.Convention
			}
			t.Rows = append(t.Rows, trow{Break: prev != "" && prev != k.model, Cells: []cell{modelCell(r, k.model), txt(k.strategy), kc, items,
				valueCell(acc, okA, 3), valueCell(sd, okS, 3), rng, frc}})
			prev = k.model
		}
		t.markBest()
		s.Blocks = append(s.Blocks, t)
	}
	if len(s.Blocks) == 0 {
		return nil
	}
	return s
}

// blockOf is the first block (by name) with the metric for the cell.
func (ix *index) blockOf(task string, k cellKey, metricName string) string {
	for _, b := range ix.blocksOf(task, metricName) {
		if _, ok := ix.m[mkey{b, task, k.model, k.strategy, "all", metricName}]; ok {
			return b
		}
	}
	return ""
}

// repeatsFigures draw, per task, each cell's per-repeat accuracies (small
// dots, from the block's repeats table) beside its accuracy per item with
// the item-clustered interval.
func (r *run) repeatsFigures(ix *index) []*figure {
	type cellReps struct {
		k    cellKey
		accs []float64
	}
	var figs []*figure
	for _, task := range r.tasks {
		keys := r.repeatedCells(ix, task)
		if len(keys) == 0 {
			continue
		}
		per := map[cellKey][]float64{}
		for name, ct := range r.csv {
			if name != "repeats" && !strings.HasSuffix(name, "_repeats") || !ct.has("repeat") || !ct.has("accuracy") {
				continue
			}
			for i := range ct.Rows {
				if ct.get(i, "task") != task {
					continue
				}
				k := cellKey{ct.get(i, "model"), ct.get(i, "strategy")}
				if v := ct.num(i, "accuracy"); !math.IsNaN(v) {
					per[k] = append(per[k], v)
				}
			}
		}
		var cells []cellReps
		for _, k := range keys {
			cells = append(cells, cellReps{k, per[k]})
		}
		n := len(cells)
		h := vg.Inch*0.9 + vg.Length(n)*vg.Points(16)
		if h < vg.Inch*2.2 {
			h = vg.Inch * 2.2
		}
		f := &figure{View: viewQuery("", "", task), ID: figID("repeats", task), Title: "Accuracy per repeat: " + task, W: vg.Inch * 7.2, H: h, Tall: n > 16,
			Caption: "Each small dot is one repeat's accuracy; the large dot is the accuracy per item with its 95% interval, which resamples items with all their samples. " +
				"A wide spread of small dots, or an interval wider than the gap between two strategies, means one run at temperature 0 would not have told them apart."}
		f.Draw = func(dc draw.Canvas) {
			p := newPlot("", "accuracy", "")
			var names []string
			xmin, xmax := 1.0, 0.0
			for i := n - 1; i >= 0; i-- {
				names = append(names, cells[i].k.model+" · "+cells[i].k.strategy)
			}
			var ds []dot
			for i, c := range cells {
				y := float64(n - 1 - i)
				col := hexColor(r.color(c.k.model))
				accs := append([]float64(nil), c.accs...)
				sort.Float64s(accs)
				for j, v := range accs {
					// Repeats with the same accuracy are nudged apart.
					dy := 0.0
					if j > 0 && accs[j-1] == v {
						dy = 0.12 * float64(j%3)
					}
					ds = append(ds, dot{X: v, Y: y + 0.18 + dy, R: vg.Points(2.2), Fill: alpha(col, 0.55)})
					xmin, xmax = math.Min(xmin, v), math.Max(xmax, v)
				}
				b := ix.blockOf(task, c.k, "flip_rate")
				if acc, ok := ix.getB(b, task, c.k.model, c.k.strategy, "all", "accuracy"); ok && acc.ok() {
					if !math.IsNaN(acc.Lo) && !math.IsNaN(acc.Hi) {
						p.Add(line([]float64{acc.Lo, acc.Hi}, []float64{y - 0.12, y - 0.12}, draw.LineStyle{Color: col, Width: vg.Points(1.4)}))
						xmin, xmax = math.Min(xmin, acc.Lo), math.Max(xmax, acc.Hi)
					}
					ds = append(ds, dot{X: acc.Value, Y: y - 0.12, R: vg.Points(3.6), Fill: col})
					xmin, xmax = math.Min(xmin, acc.Value), math.Max(xmax, acc.Value)
				}
			}
			p.Add(dots(ds))
			if xmin > xmax {
				xmin, xmax = 0, 1
			}
			pad := math.Max(0.02, (xmax-xmin)*0.08)
			p.X.Min, p.X.Max = math.Max(0, xmin-pad), math.Min(1, xmax+pad)
			p.X.Tick.Marker = niceTicksLinear(p.X.Min, p.X.Max)
			p.NominalY(names...)
			p.Y.Tick.Label = textStyle(8, false, colInk)
			p.Y.Tick.Label.XAlign, p.Y.Tick.Label.YAlign = draw.XRight, draw.YCenter
			p.Y.Min, p.Y.Max = -0.7, float64(n)-0.3
			p.Draw(dc)
		}
		figs = append(figs, f)
	}
	return figs
}
