package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/promoral/promoral/pipeline/batch"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
)

// usesBatch reports whether a model of the study asks for batch mode.
func usesBatch(st *spec.Study) bool {
	for _, m := range st.Models {
		if m.Spec.Limits.Mode == spec.ModeBatch {
			return true
		}
	}
	return false
}

// batchCasesInFlight is how many cases the models in batch mode keep in
// flight at once (limits.batch_cases each): their state is what apply's
// heap holds beyond the rows it streams.
func batchCasesInFlight(st *spec.Study, all bool) int {
	o := review.PlanOptions{Batch: all}
	n := 0
	for _, m := range st.Models {
		if o.BatchMode(m) {
			k := m.Spec.Limits.BatchCases
			if k <= 0 {
				k = review.DefaultBatchCases
			}
			n += k
		}
	}
	return n
}

func newApply() *cobra.Command {
	var (
		out         string
		concurrency int
		offline     bool
		quiet       bool
		grace       time.Duration
		batched     bool
		maxCost     costFlag
		shardRate   string
		sel         selectFlags
	)
	cmd := &cobra.Command{
		Use:   "apply CONFIG",
		Short: "Run a study; a second run resumes from the journal and never pays twice",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			load := func(o spec.LoadOptions) (*spec.Study, error) {
				st, err := loadStudyWith(args[0], o)
				if err != nil {
					return nil, err
				}
				return st, sel.apply(st, out)
			}
			// Offline, hub data must be in the cache; online, it is
			// fetched on first use, after the keys are known to be there
			// (a missing key is said before anything is downloaded).
			st, err := load(spec.LoadOptions{NeedData: offline})
			if err != nil {
				return err
			}
			if !offline && len(st.PendingData()) > 0 {
				if err := engine.Connect(st, false); err != nil {
					return err
				}
				prog, wait := dataProgress(cmd.ErrOrStderr())
				st, err = load(spec.LoadOptions{Fetch: true, NeedData: true, Progress: prog, Ctx: cmd.Context()})
				wait()
				if err != nil {
					return err
				}
			}
			fitMemoryLimit(st.NumCases(), st.NumItems(), batchCasesInFlight(st, batched && !offline))
			opts := engine.Options{OutDir: out, Concurrency: concurrency, Offline: offline,
				Log: cmd.ErrOrStderr(), Grace: grace, Abort: abortContext(cmd.Context()), NoResults: true, Scorer: scoring.New()}
			if maxCost.set {
				opts.MaxCost, opts.NoCap = &maxCost.usd, maxCost.none
			}
			if err := engine.Connect(st, opts.Offline); err != nil {
				return err
			}
			for _, s := range st.Skipped {
				say(cmd.ErrOrStderr(), "promoral: skipping %s", s)
			}
			sayPartial(cmd.ErrOrStderr(), st)
			sayCap(cmd.ErrOrStderr(), st, maxCost)
			// The progress display owns the terminal while the run goes:
			// the engine's and the batch transport's lines go through it.
			scr := newScreen(cmd.ErrOrStderr(), !quiet)
			opts.Log = scr
			if !offline {
				c := concurrency
				if c == 0 {
					c = st.Run.Settings.Concurrency
				}
				share, err := rateShare(cmd.ErrOrStderr(), st, shardRate)
				if err != nil {
					return err
				}
				opts.Doer = engine.TransportsShared(engine.RateOptions{Concurrency: c, Share: share, Log: cmd.ErrOrStderr()})
				if batched || usesBatch(st) {
					dir := out
					if dir == "" {
						dir = st.OutDir
					}
					opts.Doer = batch.Transports(batch.Options{Dir: dir, All: batched, Live: opts.Doer, Log: scr})
				}
			}
			eng := engine.NewEngine(st, opts)
			stop := make(chan struct{})
			done := make(chan struct{})
			if !quiet {
				go progress(cmd.ErrOrStderr(), eng.Stats(), scr, stop, done)
			} else {
				close(done)
			}
			draining.Store(true)
			go sayInterrupt(cmd.Context(), scr, eng, opts.Grace, stop)
			sum, _, err := eng.Run(cmd.Context())
			close(stop)
			<-done
			if sum != nil {
				say(cmd.OutOrStdout(), "%s", sum.String())
				sayEndpoints(cmd.OutOrStdout(), st)
				for _, t := range sum.Report {
					say(cmd.OutOrStdout(), "%s", t)
				}
				sayRates(cmd.OutOrStdout(), eng.Stats())
			}
			if err != nil {
				return err
			}
			switch {
			case sum.Interrupted:
				return &exitError{exitInterrupted, nil}
			case sum.Capped != nil:
				return &exitError{exitCapped, nil}
			case sum.Errors+sum.Kept > 0:
				return &exitError{exitErrored, nil}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "output folder (default: the run file's output, or out/<name>)")
	cmd.Flags().IntVar(&concurrency, "concurrency", 0, "cases in flight per model (default: settings.concurrency)")
	cmd.Flags().BoolVar(&offline, "offline", false, "serve only journaled replies: no network, no keys; a missing reply is an error")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "no progress output")
	cmd.Flags().DurationVar(&grace, "grace", engine.DefaultGrace, "after Ctrl-C, how long to wait for the calls in flight so their replies are journaled (Ctrl-C again cuts them off)")
	cmd.Flags().Var(&maxCost, "max-cost", "spend at most this many USD in this apply (default settings.max_cost; without either, no cap): no request goes out once spent plus the worst case of the calls in flight would pass it; apply again continues. 0 sends no paid call (the journal's replies and unpriced models still run); none runs uncapped whatever settings.max_cost says")
	cmd.Flags().StringVar(&shardRate, "shard-rate", "split", "with --shard k/N: split (take 1/N of each rate limit the provider states, as the other shards spend the rest) or whole (take all of it, when the shards run on different keys or one after another)")
	sel.add(cmd)
	cmd.Flags().BoolVar(&batched, "batch", false, "send every model's requests through its provider's batch API, in waves, at batch prices (replies can take up to 24 h per wave)")
	return cmd
}

// sayInterrupt tells the user what the first and second Ctrl-C do, through
// the screen: the display shows the notice above its bars and the stopping
// state under them until the run ends.
func sayInterrupt(ctx context.Context, scr *screen, eng *engine.Engine, grace time.Duration, stop <-chan struct{}) {
	select {
	case <-ctx.Done():
	case <-stop:
		return
	}
	scr.Interrupted(grace, eng.InFlight)
	scr.Note(fmt.Sprintf("promoral: interrupted: starting no new calls; waiting up to %s for the %d call(s) in flight so their replies are journaled (Ctrl-C again cuts them off)", grace, eng.InFlight()))
	select {
	case <-abortContext(ctx).Done():
		scr.Cutting()
		scr.Note(fmt.Sprintf("promoral: cutting off the %d call(s) still in flight", eng.InFlight()))
	case <-stop:
	}
}

// say prints a message wrapped to 80 columns: each line between its
// clauses (else its words), its continuation indented two more; a word
// wider than that (a long path) stands on a line of its own.
func say(w io.Writer, format string, args ...any) {
	fmt.Fprintln(w, wrapNote(fmt.Sprintf(format, args...)))
}
