package report

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/promoral/promoral/pipeline/stats"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The confidence study's figures per condition: each statistic against the
// ordered factor (the reflection level), one line per combination of the
// other factors (thinking, confidence instruction), one panel per model.
// A model variant that differs from its base only in a declared factor
// (gpt-4.1-thinking extends gpt-4.1 with thinking: on) is drawn in its
// base's panel, so thinking on and off sit side by side.

var conditionStats = []struct{ metric, label string }{
	{"ece", "ECE (top-label)"},
	{"mean_confidence", "mean confidence (0-1)"},
	{"overconfident_error_rate", "overconfident error rate"},
}

// family is the model a variant extends, followed to the root.
func (r *run) family(model string) string {
	if r.manifest == nil {
		return model
	}
	ext := map[string]string{}
	for _, m := range r.manifest.Models {
		if m.Extends != "" && len(m.Factors) > 0 {
			ext[m.Name] = m.Extends
		}
	}
	for i := 0; i < 20 && ext[model] != ""; i++ {
		model = ext[model]
	}
	return model
}

// xFactor is the factor to put on the x axis: numeric values only, the
// most of them.
func xFactor(rows []metric, factors []string) (string, bool) {
	best, bestN := "", 1
	for _, f := range factors {
		vals := map[string]bool{}
		numeric := true
		for _, x := range rows {
			v := x.Factors[f]
			if v == "" {
				continue
			}
			if _, err := strconv.ParseFloat(v, 64); err != nil {
				numeric = false
				break
			}
			vals[v] = true
		}
		if numeric && len(vals) > bestN {
			best, bestN = f, len(vals)
		}
	}
	return best, best != ""
}

// conditionFigures draws one figure per confidence-study block on the
// task, when the run declares an ordered factor.
func (r *run) conditionFigures(ix *index, task string) []*figure {
	var figs []*figure
	for _, block := range ix.blocksOf(task, "mean_confidence") {
		var rows []metric
		for _, x := range r.metrics {
			if x.Block == block && x.Task == task && x.Subset == "all" {
				rows = append(rows, x)
			}
		}
		xf, ok := xFactor(rows, r.factors)
		if !ok {
			continue
		}
		if f := r.conditionFigure(rows, block, task, xf); f != nil {
			figs = append(figs, f)
		}
	}
	return figs
}

type condPoint struct{ x, y, lo, hi float64 }

func (r *run) conditionFigure(rows []metric, block, task, xf string) *figure {
	var others []string
	for _, f := range r.factors {
		if f != xf {
			others = append(others, f)
		}
	}
	lineKey := func(x metric) string {
		var parts []string
		for _, f := range others {
			if v := x.Factors[f]; v != "" {
				parts = append(parts, strings.ReplaceAll(f, "_", " ")+" "+v)
			}
		}
		return strings.Join(parts, " · ")
	}
	// family -> stat -> line -> points
	data := map[string]map[string]map[string][]condPoint{}
	var families, lines []string
	seenL := map[string]bool{}
	for _, x := range rows {
		keep := false
		for _, s := range conditionStats {
			keep = keep || x.Metric == s.metric
		}
		xv, err := strconv.ParseFloat(x.Factors[xf], 64)
		if !keep || err != nil || !x.ok() {
			continue
		}
		fam := r.family(x.Model)
		if data[fam] == nil {
			data[fam] = map[string]map[string][]condPoint{}
			families = append(families, fam)
		}
		if data[fam][x.Metric] == nil {
			data[fam][x.Metric] = map[string][]condPoint{}
		}
		lk := lineKey(x)
		if !seenL[lk] {
			seenL[lk] = true
			lines = append(lines, lk)
		}
		data[fam][x.Metric][lk] = append(data[fam][x.Metric][lk], condPoint{xv, x.Value, x.Lo, x.Hi})
	}
	if len(families) == 0 {
		return nil
	}
	sort.Strings(families)
	sort.Strings(lines)
	// One x range and one tick per level across every panel.
	xs := map[float64]bool{}
	for _, byStat := range data {
		for _, byLine := range byStat {
			for _, pts := range byLine {
				for _, pt := range pts {
					xs[pt.x] = true
				}
			}
		}
	}
	var ticks []plot.Tick
	xmin, xmax := math.Inf(1), math.Inf(-1)
	for x := range xs {
		xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
		ticks = append(ticks, plot.Tick{Value: x, Label: strconv.FormatFloat(x, 'f', -1, 64)})
	}
	sort.Slice(ticks, func(i, j int) bool { return ticks[i].Value < ticks[j].Value })
	pad := math.Max(0.25, (xmax-xmin)*0.08)
	color := map[string]string{}
	for i, l := range lines {
		color[l] = paletteHex[i%len(paletteHex)]
	}
	cols := len(families)
	nRows := len(conditionStats)
	thr, bins := stats.OverconfidenceThreshold, r.blockBins(block)
	for _, b := range r.blocks() {
		if v := b.Drawn().ConfidentAbove; b.Name == block && v != nil {
			thr = *v
		}
	}
	f := &figure{ID: figID("conditions", task, block), Title: fmt.Sprintf("Confidence by condition: %s (%s)", task, block),
		W: vg.Length(cols)*vg.Inch*2.4 + vg.Inch*0.3, H: vg.Length(nRows)*vg.Inch*2.2 + vg.Inch*0.6,
		Caption: fmt.Sprintf("Block %s, per condition: ECE (top-label, confidence in the chosen answer against accuracy, %d bins (lo, hi]), mean stated confidence (0-1) "+
			"and the overconfident error rate (wrong with confidence > %s, of the answers with one) against %s; one line per %s, one column per model "+
			"(a variant that differs only in a factor is drawn with its base). Bars are 95%% bootstrap intervals; a condition whose figure is withheld "+
			"(incomplete, too few answers) or that states no confidence has no point.", block, bins, fmt.Sprint(thr), xf, strings.Join(others, " × "))}
	f.Draw = func(dc draw.Canvas) {
		var entries []legendEntry
		for _, l := range lines {
			name := l
			if name == "" {
				name = "all"
			}
			entries = append(entries, legendEntry{Text: name, Color: hexColor(color[l])})
		}
		dc = drawLegend(dc, entries)
		var plots []*plot.Plot
		for _, st := range conditionStats {
			for _, fam := range families {
				title := fam
				if st.metric != conditionStats[0].metric {
					title = ""
				}
				p := newPlot(title, xf, st.label)
				p.X.Min, p.X.Max = xmin-pad, xmax+pad
				p.X.Tick.Marker = plot.ConstantTicks(ticks)
				p.Y.Min = 0
				if st.metric == "mean_confidence" {
					p.Y.Max = 1
				}
				for _, l := range lines {
					pts := data[fam][st.metric][l]
					if len(pts) == 0 {
						continue
					}
					sort.Slice(pts, func(i, j int) bool { return pts[i].x < pts[j].x })
					c := hexColor(color[l])
					var xs, ys []float64
					var ds []dot
					for _, pt := range pts {
						xs, ys = append(xs, pt.x), append(ys, pt.y)
						ds = append(ds, dot{X: pt.x, Y: pt.y, R: vg.Points(2.4), Fill: c, Stroke: colWhite, Width: vg.Points(0.6)})
						if !math.IsNaN(pt.lo) && !math.IsNaN(pt.hi) {
							p.Add(line([]float64{pt.x, pt.x}, []float64{pt.lo, pt.hi}, draw.LineStyle{Color: alpha(c, 0.55), Width: vg.Points(1)}))
							p.Y.Max = math.Max(p.Y.Max, pt.hi)
						}
						p.Y.Max = math.Max(p.Y.Max, pt.y)
					}
					p.Add(line(xs, ys, draw.LineStyle{Color: c, Width: vg.Points(1.3)}))
					p.Add(dots(ds))
				}
				if p.Y.Max <= 0 {
					p.Y.Max = 1
				}
				plots = append(plots, p)
			}
		}
		drawGrid(dc, plots, cols)
	}
	return f
}
