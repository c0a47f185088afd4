package main

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"

	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/pipeline/scoring"
	"github.com/promoral/promoral/pipeline/spec"
)

func newDiff() *cobra.Command {
	var (
		out     string
		changed bool
	)
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "Compare two configs (files or git revisions like main:configs/paper.yaml) or two run folders",
		Long: `Compare two configs semantically: models, tasks, strategies (stages, edges, parameters),
the rendered prompts on a fixed item as a unified diff, the matrix cells, the settings and the
metric blocks; then the change's effect on the numbers, both configs re-scored from the
journal without a model call; and what the change costs: the cases it invalidates or adds,
apart from work neither config has done yet. OLD and NEW are files, or git revisions written
REV:PATH.

Given two run folders, compare their results instead: every metric row that changed (keyed
on its block), and per model x strategy x task the paired accuracy difference with its
bootstrap interval (seeded with the runs' settings.seed), McNemar's exact p (Holm-adjusted)
and the items that flipped, each run's answers counted under its own policies.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			if err := checkDiffArgs(args); err != nil {
				return err
			}
			if isRunDir(args[0]) && isRunDir(args[1]) {
				c, err := review.CompareRuns(args[0], args[1], review.RunDiffOptions{OnlyChanged: changed})
				if err != nil {
					return err
				}
				fmt.Fprintln(w, strings.Join(c.Lines(changed), "\n"))
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
			d := review.DiffStudies(old, new)
			if !d.Changed {
				fmt.Fprintln(w, "no changes to the config")
			} else {
				fmt.Fprintln(w, strings.Join(d.Lines, "\n"))
			}
			dir := out
			if dir == "" {
				dir = new.OutDir
			}
			shown := displayPath(dir)
			journal := filepath.Join(dir, "journal.jsonl")
			pending := pendingNames(old, new)
			if st, err := os.Stat(journal); err != nil || st.Size() == 0 {
				fmt.Fprintf(w, "\nno journal in %s: nothing to re-score, and every case is still to run\n", shown)
			} else if len(pending) > 0 {
				// A task whose hub data is not fetched has stand-in items
				// (placeholder text): neither its prompts nor its subsets
				// can be placed, so no number of it could be compared.
				fmt.Fprintf(w, "\neffect on the numbers: not re-scored, because the data of %s is not fetched yet (promoral data pull %s fetches it)\n",
					strings.Join(pending, ", "), pullPath(args[1]))
			} else {
				oldSc, missO, err := scoring.ScoreFromJournal(old, journal)
				if err != nil {
					return fmt.Errorf("re-scoring the old config: %w", err)
				}
				newSc, missN, err := scoring.ScoreFromJournal(new, journal)
				if err != nil {
					return fmt.Errorf("re-scoring the new config: %w", err)
				}
				ch := scoring.DiffScores(oldSc, newSc)
				fmt.Fprintf(w, "\neffect on the numbers, both configs re-scored from the journal in %s (no model call): %d rows changed\n", shown, len(ch))
				for _, c := range ch {
					fmt.Fprintln(w, "  "+c.Describe())
				}
				if missO+missN > 0 {
					fmt.Fprintf(w, "  (cases without a journaled reply, whose cells are incomplete: %d under the old config, %d under the new)\n", missO, missN)
				}
			}
			cp, err := review.MakeChangePlan(old, new, dir)
			if err != nil {
				return err
			}
			fmt.Fprintf(w, "\nwhat the change costs against the journal in %s: %d cases it invalidates, %d it adds\n", shown, cp.Invalidated, cp.Added)
			for _, r := range append(cp.Models, cp.Total) {
				what := fmt.Sprintf("%d cases to run", r.Cases)
				if r.Cases == 0 && r.Model != "total" {
					what = "judging" // a judge model's calls on the cases it judges
				}
				fmt.Fprintf(w, "  %-18s %s, %s new calls, $%s\n", r.Model, what, span(r.CallsBest, r.CallsWorst), costRange(r))
			}
			if cp.SharedCases > 0 {
				fmt.Fprintf(w, "  free: %s finish on %s in the shared cache %s, not yet in this journal (apply copies them there and pays nothing for them)\n",
					spec.Plural(cp.SharedCases, "case", "cases"), spec.Plural(cp.SharedCalls, "reply", "replies"), cp.SharedCache)
			}
			if p := cp.Pending; p.Cases > 0 {
				fmt.Fprintf(w, "  not the change's: %d cases neither config has answered yet (%s calls, $%s); plan shows all remaining work\n",
					p.Cases, span(p.CallsBest, p.CallsWorst), costRange(p))
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "run folder whose journal re-scores both configs and tells what the change invalidates (default: NEW's output)")
	cmd.Flags().BoolVar(&changed, "changed", false, "run folders: show only the cells where something changed")
	return cmd
}

// pendingNames lists, sorted, the tasks of either study whose hub data is
// not fetched yet, as "task (hub id)".
func pendingNames(studies ...*spec.Study) []string {
	seen := map[string]bool{}
	var out []string
	for _, st := range studies {
		for _, t := range st.PendingData() {
			n := t.Name + " (" + t.Data.Hub.ID + ")"
			if !seen[n] {
				seen[n] = true
				out = append(out, n)
			}
		}
	}
	sort.Strings(out)
	return out
}

// pullPath is the config file data pull reads for a diff argument: the
// path of a REV:PATH.
func pullPath(arg string) string {
	if _, err := os.Stat(arg); err == nil || !strings.Contains(arg, ":") {
		return arg
	}
	_, path, _ := strings.Cut(arg, ":")
	return path
}

// displayPath is a path relative to the working directory when it lies
// below it, else as given.
func displayPath(p string) string {
	wd, err := os.Getwd()
	if err != nil {
		return p
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	if rel, err := filepath.Rel(wd, abs); err == nil && !strings.HasPrefix(rel, "..") {
		return rel
	}
	return p
}

// checkDiffArgs says what is missing when an argument is neither a config
// nor a finished run folder.
func checkDiffArgs(args []string) error {
	runs := isRunDir(args[0]) || isRunDir(args[1])
	for _, a := range args {
		st, err := os.Stat(a)
		switch {
		case err == nil && st.IsDir() && !isRunDir(a):
			return fmt.Errorf("%s: a folder without results.parquet: not a finished run folder (apply its config first, or name a config file)", a)
		case err != nil && runs:
			return fmt.Errorf("%s: no such run folder (the other argument is one): check the path; a run folder holds results.parquet", a)
		case err != nil && !strings.Contains(a, ":") && !strings.HasSuffix(a, ".yaml") && !strings.HasSuffix(a, ".yml"):
			return fmt.Errorf("%s: no such run folder or config file: check the path (a run folder holds results.parquet; a config is a .yaml file or REV:PATH)", a)
		}
	}
	return nil
}

func isRunDir(p string) bool {
	st, err := os.Stat(filepath.Join(p, "results.parquet"))
	return err == nil && !st.IsDir()
}

// loadRevision loads a config from a file, or from a git revision written
// REV:PATH (the repository's tree at REV is extracted to a temporary folder
// so the config's strategies, tasks, prompts and data come from REV too).
func loadRevision(arg string) (*spec.Study, func(), error) {
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
		// Say where the problems are as REV:PATH, not in the temporary
		// folder that no longer exists.
		return nil, nothing, errors.New(strings.ReplaceAll(err.Error(), tmp+string(filepath.Separator), rev+":"))
	}
	return st, clean, nil
}
