package main

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/promoral/promoral/internal/wrap"
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
					say(cmd.ErrOrStderr(), "%s: %v", path, err)
					failed++
					continue
				}
				ok := fmt.Sprintf("ok: %s, %s, %s, %s, %s",
					spec.Plural(len(st.Models), "model", "models"), spec.Plural(len(st.Strategies), "strategy", "strategies"),
					spec.Plural(len(st.Tasks), "task", "tasks"), spec.Plural(st.NumCells(), "cell", "cells")+st.RepeatsNote(),
					spec.Plural(st.NumCases(), "case", "cases"))
				if sep := ": "; utf8.RuneCountInString(path+sep+ok) <= 80 {
					say(cmd.OutOrStdout(), "%s%s%s", path, sep, ok)
				} else {
					// A long path on its own line, the verdict below it.
					say(cmd.OutOrStdout(), "%s:\n  %s", path, ok)
				}
				for _, n := range st.Notes {
					fmt.Fprintln(cmd.OutOrStdout(), strings.Join(wrap.Clauses(path+": note: "+n, 78), "\n  "))
				}
				for _, t := range st.PendingData() {
					note := fmt.Sprintf("%s: note: %s (%s) not fetched yet; counted by its declared %s; fetch it with `promoral data pull %s`",
						path, t.Name, t.Data.Hub.ID, spec.Plural(t.Data.Hub.Rows, "row", "rows"), path)
					fmt.Fprintln(cmd.OutOrStdout(), strings.Join(wrap.Clauses(note, 78), "\n  "))
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
