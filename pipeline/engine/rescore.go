package engine

import (
	"context"
	"runtime"
	"strings"
	"sync"

	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/spec"
)

// RescoreFromJournal computes a study's results from the replies a journal
// holds, without a model call and without writing anything: every case is
// walked as apply --offline would walk it, and a request the journal does
// not hold makes its case an error (so its cell is incomplete under the
// default errors: policy). It reads the journal without locking it.
// scoring.ScoreFromJournal scores the results.
func RescoreFromJournal(st *spec.Study, journalPath string) ([]spec.Result, int, error) {
	j, err := journal.OpenReadOnly(journalPath)
	if err != nil {
		return nil, 0, err
	}
	defer j.Close()
	e := NewEngine(st, Options{Offline: true})
	e.journal = j
	e.rows = make(chan CallRow, 1024)
	drained := make(chan struct{})
	go func() {
		for range e.rows {
		}
		close(drained)
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	e.cancel = cancel
	results := make([]spec.Result, st.NumCases())
	cases := make(chan *spec.Case, 64)
	var wg sync.WaitGroup
	for w := 0; w < max(1, runtime.GOMAXPROCS(0)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for c := range cases {
				results[c.Ordinal] = e.runCase(ctx, c)
			}
		}()
	}
	st.EachCase(func(c *spec.Case) bool {
		cases <- c
		return true
	})
	close(cases)
	wg.Wait()
	close(e.rows)
	<-drained
	if f := e.fatal.Load(); f != nil {
		return nil, 0, *f
	}
	misses := 0
	for i := range results {
		if strings.Contains(results[i].Err, ErrOfflineMiss.Error()) {
			misses++
		}
	}
	return results, misses, nil
}
