package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/promoral/promoral/pipeline"
)

func newDiff() *cobra.Command {
	var out string
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Compare two configs (files or git revisions like main:configs/paper.yaml) or two run folders",
		Long: `Compare two configs semantically: models, tasks, strategies (stages, edges, parameters),
the rendered prompts on a fixed item as a unified diff, the matrix cells, and the existing
results the change invalidates (cases that would be re-run against the journal, and their
cost). OLD and NEW are files, or git revisions written REV:PATH.

Given two run folders, compare their results instead: every metric's change, and per
model x strategy x task the paired accuracy difference with its bootstrap interval,
McNemar's exact p (Holm-adjusted) and the items that flipped.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			if isRunDir(args[0]) && isRunDir(args[1]) {
				lines, err := pipeline.RunDiff(args[0], args[1], 1)
				if err != nil {
					return err
				}
				fmt.Fprintln(w, strings.Join(lines, "\n"))
				return nil
			}
			old, cleanOld, err := loadRevision(args[0])
			if err != nil {
				return err
			}
			defer cleanOld()
			new, cleanNew, err := loadRevision(args[1])
			if err != nil {
				return err
			}
			defer cleanNew()
			d := pipeline.DiffStudies(old, new)
			if !d.Changed {
				fmt.Fprintln(w, "no changes")
			} else {
				fmt.Fprintln(w, strings.Join(d.Lines, "\n"))
			}
			dir := out
			if dir == "" {
				dir = new.OutDir
			}
			p, err := pipeline.MakePlan(new, dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "\nagainst the journal in %s:\n", dir)
			for _, r := range append(p.Models, p.Total) {
				fmt.Fprintf(w, "  %-18s %d of %d cases to run (%d already answered), %s new calls, $%.2f–%.2f\n",
					r.Model, r.Cases-r.CasesDone, r.Cases, r.CasesDone, span(r.CallsBest, r.CallsWorst), r.CostBest, r.CostWorst)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "run folder whose journal tells which results the change invalidates (default: NEW's output)")
	return cmd
}

func isRunDir(p string) bool {
	st, err := os.Stat(filepath.Join(p, "results.parquet"))
	return err == nil && !st.IsDir()
}

// loadRevision loads a config from a file, or from a git revision written
// REV:PATH (the repository's tree at REV is extracted to a temporary folder
// so the config's strategies, tasks, prompts and data come from REV too).
func loadRevision(arg string) (*pipeline.Study, func(), error) {
	nothing := func() {}
	if _, err := os.Stat(arg); err == nil || !strings.Contains(arg, ":") {
		st, err := loadStudy(arg)
		return st, nothing, err
	}
	rev, path, _ := strings.Cut(arg, ":")
	top, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		return nil, nothing, fmt.Errorf("%s: not a file, and not in a git repository to read revision %q from", arg, rev)
	}
	root := strings.TrimSpace(string(top))
	tmp, err := os.MkdirTemp("", "promoral-diff-")
	if err != nil {
		return nil, nothing, err
	}
	clean := func() { os.RemoveAll(tmp) }
	archive := exec.Command("git", "-C", root, "archive", "--format=tar", rev)
	untar := exec.Command("tar", "-x", "-C", tmp)
	pipe, err := archive.StdoutPipe()
	if err != nil {
		clean()
		return nil, nothing, err
	}
	untar.Stdin = pipe
	var stderr strings.Builder
	archive.Stderr = &stderr
	if err := untar.Start(); err != nil {
		clean()
		return nil, nothing, err
	}
	if err := archive.Run(); err != nil {
		untar.Wait()
		clean()
		return nil, nothing, fmt.Errorf("git archive %s: %v %s", rev, err, strings.TrimSpace(stderr.String()))
	}
	if err := untar.Wait(); err != nil {
		clean()
		return nil, nothing, err
	}
	st, err := loadStudy(filepath.Join(tmp, path))
	if err != nil {
		clean()
		return nil, nothing, fmt.Errorf("%s: %w", arg, err)
	}
	return st, clean, nil
}
