package main

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/spec"
)

func newCache() *cobra.Command {
	var dir string
	cmd := &cobra.Command{
		Use:   "cache",
		Short: "Show the response cache runs share: where it is, its entries and size",
		Long: `Every paid reply is kept in the run's journal and in a response cache all runs share, so a
renamed run folder, or apply --out to a new one, takes the replies from there instead of paying
again (the reply is copied into the new run's journal, which stays the record of what it used).

The cache is the folder settings.cache_dir names, else $` + engine.CacheEnv + `, else promoral in the
user's cache folder. settings.cache: run keeps a run out of it. Any number of applies may use it at
once; ` + "`promoral cache prune`" + ` is safe while they run (a pruned reply is a miss, paid again).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := cacheRoot(dir)
			if err != nil {
				return err
			}
			cs, err := engine.CacheInfo(root)
			if err != nil {
				return fmt.Errorf("reading the shared cache %s: %w", root, err)
			}
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "shared response cache: %s\n", cs.Root)
			fmt.Fprintf(w, "  %s, %s (%s on disk)\n", spec.Plural(cs.Entries, "reply", "replies"), humanBytes(cs.Bytes), humanBytes(cs.Disk))
			if cs.Entries > 0 {
				fmt.Fprintf(w, "  last used: oldest %s, newest %s\n", cs.Oldest.UTC().Format(time.RFC3339), cs.Newest.UTC().Format(time.RFC3339))
			}
			if cs.Temp > 0 {
				fmt.Fprintf(w, "  %d partial file(s) of writes in progress or killed (prune removes those over an hour old)\n", cs.Temp)
			}
			return nil
		},
	}
	cmd.PersistentFlags().StringVar(&dir, "dir", "", "the cache folder (default $"+engine.CacheEnv+", else promoral in the user's cache folder)")
	cmd.AddCommand(newCachePrune(&dir), newCacheImport(&dir))
	return cmd
}

func newCacheImport(dir *string) *cobra.Command {
	return &cobra.Command{
		Use:   "import RUN_DIR...",
		Short: "Copy the usable replies journaled in run folders into the shared cache",
		Long: `import copies every usable reply in each run folder's journal (journal.jsonl) into the shared
cache, so other runs (a renamed folder, apply --out elsewhere, another config asking the same
requests) take them from there instead of paying again: for runs applied before the cache
existed, or with settings.cache: run. Each request's reply is the one the journal serves; a reply
the cache already holds is kept; replies of models that call no endpoint (scripted, none) are left
out, as apply leaves them out. The journals are read, never changed. Safe while applies run.

The cache serves whatever it holds to every later study that asks the same request, so import
only run folders you trust (an edited journal plants its replies). Each import records which
replies came from which folder: ` + "`promoral cache prune --from RUN_DIR`" + ` takes them out again.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			root, err := cacheRoot(*dir)
			if err != nil {
				return err
			}
			w := cmd.OutOrStdout()
			for _, run := range args {
				ci, err := engine.ImportToCache(root, run)
				if err != nil {
					return fmt.Errorf("cache import: %w", err)
				}
				fmt.Fprintf(w, "%s: %s imported into %s, %d already there", run, spec.Plural(ci.Imported, "reply", "replies"), root, ci.Present)
				if ci.Local > 0 {
					fmt.Fprintf(w, ", %d of models that call no endpoint left out", ci.Local)
				}
				if ci.Unusable > 0 {
					fmt.Fprintf(w, ", %d unusable (no answer in the record) left out", ci.Unusable)
				}
				fmt.Fprintf(w, " (%d in its journal)\n", ci.Replies)
			}
			return nil
		},
	}
}

func newCachePrune(dir *string) *cobra.Command {
	var olderThan, from string
	var all bool
	cmd := &cobra.Command{
		Use:   "prune (--older-than AGE | --all | --from RUN_DIR)",
		Short: "Remove the shared cache's replies not used for AGE (e.g. 30d, 2w, 12h), all of them, or those imported from a run folder",
		Long: `prune removes the replies of the shared cache that no run has used (stored or read) for AGE
(a number of days, 30d; of weeks, 2w; or a Go duration, 12h or 90m), or every reply with --all,
or with --from the replies ` + "`promoral cache import`" + ` planted from that run folder (those
stored again since by a run that paid for them stay), and partial files left by killed writes.
Only the cache's own files are removed. Runs' journals are not touched: a run folder still holds
every reply it used. Safe while applies run: a reply pruned under one is a miss, and is paid
again.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			set := 0
			for _, on := range []bool{all, olderThan != "", from != ""} {
				if on {
					set++
				}
			}
			if set != 1 {
				return errors.New("cache prune needs one of --older-than AGE (e.g. 30d or 2w), --all or --from RUN_DIR")
			}
			root, err := cacheRoot(*dir)
			if err != nil {
				return err
			}
			if from != "" {
				n, freed, err := engine.PruneImported(root, from)
				if err != nil {
					return fmt.Errorf("pruning the shared cache %s: %w (%s removed before the error)", root, err, spec.Plural(n, "reply", "replies"))
				}
				fmt.Fprintf(cmd.OutOrStdout(), "removed %s, %s (imported from %s) from %s\n", spec.Plural(n, "reply", "replies"), humanBytes(freed), from, root)
				return nil
			}
			var before time.Time
			if !all {
				age, err := parseAge(olderThan)
				if err != nil {
					return err
				}
				before = time.Now().Add(-age)
			}
			n, freed, err := engine.PruneCache(root, before)
			if err != nil {
				return fmt.Errorf("pruning the shared cache %s: %w (%s removed before the error)", root, err, spec.Plural(n, "reply", "replies"))
			}
			what := "all replies"
			if !all {
				what = "replies not used for " + olderThan
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed %s, %s (%s) from %s\n", spec.Plural(n, "reply", "replies"), humanBytes(freed), what, root)
			return nil
		},
	}
	cmd.Flags().StringVar(&olderThan, "older-than", "", "remove replies not used for this long: a number of days (30d), of weeks (2w) or a Go duration (12h, 90m)")
	cmd.Flags().BoolVar(&all, "all", false, "remove every reply")
	cmd.Flags().StringVar(&from, "from", "", "remove the replies cache import copied from this run folder")
	return cmd
}

func cacheRoot(dir string) (string, error) {
	if dir != "" {
		return dir, nil
	}
	return engine.DefaultCacheDir()
}

// parseAge reads 30d, 2w or a Go duration.
func parseAge(s string) (time.Duration, error) {
	bad := fmt.Errorf("--older-than %q: give a number of days (30d), weeks (2w) or a Go duration (12h, 90m)", s)
	unit := time.Duration(0)
	switch {
	case strings.HasSuffix(s, "d"):
		unit = 24 * time.Hour
	case strings.HasSuffix(s, "w"):
		unit = 7 * 24 * time.Hour
	}
	var d time.Duration
	if unit != 0 {
		n, err := strconv.ParseFloat(s[:len(s)-1], 64)
		if err != nil {
			return 0, bad
		}
		d = time.Duration(n * float64(unit))
	} else {
		var err error
		if d, err = time.ParseDuration(s); err != nil {
			return 0, bad
		}
	}
	if d <= 0 {
		return 0, bad
	}
	return d, nil
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d bytes", n)
}
