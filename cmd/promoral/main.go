// Command promoral runs prompting-strategy studies of LLM moral reasoning
// and safety, written as YAML: `promoral apply configs/paper.yaml`.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/promoral/promoral/pipeline"
	_ "github.com/promoral/promoral/stages"
)

// exitError carries an exit code through cobra.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }

func main() {
	// promoral's heap is mostly long-lived results; collecting less often
	// trades a little memory for a lot of CPU on large runs (GOGC still wins).
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(200)
	}
	// A soft ceiling keeps large runs well under a gigabyte: the collector
	// works harder near it instead of letting the heap triple.
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(640 << 20)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	root := newRoot()
	err := root.ExecuteContext(ctx)
	if err == nil {
		return
	}
	code := 1
	var ee *exitError
	if errors.As(err, &ee) {
		code = ee.code
		err = ee.err
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "promoral:", err)
	}
	os.Exit(code)
}

func newRoot() *cobra.Command {
	root := &cobra.Command{
		Use:           "promoral",
		Short:         "Run prompting-strategy studies of LLM moral reasoning and safety, written as YAML",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       pipeline.Version,
	}
	root.AddCommand(newApply(), newPlan(), newDiff(), newValidate(), newSchema(), newGraph(), newReport(), newBatches())
	return root
}

func loadStudy(path string) (*pipeline.Study, error) {
	st, err := pipeline.Load(path)
	if err != nil {
		var ds pipeline.Diags
		if errors.As(err, &ds) {
			return nil, fmt.Errorf("%d problem(s) in the config:\n%s", len(ds), ds.Error())
		}
		return nil, err
	}
	return st, nil
}
