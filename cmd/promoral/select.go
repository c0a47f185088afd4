package main

import (
	"io"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
	"github.com/spf13/cobra"
)

// selectFlags are the flags apply and plan share to run part of a study.
type selectFlags struct {
	models, strategies, tasks []string
	limit                     int
	shard                     string
}

func (f *selectFlags) add(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringSliceVar(&f.models, "model", nil, "only the cells of these models (repeat the flag or give a comma list)")
	fl.StringSliceVar(&f.strategies, "strategy", nil, "only the cells of these strategies (repeatable, comma list)")
	fl.StringSliceVar(&f.tasks, "task", nil, "only the cells of these tasks (repeatable, comma list)")
	fl.IntVar(&f.limit, "limit", 0, "only the first N items of each task, in dataset order")
	fl.StringVar(&f.shard, "shard", "", "only shard `k/N`, k from 0 to N-1: a deterministic share of the cases, cut on task and item, into its own run folder (default <output>-shard-k-of-N); promoral merge joins the shards")
}

// apply narrows the study; a shard gets its own run folder unless out
// names one.
func (f *selectFlags) apply(st *spec.Study, out string) error {
	sel := manifest.Selection{Models: f.models, Strategies: f.strategies, Tasks: f.tasks, Limit: f.limit}
	if f.shard != "" {
		sh, err := spec.ParseShard(f.shard)
		if err != nil {
			return err
		}
		sel.Shard = sh
	}
	if err := st.Select(sel); err != nil {
		return err
	}
	if sel.Shard != nil && out == "" {
		st.OutDir = spec.ShardDir(st.OutDir, sel.Shard)
	}
	return nil
}

// sayPartial tells the user, before any call, that the apply runs part of
// the study and what that means for its outputs.
func sayPartial(w io.Writer, st *spec.Study) {
	sel := st.Selection
	if !sel.Partial() {
		return
	}
	say(w, "promoral: selection %s", sel.Describe())
}

// sayCap states the spend cap in force and names the models whose calls it
// cannot see (no price).
func sayCap(w io.Writer, st *spec.Study, flag costFlag) {
	capUSD := st.Run.Settings.MaxCost
	switch {
	case flag.none:
		if capUSD > 0 {
			say(w, "promoral: no spend cap for this apply (--max-cost none; settings.max_cost $%.2f does not apply)", capUSD)
		}
		return
	case flag.set && flag.usd == 0:
		say(w, "promoral: spend cap $0 (--max-cost 0): no paid call goes out; only replies in the journal and models without a price run (--max-cost none runs uncapped)")
		return
	case flag.set:
		capUSD = flag.usd
	}
	if capUSD > 0 {
		say(w, "promoral: spend cap $%.2f for this apply (counting from zero; replies in the journal cost nothing)", capUSD)
	}
	for _, name := range spec.UnpricedNames(st) {
		if capUSD > 0 {
			say(w, "promoral: warning: model %s has no price (price: {input, output}): its cost is unknown and the cap counts its calls as free", name)
		} else {
			say(w, "promoral: note: model %s has no price (price: {input, output}): its cost is unknown (shown as $?)", name)
		}
	}
}
