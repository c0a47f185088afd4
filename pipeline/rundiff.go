package pipeline

import (
	"fmt"
	"math"
	"path/filepath"
	"sort"

	"github.com/promoral/promoral/pipeline/stats"
)

// RunDiff compares two finished run folders: every metric's change, and per
// model x strategy x task the paired accuracy difference on the items both
// runs scored, with its paired bootstrap interval, McNemar's exact p, and
// the items whose correctness flipped.
func RunDiff(oldDir, newDir string, seed uint64) ([]string, error) {
	var lines []string
	om, err1 := ReadParquet(filepath.Join(oldDir, "metrics.parquet"))
	nm, err2 := ReadParquet(filepath.Join(newDir, "metrics.parquet"))
	if err1 == nil && err2 == nil {
		key := func(r map[string]any) string {
			return fmt.Sprintf("%v/%v/%v/%v %v", r["model"], r["strategy"], r["task"], r["subset"], r["metric"])
		}
		old := map[string]map[string]any{}
		for _, r := range om {
			old[key(r)] = r
		}
		var ch []string
		for _, r := range nm {
			o, ok := old[key(r)]
			if !ok {
				continue
			}
			ov, okO := o["value"].(float64)
			nv, okN := r["value"].(float64)
			if okO && okN && math.Abs(ov-nv) > 1e-12 {
				ch = append(ch, fmt.Sprintf("  %-70s %.4f -> %.4f (%+.4f)", key(r), ov, nv, nv-ov))
			}
		}
		sort.Strings(ch)
		lines = append(lines, fmt.Sprintf("metrics: %d changed", len(ch)))
		lines = append(lines, ch...)
	}
	or, err := ReadParquet(filepath.Join(oldDir, "results.parquet"))
	if err != nil {
		return nil, err
	}
	nr, err := ReadParquet(filepath.Join(newDir, "results.parquet"))
	if err != nil {
		return nil, err
	}
	type cell struct{ model, strategy, task string }
	type pair struct {
		a, b []bool
		ids  []string
	}
	oldCorrect := map[string]bool{}
	for _, r := range or {
		if c, ok := r["correct"].(bool); ok {
			oldCorrect[fmt.Sprint(r["model"], "\x00", r["strategy"], "\x00", r["task"], "\x00", r["item_id"])] = c
		}
	}
	pairs := map[cell]*pair{}
	var cells []cell
	for _, r := range nr {
		c, ok := r["correct"].(bool)
		if !ok {
			continue
		}
		k := fmt.Sprint(r["model"], "\x00", r["strategy"], "\x00", r["task"], "\x00", r["item_id"])
		o, ok := oldCorrect[k]
		if !ok {
			continue
		}
		ce := cell{fmt.Sprint(r["model"]), fmt.Sprint(r["strategy"]), fmt.Sprint(r["task"])}
		p := pairs[ce]
		if p == nil {
			p = &pair{}
			pairs[ce] = p
			cells = append(cells, ce)
		}
		p.a, p.b = append(p.a, o), append(p.b, c)
		p.ids = append(p.ids, fmt.Sprint(r["item_id"]))
	}
	lines = append(lines, "", "paired accuracy (new - old) on the items both runs scored:")
	var ps []float64
	var rows []string
	for _, ce := range cells {
		p := pairs[ce]
		d := stats.PairedDiff(p.a, p.b, 1000, seed)
		ps = append(ps, d.McNemarP)
		rows = append(rows, fmt.Sprintf("  %s / %s / %s: n=%d  %+.4f [%+.4f, %+.4f]  flips %d->wrong %d->right  McNemar p=%.4g",
			ce.model, ce.strategy, ce.task, d.N, d.MeanDiff, d.Lo, d.Hi, d.B, d.C, d.McNemarP))
	}
	adj := stats.Holm(ps)
	for i, ce := range cells {
		lines = append(lines, fmt.Sprintf("%s  Holm p=%.4g", rows[i], adj[i]))
		p := pairs[ce]
		var flips []string
		for j := range p.ids {
			if p.a[j] != p.b[j] {
				dir := "now right"
				if p.a[j] {
					dir = "now wrong"
				}
				flips = append(flips, p.ids[j]+" ("+dir+")")
			}
		}
		if len(flips) > 0 {
			shown := flips
			if len(shown) > 10 {
				shown = shown[:10]
			}
			lines = append(lines, fmt.Sprintf("    flipped: %v", shown))
			if len(flips) > 10 {
				lines = append(lines, fmt.Sprintf("    ... and %d more", len(flips)-10))
			}
		}
	}
	if len(cells) == 0 {
		lines = append(lines, "  (no items scored by both runs)")
	}
	return lines, nil
}
