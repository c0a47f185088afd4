package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/promoral/promoral/internal/wrap"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/report"
)

func newReport() *cobra.Command {
	var caseID string
	var quiet bool
	cmd := &cobra.Command{
		Use:   "report RUN_DIR",
		Short: "Write a static report of a run: report.html (self-contained), report.md and figures/",
		Long: "Reads a run folder (results.parquet, calls.parquet, metrics.parquet, the metric CSVs and manifest.json)\n" +
			"and writes RUN_DIR/report.html, one file that opens offline, RUN_DIR/report.md, and the figures as\n" +
			"PNG and SVG under RUN_DIR/figures/. Each section appears only when the run has its data.",
		Example: "  promoral report out/quickstart\n  promoral report out/paper --case gpt-4.1/self_correct/ethics/ethics_cm_test_hard_00042",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			out, err := report.Generate(args[0], report.Options{Case: caseID})
			if err != nil {
				return err
			}
			if !quiet {
				w := cmd.OutOrStdout()
				fmt.Fprintf(w, "%s\n%s\n", out.HTML, out.Markdown)
				if len(out.Figures) > 0 {
					fmt.Fprintf(w, "%s (%s)\n", filepath.Dir(out.Figures[0])+string(os.PathSeparator), spec.Plural(len(out.Figures), "file", "files"))
				}
				for _, s := range out.Skipped {
					fmt.Fprintln(cmd.ErrOrStderr(), wrap.Indent("not drawn: "+s, "", "  ", 80))
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&caseID, "case", "", "case id whose calls the transcript shows (default: the first case with more than one call)")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print nothing on success")
	return cmd
}
