package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/pipeline/spec"
)

func newMerge() *cobra.Command {
	var config string
	cmd := &cobra.Command{
		Use:   "merge OUT SHARD...",
		Short: "Join the run folders of `apply --shard k/N` into one run, as if one process had run it",
		Long: `merge checks that the shard folders come from the same config (config_hash), select the
same cells and hold every shard k/N exactly once, each finished; then it writes OUT (a new folder):
the shards' results in the study's case order, their calls, the union of their journals (so apply,
view, report and diff work on OUT) and metrics computed afresh on the joined results.

The config is read from the path the shards' manifest names, or from --config (shards applied on
other machines: any copy of the same files will do; merge checks the hash).`,
		Args: cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, dirs := args[0], args[1:]
			if config == "" {
				m, err := review.ShardManifest(dirs[0])
				if err != nil {
					return err
				}
				config = m.ConfigFile
			}
			// The shards' rows are matched to the real items: hub data must
			// be in the cache, not stood in for by its declared rows.
			st, err := loadStudyWith(config, spec.LoadOptions{NeedData: true})
			if err != nil {
				return fmt.Errorf("%w\n(merge reads the config the shards were applied from; give it with --config)", err)
			}
			sum, err := review.Merge(st, out, dirs, cmd.ErrOrStderr())
			if err != nil {
				return err
			}
			say(cmd.OutOrStdout(), "%s", sum.String())
			for _, sh := range sum.MergedFrom {
				fmt.Fprintf(cmd.OutOrStdout(), "  shard %s: %s, %d cases, %d errors, %d new calls, $%.4f (%s)\n",
					sh.Shard, sh.Dir, sh.Cases, sh.Errors, sh.CallsNew, sh.CostUSD, sh.Generation)
			}
			for _, t := range sum.Report {
				fmt.Fprintln(cmd.OutOrStdout(), t)
			}
			if sum.Errors+sum.Kept > 0 {
				return &exitError{exitErrored, nil}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&config, "config", "", "the config the shards were applied from (default: the path their manifest records)")
	return cmd
}
