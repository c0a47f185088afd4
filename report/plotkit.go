package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgsvg"
)

// The model colours: Tableau 10, in an order whose neighbours contrast.
var paletteHex = []string{"#4E79A7", "#F28E2B", "#E15759", "#59A14F", "#B07AA1", "#76B7B2", "#EDC948", "#FF9DA7", "#9C755F", "#BAB0AC"}

var (
	colInk   = hexColor("#1f2933")
	colMuted = hexColor("#5f6b7a")
	colAxis  = hexColor("#a8b0ba")
	colGrid  = hexColor("#e9ecef")
	colIdeal = hexColor("#9aa5b1")
	colWhite = color.White
)

func init() {
	// Sans-serif text in every figure (gonum defaults to a serif).
	plot.DefaultFont = font.Font{Typeface: "Liberation", Variant: "Sans"}
	plotter.DefaultFont = plot.DefaultFont
}

func hexColor(s string) color.NRGBA {
	s = strings.TrimPrefix(s, "#")
	v, _ := strconv.ParseUint(s, 16, 32)
	return color.NRGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: 255}
}

func alpha(c color.NRGBA, a float64) color.NRGBA {
	c.A = uint8(math.Round(a * 255))
	return c
}

// tint mixes c with white (f = share of white).
func tint(c color.NRGBA, f float64) color.NRGBA {
	mix := func(x uint8) uint8 { return uint8(math.Round(float64(x)*(1-f) + 255*f)) }
	return color.NRGBA{R: mix(c.R), G: mix(c.G), B: mix(c.B), A: 255}
}

func fnt(size float64, bold bool) font.Font {
	f := font.Font{Typeface: "Liberation", Variant: "Sans", Size: vg.Points(size)}
	if bold {
		f.Weight = xfont.WeightBold
	}
	return f
}

func textStyle(size float64, bold bool, c color.Color) text.Style {
	return text.Style{Color: c, Font: fnt(size, bold), Handler: plot.DefaultTextHandler, XAlign: draw.XLeft, YAlign: draw.YBottom}
}

// newPlot is a plot in the report's style: light grid, thin grey axes,
// small muted ticks. Only fonts and colours change, so gonum's alignments
// (rotated y label, centred title) stay.
func newPlot(title, xlabel, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font = fnt(10, true)
	p.Title.TextStyle.Color = colInk
	p.Title.Padding = vg.Points(6)
	for _, ax := range []*plot.Axis{&p.X, &p.Y} {
		ax.LineStyle = draw.LineStyle{Color: colAxis, Width: vg.Points(0.6)}
		ax.Tick.LineStyle = draw.LineStyle{Color: colAxis, Width: vg.Points(0.6)}
		ax.Tick.Length = vg.Points(3)
		ax.Tick.Label.Font = fnt(8, false)
		ax.Tick.Label.Color = colMuted
		ax.Label.TextStyle.Font = fnt(8.5, false)
		ax.Label.TextStyle.Color = colInk
		ax.Padding = vg.Points(3)
	}
	p.X.Label.Text, p.Y.Label.Text = xlabel, ylabel
	p.Legend.TextStyle.Font = fnt(8, false)
	p.Legend.Top = true
	p.Legend.ThumbnailWidth = vg.Points(10)
	g := plotter.NewGrid()
	g.Vertical = draw.LineStyle{Color: colGrid, Width: vg.Points(0.6)}
	g.Horizontal = draw.LineStyle{Color: colGrid, Width: vg.Points(0.6)}
	p.Add(g)
	return p
}

// niceTicksLinear are labelled ticks at a round step giving 4 to 7 ticks.
func niceTicksLinear(lo, hi float64) plot.ConstantTicks {
	span := hi - lo
	if span <= 0 || math.IsNaN(span) || math.IsInf(span, 0) {
		return plot.ConstantTicks{{Value: lo, Label: trimFloat(lo)}}
	}
	step := 0.0
	for e := math.Floor(math.Log10(span)) - 2; step == 0; e++ {
		for _, m := range []float64{1, 2, 2.5, 5} {
			st := m * math.Pow(10, e)
			if span/st <= 6.5 {
				step = st
				break
			}
		}
	}
	var ts plot.ConstantTicks
	for v := math.Ceil(lo/step-1e-9) * step; v <= hi+1e-9; v += step {
		ts = append(ts, plot.Tick{Value: v, Label: fmtTick(v, step)})
	}
	return ts
}

func fmtTick(v, step float64) string {
	d := 0
	for st := step; st < 0.999 && d < 6; st *= 10 {
		d++
	}
	if math.Abs(v) < step/1e6 {
		v = 0
	}
	return strconv.FormatFloat(v, 'f', d, 64)
}

// unitTicks are ticks at 0, 0.2, ... 1 (labelled) and the tenths between.
func unitTicks(lo, hi, step float64) plot.ConstantTicks {
	var ts plot.ConstantTicks
	for v := lo; v <= hi+1e-9; v += step / 2 {
		lbl := ""
		if k := math.Round((v - lo) / step * 2); int(k)%2 == 0 {
			lbl = trimFloat(v)
		}
		ts = append(ts, plot.Tick{Value: v, Label: lbl})
	}
	return ts
}

func trimFloat(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		s = "0"
	}
	return s
}

// fnPlotter draws with a function on the data canvas.
type fnPlotter func(c draw.Canvas, p *plot.Plot)

func (f fnPlotter) Plot(c draw.Canvas, p *plot.Plot) { f(c, p) }

// line returns a plotter drawing a polyline through data points.
func line(xs, ys []float64, sty draw.LineStyle) plot.Plotter {
	return fnPlotter(func(c draw.Canvas, p *plot.Plot) {
		tx, ty := p.Transforms(&c)
		var pts []vg.Point
		for i := range xs {
			if math.IsNaN(xs[i]) || math.IsNaN(ys[i]) {
				continue
			}
			pts = append(pts, vg.Point{X: tx(xs[i]), Y: ty(ys[i])})
		}
		if len(pts) > 1 {
			c.StrokeLines(sty, c.ClipLinesXY(pts)...)
		}
	})
}

// dot is one marker.
type dot struct {
	X, Y   float64
	R      vg.Length
	Fill   color.Color
	Stroke color.Color
	Width  vg.Length
}

func dots(ds []dot) plot.Plotter {
	return fnPlotter(func(c draw.Canvas, p *plot.Plot) {
		tx, ty := p.Transforms(&c)
		for _, d := range ds {
			pt := vg.Point{X: tx(d.X), Y: ty(d.Y)}
			if !c.Contains(pt) {
				continue
			}
			var path vg.Path
			path.Move(vg.Point{X: pt.X + d.R, Y: pt.Y})
			path.Arc(pt, d.R, 0, 2*math.Pi)
			path.Close()
			if d.Fill != nil {
				c.SetColor(d.Fill)
				c.Fill(path)
			}
			if d.Stroke != nil && d.Width > 0 {
				c.SetLineStyle(draw.LineStyle{Color: d.Stroke, Width: d.Width})
				c.Stroke(path)
			}
		}
	})
}

// label is a text at a data point, offset in points.
type label struct {
	X, Y   float64
	DX, DY float64
	Text   string
	Style  text.Style
}

func labels(ls []label) plot.Plotter { return labelsNudged(ls, false) }

// labelsNudged places labels so they do not overlap: each one that would
// overlap an earlier one moves down (or up), with a thin leader line.
func labelsNudged(ls []label, up bool) plot.Plotter {
	return fnPlotter(func(c draw.Canvas, p *plot.Plot) {
		tx, ty := p.Transforms(&c)
		// Place labels top to bottom, nudging each one down below any
		// earlier label it would overlap.
		type box struct{ x0, x1, y0, y1 vg.Length }
		order := make([]int, len(ls))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool {
			if up {
				return ls[order[a]].Y < ls[order[b]].Y
			}
			return ls[order[a]].Y > ls[order[b]].Y
		})
		var placed []box
		for _, i := range order {
			l := ls[i]
			w := l.Style.Width(l.Text)
			h := l.Style.Height(l.Text)
			x := tx(l.X) + vg.Points(l.DX)
			if x+w > c.Max.X {
				x = tx(l.X) - vg.Points(l.DX) - w // no room on the right
			}
			y := ty(l.Y) + vg.Points(l.DY)
			// y is the label's centre (YCenter) for collision purposes.
			b := box{x, x + w, y - h/2, y + h/2}
			for moved := true; moved; {
				moved = false
				for _, o := range placed {
					if b.x0 < o.x1 && o.x0 < b.x1 && b.y0 < o.y1 && o.y0 < b.y1 {
						shift := b.y1 - o.y0 + vg.Points(1)
						if up {
							shift = -(o.y1 - b.y0 + vg.Points(1))
						}
						b.y0 -= shift
						b.y1 -= shift
						moved = true
					}
				}
			}
			placed = append(placed, b)
			cy := (b.y0 + b.y1) / 2
			if math.Abs(float64(cy-y)) > 2 {
				// A thin leader from the point to the moved label.
				lx := b.x0 - vg.Points(1)
				if b.x0 < tx(l.X) {
					lx = b.x1 + vg.Points(1)
				}
				c.StrokeLine2(draw.LineStyle{Color: colAxis, Width: vg.Points(0.5)}, tx(l.X), ty(l.Y), lx, cy)
			}
			// A white backing keeps the label legible over points and lines.
			pad := vg.Points(1.5)
			c.FillPolygon(color.NRGBA{R: 255, G: 255, B: 255, A: 215}, []vg.Point{{X: b.x0 - pad, Y: b.y0}, {X: b.x1 + pad, Y: b.y0}, {X: b.x1 + pad, Y: b.y1}, {X: b.x0 - pad, Y: b.y1}})
			sty := l.Style
			sty.YAlign = draw.YCenter
			c.FillText(sty, vg.Point{X: b.x0, Y: cy}, l.Text)
		}
	})
}

// cornerNote writes a small note in a corner of the data area.
func cornerNote(txt string, right, top bool) plot.Plotter {
	return fnPlotter(func(c draw.Canvas, p *plot.Plot) {
		sty := textStyle(7.5, false, colMuted)
		pt := vg.Point{X: c.Min.X + vg.Points(5), Y: c.Min.Y + vg.Points(5)}
		sty.XAlign, sty.YAlign = draw.XLeft, draw.YBottom
		if right {
			pt.X = c.Max.X - vg.Points(5)
			sty.XAlign = draw.XRight
		}
		if top {
			pt.Y = c.Max.Y - vg.Points(5)
			sty.YAlign = draw.YTop
		}
		c.FillText(sty, pt, txt)
	})
}

// legendEntry is one swatch of a hand-drawn legend.
type legendEntry struct {
	Text  string
	Color color.NRGBA
}

// drawLegend draws a one-row legend of dots across the top of dc and
// returns the canvas below it.
func drawLegend(dc draw.Canvas, entries []legendEntry) draw.Canvas {
	if len(entries) == 0 {
		return dc
	}
	sty := textStyle(8.5, false, colInk)
	sty.YAlign = draw.YCenter
	h := vg.Points(18)
	rowY := dc.Max.Y - h/2
	// Total width, to centre the row (wrapping when too wide).
	var widths []vg.Length
	for _, e := range entries {
		widths = append(widths, sty.Width(e.Text)+vg.Points(22))
	}
	var rows [][]int
	var cur []int
	var w vg.Length
	maxW := dc.Max.X - dc.Min.X - vg.Points(20)
	for i := range entries {
		if len(cur) > 0 && w+widths[i] > maxW {
			rows = append(rows, cur)
			cur, w = nil, 0
		}
		cur = append(cur, i)
		w += widths[i]
	}
	rows = append(rows, cur)
	for _, row := range rows {
		var tw vg.Length
		for _, i := range row {
			tw += widths[i]
		}
		x := (dc.Min.X+dc.Max.X)/2 - tw/2
		for _, i := range row {
			var path vg.Path
			c := vg.Point{X: x + vg.Points(5), Y: rowY}
			path.Move(vg.Point{X: c.X + vg.Points(4), Y: c.Y})
			path.Arc(c, vg.Points(4), 0, 2*math.Pi)
			path.Close()
			dc.SetColor(entries[i].Color)
			dc.Fill(path)
			dc.FillText(sty, vg.Point{X: x + vg.Points(12), Y: rowY}, entries[i].Text)
			x += widths[i]
		}
		rowY -= h
	}
	out := dc
	out.Max.Y = dc.Max.Y - h*vg.Length(len(rows))
	return out
}

// fillWhite paints the whole canvas white (tiles leave gaps otherwise).
func fillWhite(dc draw.Canvas) {
	dc.FillPolygon(colWhite, []vg.Point{dc.Min, {X: dc.Max.X, Y: dc.Min.Y}, dc.Max, {X: dc.Min.X, Y: dc.Max.Y}})
}

// grid lays out plots in rows × cols tiles (nil tiles stay empty).
func drawGrid(dc draw.Canvas, plots []*plot.Plot, cols int) {
	rows := (len(plots) + cols - 1) / cols
	pp := make([][]*plot.Plot, rows)
	for j := range pp {
		pp[j] = make([]*plot.Plot, cols)
		for i := 0; i < cols; i++ {
			if k := j*cols + i; k < len(plots) {
				pp[j][i] = plots[k]
			}
		}
	}
	t := draw.Tiles{Rows: rows, Cols: cols, PadX: vg.Points(14), PadY: vg.Points(14), PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8)}
	cs := plot.Align(pp, t, dc)
	for j := range pp {
		for i := range pp[j] {
			if pp[j][i] != nil {
				pp[j][i].Draw(cs[j][i])
			}
		}
	}
}

// figure is one chart: drawn twice (SVG and PNG) from the same function.
type figure struct {
	ID, Title, Caption string
	W, H               vg.Length
	Draw               func(dc draw.Canvas)
	Tall               bool // narrower in the page (many rows)

	SVG     string // inline markup for the HTML
	PNGFile string // relative to the run folder
	SVGFile string
	View    string // promoral view's list of the cases drawn (viewQuery)
}

var (
	xmlDecl    = regexp.MustCompile(`(?s)<\?xml.*?\?>\s*`)
	xmlComment = regexp.MustCompile(`(?s)<!--.*?-->\s*`)
	svgOpen    = regexp.MustCompile(`<svg width="[^"]*" height="[^"]*"`)
	fontFamily = regexp.MustCompile(`font-family:\s*Liberation Sans`)
)

// render writes figures/<id>.svg and .png and keeps the inline SVG.
func (f *figure) render(runDir string) error {
	dir := filepath.Join(runDir, "figures")
	sc := vgsvg.NewWith(vgsvg.UseWH(f.W, f.H))
	dc := draw.New(sc)
	fillWhite(dc)
	f.Draw(dc)
	var buf bytes.Buffer
	if _, err := sc.WriteTo(&buf); err != nil {
		return fmt.Errorf("figure %s: %w", f.ID, err)
	}
	svg := fontFamily.ReplaceAllString(buf.String(), "font-family:'Liberation Sans',Arimo,Arial,Helvetica,sans-serif")
	f.SVGFile = filepath.Join("figures", f.ID+".svg")
	if err := os.WriteFile(filepath.Join(dir, f.ID+".svg"), []byte(svg), 0o644); err != nil {
		return err
	}
	inline := xmlComment.ReplaceAllString(xmlDecl.ReplaceAllString(svg, ""), "")
	// Shown at up to 1.8 px per point: every figure's type at one size
	// (tall figures a little smaller, so they fit a screen).
	scale := 1.8
	if f.Tall {
		scale = 1.4
	}
	inline = svgOpen.ReplaceAllLiteralString(inline, fmt.Sprintf(`<svg class="fig" role="img" aria-label="%s" style="aspect-ratio:%.1f/%.1f;max-width:%.0fpx"`,
		template.HTMLEscapeString(f.Title), f.W.Points(), f.H.Points(), f.W.Points()*scale))
	f.SVG = strings.TrimSpace(inline)

	ic := vgimg.NewWith(vgimg.UseWH(f.W, f.H), vgimg.UseDPI(144), vgimg.UseBackgroundColor(colWhite))
	dc = draw.New(ic)
	fillWhite(dc)
	f.Draw(dc)
	out, err := os.Create(filepath.Join(dir, f.ID+".png"))
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: ic}).WriteTo(out); err != nil {
		out.Close()
		return fmt.Errorf("figure %s: %w", f.ID, err)
	}
	f.PNGFile = filepath.Join("figures", f.ID+".png")
	return out.Close()
}
