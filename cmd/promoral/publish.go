package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/promoral/promoral"
	"github.com/promoral/promoral/export/eee"
	"github.com/promoral/promoral/internal/wrap"
	"github.com/promoral/promoral/pipeline/hub"
	"github.com/promoral/promoral/pipeline/providers"
	"github.com/promoral/promoral/pipeline/publish"
	"github.com/promoral/promoral/pipeline/spec"
)

// publishExtras are the outputs other verbs make from a run that a
// publish carries beside the run's own files, when the run folder holds
// them. An export (Every Eval Ever records) or a static viewer bundle
// written into the run folder is added here, with the configs that
// declare its tables to the hub's viewer.
//
// The Every Eval Ever records are made afresh into tmp (the run folder is
// left as it is); they carry the run's finish time, so an unchanged run
// exports the same bytes and a second publish sends nothing.
func publishExtras(dir, tmp string) ([]publish.Extra, error) {
	out := filepath.Join(tmp, "eee")
	if _, err := eee.Export(dir, out, eee.Options{}); err != nil {
		return nil, fmt.Errorf("the Every Eval Ever export of %s: %w", dir, err)
	}
	return []publish.Extra{{
		Local: out,
		Repo:  "eee",
		About: "Every Eval Ever 0.3.0 records: one per model and task, with per-sample files",
	}}, nil
}

func newPublish() *cobra.Command {
	var (
		out     string
		dryRun  bool
		private bool
		message string
		adds    []string
	)
	cmd := &cobra.Command{
		Use:   "publish RUN hf://datasets/ORG/NAME",
		Short: "Put a run on the Hugging Face hub as a dataset, with a card the hub's viewer reads",
		Long: `Put a run on the Hugging Face hub as a dataset: results.parquet, calls.parquet and
metrics.parquet, each declared as a config in the dataset card (README.md) so the hub's
dataset viewer shows it; manifest.json; the metric tables as tables/*.csv; and the report
(report.html, report.md, figures/) under report/ when promoral report has written one.

The token is HF_TOKEN, from the environment or .env, else the hub's token file; it
needs write access. The repository is created (public, or --private) when absent.
Large files go through the hub's large-file store; an object the store already holds
is not sent again, so a publish that was interrupted resumes where it stopped. Files
the hub already holds with the same content are left out, and a publish of an unchanged
run makes no commit. --dry-run lists the files with their sizes and sends nothing.

RUN is a run folder or a run file (its output folder, or --out).`,
		Example: "  promoral publish out/quickstart hf://datasets/my-org/promoral-quickstart\n" +
			"  promoral publish --dry-run out/paper hf://datasets/my-org/paper-run",
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := runDir(args[0], out)
			if err != nil {
				return err
			}
			repo, err := hub.ParseRepo(args[1])
			if err != nil {
				return err
			}
			if repo.Type != "dataset" {
				return fmt.Errorf("publish writes a dataset repository: write hf://datasets/%s", repo.ID)
			}
			if applyRunning(dir) {
				return errors.New("an apply is running on " + dir + ": publish when it has finished")
			}
			tmp, err := os.MkdirTemp("", "promoral-publish-")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			extras, err := publishExtras(dir, tmp)
			if err != nil {
				return err
			}
			for _, a := range adds {
				local, repoPath, ok := strings.Cut(a, "=")
				if !ok {
					repoPath = filepath.Base(filepath.Clean(local))
				}
				extras = append(extras, publish.Extra{Local: local, Repo: repoPath})
			}
			plan, err := publish.New(dir, repo, extras)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			if dryRun {
				head := fmt.Sprintf("publish %s to %s would send %s, %s:", dir, repo, spec.Plural(len(plan.Files), "file", "files"), sizeWithBytes(plan.Size()))
				fmt.Fprintln(w, wrap.Indent(head, "", "  ", 80))
				listFiles(w, plan.Files)
				fmt.Fprintln(w, wrap.Indent("Files the hub already holds with the same content are left out when it runs; nothing was sent.", "", "", 80))
				return nil
			}
			c := hub.FromEnv()
			if c.TokenFrom != "HF_TOKEN" {
				env, err := providers.LoadDotEnv(".env")
				if err != nil {
					return err
				}
				if t := strings.TrimSpace(env["HF_TOKEN"]); t != "" {
					c.Token, c.TokenFrom = t, "HF_TOKEN in .env"
				}
			}
			msg := message
			if msg == "" {
				msg = "promoral publish " + filepath.Base(filepath.Clean(dir))
			}
			errw := cmd.ErrOrStderr()
			res, err := c.Push(cmd.Context(), repo, plan.Files, hub.PushOptions{
				Message:     msg,
				Description: "Published with promoral " + promoral.Version + ".",
				Private:     private,
				Log:         func(s string) { fmt.Fprintln(errw, wrap.Indent(s, "", "  ", 80)) },
			})
			if errors.Is(err, context.Canceled) {
				return &exitError{code: exitInterrupted, err: err}
			}
			if err != nil {
				return err
			}
			page := repo.Page(c.Endpoint)
			if res.Commit == "" {
				fmt.Fprintln(w, wrap.Indent(fmt.Sprintf("%s already holds these %s: nothing sent, no commit", page, spec.Plural(len(res.Unchanged), "file", "files")), "", "  ", 80))
				return nil
			}
			fmt.Fprintln(w, wrap.Indent(fmt.Sprintf("published %s to %s", dir, page), "", "  ", 80))
			fmt.Fprintf(w, "  %s changed, %d unchanged; %s sent\n", spec.Plural(len(res.Committed), "file", "files"), len(res.Unchanged), sizeWithBytes(res.Bytes))
			if len(res.Present) > 0 {
				fmt.Fprintf(w, "  %s already in the hub's store, not sent again\n", spec.Plural(len(res.Present), "large file was", "large files were"))
			}
			fmt.Fprintf(w, "  commit %s\n", res.Commit)
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "run folder, when RUN is a run file whose output folder moved")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "list the files a publish would send, with their sizes; send nothing")
	cmd.Flags().BoolVar(&private, "private", false, "create the repository private (when it does not exist yet)")
	cmd.Flags().StringVarP(&message, "message", "m", "", "the commit's message (default: promoral publish RUN)")
	cmd.Flags().StringArrayVar(&adds, "add", nil, "also send a file or folder, as LOCAL or LOCAL=PATH_IN_REPO (repeatable)")
	return cmd
}

// listFiles prints files with their sizes, within 80 columns: the size,
// then the path; a path too long goes on over the next lines, broken after
// a '/' where it can be.
func listFiles(w io.Writer, files []*hub.Upload) {
	const indent, room = 16, 80 - 16
	for _, f := range files {
		lines := breakPath(f.Path, room)
		fmt.Fprintf(w, "  %12s  %s\n", commas(f.Size), lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(w, "%*s%s\n", indent, "", l)
		}
	}
}

func breakPath(p string, room int) []string {
	var out []string
	for len(p) > room {
		cut := strings.LastIndex(p[:room], "/") + 1
		if cut <= 0 {
			cut = room
		}
		out = append(out, p[:cut])
		p = p[cut:]
	}
	return append(out, p)
}

func sizeWithBytes(n int64) string {
	if n < 1000 {
		return spec.Plural(int(n), "byte", "bytes")
	}
	return fmt.Sprintf("%s (%s bytes)", spec.Bytes(n), commas(n))
}

func commas(n int64) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
