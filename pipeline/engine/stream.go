package engine

import (
	"math"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

// An apply keeps a case's state only while the case is in flight: a
// finished case is counted into the summary (tally) and its results.parquet
// row goes to the writer (resultSink) at once. Only errored cases wait for
// the end, where they may keep an earlier apply's good row (keepEarlierRows).

// resultSink writes results.parquet rows from one goroutine as cases
// finish, in case order (caseSpool: rows waiting for an earlier case are
// held, and past a bound spilled to disk); order records the case ordinal
// of every row written, in file order, for reading them back. The rows
// taken from an earlier apply (copy) are merged in where their cases fall.
type resultSink struct {
	w     *resultsWriter
	ch    chan sinkRow
	done  chan error
	order []int32
	// copy gives the rows taken from an earlier apply, copied those cases:
	// no row of theirs comes through ch.
	copy    *copySource
	copied  doneSet
	planned int
	dir     string
}

type sinkRow struct {
	ord  int
	vals []any
}

// newResultSink starts the writer of w's rows; dir is the folder of the
// spill file, if one is needed.
func newResultSink(w *resultsWriter, dir string, planned int, copied doneSet, copy *copySource) *resultSink {
	s := &resultSink{w: w, ch: make(chan sinkRow, 1024), done: make(chan error, 1), copy: copy, copied: copied, planned: planned, dir: dir}
	go s.run()
	return s
}

func (s *resultSink) run() {
	var err error
	// copyBelow writes the rows taken from the earlier apply that come
	// before case limit.
	copyBelow := func(limit int) error {
		if s.copy != nil {
			return s.copy.emit(limit, s.w, &s.order)
		}
		return nil
	}
	var skip func(int) bool
	if s.copied != nil {
		skip = s.copied.has
	}
	sp := newCaseSpool(s.dir, s.planned, skip, func(ord int, rows [][]any) error {
		if err := copyBelow(ord); err != nil {
			return err
		}
		s.order = append(s.order, int32(ord))
		return s.w.Append(rows[0]...)
	})
	for r := range s.ch {
		if err == nil {
			err = sp.put(r.ord, [][]any{r.vals})
		}
	}
	if err == nil {
		err = sp.finish()
	}
	sp.close()
	if err == nil {
		err = copyBelow(math.MaxInt)
	}
	if s.copy != nil {
		s.copy.close()
	}
	s.done <- err
}

// put queues a row; close must follow the last.
func (s *resultSink) put(ord int, vals []any) { s.ch <- sinkRow{ord, vals} }

// close waits for every queued row to be written.
func (s *resultSink) close() error {
	close(s.ch)
	return <-s.done
}

// tally is the summary's counts, added up case by case as they finish.
// Costs add up in whole picodollars, so the total does not depend on the
// order in which cases finish.
type tally struct {
	mu                                                    sync.Mutex
	cases, errors, kept, unparsed, truncated, callsCached int
	prompt, completion, thinking                          int
	picoUSD                                               int64
	classes                                               map[string]*classTally
}

type classTally struct {
	cases int
	// first is the ordinal of the class's first case, its example.
	first   int
	example string
}

func newTally() *tally { return &tally{classes: map[string]*classTally{}} }

func (t *tally) add(c *spec.Case, r *spec.Result) {
	class := r.ErrClass
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cases++
	t.callsCached += r.Acct.CachedCalls + r.JudgeAcct.CachedCalls
	t.prompt += r.Acct.PromptTokens
	t.completion += r.Acct.CompletionTokens
	t.thinking += r.Acct.ThinkingTokens
	t.picoUSD += int64((r.Acct.CostUSD + r.JudgeAcct.CostUSD) * 1e12)
	switch {
	case r.Err != "":
		t.errors++
	case r.KeptClass != "":
		t.kept++
		class = r.KeptClass
	case !r.Parsed:
		t.unparsed++
	}
	if r.Acct.Truncated {
		t.truncated++
	}
	if class == "" {
		return
	}
	ct := t.classes[class]
	if ct == nil {
		ct = &classTally{first: -1}
		t.classes[class] = ct
	}
	ct.cases++
	if ct.first < 0 || c.Ordinal < ct.first {
		ct.first, ct.example = c.Ordinal, c.ID()+": "+exampleOf(r)
	}
}

// addCounts counts a good case taken from an earlier apply's rows: its
// tokens, cost, parse and cut-off (cached calls are counted by the caller).
func (t *tally) addCounts(r *spec.Result) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.prompt += r.Acct.PromptTokens
	t.completion += r.Acct.CompletionTokens
	t.thinking += r.Acct.ThinkingTokens
	t.picoUSD += int64((r.Acct.CostUSD + r.JudgeAcct.CostUSD) * 1e12)
	if !r.Parsed {
		t.unparsed++
	}
	if r.Acct.Truncated {
		t.truncated++
	}
}

// addTaken counts the cases taken from an earlier apply (their other
// counts come as their rows go out: addCounts) and their calls, served
// from the journal.
func (t *tally) addTaken(cases, calls int) {
	t.mu.Lock()
	t.cases += cases
	t.callsCached += calls
	t.mu.Unlock()
}

// clone is a copy to add to without changing t.
func (t *tally) clone() *tally {
	t.mu.Lock()
	defer t.mu.Unlock()
	c := &tally{cases: t.cases, errors: t.errors, kept: t.kept, unparsed: t.unparsed, truncated: t.truncated, callsCached: t.callsCached,
		prompt: t.prompt, completion: t.completion, thinking: t.thinking, picoUSD: t.picoUSD, classes: make(map[string]*classTally, len(t.classes))}
	for k, v := range t.classes {
		cv := *v
		c.classes[k] = &cv
	}
	return c
}

// fill writes the counts into a summary.
func (t *tally) fill(sum *Summary) {
	t.mu.Lock()
	defer t.mu.Unlock()
	sum.Cases, sum.Errors, sum.Kept, sum.Unparsed, sum.Truncated = t.cases, t.errors, t.kept, t.unparsed, t.truncated
	sum.CallsCached = t.callsCached
	sum.PromptTokens, sum.CompletionTokens, sum.ThinkingTokens = t.prompt, t.completion, t.thinking
	sum.CostUSD = float64(t.picoUSD) / 1e12
	sum.ErrorClasses = sum.ErrorClasses[:0]
	for class, ct := range t.classes {
		sum.ErrorClasses = append(sum.ErrorClasses, manifest.ClassCount{Class: class, Cases: ct.cases, Example: ct.example})
	}
	sort.Slice(sum.ErrorClasses, func(i, j int) bool {
		a, b := sum.ErrorClasses[i], sum.ErrorClasses[j]
		if a.Cases != b.Cases {
			return a.Cases > b.Cases
		}
		return a.Class < b.Class
	})
}

// doneSet marks the cases that finished, one bit each.
type doneSet []uint64

func newDoneSet(n int) doneSet { return make(doneSet, (n+63)/64) }

// mark is safe from any goroutine.
func (d doneSet) mark(i int)     { atomic.OrUint64(&d[i/64], 1<<(i%64)) }
func (d doneSet) has(i int) bool { return atomic.LoadUint64(&d[i/64])&(1<<(i%64)) != 0 }
