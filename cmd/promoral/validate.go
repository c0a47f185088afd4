package main

import (
	"fmt"

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
				fmt.Fprintf(cmd.OutOrStdout(), "%s: ok: %d models, %d strategies, %d tasks, %d cells, %d cases\n",
					path, len(st.Models), len(st.Strategies), len(st.Tasks), len(st.Cells), st.NumCases())
			}
			if failed > 0 {
				return &exitError{exitFailed, fmt.Errorf("%d of %d config(s) have problems", failed, len(args))}
			}
			return nil
		},
	}
}
