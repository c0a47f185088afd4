// Command promoral runs prompting-strategy studies of LLM moral reasoning
// and safety, written as YAML: `promoral apply configs/paper.yaml`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/promoral/promoral"
	"github.com/promoral/promoral/internal/wrap"

	_ "github.com/promoral/promoral/metrics"                     // registers the metric kinds
	_ "github.com/promoral/promoral/pipeline/dataset/parquetfmt" // reads Parquet datasets and pilots
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/yamlstrict"
	_ "github.com/promoral/promoral/stages"
)

// Exit codes, as docs/running.md documents them.
const (
	// exitFailed: nothing could run or the run could not finish: a bad
	// config, a missing key, an unwritable folder, a journal that cannot
	// be written.
	exitFailed = 1
	// exitWork: plan --detailed-exitcode found calls to make.
	exitWork = 2
	// exitErrored: apply finished and switched in its outputs, but some
	// cases errored (the summary lists them by class; apply again retries
	// them).
	exitErrored = 3
	// exitCapped: apply stopped at its spend cap (--max-cost,
	// settings.max_cost) before every case finished; nothing was written
	// but the journal, and apply again continues.
	exitCapped = 4
	// exitInterrupted: Ctrl-C or SIGTERM; nothing was written but the
	// journal, and apply again resumes.
	exitInterrupted = 130
)

// exitError carries an exit code through cobra; err may be nil when
// everything to say has been said.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit status %d", e.code)
	}
	return e.err.Error()
}

type abortKey struct{}

// abortContext is done on the second interrupt: apply then cuts off the
// calls it was letting finish.
func abortContext(ctx context.Context) context.Context {
	if a, ok := ctx.Value(abortKey{}).(context.Context); ok {
		return a
	}
	return context.Background()
}

// forceExitAfter is how long apply may take, after the second interrupt,
// to journal the calls it cut off and print its summary.
const forceExitAfter = 5 * time.Second

// draining is set by apply while it handles interrupts itself; any other
// command exits at the second one.
var draining atomic.Bool

// interrupts turns Ctrl-C and SIGTERM into two stages: the first cancels the
// returned context (apply stops starting calls and lets those in flight
// finish), the second cancels the abort context (apply cuts them off and
// exits within forceExitAfter; any other command exits at once), a third
// exits whatever is happening.
func interrupts() (context.Context, func()) {
	sigs := make(chan os.Signal, 3)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	soft, softStop := context.WithCancel(context.Background())
	hard, hardStop := context.WithCancel(context.Background())
	go func() {
		<-sigs
		softStop()
		<-sigs
		hardStop()
		if !draining.Load() {
			os.Exit(exitInterrupted)
		}
		// apply cuts its calls off, journals them and prints its summary;
		// whatever holds it up, the process ends soon after.
		select {
		case <-sigs:
		case <-time.After(forceExitAfter):
			fmt.Fprintf(os.Stderr, "\npromoral: still running %s after the second interrupt: exiting now (the journal holds every reply received)\n", forceExitAfter)
		}
		os.Exit(exitInterrupted)
	}()
	return context.WithValue(soft, abortKey{}, hard), func() {
		signal.Stop(sigs)
		softStop()
		hardStop()
	}
}

func main() {
	// Go's default GOGC (100): results stream to disk, so the live heap is
	// small; a heap allowed to triple (GOGC 200) takes about half as much
	// peak RSS again (100,000 scale-study cases: 338 MB against 220) to save
	// 6% of CPU.
	// Other verbs (view, report, diff, merge) hold what they read: a soft
	// ceiling well under a gigabyte, which apply lowers to fit its study.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(640 << 20)
	}
	ctx, stop := interrupts()
	defer stop()
	endProfile := profileCPU()
	root := newRoot()
	err := root.ExecuteContext(ctx)
	endProfile()
	if err == nil {
		return
	}
	code := exitFailed
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	}
	if err != nil {
		// An error fits the terminal as every other message does: each
		// line wraps between clauses, a long path on a line of its own.
		fmt.Fprint(os.Stderr, wrap.Block("promoral: "+err.Error(), 80)+"\n")
	}
	os.Exit(code)
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "promoral",
		Short:         "Run prompting-strategy studies of LLM moral reasoning and safety, written as YAML",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       promoral.Version,
	}
	root.AddCommand(newApply(), newPlan(), newDiff(), newValidate(), newSchema(), newGraph(), newReport(), newView(), newBatches(), newMerge(), newCache(), newData(), newDocs(), newExport())
	wrapHelp(root)
	root.AddCommand(newPublish()) // the help templates set on root apply to it too
	return root
}

func loadStudy(arg string) (*spec.Study, error) {
	return loadStudyWith(arg, spec.LoadOptions{})
}

// loadStudyWith loads a run file, or a built-in study by name.
func loadStudyWith(arg string, o spec.LoadOptions) (*spec.Study, error) {
	path, err := resolveConfig(arg, os.Stderr)
	if err != nil {
		return nil, err
	}
	st, err := spec.LoadWith(path, o)
	if err != nil {
		var ds yamlstrict.Diags
		if errors.As(err, &ds) {
			return nil, fmt.Errorf("%s in the config:\n%s", spec.Plural(len(ds), "problem", "problems"), ds.Error())
		}
		return nil, err
	}
	if path != arg {
		// A built-in study's files live in the user's cache; its outputs
		// belong where the user ran it, as out/<name>.
		st.OutDir = filepath.Join("out", st.Run.Name)
	}
	return st, nil
}

// fitMemoryLimit sets apply's soft ceiling for a study of this many cases
// over this many items, inFlight of them at once in batch mode (apply
// streams its rows, so its live heap is small; other verbs keep the 640 MiB
// set in main). It holds the heap near the live set where GOGC alone lets
// it double. The live set is about 50 MB whatever the size (row groups
// being built, rows on their way to the writers, encoders), and grows by
// about 60 bytes a case (the journal's index and the footers of the Parquet
// files while the cases run, the rows read back while scoring) and by about
// 80 bytes an item (the items and their ids, held all run): 1,000,000
// scale-study cases over 250,000 items peak at about 115 MB live, over
// 1,000,000 items at about 190. The ceiling, 64 MiB and 80 bytes a case and
// 96 an item, stays at least 32 MiB over that, more the
// larger the study (a smaller gap costs the collector more CPU); and grows by
// 32 KiB a case batch mode keeps in flight (about 22 KB each in the paper
// run on fakes), so the collector never runs without end; below 160 MiB the
// collector's own pacing (GOGC) decides. GOMEMLIMIT replaces it.
func fitMemoryLimit(cases, items, inFlight int) {
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(max(160<<20, 64<<20+80*int64(cases)+96*int64(items)+32<<10*int64(inFlight)))
}
