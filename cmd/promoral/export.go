package main

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/promoral/promoral/export/eee"
	"github.com/promoral/promoral/pipeline/spec"
)

func newExport() *cobra.Command {
	var format, org string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "export --format eee RUN_DIR DIR",
		Short: "Write a run in a shared format: Every Eval Ever records and their samples",
		Long: "Reads a run folder (results.parquet, calls.parquet, metrics.parquet, manifest.json) and writes\n" +
			"it under DIR in the Every Eval Ever layout (schema 0.3.0): for every model x task,\n" +
			"DIR/data/<task>/<developer>/<model>/<uuid>.json, the aggregate record (each metric with its n,\n" +
			"interval, policies and convention; the strategy as the method; promoral as the library), and\n" +
			"<uuid>_samples.jsonl beside it, one line per case. Metrics without a value are listed in the\n" +
			"record, not given a score. docs/outputs.md has the mapping.",
		Example: "  promoral export --format eee out/quickstart eee/",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if format != "eee" {
				return fmt.Errorf("--format %q: the one format export writes is eee (Every Eval Ever)", format)
			}
			recs, err := eee.Export(args[0], args[1], eee.Options{Org: org})
			if err != nil {
				return err
			}
			if quiet {
				return nil
			}
			w := cmd.OutOrStdout()
			rows := 0
			for _, r := range recs {
				rel, err := filepath.Rel(args[1], r.Path)
				if err != nil {
					rel = r.Path
				}
				fmt.Fprintf(w, "%s\n  %s × %s: %s, %s", rel, r.Model, r.Task, spec.Plural(r.Results, "metric", "metrics"), spec.Plural(r.Rows, "sample", "samples"))
				if r.WithheldMetrics > 0 {
					fmt.Fprintf(w, ", %d without a value", r.WithheldMetrics)
				}
				fmt.Fprintln(w)
				rows += r.Rows
			}
			fmt.Fprintf(w, "%s, %s in %s\n", spec.Plural(len(recs), "record", "records"), spec.Plural(rows, "sample", "samples"), args[1])
			return nil
		},
	}
	cmd.Flags().StringVar(&format, "format", "", "the format to write: eee (Every Eval Ever 0.3.0)")
	cmd.Flags().StringVar(&org, "org", "", "the organisation that ran the evaluation, for source_metadata (default \"unknown\")")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing on success")
	cmd.MarkFlagRequired("format")
	return cmd
}
