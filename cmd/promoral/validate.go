package main

import (
	"fmt"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/spf13/cobra"
)

func newValidate() *cobra.Command {
	return &cobra.Command{
		Use:   "validate CONFIG...",
		Short: "Check run files and everything they reference; list every problem with file:line",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			failed := 0
			for _, path := range args {
				st, err := loadStudy(path)
				if err != nil {
					fmt.Fprintf(cmd.ErrOrStderr(), "%s: %v\n", path, err)
					failed++
					continue
				}
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok: %s, %s, %s, %s, %s\n", path,
					spec.Plural(len(st.Models), "model", "models"), spec.Plural(len(st.Strategies), "strategy", "strategies"),
					spec.Plural(len(st.Tasks), "task", "tasks"), spec.Plural(st.NumCells(), "cell", "cells")+st.RepeatsNote(),
					spec.Plural(st.NumCases(), "case", "cases"))
				for _, t := range st.PendingData() {
					fmt.Fprintf(cmd.OutOrStdout(), "%s: note: task %s: %s not fetched yet; counted by its declared rows (%d); promoral data pull %s fetches it\n",
						path, t.Name, t.Data.Hub.ID, t.Data.Hub.Rows, path)
				}
			}
			if failed > 0 {
				verb := "has"
				if failed > 1 {
					verb = "have"
				}
				return &exitError{exitFailed, fmt.Errorf("%d of %s %s problems", failed, spec.Plural(len(args), "config", "configs"), verb)}
			}
			return nil
		},
	}
}
