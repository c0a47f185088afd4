package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/promoral/promoral/internal/refdocs"
)

// newDocs is the hidden verb that regenerates docs/reference from the
// stage and metric kinds' field specs, and the rows section of
// docs/metrics.md from the metric kinds' row declarations, run from a
// clone of the repository.
func newDocs() *cobra.Command {
	var root string
	cmd := &cobra.Command{
		Use:    "docs",
		Short:  "Regenerate docs/reference and the rows of docs/metrics.md from the kinds' specs",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
				return fmt.Errorf("%s is not the repository's root (no go.mod): run promoral docs from a clone's root, or give --root", root)
			}
			if err := refdocs.Write(root); err != nil {
				return err
			}
			for _, p := range refdocs.Paths() {
				fmt.Fprintln(cmd.OutOrStdout(), "wrote", filepath.Join(root, filepath.FromSlash(p)))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "root", ".", "the repository's root")
	return cmd
}
