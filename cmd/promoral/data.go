package main

import (
	"fmt"
	"io"

	"sync"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/vbauerster/mpb/v8"
	"github.com/vbauerster/mpb/v8/decor"

	"github.com/promoral/promoral/pipeline/dataset"
	"github.com/promoral/promoral/pipeline/hub"
	"github.com/promoral/promoral/pipeline/spec"
)

func newData() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "data",
		Short: "Fetch and list the datasets studies name by Hugging Face hub reference",
		Long: `Datasets a task names by hub reference (dataset: {hub: {id, config, split, revision}})
are fetched into a cache shared by all studies, pinned in the run's lock file
(<run>.lock.yaml beside it) and verified at every load.

The cache is $PROMORAL_DATA_DIR, else promoral/datasets in the user's cache folder.
The hub is $HF_ENDPOINT (default https://huggingface.co); gated datasets need
$HF_TOKEN (or the token file the hub's CLI writes, $HF_TOKEN_PATH) after their
terms are accepted on the hub.`,
	}
	cmd.AddCommand(newDataPull(), newDataList())
	return cmd
}

func newDataPull() *cobra.Command {
	var update []string
	cmd := &cobra.Command{
		Use:   "pull CONFIG",
		Short: "Fetch every hub dataset a study reads into the cache, and write or verify its lock file",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			prog, wait := dataProgress(cmd.ErrOrStderr())
			st, err := loadStudyWith(args[0], spec.LoadOptions{Fetch: true, NeedData: true, Update: update, Progress: prog, Ctx: cmd.Context()})
			wait()
			if err != nil {
				return err
			}
			known := map[string]bool{}
			for _, p := range spec.DataPlan(st) {
				known[p.Task] = true
			}
			for _, u := range update {
				if !known[u] {
					return fmt.Errorf("--update %s: no task of %s reads a dataset by hub reference by that name", u, args[0])
				}
			}
			out := cmd.OutOrStdout()
			plan := spec.DataPlan(st)
			if len(plan) == 0 {
				say(out, "%s reads no dataset by hub reference: nothing to fetch", args[0])
				return nil
			}
			for _, p := range plan {
				fmt.Fprintln(out, p.String())
			}
			fmt.Fprintf(out, "cache %s; lock %s\n", hub.CacheDir(), hub.LockPath(st.File))
			return nil
		},
	}
	cmd.Flags().StringSliceVar(&update, "update", nil, "resolve this task's dataset again and pin what the hub serves now (after an upstream change), replacing its lock entry; repeatable")
	return cmd
}

func newDataList() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List the cached datasets: id, split, commit, size and licence",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := hub.CacheDir()
			metas, err := hub.List(dir)
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "cache %s: %s\n", dir, spec.Plural(len(metas), "dataset", "datasets"))
			if len(metas) == 0 {
				return nil
			}
			tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "dataset\tconfig\tsplit\tcommit\tfiles\tsize\tlicence\t")
			for _, m := range metas {
				var size int64
				for _, f := range m.Files {
					size += f.Size
				}
				commit := m.Commit
				if len(commit) > 12 {
					commit = commit[:12]
				}
				lic := m.Licence
				if lic == "" {
					lic = "(not declared)"
				}
				if m.Gated {
					lic += ", gated"
				}
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t\n", m.ID, dash(m.Config), dash(m.Split), commit, len(m.Files), spec.Bytes(size), lic)
			}
			return tw.Flush()
		},
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// dataProgress follows downloads: bars on a terminal, a line per file
// otherwise. wait ends the bars.
func dataProgress(w io.Writer) (dataset.Progress, func()) {
	if !isTerminal(w) {
		return lineProgress{w}, func() {}
	}
	var once sync.Once
	var p *mpb.Progress
	bp := &barProgress{start: func() *mpb.Progress {
		once.Do(func() { p = mpb.New(mpb.WithOutput(w), mpb.WithRefreshRate(150*time.Millisecond)) })
		return p
	}}
	return bp, func() {
		if p != nil {
			p.Wait()
		}
	}
}

type lineProgress struct{ w io.Writer }

func (l lineProgress) Start(label string, size, have int64) (func(int), func(error)) {
	from := ""
	if have > 0 {
		from = fmt.Sprintf(", resuming at %s", spec.Bytes(have))
	}
	fmt.Fprintf(l.w, "promoral: fetching %s (%s%s)\n", label, sizeOrUnknown(size), from)
	return func(int) {}, func(err error) {
		if err == nil {
			fmt.Fprintf(l.w, "promoral: fetched %s\n", label)
		}
	}
}

func sizeOrUnknown(n int64) string {
	if n <= 0 {
		return "size unknown"
	}
	return spec.Bytes(n)
}

type barProgress struct{ start func() *mpb.Progress }

func (b *barProgress) Start(label string, size, have int64) (func(int), func(error)) {
	p := b.start()
	bar := p.New(size, mpb.BarStyle().Lbound("[").Rbound("]"), mpb.BarWidth(30),
		mpb.PrependDecorators(decor.Name(fit(label, 40)+" ")),
		mpb.AppendDecorators(decor.Counters(decor.SizeB1000(0), "% .1f / % .1f")))
	if have > 0 {
		bar.SetCurrent(have)
	}
	return func(n int) { bar.IncrBy(n) }, func(err error) {
		if err != nil {
			bar.Abort(false)
			return
		}
		bar.SetTotal(-1, true)
	}
}
