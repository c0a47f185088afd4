package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/promoral/promoral/internal/wrap"
	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/pipeline/spec"
)

func newPlan() *cobra.Command {
	var (
		out      string
		asJSON   bool
		detailed bool
		batched  bool
		sel      selectFlags
		pilot    string
		detect   float64
	)
	cmd := &cobra.Command{
		Use:   "plan CONFIG",
		Short: "Show what apply would do: cases, calls, tokens and cost per model; no network, no model call",
		Long: `Show what apply would do, like terraform plan: per model and in total, the cases, the
model calls still to make (loops at one pass as the best case and at their bound as
the worst), how many the journal already holds, input and output tokens and the cost
range in USD from the price table. No network, no key, no model call.

Models in batch mode (limits.mode: batch, or every model with --batch) are priced at the
price table's batch prices, with the live cost beside them, and the plan shows the waves
each strategy takes (one per sequential call of a case) and what that means for latency:
a provider promises each batch job within 24 hours.

For each compare block, the plan says what the study can detect: per pair, the minimum
detectable difference (MDE) at 80 % power and the level of Holm's first step across the
block's tests, at the study's items and repeats, from the block's power: assumptions, or
with --pilot from a pilot run's paired items (with the MDE's range over resamples of them).
--detect 0.03 lists, per task, the items x repeats that detect that difference and what
each costs, cheapest first, and says when repeats cannot help.

With --detailed-exitcode: exit 0 when there is nothing to do, 2 when there is work.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			st, err := loadStudy(args[0])
			if err != nil {
				return err
			}
			if err := sel.apply(st, out); err != nil {
				return err
			}
			dir := out
			if dir == "" {
				dir = st.OutDir
			}
			p, err := review.MakePlanWith(st, dir, review.PlanOptions{Batch: batched})
			if err != nil {
				return err
			}
			p.Selection = st.Selection
			p.Data = spec.DataPlan(st)
			if detect < 0 || detect >= 1 {
				return fmt.Errorf("--detect %g: give an accuracy difference between 0 and 1, e.g. 0.03", detect)
			}
			if p.Power, err = review.MakePower(st, p, review.PowerOptions{Pilot: pilot, Detect: detect}); err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(cmd.OutOrStdout())
				enc.SetIndent("", "  ")
				if err := enc.Encode(p); err != nil {
					return err
				}
			} else {
				printPlan(cmd.OutOrStdout(), p)
			}
			if detailed && p.HasWork() {
				return &exitError{exitWork, nil}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "output folder whose journal to consult (default: the run's)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the plan as JSON")
	cmd.Flags().BoolVar(&detailed, "detailed-exitcode", false, "exit 0 when there is nothing to do, 2 when there is work")
	sel.add(cmd)
	cmd.Flags().BoolVar(&batched, "batch", false, "plan apply --batch: batch prices, and the waves and latency of batch mode")
	cmd.Flags().StringVar(&pilot, "pilot", "", "a pilot run folder whose paired items give each compare pair's accuracy and correlations")
	cmd.Flags().Float64Var(&detect, "detect", 0, "an accuracy difference (e.g. 0.03): the items x repeats that detect it, and their cost")
	return cmd
}

func printPlan(w io.Writer, p *review.Plan) {
	fmt.Fprintf(w, "%s\n%d cases, %d of them done\n", wrap.Block(fmt.Sprintf("plan for %s (journal %s)", p.Run, p.Journal), 80), p.Total.Cases, p.Total.CasesDone)
	if p.Selection.Partial() {
		fmt.Fprintf(w, "selection %s\n", p.Selection.Describe())
	}
	fmt.Fprintln(w)
	batched := p.Total.Mode == spec.ModeBatch
	// Narrow enough for an 80-column terminal: the cases still to run
	// (the heading says how many are done), calls and tokens in k and M,
	// dollars whole from $100 on. Where long model names would make it
	// wider, each name stands on a line of its own above its figures.
	table := func(own bool) string {
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		head := "model\tto run\tjournaled\tnew calls\tin tok\tout tok\tcost USD\t"
		if own {
			head = "\tto run\tjournaled\tnew calls\tin tok\tout tok\tcost USD\t"
		}
		if batched {
			head += "mode\twaves\t"
		}
		fmt.Fprintln(tw, head)
		var names []string
		row := func(r review.PlanRow) {
			name := r.Model
			if own {
				names = append(names, name)
				name = ""
			}
			fmt.Fprintf(tw, "%s\t%d\t%s\t%s\t%s\t%s\t%s\t", name, r.Cases-r.CasesDone, spanK(r.CallsJournaled, r.CallsJournaled),
				spanK(r.CallsBest, r.CallsWorst), spanK(r.InputTokensBest, r.InputTokensWorst),
				spanK(r.OutputTokensBest, r.OutputTokensWorst), costRange(r))
			if batched {
				waves := "-"
				if r.WavesWorst > 0 {
					waves = span(r.WavesBest, r.WavesWorst)
				}
				fmt.Fprintf(tw, "%s\t%s\t", r.Mode, waves)
			}
			fmt.Fprintln(tw)
		}
		for _, r := range p.Models {
			row(r)
		}
		row(p.Total)
		tw.Flush()
		if !own {
			return b.String()
		}
		// Each name on its own line, above its row of figures.
		lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		var o strings.Builder
		o.WriteString(lines[0] + "\n")
		for i, l := range lines[1:] {
			o.WriteString(names[i] + "\n" + l + "\n")
		}
		return o.String()
	}
	t := table(false)
	for _, l := range strings.Split(t, "\n") {
		if utf8.RuneCountInString(l) > 80 {
			t = table(true)
			break
		}
	}
	fmt.Fprint(w, t)
	fmt.Fprintln(w)
	if batched {
		fmt.Fprintln(w, "waves per case (one per sequential call; loops once as the best case, at their bound as the worst):")
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		for _, s := range p.Strategies {
			name := s.Strategy
			if s.Judge {
				name += " (judge, after the judged case)"
			}
			fmt.Fprintf(tw, "  %s\t%s\t\n", name, span(s.WavesBest, s.WavesWorst))
		}
		tw.Flush()
		fmt.Fprintln(w)
	}
	if len(p.Data) > 0 {
		fmt.Fprintln(w, "datasets by hub reference (promoral data pull fetches them; apply does on\nfirst use):")
		for _, d := range p.Data {
			fmt.Fprintln(w, wrap.Indent(d.String(), "  ", "    ", 80))
		}
		fmt.Fprintln(w)
	}
	printPower(w, p.Power)
	for _, n := range p.Notes {
		fmt.Fprintln(w, wrap.Indent(n, "note: ", "  ", 80))
	}
	if !p.HasWork() {
		fmt.Fprintln(w, "\nNothing to do: every call is in the journal.")
	}
}

func span(a, b int) string {
	if a == b {
		return fmt.Sprint(a)
	}
	return fmt.Sprintf("%d–%d", a, b)
}

// dollars is a cost range, in cents below $100 and whole dollars from
// there (a plan's range is an estimate; the cents of $1,206 say nothing).
func dollars(a, b float64) string {
	f := func(x float64) string {
		if x >= 100 {
			return fmt.Sprintf("%.0f", x)
		}
		return fmt.Sprintf("%.2f", x)
	}
	if f(a) == f(b) {
		return f(a)
	}
	return f(a) + "–" + f(b)
}

// costRange is a plan row's cost as plan and diff print it: ? for a model
// without a price (apply's $?), and the priced part with +? where some of
// the calls have none.
func costRange(r review.PlanRow) string {
	if !r.Unpriced {
		return dollars(r.CostBest, r.CostWorst)
	}
	if r.CostWorst == 0 {
		return "?"
	}
	return dollars(r.CostBest, r.CostWorst) + "+?"
}

func spanK(a, b int) string {
	f := func(x int) string {
		switch {
		case x >= 10_000_000:
			return fmt.Sprintf("%.0fM", float64(x)/1e6)
		case x >= 1_000_000:
			return fmt.Sprintf("%.1fM", float64(x)/1e6)
		case x >= 10_000:
			return fmt.Sprintf("%.0fk", float64(x)/1e3)
		}
		return fmt.Sprint(x)
	}
	if f(a) == f(b) {
		return f(a)
	}
	return f(a) + "–" + f(b)
}
