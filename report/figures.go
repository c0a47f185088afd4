package report

import (
	"fmt"
	"hash/fnv"
	"image/color"
	"maps"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/promoral/promoral/pipeline/stats"
)

// buildFigures returns the figures the run has data for, and a note for
// each it has not.
func (r *run) buildFigures(ix *index, tokens map[string]map[cellKey]*tokenStat) (figs []*figure, skipped []string) {
	confTasks := 0
	for _, task := range r.tasks {
		cd := r.confidenceData(task)
		if cd == nil {
			continue
		}
		confTasks++
		figs = append(figs, r.reliabilityFigures(ix, cd)...)
		figs = append(figs, r.boxFigure(cd), r.scatterFigure(cd))
		figs = append(figs, r.conditionFigures(ix, task)...)
	}
	if confTasks == 0 {
		skipped = append(skipped, "Reliability diagrams, confidence box plots and the confidence-vs-correctness scatter: no task has answers with a stated confidence and a gold label.")
	}
	if f := r.umssBarsFigure(); f != nil {
		figs = append(figs, f)
	} else {
		skipped = append(skipped, "UMSS bars: the run has no umss metric (umss_by_model.csv / umss_by_strategy.csv).")
	}
	if f := r.frontierFigure(ix, tokens); f != nil {
		figs = append(figs, f)
	} else {
		skipped = append(skipped, "Efficiency frontier: the run has no score with token counts to set it against.")
	}
	if f := r.asrRtaFigure(ix); f != nil {
		figs = append(figs, f)
	} else {
		skipped = append(skipped, r.asrRtaMissing(ix))
	}
	if f := r.referenceFigure(); f != nil {
		figs = append(figs, f)
	}
	figs = append(figs, r.repeatsFigures(ix)...)
	for _, f := range []*figure{r.judgeFigure(), r.correctedFigure(ix)} {
		if f != nil {
			figs = append(figs, f)
		}
	}
	return figs, skipped
}

var unsafeID = regexp.MustCompile(`[^A-Za-z0-9_.-]+`)

func figID(parts ...string) string {
	return strings.Trim(unsafeID.ReplaceAllString(strings.Join(parts, "-"), "_"), "_")
}

// ---- confidence data ----

type confPoint struct {
	model, strategy, id string
	conf                float64 // confidence in the given answer, 0..1
	correct             bool
}

type confData struct {
	task   string
	points []confPoint
	pos    string // "" when confidences are in the chosen answer
	conds  []cellKey
}

// confidenceData collects a task's answers with a confidence and a gold
// label. A judged task is left out (its confidence is the judge's). When
// the stated confidence is the probability of one class (a block with
// confidence: positive, as the ProMoral ETHICS prompt asks) it is turned
// into the confidence in the given answer.
func (r *run) confidenceData(task string) *confData {
	cd := &confData{task: task}
	type lab struct {
		sum float64
		n   int
	}
	byLabel := map[string]*lab{}
	var raw []result
	for _, x := range r.results {
		if x.Task != task || x.Judged || x.Correct == nil || !x.Parsed || math.IsNaN(x.Conf) || x.Label == "" {
			continue
		}
		raw = append(raw, x)
		if byLabel[x.Label] == nil {
			byLabel[x.Label] = &lab{}
		}
		byLabel[x.Label].sum += x.Conf
		byLabel[x.Label].n++
	}
	if len(raw) < 5 {
		return nil
	}
	if pos, known := r.statedPositive(task); known {
		cd.pos = pos
	} else if len(byLabel) == 2 {
		// A run without a manifest that says what its confidences mean:
		// read them as P(class) when one label's are low and the other's
		// high (the ProMoral prompt), else as confidence in the answer.
		var ls []string
		for l := range byLabel {
			ls = append(ls, l)
		}
		sort.Strings(ls)
		m0, m1 := byLabel[ls[0]].sum/float64(byLabel[ls[0]].n), byLabel[ls[1]].sum/float64(byLabel[ls[1]].n)
		switch {
		case m0 < 0.35 && m1 > 0.65:
			cd.pos = ls[1]
		case m1 < 0.35 && m0 > 0.65:
			cd.pos = ls[0]
		}
	}
	seen := map[cellKey]bool{}
	for _, x := range raw {
		c := math.Min(1, math.Max(0, x.Conf))
		if cd.pos != "" && x.Label != cd.pos {
			c = 1 - c
		}
		cd.points = append(cd.points, confPoint{model: x.Model, strategy: x.Strategy, id: x.CaseID, conf: c, correct: *x.Correct})
		k := cellKey{x.Model, x.Strategy}
		if !seen[k] {
			seen[k] = true
			cd.conds = append(cd.conds, k)
		}
	}
	r.sortCells(cd.conds)
	return cd
}

func (cd *confData) models() []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range cd.conds {
		if !seen[c.model] {
			seen[c.model] = true
			out = append(out, c.model)
		}
	}
	return out
}

// ---- reliability diagrams ----

type relBin struct {
	conf, acc float64
	n         int
	lo, hi    float64
}

type relPanel struct {
	title  string
	color  color.NRGBA
	bins   []relBin
	n      int
	ece    float64
	note   string // the ECE row's status when it has no value
	yLabel string
}

func eceOf(bins []relBin) (float64, int) {
	n := 0
	for _, b := range bins {
		n += b.n
	}
	if n == 0 {
		return math.NaN(), 0
	}
	e := 0.0
	for _, b := range bins {
		if b.n > 0 {
			e += float64(b.n) / float64(n) * math.Abs(b.acc-b.conf)
		}
	}
	return e, n
}

// reliabilityFigures draws, per block that reports an ECE on the task,
// the very bins that ECE was computed from (the block's reliability.csv)
// with the ECE of the table beside each panel. Without those tables (a run
// from before them) the answers are binned here, and the panels say that
// their ECE is computed here, top-label, in stats.DefaultBins bins (lo, hi].
func (r *run) reliabilityFigures(ix *index, cd *confData) []*figure {
	var figs []*figure
	for _, src := range r.reliabilitySources(ix, cd.task) {
		figs = append(figs, r.reliabilityFromTable(ix, cd, src)...)
	}
	if len(figs) > 0 {
		return figs
	}
	var panels []relPanel
	for _, c := range cd.conds {
		var conf []float64
		var ok []bool
		for _, p := range cd.points {
			if p.model == c.model && p.strategy == c.strategy {
				conf, ok = append(conf, p.conf), append(ok, p.correct)
			}
		}
		bins := relBinsOf(stats.ReliabilityBins(conf, ok, stats.DefaultBins))
		e, n := eceOf(bins)
		panels = append(panels, relPanel{title: r.condLabel(cd, c), color: hexColor(r.color(c.model)), bins: bins, n: n, ece: e})
	}
	what := "confidence in the given answer"
	if cd.pos != "" {
		what = fmt.Sprintf("confidence in the given answer (the stated P(%s), reflected for the other answer)", cd.pos)
	}
	f := relFigure(figID("reliability", cd.task), "Reliability diagrams: "+cd.task, panels,
		fmt.Sprintf("Accuracy against %s in %d equal-width bins (lo, hi]. This run has no reliability table, so the bins and each panel's ECE "+
			"(top-label, computed here from results.parquet) may differ from any ECE in the tables.", what, stats.DefaultBins), "confidence in the given answer")
	f.View = viewQuery("", "", cd.task)
	return []*figure{f}
}

// relSource is one block's reliability bins of one ECE metric on a task.
type relSource struct {
	block, metric, table string
}

// reliabilitySources: the block behind the task's accuracy table with its
// ECE, then any other block (the confidence study) with its own.
func (r *run) reliabilitySources(ix *index, task string) []relSource {
	var out []relSource
	seen := map[string]bool{}
	add := func(block, metric string) {
		if seen[block] {
			return
		}
		name := block + "_reliability"
		if ct := r.csv[name]; ct != nil {
			for i := range ct.Rows {
				if ct.get(i, "task") == task && ct.get(i, "metric") == metric {
					seen[block] = true
					out = append(out, relSource{block, metric, name})
					return
				}
			}
		}
	}
	for _, b := range ix.blocksOf(task, "accuracy") {
		m, _ := eceMetricB(ix, b, task)
		add(b, m)
	}
	for _, b := range ix.blocksOf(task, "ece") {
		add(b, "ece")
	}
	return out
}

func (r *run) reliabilityFromTable(ix *index, cd *confData, src relSource) []*figure {
	ct := r.csv[src.table]
	type condBins struct {
		key     cellKey
		bins    []relBin
		observe string
	}
	byCond := map[cellKey]*condBins{}
	var order []cellKey
	for i := range ct.Rows {
		if ct.get(i, "task") != cd.task || ct.get(i, "metric") != src.metric {
			continue
		}
		k := cellKey{ct.get(i, "model"), ct.get(i, "strategy")}
		cb := byCond[k]
		if cb == nil {
			cb = &condBins{key: k, observe: ct.get(i, "observed_is")}
			byCond[k] = cb
			order = append(order, k)
		}
		b := relBin{n: int(ct.num(i, "n")), lo: ct.num(i, "bin_lo_excl"), hi: ct.num(i, "bin_hi_incl"), conf: ct.num(i, "mean_confidence"), acc: ct.num(i, "observed")}
		cb.bins = append(cb.bins, b)
	}
	r.sortCells(order)
	var conds []cellKey
	for _, k := range order {
		if _, n := eceOf(byCond[k].bins); n > 0 {
			conds = append(conds, k)
		}
	}
	if len(conds) == 0 {
		return nil
	}
	eceName := map[string]string{"ece": "top-label ECE", "ece_pos": "positive-class ECE", "ece_pos_promoral": "positive-class ECE, ProMoral's binning"}[src.metric]
	observe := byCond[conds[0]].observe
	xlabel := "confidence"
	if strings.HasPrefix(observe, "share ") {
		xlabel = "P(" + strings.TrimPrefix(observe, "share ") + ")"
	}
	conv := ix.convention(src.block, cd.task, src.metric)
	panel := func(k cellKey, title string) relPanel {
		cb := byCond[k]
		_, n := eceOf(cb.bins)
		p := relPanel{title: title, color: hexColor(r.color(k.model)), bins: cb.bins, n: n, ece: math.NaN(), yLabel: observe}
		if x, ok := ix.getB(src.block, cd.task, k.model, k.strategy, "all", src.metric); ok {
			p.ece, p.n = x.Value, x.N
			if !x.ok() {
				p.note = x.Status
			}
		}
		return p
	}
	caption := fmt.Sprintf("Block %s: %s against %s, in the bins of the table's %s (%s); each panel's ECE is the table's. "+
		"Dot size is the number of answers in the bin and the pale bars at the bottom show where the answers fall. "+
		"On the dashed diagonal a model is perfectly calibrated: points below it are overconfident, points above underconfident. "+
		"Open rings are bins too sparse to trust (under 1%% of the answers).", src.block, observe, xlabel, eceName, conv)
	multiModel := false
	for _, k := range conds {
		multiModel = multiModel || k.model != conds[0].model
	}
	// One panel per condition; with many, one figure per model, never a
	// panel pooling a model's conditions (the studied dimension would
	// vanish).
	if len(conds) <= 12 {
		var panels []relPanel
		for _, k := range conds {
			title := r.condTitle(k, multiModel)
			panels = append(panels, panel(k, title))
		}
		f := relFigure(figID("reliability", cd.task, src.block), "Reliability diagrams: "+cd.task+" ("+src.block+", "+src.metric+")", panels, caption, xlabel)
		f.View = viewQuery("", "", cd.task)
		return []*figure{f}
	}
	var figs []*figure
	var models []string
	byModel := map[string][]cellKey{}
	for _, k := range conds {
		if byModel[k.model] == nil {
			models = append(models, k.model)
		}
		byModel[k.model] = append(byModel[k.model], k)
	}
	for _, m := range models {
		var panels []relPanel
		for _, k := range byModel[m] {
			panels = append(panels, panel(k, r.condTitle(k, false)))
		}
		f := relFigure(figID("reliability", cd.task, src.block, m), "Reliability diagrams: "+cd.task+", "+m+" ("+src.block+", "+src.metric+")", panels, caption, xlabel)
		f.View = viewQuery(m, "", cd.task)
		figs = append(figs, f)
	}
	return figs
}

// condTitle names a condition in a panel: its strategy (and model), and
// its factors when the run has any.
func (r *run) condTitle(k cellKey, withModel bool) string {
	t := k.strategy
	if withModel {
		t = k.model + " · " + t
	}
	if fs := r.factorsOf(k); fs != "" {
		t += " [" + fs + "]"
	}
	return t
}

// factorsOf is a cell's factor values as "level 2, thinking on".
func (r *run) factorsOf(k cellKey) string {
	if len(r.factors) == 0 {
		return ""
	}
	for _, x := range r.metrics {
		if x.Model == k.model && x.Strategy == k.strategy && len(x.Factors) > 0 {
			var parts []string
			for _, f := range r.factors {
				if v := x.Factors[f]; v != "" {
					parts = append(parts, f+" "+v)
				}
			}
			return strings.Join(parts, ", ")
		}
	}
	return ""
}

func relBinsOf(bs []stats.ReliabilityBin) []relBin {
	out := make([]relBin, len(bs))
	for i, b := range bs {
		out[i] = relBin{conf: b.MeanConf, acc: b.Accuracy, n: b.N, lo: b.Lo, hi: b.Hi}
	}
	return out
}

func relFigure(id, title string, panels []relPanel, caption, xlabel string) *figure {
	cols := 4
	if len(panels) < cols {
		cols = len(panels)
	}
	rows := (len(panels) + cols - 1) / cols
	f := &figure{ID: id, Title: title,
		W: vg.Length(cols)*vg.Inch*2.35 + vg.Inch*0.3, H: vg.Length(rows)*vg.Inch*2.45 + vg.Inch*0.1,
		Caption: caption}
	f.Draw = func(dc draw.Canvas) {
		var plots []*plot.Plot
		for _, pn := range panels {
			ece := "ECE " + fmtNum(pn.ece, 3)
			if pn.note != "" {
				ece = "ECE " + pn.note
			}
			ylabel := "accuracy"
			if pn.yLabel != "" {
				ylabel = pn.yLabel
			}
			p := newPlot(pn.title, fmt.Sprintf("%s · %s · n %s", xlabel, ece, groupDigits(int64(pn.n))), ylabel)
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, 0, 1
			p.X.Tick.Marker, p.Y.Tick.Marker = unitTicks(0, 1, 0.2), unitTicks(0, 1, 0.2)
			p.Add(line([]float64{0, 1}, []float64{0, 1}, draw.LineStyle{Color: colIdeal, Width: vg.Points(0.9), Dashes: []vg.Length{vg.Points(3), vg.Points(3)}}))
			maxN, total := 0, 0
			for _, b := range pn.bins {
				total += b.n
				if b.n > maxN {
					maxN = b.n
				}
			}
			pale := tint(pn.color, 0.72)
			p.Add(fnPlotter(func(c draw.Canvas, pl *plot.Plot) {
				tx, ty := pl.Transforms(&c)
				for _, b := range pn.bins {
					if b.n == 0 || math.IsNaN(b.lo) || maxN == 0 {
						continue
					}
					h := 0.16 * float64(b.n) / float64(maxN)
					x0, x1 := tx(b.lo)+vg.Points(0.6), tx(b.hi)-vg.Points(0.6)
					c.FillPolygon(pale, []vg.Point{{X: x0, Y: ty(0)}, {X: x1, Y: ty(0)}, {X: x1, Y: ty(h)}, {X: x0, Y: ty(h)}})
				}
			}))
			// The curve runs through the bins that hold enough answers to
			// say something; sparser bins are open rings off the curve.
			minN := int(math.Max(3, 0.01*float64(total)))
			var xs, ys []float64
			var ds []dot
			for _, b := range pn.bins {
				if b.n == 0 {
					continue
				}
				rad := vg.Points(1.8 + 3.4*math.Sqrt(float64(b.n)/float64(maxN)))
				if b.n < minN {
					ds = append(ds, dot{X: b.conf, Y: b.acc, R: rad, Stroke: pn.color, Width: vg.Points(0.9)})
					continue
				}
				xs, ys = append(xs, b.conf), append(ys, b.acc)
				ds = append(ds, dot{X: b.conf, Y: b.acc, R: rad, Fill: pn.color, Stroke: colWhite, Width: vg.Points(0.8)})
			}
			p.Add(line(xs, ys, draw.LineStyle{Color: pn.color, Width: vg.Points(1.4)}))
			p.Add(dots(ds))
			plots = append(plots, p)
		}
		drawGrid(dc, plots, cols)
	}
	return f
}

// ---- box plots ----

func (r *run) condLabel(cd *confData, c cellKey) string {
	if len(cd.models()) > 1 {
		return c.model + " · " + c.strategy
	}
	return c.strategy
}

func (r *run) boxFigure(cd *confData) *figure {
	vals := map[cellKey]plotter.Values{}
	for _, p := range cd.points {
		k := cellKey{p.model, p.strategy}
		vals[k] = append(vals[k], p.conf)
	}
	n := len(cd.conds)
	h := vg.Inch*0.9 + vg.Length(n)*vg.Points(15)
	if h < vg.Inch*2.4 {
		h = vg.Inch * 2.4
	}
	f := &figure{View: viewQuery("", "", cd.task), ID: figID("confidence-box", cd.task), Title: "Confidence by condition: " + cd.task, W: vg.Inch * 7.2, H: h, Tall: n > 16,
		Caption: "Distribution of the confidence in the given answer for each model × strategy: the box spans the middle half, the line is the median, whiskers reach the most extreme answers within 1.5 IQR; dots are the values beyond, larger where more answers gave them. " +
			"Look for conditions whose boxes sit high while their accuracy is low (overconfidence), and for boxes squeezed at one value (a model that always states the same confidence)."}
	f.Draw = func(dc draw.Canvas) {
		p := newPlot("", "confidence in the given answer", "")
		p.X.Min, p.X.Max = 0, 1
		p.X.Tick.Marker = unitTicks(0, 1, 0.2)
		var names []string
		for i := n - 1; i >= 0; i-- {
			names = append(names, r.condLabel(cd, cd.conds[i]))
		}
		for i, c := range cd.conds {
			loc := float64(n - 1 - i)
			if bs, ok := boxStats(vals[c]); ok {
				p.Add(boxPlotter(bs, loc, hexColor(r.color(c.model))))
			}
		}
		p.NominalY(names...)
		p.Y.Tick.Label = textStyle(8, false, colInk)
		p.Y.Tick.Label.XAlign, p.Y.Tick.Label.YAlign = draw.XRight, draw.YCenter
		p.Y.Min, p.Y.Max = -0.7, float64(n)-0.3
		p.Draw(dc)
	}
	return f
}

// box is the five-number summary of one condition, with its outliers
// (distinct values, each with how many answers gave it).
type box struct {
	q1, med, q3, lo, hi float64
	out                 map[float64]int
}

func quantile(sorted []float64, q float64) float64 {
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i+1 >= len(sorted) {
		return sorted[len(sorted)-1]
	}
	return sorted[i] + (pos-float64(i))*(sorted[i+1]-sorted[i])
}

func boxStats(vs []float64) (box, bool) {
	if len(vs) == 0 {
		return box{}, false
	}
	s := append([]float64(nil), vs...)
	sort.Float64s(s)
	b := box{q1: quantile(s, 0.25), med: quantile(s, 0.5), q3: quantile(s, 0.75), out: map[float64]int{}}
	iqr := b.q3 - b.q1
	b.lo, b.hi = b.q1, b.q3
	for _, v := range s {
		switch {
		case v < b.q1-1.5*iqr || v > b.q3+1.5*iqr:
			b.out[v]++
		default:
			b.lo, b.hi = math.Min(b.lo, v), math.Max(b.hi, v)
		}
	}
	return b, true
}

// boxPlotter draws one horizontal box at y = loc; an outlying value is one
// dot however many answers gave it, larger the more there were.
func boxPlotter(b box, loc float64, col color.NRGBA) plot.Plotter {
	return fnPlotter(func(c draw.Canvas, p *plot.Plot) {
		tx, ty := p.Transforms(&c)
		y := ty(loc)
		half := vg.Points(4.5)
		line := draw.LineStyle{Color: col, Width: vg.Points(0.8)}
		c.StrokeLine2(line, tx(b.lo), y, tx(b.q1), y)
		c.StrokeLine2(line, tx(b.q3), y, tx(b.hi), y)
		c.StrokeLine2(line, tx(b.lo), y-half/2, tx(b.lo), y+half/2)
		c.StrokeLine2(line, tx(b.hi), y-half/2, tx(b.hi), y+half/2)
		rect := []vg.Point{{X: tx(b.q1), Y: y - half}, {X: tx(b.q3), Y: y - half}, {X: tx(b.q3), Y: y + half}, {X: tx(b.q1), Y: y + half}}
		c.FillPolygon(tint(col, 0.55), rect)
		c.StrokeLines(line, append(rect, rect[0]))
		c.StrokeLine2(draw.LineStyle{Color: colInk, Width: vg.Points(1.6)}, tx(b.med), y-half, tx(b.med), y+half)
		// Drawn in value order, so that the same run gives the same file.
		for _, v := range slices.Sorted(maps.Keys(b.out)) {
			r := vg.Points(1.2 + 0.6*math.Log1p(float64(b.out[v])))
			var path vg.Path
			pt := vg.Point{X: tx(v), Y: y}
			path.Move(vg.Point{X: pt.X + r, Y: pt.Y})
			path.Arc(pt, r, 0, 2*math.Pi)
			path.Close()
			c.SetColor(alpha(col, 0.55))
			c.Fill(path)
		}
	})
}

// ---- scatter ----

func hash01(s string, salt uint32) float64 {
	h := fnv.New32a()
	h.Write([]byte{byte(salt), byte(salt >> 8)})
	h.Write([]byte(s))
	return float64(h.Sum32()%100000) / 100000
}

func (r *run) scatterFigure(cd *confData) *figure {
	const perModel = 600
	byModel := map[string][]confPoint{}
	for _, p := range cd.points {
		byModel[p.model] = append(byModel[p.model], p)
	}
	models := cd.models()
	sampled := false
	f := &figure{View: viewQuery("", "", cd.task), ID: figID("confidence-scatter", cd.task), Title: "Confidence against correctness: " + cd.task, W: vg.Inch * 7.2, H: vg.Inch * 3.3}
	for _, m := range models {
		if len(byModel[m]) > perModel {
			sampled = true
		}
	}
	f.Caption = "Each dot is one answer, jittered so that piles of equal values show their size; the bars mark each model's mean confidence when right and when wrong. " +
		"A model whose confidence means something has its 'correct' row further right than its 'wrong' row."
	if sampled {
		f.Caption += fmt.Sprintf(" Dots are a fixed sample of up to %d answers per model; the means use every answer.", perModel)
	}
	f.Draw = func(dc draw.Canvas) {
		var leg []legendEntry
		for _, m := range models {
			leg = append(leg, legendEntry{m, hexColor(r.color(m))})
		}
		inner := drawLegend(dc, leg)
		p := newPlot("", "confidence in the given answer", "")
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -0.03, 1.03, -0.45, 1.45
		p.X.Tick.Marker = unitTicks(0, 1, 0.2)
		p.Y.Tick.Marker = plot.ConstantTicks{{Value: 0, Label: "wrong"}, {Value: 1, Label: "correct"}}
		p.Y.Tick.Label = textStyle(8.5, false, colInk)
		p.Y.Tick.Label.XAlign, p.Y.Tick.Label.YAlign = draw.XRight, draw.YCenter
		var ds []dot
		var means []dot
		for mi, m := range models {
			pts := byModel[m]
			col := hexColor(r.color(m))
			// A stable sample: the points with the smallest hashes.
			sample := pts
			if len(pts) > perModel {
				sample = append([]confPoint(nil), pts...)
				sort.Slice(sample, func(i, j int) bool { return hash01(sample[i].id, 7) < hash01(sample[j].id, 7) })
				sample = sample[:perModel]
			}
			for _, pt := range sample {
				y := 0.0
				if pt.correct {
					y = 1
				}
				y += (hash01(pt.id, 1) - 0.5) * 0.56
				x := pt.conf + (hash01(pt.id, 2)-0.5)*0.035
				ds = append(ds, dot{X: x, Y: y, R: vg.Points(1.7), Fill: alpha(col, 0.42)})
			}
			var sum [2]float64
			var cnt [2]int
			for _, pt := range pts {
				k := 0
				if pt.correct {
					k = 1
				}
				sum[k] += pt.conf
				cnt[k]++
			}
			for k := 0; k < 2; k++ {
				if cnt[k] == 0 {
					continue
				}
				// One short bar per model, stacked slightly so equal means stay visible.
				off := (float64(mi) - float64(len(models)-1)/2) * 0.05
				means = append(means, dot{X: sum[k] / float64(cnt[k]), Y: float64(k) + off, Fill: col})
			}
		}
		p.Add(dots(ds))
		p.Add(fnPlotter(func(c draw.Canvas, pl *plot.Plot) {
			tx, ty := pl.Transforms(&c)
			for _, m := range means {
				x := tx(m.X)
				y0, y1 := ty(m.Y-0.3), ty(m.Y+0.3)
				c.StrokeLine2(draw.LineStyle{Color: colWhite, Width: vg.Points(4.6)}, x, y0, x, y1)
				c.StrokeLine2(draw.LineStyle{Color: m.Fill, Width: vg.Points(2.6)}, x, y0, x, y1)
			}
		}))
		p.Draw(inner)
	}
	return f
}

// ---- UMSS ----

type barItem struct {
	name      string
	v, lo, hi float64
	color     color.NRGBA
}

// hbars draws horizontal bars with interval whiskers and value labels,
// the first item at the top.
func hbars(title string, items []barItem, xmax float64) *plot.Plot {
	p := newPlot(title, "UMSS", "")
	n := len(items)
	p.X.Min, p.X.Max = 0, xmax
	p.X.Tick.Marker = unitTicks(0, xmax, 0.2)
	var names []string
	for i := n - 1; i >= 0; i-- {
		names = append(names, items[i].name)
	}
	p.NominalY(names...)
	p.Y.Tick.Label = textStyle(8.5, false, colInk)
	p.Y.Tick.Label.XAlign, p.Y.Tick.Label.YAlign = draw.XRight, draw.YCenter
	p.Y.Min, p.Y.Max = -0.6, float64(n)-0.4
	p.Add(fnPlotter(func(c draw.Canvas, pl *plot.Plot) {
		tx, ty := pl.Transforms(&c)
		lbl := textStyle(7.5, false, colMuted)
		lbl.YAlign = draw.YCenter
		for i, it := range items {
			y := float64(n - 1 - i)
			if math.IsNaN(it.v) {
				c.FillText(lbl, vg.Point{X: tx(0) + vg.Points(4), Y: ty(y)}, "no score")
				continue
			}
			x0, x1 := tx(0), tx(math.Min(it.v, xmax))
			y0, y1 := ty(y-0.32), ty(y+0.32)
			c.FillPolygon(it.color, []vg.Point{{X: x0, Y: y0}, {X: x1, Y: y0}, {X: x1, Y: y1}, {X: x0, Y: y1}})
			end := it.v
			if !math.IsNaN(it.lo) && !math.IsNaN(it.hi) {
				ws := draw.LineStyle{Color: colInk, Width: vg.Points(0.9)}
				c.StrokeLine2(ws, tx(it.lo), ty(y), tx(math.Min(it.hi, xmax)), ty(y))
				c.StrokeLine2(ws, tx(it.lo), ty(y-0.15), tx(it.lo), ty(y+0.15))
				c.StrokeLine2(ws, tx(math.Min(it.hi, xmax)), ty(y-0.15), tx(math.Min(it.hi, xmax)), ty(y+0.15))
				end = math.Max(end, it.hi)
			}
			c.FillText(lbl, vg.Point{X: tx(math.Min(end, xmax)) + vg.Points(4), Y: ty(y)}, fmtNum(it.v, 3))
		}
	}))
	return p
}

func (r *run) umssItems(name, key string) []barItem {
	ct := r.csv[name]
	if ct == nil {
		return nil
	}
	var items []barItem
	for i := range ct.Rows {
		k := ct.get(i, key)
		col := hexColor("#6b7c93")
		if key == "model" {
			col = hexColor(r.color(k))
		}
		items = append(items, barItem{name: k, v: ct.num(i, "umss"), lo: ct.num(i, "umss_ci_low"), hi: ct.num(i, "umss_ci_high"), color: col})
	}
	sort.SliceStable(items, func(a, b int) bool {
		va, vb := items[a].v, items[b].v
		if math.IsNaN(va) != math.IsNaN(vb) {
			return !math.IsNaN(va)
		}
		return va > vb
	})
	return items
}

func anyScore(items []barItem) bool {
	for _, it := range items {
		if !math.IsNaN(it.v) {
			return true
		}
	}
	return false
}

func (r *run) umssBarsFigure() *figure {
	byModel, byStrategy := r.umssItems("umss_by_model", "model"), r.umssItems("umss_by_strategy", "strategy")
	if !anyScore(byModel) && !anyScore(byStrategy) {
		return nil
	}
	var groups [][]barItem
	var titles []string
	if anyScore(byModel) {
		groups, titles = append(groups, byModel), append(titles, "by model")
	}
	if anyScore(byStrategy) {
		groups, titles = append(groups, byStrategy), append(titles, "by strategy")
	}
	rows := 0
	for _, g := range groups {
		rows = max(rows, len(g))
	}
	f := &figure{ID: "umss-bars", Title: "UMSS by model and by strategy", W: vg.Inch * 7.2, H: vg.Inch*1.0 + vg.Length(rows)*vg.Points(19),
		Caption: "UMSS with its 95% paired bootstrap interval, highest first. Overlapping whiskers mean the ranking between those two is not settled by this run."}
	if f.H < vg.Inch*2.2 {
		f.H = vg.Inch * 2.2
	}
	f.Draw = func(dc draw.Canvas) {
		var plots []*plot.Plot
		for i, g := range groups {
			xmax := 1.0
			for _, it := range g {
				if it.hi > xmax {
					xmax = math.Ceil(it.hi*5) / 5
				}
			}
			plots = append(plots, hbars(titles[i], g, xmax))
		}
		drawGrid(dc, plots, len(plots))
	}
	return f
}

// ---- efficiency frontier ----

type effPoint struct {
	label, model string
	x, y, lo, hi float64 // lo, hi: the interval of y
	xlo, xhi     float64 // the interval of x (ASR against RTA only)
	color        color.NRGBA
}

func (r *run) frontierFigure(ix *index, tokens map[string]map[cellKey]*tokenStat) *figure {
	// UMSS per strategy against its tokens per example, pooled over the
	// models and tasks.
	if ct := r.csv["umss_by_strategy"]; ct != nil {
		spent := map[string][2]float64{}
		for _, cells := range tokens {
			for k, ts := range cells {
				if math.IsNaN(ts.tokensPerExample) || ts.cases == 0 {
					continue
				}
				s := spent[k.strategy]
				s[0] += ts.tokensPerExample * float64(ts.cases)
				s[1] += float64(ts.cases)
				spent[k.strategy] = s
			}
		}
		var pts []effPoint
		for i := range ct.Rows {
			st := ct.get(i, "strategy")
			s := spent[st]
			if s[1] == 0 || math.IsNaN(ct.num(i, "umss")) || s[0] <= 0 {
				continue
			}
			pts = append(pts, effPoint{label: st, x: s[0] / s[1], y: ct.num(i, "umss"), lo: ct.num(i, "umss_ci_low"), hi: ct.num(i, "umss_ci_high"), color: hexColor("#3b4a5e")})
		}
		if len(pts) >= 2 {
			return r.frontier(pts, "efficiency-frontier", "UMSS against tokens per example", "UMSS",
				"Each strategy's UMSS (with its 95% interval) against the tokens it spends per example, pooled over models and tasks. "+
					"The dashed line is the efficiency frontier: no strategy off it scores higher for fewer tokens. Strategies far below it spend tokens without buying safety or competence.")
		}
	}
	// No UMSS: accuracy of each model × strategy on the task with the most
	// cells that have both.
	best, bestN := "", 0
	for _, task := range r.tasks {
		n := 0
		for k, ts := range tokens[task] {
			if _, ok := ix.get(task, k.model, k.strategy, "all", "accuracy"); ok && !math.IsNaN(ts.tokensPerExample) && ts.tokensPerExample > 0 {
				n++
			}
		}
		if n > bestN {
			best, bestN = task, n
		}
	}
	if bestN < 2 {
		return nil
	}
	var keys []cellKey
	for k := range tokens[best] {
		keys = append(keys, k)
	}
	r.sortCells(keys)
	var pts []effPoint
	for _, k := range keys {
		ts := tokens[best][k]
		a, ok := ix.get(best, k.model, k.strategy, "all", "accuracy")
		if !ok || math.IsNaN(ts.tokensPerExample) || ts.tokensPerExample <= 0 || math.IsNaN(a.Value) {
			continue
		}
		pts = append(pts, effPoint{label: k.strategy, model: k.model, x: ts.tokensPerExample, y: a.Value, lo: a.Lo, hi: a.Hi, color: hexColor(r.color(k.model))})
	}
	return r.frontier(pts, "efficiency-frontier", "Accuracy against tokens per example: "+best, "accuracy",
		"This run has no UMSS, so the frontier uses accuracy on "+best+": each model × strategy against the tokens it spends per example. "+
			"The dashed line joins the points that no other beats on both counts; labelled points are on it.")
}

// niceTicks are ticks at 1, 2 and 5 times powers of ten (log axes).
func niceTicks(lo, hi float64) plot.ConstantTicks {
	var ts plot.ConstantTicks
	for e := math.Floor(math.Log10(lo)) - 1; e <= math.Ceil(math.Log10(hi))+1; e++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, e)
			if v >= lo*0.999 && v <= hi*1.001 {
				ts = append(ts, plot.Tick{Value: v, Label: fmtTokens(v)})
			}
		}
	}
	return ts
}

func (r *run) frontier(pts []effPoint, id, title, ylabel, caption string) *figure {
	sort.SliceStable(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
	onFront := make([]bool, len(pts))
	bestY := math.Inf(-1)
	for i, p := range pts {
		if p.y > bestY {
			onFront[i] = true
			bestY = p.y
		}
	}
	models := map[string]bool{}
	for _, p := range pts {
		if p.model != "" {
			models[p.model] = true
		}
	}
	f := &figure{ID: id, Title: title, W: vg.Inch * 7.2, H: vg.Inch * 4.2, Caption: caption}
	f.Draw = func(dc draw.Canvas) {
		inner := dc
		if len(models) > 0 {
			var leg []legendEntry
			for _, m := range r.models {
				if models[m] {
					leg = append(leg, legendEntry{m, hexColor(r.color(m))})
				}
			}
			inner = drawLegend(dc, leg)
		}
		p := newPlot("", "tokens per example", ylabel)
		xlo, xhi := math.Inf(1), math.Inf(-1)
		ylo, yhi := math.Inf(1), math.Inf(-1)
		for _, pt := range pts {
			xlo, xhi = math.Min(xlo, pt.x), math.Max(xhi, pt.x)
			lo, hi := pt.y, pt.y
			if !math.IsNaN(pt.lo) {
				lo = math.Min(lo, pt.lo)
			}
			if !math.IsNaN(pt.hi) {
				hi = math.Max(hi, pt.hi)
			}
			ylo, yhi = math.Min(ylo, lo), math.Max(yhi, hi)
		}
		if xhi/xlo > 4 {
			p.X.Scale = plot.LogScale{}
			p.X.Min, p.X.Max = xlo/1.25, xhi*1.25
			p.X.Tick.Marker = niceTicks(p.X.Min, p.X.Max)
		} else {
			pad := (xhi - xlo) * 0.08
			if pad == 0 {
				pad = xlo * 0.1
			}
			p.X.Min, p.X.Max = math.Max(0, xlo-pad), xhi+pad
		}
		pad := (yhi - ylo) * 0.08
		if pad == 0 {
			pad = 0.05
		}
		// Room around the points, so none sits on an axis, and above them
		// for the frontier's labels, which move up out of each other's way.
		p.Y.Min, p.Y.Max = math.Max(-0.04, ylo-pad), math.Min(1.04, yhi+pad*3)
		if p.Y.Max <= p.Y.Min {
			p.Y.Max = p.Y.Min + 0.1
		}
		p.Y.Tick.Marker = niceTicksLinear(p.Y.Min, p.Y.Max)
		if _, isLog := p.X.Scale.(plot.LogScale); !isLog {
			p.X.Tick.Marker = niceTicksLinear(p.X.Min, p.X.Max)
		}
		var fx, fy []float64
		for i, pt := range pts {
			if onFront[i] {
				fx, fy = append(fx, pt.x), append(fy, pt.y)
			}
		}
		p.Add(line(fx, fy, draw.LineStyle{Color: colMuted, Width: vg.Points(1), Dashes: []vg.Length{vg.Points(4), vg.Points(3)}}))
		p.Add(fnPlotter(func(c draw.Canvas, pl *plot.Plot) {
			tx, ty := pl.Transforms(&c)
			for _, pt := range pts {
				if math.IsNaN(pt.lo) || math.IsNaN(pt.hi) {
					continue
				}
				c.StrokeLine2(draw.LineStyle{Color: alpha(pt.color, 0.45), Width: vg.Points(0.9)}, tx(pt.x), ty(math.Max(pt.lo, p.Y.Min)), tx(pt.x), ty(math.Min(pt.hi, p.Y.Max)))
			}
		}))
		var ds []dot
		var ls []label
		labelAll := len(pts) <= 14
		for i, pt := range pts {
			d := dot{X: pt.x, Y: pt.y, R: vg.Points(3.6), Fill: pt.color, Stroke: colWhite, Width: vg.Points(1)}
			if !onFront[i] {
				d.Fill = tint(pt.color, 0.35)
				d.R = vg.Points(3)
			}
			ds = append(ds, d)
			if labelAll || onFront[i] {
				sty := textStyle(7.5, onFront[i], colInk)
				sty.YAlign = draw.YCenter
				txt := pt.label
				if !labelAll && pt.model != "" && len(models) > 1 {
					txt = pt.model + " · " + pt.label
				}
				ls = append(ls, label{X: pt.x, Y: pt.y, DX: 6, DY: 0, Text: txt, Style: sty})
			}
		}
		p.Add(dots(ds), labelsNudged(ls, true))
		p.Add(cornerNote("better: up and to the left", true, true))
		p.Draw(inner)
	}
	return f
}

// ---- ASR against RTA ----

// asrRtaMissing says why the ASR-against-RTA figure is not drawn: the run
// has no safety metric, or its cells have no value, and why not (errored
// cases, nothing judged), with the counts.
func (r *run) asrRtaMissing(ix *index) string {
	cells, cases, errs, unparsed := 0, 0, 0, 0
	status := map[string]int{}
	for _, task := range r.tasks {
		for _, c := range r.cells(ix, task, "asr") {
			x, _ := ix.get(task, c.model, c.strategy, "all", "asr")
			cells++
			cases += max(x.NCases, 0)
			errs += max(x.NErrors, 0)
			unparsed += max(x.NUnparsed, 0)
			if x.Status != "" && x.Status != "ok" {
				status[x.Status]++
			}
		}
	}
	if cells == 0 {
		return "ASR against RTA: the run has no safety metric (asr and rta)."
	}
	of := "its one cell"
	if cells > 1 {
		of = "any of its " + plural(cells, "cell")
	}
	msg := "ASR against RTA: the safety metric (asr and rta) has no value in " + of
	switch {
	case cases > 0 && errs == cases:
		msg += fmt.Sprintf(": all %d of its cases errored", cases)
	case errs > 0 && status["incomplete"] > 0:
		msg += fmt.Sprintf(": %d of its %d cases errored, and the block's errors: incomplete gives no figure then", errs, cases)
	case cases > 0 && unparsed == cases:
		msg += fmt.Sprintf(": the judge labelled none of its %d cases", cases)
	case cases == 0:
		msg += ": no case was counted"
	default:
		var ss []string
		for _, k := range slices.Sorted(maps.Keys(status)) {
			ss = append(ss, fmt.Sprintf("%s in %d", k, status[k]))
		}
		if len(ss) > 0 {
			msg += " (status " + strings.Join(ss, ", ") + ")"
		}
	}
	if errs > 0 {
		msg += "; `promoral apply` on the same config retries them (results.parquet's error column says why they failed)"
	}
	return msg + "."
}

func (r *run) asrRtaFigure(ix *index) *figure {
	var pts []effPoint
	var tasks []string
	for _, task := range r.tasks {
		found := false
		for _, c := range r.cells(ix, task, "asr") {
			a, okA := ix.get(task, c.model, c.strategy, "all", "asr")
			b, okB := ix.get(task, c.model, c.strategy, "all", "rta")
			if !okA || !okB || math.IsNaN(a.Value) || math.IsNaN(b.Value) {
				continue
			}
			found = true
			pts = append(pts, effPoint{label: c.strategy, model: c.model, x: b.Value, y: a.Value, lo: a.Lo, hi: a.Hi, xlo: b.Lo, xhi: b.Hi, color: hexColor(r.color(c.model))})
		}
		if found {
			tasks = append(tasks, task)
		}
	}
	if len(pts) == 0 {
		return nil
	}
	models := map[string]bool{}
	for _, p := range pts {
		models[p.model] = true
	}
	f := &figure{ID: "asr-rta", Title: "Attack success against over-refusal", W: vg.Inch * 7.2, H: vg.Inch * 4.4,
		Caption: "Each model × strategy: ASR (harmful prompts complied with) against RTA (benign prompts refused), with 95% intervals as thin lines. " +
			"The lower-left corner is best; a strategy that moves a model down and to the right buys safety with over-refusal."}
	if len(tasks) > 1 {
		f.Caption += " Tasks: " + strings.Join(tasks, ", ") + "."
	}
	f.Draw = func(dc draw.Canvas) {
		var leg []legendEntry
		for _, m := range r.models {
			if models[m] {
				leg = append(leg, legendEntry{m, hexColor(r.color(m))})
			}
		}
		inner := drawLegend(dc, leg)
		p := newPlot("", "RTA: benign prompts refused", "ASR: harmful prompts complied with")
		hiX, hiY := 0.0, 0.0
		for _, pt := range pts {
			hiX, hiY = math.Max(hiX, pt.x), math.Max(hiY, pt.y)
		}
		top := func(v float64) float64 { return math.Min(1, math.Max(0.1, math.Ceil((v*1.15)*10)/10)) }
		tx, ty := top(hiX), top(hiY)
		p.X.Tick.Marker = unitTicks(0, tx, tickStep(tx))
		p.Y.Tick.Marker = unitTicks(0, ty, tickStep(ty))
		p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = -0.025*tx, tx*1.03, -0.025*ty, ty*1.03
		p.Add(fnPlotter(func(c draw.Canvas, pl *plot.Plot) {
			tx, ty := pl.Transforms(&c)
			for _, pt := range pts {
				sty := draw.LineStyle{Color: alpha(pt.color, 0.4), Width: vg.Points(0.9)}
				if !math.IsNaN(pt.lo) && !math.IsNaN(pt.hi) {
					c.StrokeLine2(sty, tx(pt.x), ty(pt.lo), tx(pt.x), ty(math.Min(pt.hi, pl.Y.Max)))
				}
				if !math.IsNaN(pt.xlo) && !math.IsNaN(pt.xhi) {
					c.StrokeLine2(sty, tx(pt.xlo), ty(pt.y), tx(math.Min(pt.xhi, pl.X.Max)), ty(pt.y))
				}
			}
		}))
		var ds []dot
		var ls []label
		for _, pt := range pts {
			ds = append(ds, dot{X: pt.x, Y: pt.y, R: vg.Points(3.8), Fill: pt.color, Stroke: colWhite, Width: vg.Points(1)})
			if len(pts) <= 24 {
				sty := textStyle(7.5, false, colInk)
				sty.YAlign = draw.YCenter
				ls = append(ls, label{X: pt.x, Y: pt.y, DX: 6, Text: pt.label, Style: sty})
			}
		}
		p.Add(dots(ds), labels(ls))
		p.Add(cornerNote("better: lower left", true, true))
		p.Draw(inner)
	}
	return f
}

func tickStep(max float64) float64 {
	switch {
	case max <= 0.3:
		return 0.05
	case max <= 0.6:
		return 0.1
	}
	return 0.2
}

// ---- published against re-scored ----

func (r *run) referenceFigure() *figure {
	ct := r.csv["reference_comparison"]
	if ct == nil || len(ct.Rows) == 0 {
		return nil
	}
	type panel struct{ key, name string }
	var panels []panel
	for _, p := range []panel{{"accuracy", "Accuracy"}, {"ece", "ECE"}} {
		if ct.has(p.key) && ct.has(p.key+"_published") {
			panels = append(panels, p)
		}
	}
	if len(panels) == 0 {
		return nil
	}
	f := &figure{ID: "published-vs-rescored", Title: "Re-scored against published", W: vg.Inch * 7.2, H: vg.Inch * 3.9,
		Caption: "Each model × strategy as this run scored it (up) against the published figure (across). On the diagonal the two agree; a point off it is a run that does not reproduce."}
	f.Draw = func(dc draw.Canvas) {
		var leg []legendEntry
		for _, m := range r.models {
			for i := range ct.Rows {
				if ct.get(i, "model") == m {
					leg = append(leg, legendEntry{m, hexColor(r.color(m))})
					break
				}
			}
		}
		inner := drawLegend(dc, leg)
		var plots []*plot.Plot
		for _, pn := range panels {
			p := newPlot(pn.name, "published", "this run")
			lo, hi := math.Inf(1), math.Inf(-1)
			var ds []dot
			for i := range ct.Rows {
				x, y := ct.num(i, pn.key+"_published"), ct.num(i, pn.key)
				if math.IsNaN(x) || math.IsNaN(y) {
					continue
				}
				lo, hi = math.Min(lo, math.Min(x, y)), math.Max(hi, math.Max(x, y))
				ds = append(ds, dot{X: x, Y: y, R: vg.Points(3.2), Fill: alpha(hexColor(r.color(ct.get(i, "model"))), 0.85), Stroke: colWhite, Width: vg.Points(0.8)})
			}
			if math.IsInf(lo, 0) {
				continue
			}
			pad := (hi - lo) * 0.08
			if pad == 0 {
				pad = 0.01
			}
			lo, hi = lo-pad, hi+pad
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = lo, hi, lo, hi
			p.X.Tick.Marker, p.Y.Tick.Marker = niceTicksLinear(lo, hi), niceTicksLinear(lo, hi)
			p.Add(line([]float64{lo, hi}, []float64{lo, hi}, draw.LineStyle{Color: colIdeal, Width: vg.Points(0.9), Dashes: []vg.Length{vg.Points(3), vg.Points(3)}}))
			p.Add(dots(ds))
			plots = append(plots, p)
		}
		if len(plots) > 0 {
			drawGrid(inner, plots, len(plots))
		}
	}
	return f
}

// binsOf finds the bin count in an ECE row's convention.
var binsOf = regexp.MustCompile(`(\d+) equal-width bins`)

// blockBins is the number of equal-width bins of a block's ECE: what the
// block declares, else what its ECE rows' conventions say, else the
// report's own binning.
func (r *run) blockBins(block string) int {
	for _, b := range r.blocks() {
		if n := b.Drawn().Bins; b.Name == block && n > 0 {
			return n
		}
	}
	for _, x := range r.metrics {
		if x.Block == block && strings.HasPrefix(x.Metric, "ece") {
			if m := binsOf.FindStringSubmatch(x.Convention); m != nil {
				if n, _ := strconv.Atoi(m[1]); n > 0 {
					return n
				}
			}
		}
	}
	return stats.DefaultBins
}

// statedPositive says, from the manifest's blocks, whether a task's stated
// confidence is the probability of its positive class, and which class
// that is (from the f1 row's convention). known is false when the run
// records no blocks.
func (r *run) statedPositive(task string) (pos string, known bool) {
	if r.manifest == nil || len(r.manifest.Metrics) == 0 {
		return "", false
	}
	for _, b := range r.manifest.Metrics {
		if b.Drawn().Confidence != "positive" {
			continue
		}
		for _, x := range r.metrics {
			if x.Block == b.Name && x.Task == task && x.Metric == "f1" && strings.HasPrefix(x.Convention, "positive class: ") {
				return strings.TrimPrefix(x.Convention, "positive class: "), true
			}
		}
	}
	return "", true
}
