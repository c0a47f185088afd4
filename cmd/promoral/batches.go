package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/promoral/promoral/pipeline/batch"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/providers"
)

func newBatches() *cobra.Command {
	var (
		out    string
		cancel bool
		local  bool
	)
	cmd := &cobra.Command{
		Use:   "batches RUN",
		Short: "Show a run's provider batch jobs and their progress; --cancel stops the ones in flight",
		Long: `Show the provider batch jobs of a run (apply --batch, or models with limits.mode: batch)
from its batches.jsonl: each job's provider id, model, requests, when it was submitted and
its state. Jobs still in flight are asked for their progress with the key named in the
record (from the environment or .env); --local shows only what the record says.

RUN is a run folder or a run file (its output folder, or --out).

--cancel asks the providers to stop every job in flight. Lines a job answered before it
stopped are kept; the next apply ingests them and sends the rest again. Stop a running
apply first (Ctrl-C): its jobs stay in flight, and an apply that is running would send
cancelled lines again at once.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := runDir(args[0], out)
			if err != nil {
				return err
			}
			f := batch.NewFile(dir)
			jobs, err := f.Read()
			if err != nil {
				return err
			}
			if len(jobs) == 0 {
				fmt.Fprintf(cmd.OutOrStdout(), "no batch jobs recorded in %s\n", dir)
				return nil
			}
			if cancel && applyRunning(dir) {
				return errors.New("an apply is running on " + dir + ": stop it first (Ctrl-C; its jobs stay in flight), then cancel")
			}
			ctx := cmd.Context()
			clients := map[string]llm.Batcher{}
			var notes []string
			client := func(j *batch.Job) llm.Batcher {
				k := j.Provider + "|" + j.BaseURL + "|" + j.KeyEnv
				if b, ok := clients[k]; ok {
					return b
				}
				b, note := batchClient(j)
				if note != "" {
					notes = append(notes, note)
				}
				clients[k] = b
				return b
			}
			states := map[*batch.Job]*llm.BatchState{}
			for _, j := range jobs {
				if local || j.Status != batch.StatusInFlight {
					continue
				}
				b := client(j)
				if b == nil {
					continue
				}
				if cancel && !j.Cancelled {
					if err := b.CancelBatch(ctx, j.ID); err != nil {
						notes = append(notes, fmt.Sprintf("job %s: cancel failed: %v", j.ID, err))
					} else if err := f.Append(&batch.Entry{T: batch.EntryCancel, Batch: j.Name, ID: j.ID}); err != nil {
						return err
					} else {
						j.Cancelled = true
					}
				}
				st, err := b.BatchStatus(ctx, j.ID)
				if err != nil {
					notes = append(notes, fmt.Sprintf("job %s: %v", j.ID, err))
					continue
				}
				states[j] = st
			}
			printJobs(cmd.OutOrStdout(), jobs, states, time.Now())
			for _, n := range notes {
				fmt.Fprintln(cmd.OutOrStdout(), "note:", n)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&out, "out", "", "the run folder, when RUN is a run file with another output")
	cmd.Flags().BoolVar(&cancel, "cancel", false, "ask the providers to stop every job in flight")
	cmd.Flags().BoolVar(&local, "local", false, "only the record: no network, no key")
	return cmd
}

// runDir resolves RUN: a folder, or a run file whose output folder it names.
func runDir(arg, out string) (string, error) {
	if out != "" {
		return out, nil
	}
	if fi, err := os.Stat(arg); err == nil && fi.IsDir() {
		return arg, nil
	}
	st, err := loadStudy(arg)
	if err != nil {
		return "", err
	}
	return st.OutDir, nil
}

// applyRunning reports whether a process holds the run's journal lock.
func applyRunning(dir string) bool {
	fd, err := os.Open(filepath.Join(dir, "journal.jsonl"))
	if err != nil {
		return false
	}
	defer fd.Close()
	if err := syscall.Flock(int(fd.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		return true
	}
	syscall.Flock(int(fd.Fd()), syscall.LOCK_UN)
	return false
}

// batchClient connects to a job's provider with the key the record names.
func batchClient(j *batch.Job) (llm.Batcher, string) {
	dotenv, _ := providers.LoadDotEnv(".env")
	key := ""
	if j.KeyEnv != "" {
		var ok bool
		if key, ok = providers.LookupKey(j.KeyEnv, dotenv); !ok {
			return nil, fmt.Sprintf("set %s to see the progress of %s jobs", j.KeyEnv, j.Provider)
		}
	}
	p, err := providers.New(providers.Config{Provider: j.Provider, BaseURL: j.BaseURL, APIKey: key, KeyVar: j.KeyEnv, Timeout: time.Minute})
	if err != nil {
		return nil, fmt.Sprintf("%s: %v", j.Provider, err)
	}
	b, ok := p.(llm.Batcher)
	if !ok {
		return nil, j.Provider + " has no batch API"
	}
	return b, ""
}

func printJobs(w io.Writer, jobs []*batch.Job, states map[*batch.Job]*llm.BatchState, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "job\tprovider id\tmodel\trequests\tsubmitted\tstatus\tprogress\t")
	open := 0
	for _, j := range jobs {
		status, progress := j.Status, ""
		switch j.Status {
		case batch.StatusEnded:
			status = j.State
			progress = fmt.Sprintf("%d ok, %d failed", j.OK, j.Failed)
		case batch.StatusInFlight:
			open++
			status = "in flight"
			if st := states[j]; st != nil {
				status = st.State
				if st.Total > 0 {
					progress = fmt.Sprintf("%d/%d done, %d failed", st.Done, st.Total, st.Failed)
				}
			}
		case batch.StatusSubmitting:
			open++
			status = "submitting (the next apply looks for it by name)"
		case batch.StatusAbandoned:
			status = "not created"
			progress = j.Note
		}
		if j.Cancelled && j.Status != batch.StatusEnded {
			status += ", cancel requested"
		}
		id := j.ID
		if id == "" {
			id = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s ago\t%s\t%s\t\n", j.Name, id, j.Model, len(j.Lines),
			now.Sub(j.Submitted).Round(time.Second), status, progress)
	}
	tw.Flush()
	if open > 0 {
		fmt.Fprintf(w, "\n%d job(s) not ended: the next apply re-attaches to them and journals their replies\n", open)
	}
}
