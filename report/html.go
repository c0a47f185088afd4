package report

import (
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"strings"
)

// The HTML is one self-contained file: inline CSS, figures as inline SVG,
// no script and no external reference, so it opens offline anywhere.

const css = `
:root{--ink:#1f2933;--muted:#5f6b7a;--faint:#8a96a3;--line:#e4e7eb;--rule:#cbd2d9;--bg:#f5f7fa;--accent:#2f5f8a;
--best:#e2f3e7;--bestInk:#0f5f31;--bad:#b42318;--good:#157f3c}
*{box-sizing:border-box}
html{scroll-behavior:smooth}
body{margin:0;background:var(--bg);color:var(--ink);font:15px/1.55 system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",Arimo,"Helvetica Neue",Arial,sans-serif;-webkit-font-smoothing:antialiased}
.wrap{max-width:1280px;margin:0 auto;padding:0 28px}
header.top{background:linear-gradient(120deg,#17324f 0%,#25527d 60%,#2f6a8f 100%);color:#fff;padding:34px 0 54px}
header.top .kicker{font-size:12px;letter-spacing:.14em;text-transform:uppercase;color:#a9c4de;font-weight:600}
header.top h1{font-size:34px;line-height:1.15;margin:4px 0 4px;letter-spacing:-.015em;font-weight:700}
header.top .sub{color:#d3e2f0;font-size:15px}
dl.meta{display:grid;grid-template-columns:max-content 1fr;gap:3px 18px;font-size:13px;margin:18px 0 0;color:#e3edf6;max-width:1000px}
dl.meta dt{color:#a9c4de}
dl.meta dd{margin:0;overflow-wrap:anywhere}
.legend{margin-top:16px;display:flex;flex-wrap:wrap;gap:6px 16px;font-size:13px}
.legend span{white-space:nowrap}
.cards{display:grid;grid-template-columns:repeat(auto-fit,minmax(150px,1fr));gap:12px;margin-top:-34px;position:relative}
.card{background:#fff;border:1px solid var(--line);border-radius:10px;padding:12px 16px 11px;box-shadow:0 1px 3px rgba(16,24,40,.07)}
.card .l{font-size:11.5px;text-transform:uppercase;letter-spacing:.08em;color:var(--muted);font-weight:600}
.card .v{font-size:25px;font-weight:700;font-variant-numeric:tabular-nums;line-height:1.25;margin-top:2px}
.card .s{font-size:12px;color:var(--faint)}
.card.warn{border-color:#f3c4bf}
.card.warn .v{color:var(--bad)}
.hilite{display:grid;grid-template-columns:repeat(auto-fill,minmax(220px,1fr));gap:10px;margin-top:14px}
.hl{background:linear-gradient(180deg,#ffffff,#f8fbfd);border:1px solid var(--line);border-left:4px solid #2f6a8f;border-radius:8px;padding:9px 14px}
.hl .l{font-size:11.5px;color:var(--muted);font-weight:600;letter-spacing:.02em;overflow-wrap:anywhere}
.hl .v{font-size:22px;font-weight:700;font-variant-numeric:tabular-nums;line-height:1.3}
.hl .s{font-size:12.5px;color:var(--ink);overflow-wrap:anywhere}
nav.toc{display:flex;flex-wrap:wrap;gap:8px;margin:22px 0 6px}
nav.toc a{font-size:13px;text-decoration:none;color:var(--accent);background:#fff;border:1px solid var(--line);border-radius:999px;padding:4px 12px}
nav.toc a:hover{border-color:var(--accent)}
section{background:#fff;border:1px solid var(--line);border-radius:12px;padding:24px 28px 18px;margin:20px 0;box-shadow:0 1px 2px rgba(16,24,40,.04)}
section h2{font-size:22px;margin:0 0 6px;letter-spacing:-.01em}
section h3{font-size:15.5px;margin:24px 0 6px;color:#243b53}
p.intro{color:var(--muted);max-width:92ch;margin:0 0 8px}
.tablewrap{overflow-x:auto;margin:6px 0 2px;max-width:100%}
table{border-collapse:collapse;font-size:13.5px;font-variant-numeric:tabular-nums;min-width:40%}
th{font-weight:600;text-align:left;color:#3e4c59;border-bottom:2px solid var(--rule);padding:6px 11px;vertical-align:bottom;font-size:12.5px;line-height:1.3}
th.num{min-width:5.5em}
th.grp{text-align:center;border-bottom:1px solid var(--rule);color:#243b53;font-size:12px;letter-spacing:.02em}
th.num,td.num{text-align:right}
td{padding:5px 11px;border-bottom:1px solid #eef1f4;vertical-align:top;white-space:nowrap}
td.wide{white-space:normal;min-width:16ch;max-width:46ch}
tr.brk td{border-top:1px solid var(--rule)}
tbody tr:hover td{background:#f7fafc}
td .ci{font-size:11px;color:var(--faint);margin-left:6px;font-weight:400}
td.best{background:var(--best);color:var(--bestInk);font-weight:700}
td.best .ci{color:#4f8a63}
td.bad{color:var(--bad)}
td.good{color:var(--good);font-weight:700}
td code,.mono{font-family:ui-monospace,"Liberation Mono","DejaVu Sans Mono",Menlo,monospace;font-size:12px}
.dot{display:inline-block;width:9px;height:9px;border-radius:50%;margin-right:7px}
table.compact{font-size:12.5px}
table.compact td{padding:3px 8px}
table.compact th{padding:5px 8px}
table.heat td.num{text-align:center;min-width:6.5em}
table.heat td.best{box-shadow:inset 0 0 0 2px #0f5f31;background:none}
p.caption{font-size:12.5px;color:var(--muted);margin:6px 0 4px;max-width:100ch}
details{margin:10px 0}
details>summary{cursor:pointer;color:var(--accent);font-size:13.5px;font-weight:600}
.figgrid{display:grid;grid-template-columns:1fr;gap:8px}
figure{margin:14px 0 22px;padding:0}
figure h3{margin-top:6px}
figure svg.fig{width:100%;height:auto;display:block}
figcaption{font-size:13px;color:var(--muted);max-width:98ch;margin-top:4px}
figcaption .files{display:block;color:var(--faint);font-size:12px;margin-top:2px}
.note{font-size:13px;color:var(--muted);background:#f8fafc;border-left:3px solid var(--rule);padding:6px 12px;margin:8px 0}
.note.skip{border-left-color:#e5a000;background:#fffaf0}
ul.skips{margin:6px 0 0;padding-left:20px;font-size:13px;color:var(--muted)}
.case .chips{display:flex;flex-wrap:wrap;gap:6px 8px;margin:6px 0 14px}
.chip{font-size:12.5px;background:#f1f4f8;border:1px solid var(--line);border-radius:6px;padding:2px 9px}
.chip b{font-weight:600;color:var(--muted);margin-right:5px}
.caseid{font-family:ui-monospace,"Liberation Mono",monospace;font-size:13px;background:#f1f4f8;padding:2px 7px;border-radius:5px}
ol.turns{list-style:none;margin:0;padding:0;counter-reset:turn}
li.turn{border:1px solid var(--line);border-radius:10px;margin:0 0 14px;overflow:hidden}
.turnhead{display:flex;flex-wrap:wrap;align-items:baseline;gap:10px;background:#f7f9fb;border-bottom:1px solid var(--line);padding:7px 14px}
.turnhead .n{font-size:12px;color:var(--faint);font-weight:600}
.turnhead .stage{font-weight:700;font-size:13.5px;color:#243b53}
.turnhead .tmeta{font-size:12px;color:var(--faint)}
.msgs{padding:10px 14px}
.msg{margin:6px 0 10px}
.role{font-size:11px;font-weight:700;letter-spacing:.08em;text-transform:uppercase;color:var(--faint);margin-bottom:2px}
.content{white-space:pre-wrap;overflow-wrap:anywhere;font-size:13.5px;line-height:1.5;background:#fbfcfd;border:1px solid #eef1f4;border-radius:8px;padding:8px 11px;max-height:360px;overflow:auto}
.msg.system .content{background:#fbf8f2;border-color:#f1e6d2}
.msg.reply .content{background:#eef6fd;border-color:#cfe3f5}
.msg.reply .role{color:#2f5f8a}
.msg.error .content{background:#fdf0ef;border-color:#f3c4bf;color:var(--bad)}
.earlier{font-size:12px;color:var(--faint);font-style:italic;margin:2px 0 6px}
footer{color:var(--faint);font-size:12px;padding:10px 0 40px}
@media print{body{background:#fff}section{box-shadow:none;break-inside:avoid-page}header.top{-webkit-print-color-adjust:exact;print-color-adjust:exact}}
`

//go:embed report.html.tmpl
var pageTemplate string

// page is the report's HTML template, parsed once.
var page = template.Must(template.New("report").Funcs(template.FuncMap{
	"blocks":     htmlBlocks,
	"tableClass": tableClass,
	"groupHeads": groupHeads,
	"cellClass":  cellClass,
	"heatStyle":  heatStyle,
	"svg":        func(f *figure) template.HTML { return template.HTML(f.SVG) },
	"roleClass":  roleClass,
	"plural":     plural,
	"join":       strings.Join,
	"inc":        func(i int) int { return i + 1 },
}).Parse(pageTemplate))

func renderHTML(d *doc, footer string) string {
	var b strings.Builder
	// The template is fixed and its data plain values: a failure here is a
	// bug in the template, not in the run.
	if err := page.Execute(&b, struct {
		Doc    *doc
		Footer string
		CSS    template.CSS
	}{d, footer, template.CSS(css)}); err != nil {
		panic("report: the HTML template failed: " + err.Error())
	}
	return b.String()
}

// htmlBlock is one block of a section, by its type, for the template.
type htmlBlock struct {
	Table      *table
	Figure     *figure
	Note       *note
	Transcript *transcript
	Heading    *heading
	List       []string
}

func htmlBlocks(bs []any) []htmlBlock {
	out := make([]htmlBlock, 0, len(bs))
	for _, blk := range bs {
		switch x := blk.(type) {
		case *table:
			out = append(out, htmlBlock{Table: x})
		case *figure:
			out = append(out, htmlBlock{Figure: x})
		case *note:
			out = append(out, htmlBlock{Note: x})
		case *transcript:
			out = append(out, htmlBlock{Transcript: x})
		case *heading:
			out = append(out, htmlBlock{Heading: x})
		case []string:
			out = append(out, htmlBlock{List: x})
		}
	}
	return out
}

func tableClass(t *table) string {
	var cls []string
	if t.Compact {
		cls = append(cls, "compact")
	}
	if t.Heat {
		cls = append(cls, "heat")
	}
	return strings.Join(cls, " ")
}

// groupHead is one cell of a table's group header row: a named group
// spanning its columns, or an empty cell over a column of no group.
type groupHead struct {
	Name string
	Span int
}

// groupHeads is the group header row, nil when no column is grouped.
func groupHeads(cols []col) []groupHead {
	grouped := false
	for _, c := range cols {
		if c.Group != "" {
			grouped = true
		}
	}
	if !grouped {
		return nil
	}
	var out []groupHead
	for i := 0; i < len(cols); {
		j := i
		for j < len(cols) && cols[j].Group == cols[i].Group {
			j++
		}
		if cols[i].Group == "" {
			for k := i; k < j; k++ {
				out = append(out, groupHead{Span: 1})
			}
		} else {
			out = append(out, groupHead{Name: cols[i].Group, Span: j - i})
		}
		i = j
	}
	return out
}

// cellClass is the class list of the j-th cell of a row.
func cellClass(t *table, j int, c cell) string {
	var cl []string
	if j < len(t.Cols) && t.Cols[j].Num {
		cl = append(cl, "num")
	}
	if j < len(t.Cols) && t.Cols[j].Wide {
		cl = append(cl, "wide")
	}
	if c.Best {
		cl = append(cl, "best")
	}
	if c.Bad {
		cl = append(cl, "bad")
	}
	if c.Good {
		cl = append(cl, "good")
	}
	return strings.Join(cl, " ")
}

// heatStyle is a shaded cell's colours: the report's own rgb() values,
// computed from the cell's number.
func heatStyle(t *table, c cell) template.CSS {
	if math.IsNaN(c.Heat) || !t.Heat {
		return ""
	}
	bg, fg := heatColor(c.Heat)
	return template.CSS("background:" + bg + ";color:" + fg)
}

// heatColor is a sequential blue from near-white to deep.
func heatColor(h float64) (bg, fg string) {
	lo := [3]float64{241, 246, 251}
	hi := [3]float64{38, 92, 140}
	h = 0.08 + 0.92*h
	var c [3]int
	for i := range c {
		c[i] = int(math.Round(lo[i] + (hi[i]-lo[i])*h))
	}
	fg = "#1f2933"
	if h > 0.55 {
		fg = "#ffffff"
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", c[0], c[1], c[2]), fg
}

func roleClass(role string) string {
	switch role {
	case "system", "user", "assistant":
		return role
	}
	return "other"
}
