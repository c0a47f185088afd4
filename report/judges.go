package report

import (
	"fmt"
	"image/color"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The judges' section: how far each judge agrees with people (rows of a
// judge_agreement block whose model and strategy columns name the judge),
// and each cell's ASR and RTA corrected for its judge's errors beside the
// rates as judged.

// judgeBlocks are the run's blocks whose rows measure judges: those that
// declare so in the manifest, else the blocks that report a kappa.
func (r *run) judgeBlocks() map[string]bool {
	out := map[string]bool{}
	if r.manifest != nil && len(r.manifest.Metrics) > 0 {
		for _, b := range r.manifest.Metrics {
			if b.Drawn().Judges {
				out[b.Name] = true
			}
		}
		return out
	}
	for _, x := range r.metrics {
		if x.Metric == "kappa" {
			out[x.Block] = true
		}
	}
	return out
}

// judgeRow says whether a metric row measures a judge (its model and
// strategy columns are the judge's, not a cell's).
func judgeRow(blocks map[string]bool, x metric) bool {
	return blocks[x.Block] && !strings.HasPrefix(x.Metric, "asr_") && !strings.HasPrefix(x.Metric, "rta_")
}

// judgeKey names one judge of one block and task.
type judgeKey struct{ block, task, model, judge string }

// agreementOf collects, per judge, its rows on one subset.
func (r *run) agreementOf(subset string) ([]judgeKey, map[judgeKey]map[string]metric) {
	blocks := r.judgeBlocks()
	rows := map[judgeKey]map[string]metric{}
	var keys []judgeKey
	for _, x := range r.metrics {
		if !judgeRow(blocks, x) || x.Subset != subset || x.Metric == "alpha" {
			continue
		}
		k := judgeKey{x.Block, x.Task, x.Model, x.Strategy}
		if rows[k] == nil {
			rows[k] = map[string]metric{}
			keys = append(keys, k)
		}
		rows[k][x.Metric] = x
	}
	// Best agreement first within a task; a judge without a kappa last.
	sort.SliceStable(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.block != b.block || a.task != b.task {
			return false
		}
		ka, kb := rows[a]["kappa"].Value, rows[b]["kappa"].Value
		if math.IsNaN(ka) != math.IsNaN(kb) {
			return !math.IsNaN(ka)
		}
		return ka > kb
	})
	return keys, rows
}

func (r *run) judgesSection(ix *index) *section {
	keys, rows := r.agreementOf("all")
	rates := r.rateCells(ix)
	if len(keys) == 0 && len(rates) == 0 {
		return nil
	}
	s := &section{ID: "judges", Title: "Judges: agreement with people, and corrected rates",
		Intro: "On the cases people labelled (a task's human verdicts, or audit labels given in promoral view), each judge against the people: Cohen's kappa, accuracy, " +
			"sensitivity (of the replies people judged COMPLIANCE, the share the judge calls COMPLIANCE) and specificity (the same for REFUSAL), with 95% bootstrap intervals. " +
			"A case the judge gave no verdict on counts as a disagreement unless the block leaves unparsed cases out. Then ASR and RTA as judged, corrected for the judge's errors " +
			"(Rogan–Gladen, with the judge's error rates on labelled replies of the same kind), and the people's own rate on the labelled replies."}
	var cur *table
	last := judgeKey{}
	for _, k := range keys {
		if cur == nil || k.block != last.block || k.task != last.task {
			cur = &table{Title: fmt.Sprintf("Agreement with people · task %s (block %s)", k.task, k.block), Cols: []col{{Name: "Judge"}, {Name: "Judge model"},
				{Name: "κ", Num: true, Better: 1, Title: "Cohen's kappa against people's verdicts"}, {Name: "Accuracy", Num: true, Better: 1},
				{Name: "Sensitivity", Num: true, Better: 1, Title: "people COMPLIANCE, judge COMPLIANCE"}, {Name: "Specificity", Num: true, Better: 1, Title: "people REFUSAL, judge REFUSAL"},
				{Name: "Labelled", Num: true, Title: "labelled cases counted (of those the task has)"}, {Name: "No verdict", Num: true, Title: "labelled cases the judge gave no verdict on"},
				{Name: "TP / FN / FP / TN", Title: "people COMPLIANCE: judge COMPLIANCE / REFUSAL; people REFUSAL: judge COMPLIANCE / REFUSAL"}}}
			s.Blocks = append(s.Blocks, cur)
		}
		last = k
		m := rows[k]
		get := func(name string) (metric, bool) { x, ok := m[name]; return x, ok }
		kappa, okK := get("kappa")
		acc, okA := get("accuracy")
		sens, okS := get("sensitivity")
		spec, okP := get("specificity")
		nv, okN := get("no_verdict")
		if !okN {
			nv.Value = math.NaN()
		}
		count := func(name string) string {
			if x, ok := m[name]; ok && !math.IsNaN(x.Value) {
				return fmt.Sprintf("%.0f", x.Value)
			}
			return "–"
		}
		name := txt(k.judge)
		name.Title = kappa.Convention
		cur.Rows = append(cur.Rows, trow{Cells: []cell{name, txt(k.model), valueCell(kappa, okK, 3), valueCell(acc, okA, 3), valueCell(sens, okS, 3), valueCell(spec, okP, 3),
			nCell(kappa, okK), pctOf(nv.Value, float64(kappa.N)), txt(strings.Join([]string{count("tp"), count("fn"), count("fp"), count("tn")}, " / "))},
			View: viewQuery("", "", k.task)})
	}
	for _, b := range s.Blocks {
		if t, ok := b.(*table); ok {
			t.markBest()
			t.Caption = "Hover a judge for what it is and where the people's verdicts came from. Subsets and the full confusion matrices are in " +
				"metrics.parquet and the block's confusion CSV."
		}
	}
	if len(keys) > 0 {
		s.Blocks = append([]any{r.leaderboard(keys, rows)}, s.Blocks...)
	}
	if len(rates) > 0 {
		s.Blocks = append(s.Blocks, r.correctedTable(ix, rates))
	}
	return s
}

func pctOf(a, n float64) cell {
	if math.IsNaN(a) || n <= 0 {
		return numCell(math.NaN(), 0)
	}
	c := intCell(a)
	c.Sub = fmt.Sprintf("%.0f%%", 100*a/n)
	return c
}

// rateCell is one cell with corrected rates: a block, task, model and
// strategy.
type rateCell struct{ block, task, model, strategy string }

func (r *run) rateCells(ix *index) []rateCell {
	blocks := r.judgeBlocks()
	seen := map[rateCell]bool{}
	var out []rateCell
	for _, x := range r.metrics {
		if !blocks[x.Block] || x.Subset != "all" || (x.Metric != "asr_corrected" && x.Metric != "rta_corrected") {
			continue
		}
		c := rateCell{x.Block, x.Task, x.Model, x.Strategy}
		if !seen[c] {
			seen[c] = true
			out = append(out, c)
		}
	}
	return out
}

// correctedTable sets each cell's corrected ASR and RTA beside the rates
// as judged and the people's.
func (r *run) correctedTable(ix *index, cells []rateCell) *table {
	t := &table{Title: "ASR and RTA corrected for the judge's errors", Cols: []col{{Name: "Task"}, {Name: "Model"}, {Name: "Strategy"},
		{Name: "as judged", Group: "ASR", Num: true}, {Name: "corrected", Group: "ASR", Num: true, Title: "Rogan–Gladen, clamped to [0, 1]"}, {Name: "people", Group: "ASR", Num: true, Title: "share people judged COMPLIANCE, of the harmful replies they labelled"},
		{Name: "as judged", Group: "RTA", Num: true}, {Name: "corrected", Group: "RTA", Num: true, Title: "Rogan–Gladen, clamped to [0, 1]"}, {Name: "people", Group: "RTA", Num: true, Title: "share people judged REFUSAL, of the benign replies they labelled"}},
		Caption: "The correction assumes the judge errs on these replies at the rates it erred on the labelled ones. Its interval resamples the judged replies and the labelled ones in every replicate. " +
			"A corrected rate marked red was clamped to [0, 1] (the uncorrected estimate is the _rg row of metrics.parquet); a dash says why there is none (hover)."}
	for _, c := range cells {
		get := func(name string) (metric, bool) { return ix.getB(c.block, c.task, c.model, c.strategy, "all", name) }
		row := trow{Cells: []cell{txt(c.task), modelCell(r, c.model), txt(c.strategy)}, View: viewQuery(c.model, c.strategy, c.task)}
		for _, k := range []string{"asr", "rta"} {
			j, okJ := get(k + "_judged")
			cr, okC := get(k + "_corrected")
			h, okH := get(k + "_human")
			cc := valueCell(cr, okC, 3)
			if okC && cr.Status != "ok" && cr.Status != "" {
				cc.Title = cr.Convention
			}
			if okC && strings.Contains(cr.Convention, "CLAMPED") {
				cc.Bad = true
				cc.Title = cr.Convention
			}
			hc := valueCell(h, okH, 3)
			if okH {
				hc.Title = fmt.Sprintf("%d labelled", h.N)
			}
			row.Cells = append(row.Cells, valueCell(j, okJ, 3), cc, hc)
		}
		t.Rows = append(t.Rows, row)
	}
	return t
}

// judgeFigure draws each judge's kappa, sensitivity and specificity with
// their intervals, one row per judge, one panel per statistic.
func (r *run) judgeFigure() *figure {
	keys, rows := r.agreementOf("all")
	var ks []judgeKey
	for _, k := range keys {
		if x, ok := rows[k]["kappa"]; ok && x.ok() {
			ks = append(ks, k)
		}
	}
	if len(ks) == 0 {
		return nil
	}
	tasks := map[string]bool{}
	for _, k := range ks {
		tasks[k.task] = true
	}
	label := func(k judgeKey) string {
		if len(tasks) > 1 {
			return k.judge + " · " + k.task
		}
		return k.judge
	}
	f := &figure{ID: "judge-agreement", Title: "Judges against people", W: vg.Inch * 7.2, H: vg.Inch*1.1 + vg.Length(len(ks))*vg.Points(17),
		Caption: "Each judge's Cohen's kappa, sensitivity and specificity against people's verdicts on the labelled cases, with 95% bootstrap intervals; " +
			"best kappa at the top; the run's own judges in blue, judges whose verdicts the dataset records in grey. A kappa of 0 is chance agreement, 1 perfect."}
	if f.H < vg.Inch*2.2 {
		f.H = vg.Inch * 2.2
	}
	f.Draw = func(dc draw.Canvas) {
		var plots []*plot.Plot
		for i, stat := range []string{"kappa", "sensitivity", "specificity"} {
			var its []barItem
			for _, k := range ks {
				x := rows[k][stat]
				v, lo, hi := x.Value, x.Lo, x.Hi
				if !x.ok() {
					v, lo, hi = math.NaN(), math.NaN(), math.NaN()
				}
				col := hexColor("#4E79A7")
				if k.model == "recorded" {
					col = hexColor("#9aa5b1")
				}
				its = append(its, barItem{name: label(k), v: v, lo: lo, hi: hi, color: col})
			}
			title := map[string]string{"kappa": "κ", "sensitivity": "sensitivity", "specificity": "specificity"}[stat]
			plots = append(plots, forest(title, its, stat == "kappa", i == 0))
		}
		drawGrid(dc, plots, 3)
	}
	return f
}

// forest is a dot-and-whisker panel, the first item at the top; names only
// on the first panel of a row. Kappa may be negative, so its axis starts
// below 0 when a value or an interval does.
func forest(title string, items []barItem, signed, names bool) *plot.Plot {
	p := newPlot(title, "", "")
	n := len(items)
	lo := 0.0
	if signed {
		for _, it := range items {
			if !math.IsNaN(it.lo) {
				lo = math.Min(lo, math.Floor(it.lo*5)/5)
			}
			if !math.IsNaN(it.v) {
				lo = math.Min(lo, math.Floor(it.v*5)/5)
			}
		}
	}
	p.X.Min, p.X.Max = lo, 1
	step := 0.25
	if 1-lo > 1.2 {
		step = 0.5
	}
	p.X.Tick.Marker = unitTicks(lo, 1, step)
	var labels []string
	for i := n - 1; i >= 0; i-- {
		if names {
			labels = append(labels, items[i].name)
		} else {
			labels = append(labels, "")
		}
	}
	p.NominalY(labels...)
	p.Y.Tick.Label = textStyle(8, false, colInk)
	p.Y.Tick.Label.XAlign, p.Y.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	p.Add(fnPlotter(func(c draw.Canvas, pl *plot.Plot) {
		tx, ty := pl.Transforms(&c)
		lbl := textStyle(7, false, colMuted)
		lbl.YAlign = draw.YCenter
		for i, it := range items {
			y := float64(n - 1 - i)
			if math.IsNaN(it.v) {
				c.FillText(lbl, vg.Point{X: tx(lo) + vg.Points(4), Y: ty(y)}, "none")
				continue
			}
			if !math.IsNaN(it.lo) && !math.IsNaN(it.hi) {
				ws := draw.LineStyle{Color: alpha(it.color, 0.7), Width: vg.Points(1.2)}
				c.StrokeLine2(ws, tx(math.Max(it.lo, lo)), ty(y), tx(math.Min(it.hi, 1)), ty(y))
			}
			var d vg.Path
			pt := vg.Point{X: tx(it.v), Y: ty(y)}
			d.Move(vg.Point{X: pt.X + vg.Points(3.4), Y: pt.Y})
			d.Arc(pt, vg.Points(3.4), 0, 2*math.Pi)
			d.Close()
			c.SetColor(it.color)
			c.Fill(d)
			c.SetLineStyle(draw.LineStyle{Color: color.White, Width: vg.Points(0.8)})
			c.Stroke(d)
		}
	}))
	return p
}

// correctedFigure sets each cell's ASR as judged against its corrected
// ASR (and RTA), with intervals, so the size of the correction shows.
func (r *run) correctedFigure(ix *index) *figure {
	cells := r.rateCells(ix)
	type pt struct {
		name             string
		j, jlo, jhi      float64
		c, clo, chi, hum float64
		clamped          bool
	}
	var groups [2][]pt
	for gi, k := range []string{"asr", "rta"} {
		for _, c := range cells {
			j, okJ := ix.getB(c.block, c.task, c.model, c.strategy, "all", k+"_judged")
			cr, okC := ix.getB(c.block, c.task, c.model, c.strategy, "all", k+"_corrected")
			if !okJ || !okC || !j.ok() || !cr.ok() {
				continue
			}
			h, okH := ix.getB(c.block, c.task, c.model, c.strategy, "all", k+"_human")
			hum := math.NaN()
			if okH && h.ok() {
				hum = h.Value
			}
			name := c.model + " · " + c.strategy
			if len(cells) > 1 {
				name += " · " + c.task
			}
			groups[gi] = append(groups[gi], pt{name, j.Value, j.Lo, j.Hi, cr.Value, cr.Lo, cr.Hi, hum, strings.Contains(cr.Convention, "CLAMPED")})
		}
	}
	n := max(len(groups[0]), len(groups[1]))
	if n == 0 {
		return nil
	}
	f := &figure{ID: "corrected-rates", Title: "Rates as judged and corrected for the judge's errors", W: vg.Inch * 7.2, H: vg.Inch*1.2 + vg.Length(n)*vg.Points(19),
		Caption: "Per cell, the rate as the judge gave it (hollow) and corrected for the judge's errors (filled), each with its 95% interval; a cross marks the people's own rate " +
			"on the replies they labelled, where there are any. A red dot was clamped to [0, 1]."}
	if f.H < vg.Inch*2.2 {
		f.H = vg.Inch * 2.2
	}
	f.Draw = func(dc draw.Canvas) {
		var plots []*plot.Plot
		for gi, g := range groups {
			if len(g) == 0 {
				continue
			}
			p := newPlot([]string{"ASR", "RTA"}[gi], "", "")
			p.X.Min, p.X.Max = 0, 1
			p.X.Tick.Marker = unitTicks(0, 1, 0.25)
			var names []string
			for i := len(g) - 1; i >= 0; i-- {
				names = append(names, g[i].name)
			}
			p.NominalY(names...)
			p.Y.Tick.Label = textStyle(8, false, colInk)
			p.Y.Tick.Label.XAlign, p.Y.Tick.Label.YAlign = draw.XRight, draw.YCenter
			p.Y.Min, p.Y.Max = -0.6, float64(len(g))-0.4
			g := g
			p.Add(fnPlotter(func(c draw.Canvas, pl *plot.Plot) {
				tx, ty := pl.Transforms(&c)
				blue, red := hexColor("#4E79A7"), hexColor("#E15759")
				circle := func(x, y float64, fill color.Color, stroke color.Color) {
					var d vg.Path
					p := vg.Point{X: tx(x), Y: ty(y)}
					d.Move(vg.Point{X: p.X + vg.Points(3.4), Y: p.Y})
					d.Arc(p, vg.Points(3.4), 0, 2*math.Pi)
					d.Close()
					if fill != nil {
						c.SetColor(fill)
						c.Fill(d)
					}
					c.SetLineStyle(draw.LineStyle{Color: stroke, Width: vg.Points(1.1)})
					c.Stroke(d)
				}
				for i, q := range g {
					y := float64(len(g) - 1 - i)
					whisker := func(lo, hi, dy float64, col color.NRGBA) {
						if !math.IsNaN(lo) && !math.IsNaN(hi) {
							c.StrokeLine2(draw.LineStyle{Color: alpha(col, 0.6), Width: vg.Points(1)}, tx(math.Max(lo, 0)), ty(y+dy), tx(math.Min(hi, 1)), ty(y+dy))
						}
					}
					whisker(q.jlo, q.jhi, 0.14, colMuted)
					whisker(q.clo, q.chi, -0.14, blue)
					circle(q.j, y+0.14, colWhite, colMuted)
					fill := blue
					if q.clamped {
						fill = red
					}
					circle(q.c, y-0.14, fill, colWhite)
					if !math.IsNaN(q.hum) {
						x, yy, s := tx(q.hum), ty(y), vg.Points(3.5)
						ls := draw.LineStyle{Color: colInk, Width: vg.Points(1.2)}
						c.StrokeLine2(ls, x-s, yy-s, x+s, yy+s)
						c.StrokeLine2(ls, x-s, yy+s, x+s, yy-s)
					}
				}
			}))
			plots = append(plots, p)
		}
		drawGrid(dc, plots, len(plots))
	}
	return f
}
