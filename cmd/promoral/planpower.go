package main

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"

	"github.com/promoral/promoral/internal/wrap"
	"github.com/promoral/promoral/pipeline/review"
)

// printPower prints what the compare blocks can detect, and with --detect
// the designs that detect the difference asked for.
func printPower(w io.Writer, pw *review.Power) {
	if pw == nil || len(pw.Blocks) == 0 {
		return
	}
	for _, b := range pw.Blocks {
		fmt.Fprintln(w, wrap.Indent(fmt.Sprintf("power of compare block %s: %d tests; Holm's first step at %.2g/%d = %.2g", b.Block, b.Tests, b.Alpha, b.Tests, b.Level), "", "  ", 80))
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "  task\tpairs\titems\treps\tMDE 80%\tacc/corr/cons\tfrom\t")
		for _, r := range b.Rows {
			task := r.Task
			if r.Pair != "" {
				fmt.Fprintf(tw, "  %s\t\t\t\t\t\t\t\n", r.Task+" "+r.Pair)
				task = ""
			}
			mde := mdeText(float64(r.MDE))
			if !math.IsNaN(float64(r.MDELo)) {
				mde = fmt.Sprintf("%s (%s–%s)", mde, mdeText(float64(r.MDELo)), mdeText(float64(r.MDEHi)))
			}
			a := r.Assumptions
			fmt.Fprintf(tw, "  %s\t%d\t%d\t%d\t%s\t%.2f/%.2f/%.2f\t%s\t\n", task, r.Pairs, r.Items, r.Repeats, mde, a.Accuracy, a.Correlation, a.Consistency, r.Source)
		}
		tw.Flush()
		if b.Delta > 0 {
			fmt.Fprintf(w, "\nto detect %.3g with 80%% power (every pair of the task, Holm's first step):\n", b.Delta)
			for _, d := range b.Detect {
				fmt.Fprintln(w, wrap.Indent(fmt.Sprintf("%s: %d items now; hardest pair %s", d.Task, d.ItemsNow, d.Hardest), "  ", "    ", 80))
				if len(d.Options) == 0 {
					fmt.Fprintf(w, "    not detectable with up to %d repeats and %d items\n", 10, 10_000_000)
					continue
				}
				tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
				fmt.Fprintln(tw, "    items\tx reps\tcases\tcost USD\t\t")
				for _, o := range d.Options {
					note := ""
					if o.TooFew {
						note = "more items than the task has"
					}
					fmt.Fprintf(tw, "    %d\tx %d\t%s\t%s\t%s\t\n", o.Items, o.Repeats, spanK(o.Calls, o.Calls), dollars(o.CostBest, o.CostWorst), note)
				}
				tw.Flush()
				if !d.RepeatsHelp {
					n1 := 0
					for _, o := range d.Options {
						if o.Repeats == 1 {
							n1 = o.Items
						}
					}
					var why string
					switch {
					case d.Unlimited == 0:
						why = "even unlimited repeats would not reach it"
					case 2*d.Unlimited >= n1:
						why = fmt.Sprintf("even unlimited repeats need %d items, over half of the %d one repeat needs, so no number of repeats costs less than more items", d.Unlimited, n1)
					default:
						why = "each of 2 to 10 repeats costs more than the items it saves"
					}
					fmt.Fprintln(w, wrap.Indent("repeats cannot help: "+why+" (between-item variance dominates: the pairs differ item by item more than a sample differs from the next)", "    ", "      ", 80))
				}
			}
		}
		fmt.Fprintln(w)
	}
	for _, n := range pw.Notes {
		fmt.Fprintln(w, wrap.Indent(n, "note: ", "  ", 80))
	}
}

func mdeText(v float64) string {
	if math.IsNaN(v) {
		return "none"
	}
	if math.IsInf(v, 1) {
		return "none"
	}
	return fmt.Sprintf("%.3f", v)
}
