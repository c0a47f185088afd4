package engine

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/expr-lang/expr"
	"golang.org/x/sync/singleflight"

	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/secret"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/transport"
	"github.com/promoral/promoral/runfolder/manifest"
)

// Direct is a transport.Doer that makes exactly one attempt; tests and the
// scripted provider use it. It announces no intent (Sending): its calls are made in
// the process and cost nothing to repeat, so an intent record would double
// the journal's writes for nothing. Paid calls go through the transport,
// which announces every attempt.
type Direct struct{ P llm.Provider }

// Do implements transport.Doer.
func (d Direct) Do(ctx context.Context, req *llm.Request, onAttempt func(transport.Attempt)) (*llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	start := time.Now()
	resp, err := d.P.Complete(llm.CallContext(ctx), req)
	onAttempt(transport.Attempt{N: 1, Start: start, Latency: time.Since(start), Err: err, Resp: resp})
	return resp, err
}

// Options adjust one apply.
type Options struct {
	OutDir      string // overrides the run file's output
	Concurrency int    // overrides settings.concurrency
	Offline     bool   // serve only journaled replies; a miss is an error
	// Doer builds the transport for a model; nil means Direct over the
	// model's provider.
	Doer func(m *spec.Model) (transport.Doer, error)
	// Log receives warnings (a damaged journal line, calls lost to a kill)
	// and the details of internal errors.
	Log io.Writer
	// Grace bounds how long an interrupted run waits for the calls already
	// sent to finish and be journaled (default DefaultGrace).
	Grace time.Duration
	// Abort, once done, cuts the calls still in flight at once (a second
	// Ctrl-C). nil: only the grace period does.
	Abort context.Context
	// MaxCost caps what this apply spends in USD (budget.go); nil means
	// settings.max_cost, and no cap when that is unset. A cap of 0 lets no
	// paid call out (replies in the journal and unpriced models still run).
	MaxCost *float64
	// NoCap runs without a spend cap whatever settings.max_cost says
	// (apply --max-cost none).
	NoCap bool
	// NoResults: Run returns no results, only the summary, so memory
	// follows the cases in flight rather than the cases of the run (the
	// CLI). Otherwise Run also returns every case's result, for callers
	// that want them in memory.
	NoResults bool
	// Scorer computes the metrics once the results are written (package
	// scoring: scoring.New()). Run refuses a study with metric blocks
	// when it is nil.
	Scorer Scorer
}

// DefaultGrace is how long an interrupted run waits for calls in flight.
const DefaultGrace = 60 * time.Second

// Summary is what an apply did; it is also the manifest's counts
// (manifest.Summary, whose fields it has).
type Summary manifest.Summary

func (s *Summary) String() string {
	var b strings.Builder
	if s.Capped != nil && !s.Interrupted {
		describeCap(s.Capped, &b, s)
	} else if s.Interrupted {
		fmt.Fprintf(&b, "%s: interrupted after %d of %d cases; %d calls (%d new, %d cached), %d errors, %d unparsed, %d prompt + %d completion tokens, $%.4f",
			s.Run, s.Cases, s.CasesPlanned, s.CallsNew+s.CallsCached, s.CallsNew, s.CallsCached, s.Errors, s.Unparsed,
			s.PromptTokens, s.CompletionTokens, s.CostUSD)
		fmt.Fprintf(&b, "\n  %d call(s) in flight at the interruption finished and were journaled", s.Drained)
		if s.Cut > 0 {
			fmt.Fprintf(&b, "; %d were cut off without a reply (apply sends them again)", s.Cut)
		}
		fmt.Fprintf(&b, "\n  nothing was written to %s (the earlier outputs stand); apply again to resume from the journal", s.OutDir)
	} else {
		// Short lines: read at an 80-column terminal.
		fmt.Fprintf(&b, "%s: %d cases, %d calls (%d new, %d cached), %d errors\n  %d unparsed, %d truncated, %d prompt + %d completion tokens, $%.4f\n  outputs -> %s",
			s.Run, s.Cases, s.CallsNew+s.CallsCached, s.CallsNew, s.CallsCached, s.Errors, s.Unparsed, s.Truncated,
			s.PromptTokens, s.CompletionTokens, s.CostUSD, s.OutDir)
	}
	for _, sk := range s.Skipped {
		fmt.Fprintf(&b, "\n  skipped: %s", sk)
	}
	s.describeSelection(&b)
	if s.CallsShared > 0 {
		fmt.Fprintf(&b, "\n  %d of the cached calls came from the shared cache %s (copied into this run's journal; not paid again)", s.CallsShared, s.SharedCache)
	}
	if s.Reused > 0 && !s.Interrupted {
		fmt.Fprintf(&b, "\n  %s taken from the earlier outputs\n  (same code, configs and data; only the metric blocks may differ)", spec.Plural(s.Reused, "case's row", "cases' rows"))
	}
	if s.LostInFlight > 0 {
		fmt.Fprintf(&b, "\n  %d call(s) were in flight when an earlier apply was killed; %d of them were sent again", s.LostInFlight, s.Resent)
	}
	if n := s.Errors + s.Kept; n > 0 {
		fmt.Fprintf(&b, "\n  %d case(s) errored; apply again retries them:", n)
		w := 0
		for _, c := range s.ErrorClasses {
			w = max(w, len(c.Class))
		}
		offline, unread := false, false
		for _, c := range s.ErrorClasses {
			fmt.Fprintf(&b, "\n    %-*s %6d  e.g. %s", w, c.Class, c.Cases, c.Example)
			offline = offline || c.Class == spec.ClassOfflineMiss
			unread = unread || c.Class == spec.ClassRefused || c.Class == spec.ClassUnreadable
		}
		if offline {
			b.WriteString("\n  offline misses are requests the journal does not hold: apply without --offline makes those calls")
		}
		if unread {
			b.WriteString("\n  refused and unreadable replies are journaled: apply again reads the same reply; change the prompt, the rules or the model to judge them anew")
		}
		if s.Kept > 0 {
			fmt.Fprintf(&b, "\n  %d of them kept their row from an earlier apply of the same config (column kept_from)", s.Kept)
		}
		if s.LastComplete != "" {
			fmt.Fprintf(&b, "\n  the last outputs without errors are kept in %s", s.LastComplete)
		}
	}
	return b.String()
}

// ModelStats are live counters for one model, read by the progress display.
type ModelStats struct {
	Name                       string
	Total                      int64
	Done, Calls, Cached, Fails atomic.Int64
	Tokens                     atomic.Int64
	costMicros                 atomic.Int64
	Start                      time.Time
	liveStats                  // progress counters kept apart from journal replays (livestats.go)
}

// Cost is the USD spent so far.
func (m *ModelStats) Cost() float64 { return float64(m.costMicros.Load()) / 1e6 }

// Engine runs a study's cases.
type Engine struct {
	study   *spec.Study
	opts    Options
	journal *journal.Journal
	doers   map[*spec.Model]transport.Doer
	sf      singleflight.Group
	stats   map[*spec.Model]*ModelStats
	order   []*ModelStats
	rows    chan CallRow
	waves   *waves
	budget  *budget
	merged  *MergeTotals // set by OutputSet.Commit (outputset.go)
	// subsets fills results.parquet's subsets column (trace.go).
	subsets *subsetNames
	// flat is results.parquet's flat columns (flatcols.go).
	flat   flatState
	fatal  atomic.Pointer[error]
	cancel context.CancelFunc
	// flight is the context sent calls run under: it outlives an
	// interruption by the grace period, or until Options.Abort.
	flight context.Context

	mu       sync.Mutex
	versions map[string]map[string]bool
	newCalls atomic.Int64
	attempts atomic.Int64
	inFlight atomic.Int64
	// after an interruption: calls that finished and were journaled, and
	// calls cut off
	drained, cut atomic.Int64
	resent       atomic.Int64
	interrupted  atomic.Bool
	reused       int
	shared       sharedState // the response cache runs share (engineshared.go)
}

// NewEngine prepares an engine; Run does the work.
func NewEngine(s *spec.Study, o Options) *Engine {
	if o.OutDir == "" {
		o.OutDir = s.OutDir
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	if o.Grace <= 0 {
		o.Grace = DefaultGrace
	}
	e := &Engine{study: s, opts: o, doers: map[*spec.Model]transport.Doer{}, stats: map[*spec.Model]*ModelStats{}, versions: map[string]map[string]bool{},
		flight: context.Background()}
	for _, m := range s.Models {
		st := &ModelStats{Name: m.Name}
		e.stats[m] = st
	}
	for _, c := range s.Cells {
		e.stats[c.Model].Total += int64(len(c.Task.Items))
	}
	for _, m := range s.Models {
		if e.stats[m].Total > 0 {
			e.order = append(e.order, e.stats[m])
		}
	}
	e.addJudges()
	switch {
	case o.NoCap:
	case o.MaxCost != nil:
		e.budget = &budget{cap: *o.MaxCost}
	default:
		e.budget = newBudget(s.Run.Settings.MaxCost)
	}
	e.subsets = newSubsetNames()
	return e
}

// Stats returns live per-model counters (models with cases only).
func (e *Engine) Stats() []*ModelStats { return e.order }

// InFlight is the number of model calls sent and not yet answered.
func (e *Engine) InFlight() int { return int(e.inFlight.Load()) }

// PrepareOutDir creates the output folder and proves it is writable before
// any model call, so a bad path costs nothing.
func PrepareOutDir(dir string) error {
	if err := os.MkdirAll(dir, 0o777); err != nil {
		return fmt.Errorf("output folder %s: %w (pass --out with a writable folder)", dir, err)
	}
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		return fmt.Errorf("output folder %s is not writable: %w (pass --out with a writable folder)", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// Run executes every case, writes the output set (results, calls, metrics,
// manifest and the metric tables, switched in together) and returns the
// summary. When ctx is cancelled it stops starting cases and calls, lets the
// calls already sent finish within the grace period and journals them, and
// leaves the earlier outputs in force.
func (e *Engine) Run(ctx context.Context) (*Summary, []spec.Result, error) {
	s := e.study
	if err := needScorer(s, e.opts.Scorer); err != nil {
		return nil, nil, err
	}
	out := e.opts.OutDir
	if err := PrepareOutDir(out); err != nil {
		return nil, nil, err
	}
	judges := map[*spec.Model]bool{}
	for _, c := range s.Cells {
		if c.Task.Judge != nil {
			judges[c.Task.Judge.Model] = true
		}
	}
	for _, m := range s.Models {
		if e.stats[m].Total == 0 && !judges[m] {
			continue
		}
		var d transport.Doer
		switch {
		case e.opts.Doer != nil:
			var err error
			if d, err = e.opts.Doer(m); err != nil {
				return nil, nil, fmt.Errorf("model %s: %w", m.Name, err)
			}
		case m.Provider != nil:
			d = Direct{m.Provider}
		}
		e.doers[m] = d
		e.stats[m].rate, _ = d.(RateStatter)
	}
	j, err := journal.OpenFrom(filepath.Join(out, "journal.jsonl"), s.Run.Settings.Fsync, e.settledJournal)
	if err != nil {
		return nil, nil, err
	}
	defer j.Close()
	e.journal = j
	if err := e.openShared(); err != nil {
		return nil, nil, err
	}
	for _, w := range j.Warnings() {
		fmt.Fprintln(e.opts.Log, "promoral: warning:", w)
	}
	// The journal's lock makes this apply the folder's only writer: what
	// killed applies left behind can go.
	tidyRunDir(out)
	e.waves = newWaves(e)

	started := time.Now().UTC()
	gen, err := newGeneration(out, started)
	if err != nil {
		return nil, nil, err
	}
	calls, err := parquetio.Create(filepath.Join(gen.dir, "calls.parquet"), callColumns, compress.Codecs.Snappy)
	if err != nil {
		os.RemoveAll(gen.dir)
		return nil, nil, err
	}
	planned := s.NumCases()
	done := newDoneSet(planned)
	tl := newTally()
	// Cases whose good rows the outputs in force already hold are taken
	// from there, not walked again (reuse.go).
	var copied doneSet
	var src *copySource
	ru := e.planReuse(j.Size())
	like := ""
	if ru != nil && !ru.linkResults {
		like = filepath.Join(ru.dir, "results.parquet")
	}
	rw, err := e.newResultsWriter(filepath.Join(gen.dir, "results.parquet"), like)
	if err != nil {
		calls.Abort()
		os.RemoveAll(gen.dir)
		return nil, nil, err
	}
	if ru != nil {
		if ru.linkResults {
			err = e.countTaken(ru, tl)
		} else {
			src, err = e.newCopySource(ru, tl)
		}
		if err != nil {
			calls.Abort()
			rw.Abort()
			os.RemoveAll(gen.dir)
			return nil, nil, fmt.Errorf("taking the rows of %s: %w", ru.dir, err)
		}
		tl.addTaken(ru.n, 0)
		copied, e.reused = ru.copied, ru.n
		for i := range done {
			done[i] = copied[i]
		}
	}
	// A case walked makes at least one call: room for that many replies.
	j.Expect(planned - e.reused)
	e.rows = make(chan CallRow, 4096)
	writerDone := make(chan error, 1)
	go func() {
		var werr error
		// The calls of the cases taken go first (while the walk queues its
		// own), so copying them overlaps the results' copy.
		if ru != nil {
			var n int
			if ru.linkCalls {
				n, werr = e.countCalls(ru)
			} else {
				n, werr = e.copyCalls(ru, calls)
			}
			tl.addTaken(0, n)
		}
		// A case's rows are gathered until it ends, then go out in case
		// order with the others (caseSpool).
		var skip func(int) bool
		if copied != nil {
			skip = copied.has
		}
		sp := newCaseSpool(gen.dir, planned, skip, func(_ int, rows [][]any) error {
			for _, r := range rows {
				if err := calls.Append(r...); err != nil {
					return err
				}
			}
			return nil
		})
		open := map[int][][]any{}
		for r := range e.rows {
			if werr != nil {
				continue
			}
			ord := r.Case.Ordinal
			if r.caseDone {
				werr = sp.put(ord, open[ord])
				delete(open, ord)
				continue
			}
			open[ord] = append(open[ord], r.values())
		}
		// Rows of a case that did not end (an interruption) go too, in
		// their place.
		for ord, rows := range open {
			if werr == nil {
				werr = sp.put(ord, rows)
			}
		}
		if werr == nil {
			werr = sp.finish()
		}
		sp.close()
		writerDone <- werr
	}()

	flight, cutFlight := context.WithCancel(context.Background())
	defer cutFlight()
	e.flight = flight
	runDone := make(chan struct{})
	defer close(runDone)
	abort := e.opts.Abort
	if abort == nil {
		abort = context.Background()
	}
	go func(ctx context.Context) {
		select {
		case <-ctx.Done():
			e.interrupted.Store(true)
			t := time.NewTimer(e.opts.Grace)
			defer t.Stop()
			select {
			case <-t.C:
			case <-abort.Done():
			case <-runDone:
				return
			}
		case <-abort.Done():
		case <-runDone:
			return
		}
		cutFlight()
	}(ctx)

	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	e.cancel = cancel
	defer cancel()
	sink := newResultSink(rw, gen.dir, planned, copied, src)
	var results []spec.Result
	if !e.opts.NoResults {
		results = make([]spec.Result, planned)
	}
	// Errored cases wait for the end: they may keep an earlier apply's row.
	var heldMu sync.Mutex
	var held []heldCase
	finish := func(c *spec.Case, r *spec.Result) {
		done.mark(c.Ordinal)
		if r.Err != "" {
			heldMu.Lock()
			held = append(held, heldCase{c, *r})
			heldMu.Unlock()
			return
		}
		tl.add(c, r)
		sink.put(c.Ordinal, e.resultValues(c, r))
		r.ItemFields = nil
		if results != nil {
			results[c.Ordinal] = *r
		}
	}
	var wg sync.WaitGroup
	for _, m := range s.Models {
		st := e.stats[m]
		if st.Total == 0 {
			continue
		}
		st.Start = time.Now()
		conc := e.workers(m)
		jobs := make(chan *spec.Case, conc)
		wg.Add(1)
		var skip func(ord int) bool
		if copied != nil {
			skip = copied.has
		}
		go func(m *spec.Model) {
			defer wg.Done()
			defer close(jobs)
			s.EachCaseOf(m, skip, func(c *spec.Case) bool {
				select {
				case jobs <- c:
					return true
				case <-ctx.Done():
					return false
				}
			})
		}(m)
		for w := 0; w < conc; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for c := range jobs {
					if ctx.Err() != nil {
						continue
					}
					r := e.runCase(ctx, c)
					e.waves.done(m)
					e.rows <- CallRow{Case: c, caseDone: true}
					if !r.Done {
						continue
					}
					st.Done.Add(1)
					if r.Err != "" && !e.judgeFailed(c, &r) {
						st.Fails.Add(1) // a failed judging counts on its judge's line
					}
					e.noteCase(c, &r)
					finish(c, &r)
				}
			}()
		}
	}
	wg.Wait()
	close(e.rows)
	werr := <-writerDone
	// No case will look a reply up any more: scoring gets the memory.
	e.journal.DropIndex()
	if n := e.journal.Stats().Unusable; n > 0 {
		fmt.Fprintf(e.opts.Log, "promoral: warning: %s: %d journaled repl(ies) had no usable answer (no choices or no content) and were treated as misses\n", e.journal.Path(), n)
	}
	e.sharedWarnings()

	if parent.Err() == nil && e.fatal.Load() == nil && !e.budget.hit() {
		// Without an interruption every case ends Done; one that did not
		// is counted as an error, never dropped.
		s.EachCase(func(c *spec.Case) bool {
			if !done.has(c.Ordinal) {
				finish(c, &spec.Result{Done: true, Err: "the case stopped without a result (a cancelled call outside an interruption)", ErrClass: spec.ClassInternal})
			}
			return true
		})
	}
	drop := func() {
		calls.Abort()
		sink.close()
		rw.Abort()
		os.RemoveAll(gen.dir)
	}
	sum := e.summary(planned, tl, held)
	if f := e.fatal.Load(); f != nil {
		drop()
		return sum, nil, *f
	}
	if sum.Cases < sum.CasesPlanned {
		drop()
		sum.Interrupted = parent.Err() != nil || !e.budget.hit()
		if e.budget.hit() {
			sum.Capped = e.capStop(done.has)
		}
		sum.Drained, sum.Cut = int(e.drained.Load()), int(e.cut.Load())
		return sum, nil, nil
	}
	if werr != nil {
		drop()
		return sum, nil, fmt.Errorf("writing calls.parquet: %w", werr)
	}
	sum, err = e.writeSet(gen, calls, sink, rw, held, tl, results, started, ru)
	if err != nil {
		os.RemoveAll(gen.dir)
		return sum, nil, err
	}
	return sum, results, nil
}

// heldCase is an errored case waiting for the end of the apply.
type heldCase struct {
	c *spec.Case
	r spec.Result
}

// summary is the apply's summary: what the tally counted, and the errored
// cases held back.
func (e *Engine) summary(planned int, tl *tally, held []heldCase) *Summary {
	s := e.study
	sum := &Summary{Run: s.Run.Name, OutDir: e.opts.OutDir, CasesPlanned: planned, Skipped: s.Skipped, Selection: s.Selection}
	sum.CallsNew = int(e.newCalls.Load())
	sum.Attempts = int(e.attempts.Load())
	js := e.journal.Stats()
	sum.LostInFlight, sum.Resent = js.Lost, int(e.resent.Load())
	sum.Reused = e.reused
	e.sharedSummary(sum)
	t := tl.clone()
	for i := range held {
		t.add(held[i].c, &held[i].r)
	}
	t.fill(sum)
	if e.merged != nil {
		e.merged.into(sum)
	}
	return sum
}

// writeSet finishes the output set in gen and switches it in. An errored
// case first gets the chance to keep its earlier good row; then the rows of
// the errored cases are written, results.parquet is complete, and the
// metrics are computed from what it holds.
func (e *Engine) writeSet(gen *generation, calls *parquetio.Writer, sink *resultSink, rw *resultsWriter, held []heldCase, tl *tally,
	results []spec.Result, started time.Time, ru *reuse) (*Summary, error) {
	s := e.study
	fail := func(err error) (*Summary, error) {
		sink.close()
		rw.Abort()
		return nil, err
	}
	if ru != nil && ru.linkCalls {
		calls.Abort()
		if err := linkOrCopy(filepath.Join(ru.dir, "calls.parquet"), filepath.Join(gen.dir, "calls.parquet")); err != nil {
			return fail(err)
		}
	} else if err := calls.Commit(); err != nil {
		return fail(err)
	}
	if len(held) > 0 {
		if err := e.keepEarlierRows(held); err != nil {
			fmt.Fprintf(e.opts.Log, "promoral: warning: could not read the earlier results to keep their rows: %v\n", err)
		}
		sort.Slice(held, func(i, j int) bool { return held[i].c.Ordinal < held[j].c.Ordinal })
	}
	for i := range held {
		h := &held[i]
		tl.add(h.c, &h.r)
		sink.put(h.c.Ordinal, e.resultValues(h.c, &h.r))
		h.r.ItemFields = nil
		if results != nil {
			results[h.c.Ordinal] = h.r
		}
	}
	if err := sink.close(); err != nil {
		rw.Abort()
		return e.summary(s.NumCases(), tl, nil), fmt.Errorf("writing results.parquet: %w", err)
	}
	// The rows taken from an earlier apply are counted as they go out.
	sum := e.summary(s.NumCases(), tl, nil)
	order := sink.order
	if ru != nil && ru.linkResults && len(held) == 0 {
		// Nothing was walked: the rows in force are the rows, as they are.
		rw.Abort()
		if err := linkOrCopy(filepath.Join(ru.dir, "results.parquet"), filepath.Join(gen.dir, "results.parquet")); err != nil {
			return sum, err
		}
		order = ru.order
	} else if err := rw.Commit(); err != nil {
		return sum, err
	}
	if err := writeOrder(gen.dir, order); err != nil {
		return sum, err
	}
	texts, err := e.scoreWritten(gen.dir, order)
	if err != nil {
		return sum, fmt.Errorf("scoring: %w", err)
	}
	sum.Report = texts
	if err := e.writeManifest(filepath.Join(gen.dir, "manifest.json"), sum, started); err != nil {
		return sum, err
	}
	if err := gen.switchIn(); err != nil {
		return sum, err
	}
	sum.LastComplete = tidyRunDir(gen.run)
	return sum, nil
}

// scoreWritten has the Scorer compute the metrics from the results.parquet
// just written in dir (order: the case ordinal of each of its rows).
func (e *Engine) scoreWritten(dir string, order []int32) ([]string, error) {
	s := e.study
	if len(s.Metrics) == 0 {
		return nil, nil
	}
	if err := needScorer(s, e.opts.Scorer); err != nil {
		return nil, err
	}
	return e.opts.Scorer.Score(Written{Study: s, Dir: dir, Order: order, Journal: e.journal.Path()})
}

// exampleOf is one line of a case's error for the summary: clipped, and
// scrubbed of anything that looks like a credential.
func exampleOf(r *spec.Result) string {
	msg := r.Err
	if msg == "" {
		msg = r.KeptErr
	}
	msg = strings.Join(strings.Fields(secret.Redact(msg)), " ")
	if len(msg) > 240 {
		cut := 240
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut] + "…"
	}
	return msg
}

// workers is the number of cases of model m in flight at once.
func (e *Engine) workers(m *spec.Model) int {
	if w, ok := e.doers[m].(transport.Waver); ok && w.CasesInFlight() > 0 {
		return w.CasesInFlight()
	}
	if n := e.judgeWave(m); n > 0 {
		return n
	}
	conc := m.Spec.Limits.Concurrency
	if conc == 0 {
		conc = e.opts.Concurrency
	}
	if conc == 0 {
		conc = e.study.Run.Settings.Concurrency
	}
	if conc <= 0 {
		conc = 8
	}
	return conc
}

// runCase walks the strategy graph for one case, then the task's judge
// graph (if any) over the strategy's outputs. A case stopped by an
// interruption comes back not Done.
func (e *Engine) runCase(ctx context.Context, c *spec.Case) (r spec.Result) {
	x := e.newExec(ctx, c, c.Model, c.Strategy)
	x.repeat, x.sweep = c.Repeat, c.Sweep
	defer func() {
		if p := recover(); p != nil {
			// The stack goes to the log, not into results.parquet.
			fmt.Fprintf(e.opts.Log, "promoral: internal error in case %s: %v\n%s", c.ID(), p, debug.Stack())
			// The panic value may carry a stack of its own (singleflight
			// adds one): only its first line goes into the result.
			what, _, _ := strings.Cut(fmt.Sprint(p), "\n")
			err := &panicError{fmt.Sprintf("internal error in case %s: %s (a bug in promoral; the log has the details)", c.ID(), strings.TrimSpace(what))}
			r = spec.Result{Done: true, Err: err.Error(), ErrClass: spec.ClassInternal, Acct: x.acct}
		}
	}()
	outputs, steps, err := e.walk(x, nil)
	r = spec.Result{Done: true, Steps: steps, Acct: x.acct, Outputs: outputs, Trace: traceJSON(x.trace), ItemFields: x.fields}
	defer releaseTrace(x)
	if err != nil {
		if interruptedErr(err) {
			return spec.Result{Acct: x.acct}
		}
		r.Err, r.ErrClass = secret.Redact(err.Error()), ErrorClass(err)
		return r
	}
	final := outputs
	if j := c.Task.Judge; j != nil {
		subject := make(map[string]any, len(outputs)+2)
		for k, v := range outputs {
			subject[k] = v
		}
		subject["model"], subject["strategy"] = c.Model.Name, c.Strategy.Name
		jx := e.newExec(ctx, c, j.Model, j.Strategy)
		jx.fields = x.fields
		jx.prefix = "judge."
		jout, jsteps, err := e.walk(jx, subject)
		r.Steps += jsteps
		r.JudgeAcct = jx.acct
		r.Trace = traceJSON(x.trace, jx.trace)
		releaseTrace(jx)
		if err != nil {
			if interruptedErr(err) {
				return spec.Result{Acct: x.acct}
			}
			r.Err, r.ErrClass = "judge: "+secret.Redact(err.Error()), ErrorClass(err)
			return r
		}
		r.Judge = jout
		final = jout
	}
	r.Label, _ = final["label"].(string)
	r.Confidence = toFloatPtr(final["confidence"])
	r.Parsed = r.Label != ""
	if r.Parsed && len(c.Task.Labels) > 0 {
		r.Parsed = false
		for _, l := range c.Task.Labels {
			if l == r.Label {
				r.Parsed = true
				break
			}
		}
	}
	if c.Item.Gold != "" {
		ok := r.Parsed && r.Label == c.Item.Gold
		r.Correct = &ok
	}
	return r
}

func interruptedErr(err error) bool {
	return errors.Is(err, errInterrupted) || errors.Is(err, context.Canceled)
}

func (e *Engine) newExec(ctx context.Context, c *spec.Case, m *spec.Model, s *spec.Strategy) *caseExec {
	return newCaseExec(ctx, c, m, s, e.call)
}

// walk runs a strategy graph in x and evaluates its outputs. subject, when
// set, is what a judge graph judges (the strategy's outputs, model and
// strategy name), visible as subject.<field>.
func (e *Engine) walk(x *caseExec, subject map[string]any) (map[string]any, int, error) {
	maxSteps := e.study.Run.Settings.MaxSteps
	if maxSteps <= 0 {
		maxSteps = 1000
	}
	return walkGraph(x, subject, maxSteps)
}

func walkGraph(x *caseExec, subject map[string]any, maxSteps int) (map[string]any, int, error) {
	s := x.strategy
	visits := make(map[string]any, len(s.Nodes))
	for _, n := range s.Nodes {
		x.stages[n.Base.Name] = map[string]any{}
		visits[n.Base.Name] = 0
	}
	x.env = map[string]any{
		"item":     x.itemFields(),
		"stages":   x.stages,
		"visits":   visits,
		"params":   s.Params,
		"model":    x.model.Env,
		"strategy": map[string]any{"name": s.Name},
		"subject":  subject,
	}
	taskEnv, err := x.c.Task.Env(x.env)
	if err != nil {
		return nil, 0, err
	}
	x.env["task"] = taskEnv
	cur, steps := 0, 0
	for cur >= 0 {
		n := s.Nodes[cur]
		name := n.Base.Name
		if n.Base.MaxVisits > 0 && x.visits[name] >= n.Base.MaxVisits {
			cur = n.Exhausted
			continue
		}
		steps++
		if steps > maxSteps {
			return nil, steps, fmt.Errorf("case %s ran more than settings.max_steps=%d stages: %w", x.c.ID(), maxSteps, errMaxSteps)
		}
		x.visits[name]++
		visits[name] = x.visits[name]
		next, err := n.Stage.Run(x)
		traceStep(x, name, n.Base.Kind, next, err)
		if err != nil {
			return nil, steps, err
		}
		switch next {
		case "":
			cur = n.Next
		case spec.End:
			cur = -1
		default:
			i, ok := s.Index[next]
			if !ok {
				return nil, steps, fmt.Errorf("stage %q chose %q, which is not a stage", name, next)
			}
			cur = i
		}
	}
	out := make(map[string]any, len(s.Outputs))
	for _, o := range s.Outputs {
		v, err := expr.Run(o.Prog, x.env)
		if err != nil {
			return nil, steps, fmt.Errorf("output %s: %w", o.Name, err)
		}
		out[o.Name] = v
	}
	return out, steps, nil
}

func toFloatPtr(v any) *float64 {
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case float32:
		f = float64(x)
	case int:
		f = float64(x)
	case int64:
		f = float64(x)
	case *float64:
		return x
	default:
		return nil
	}
	return &f
}

// callForm is what the rows of one call share: its journal key and the
// request's two JSON columns.
type callForm struct {
	key, messages, params string
}

// formOf makes a call's form; the messages' JSON is taken from the key's
// canonical form where it is the same text.
func formOf(m *spec.Model, req *llm.Request) callForm {
	key, messages := transport.CacheKeyMessages(m.Identity, req)
	return callForm{key: key, messages: messages, params: paramsJSON(req)}
}

// ErrOfflineMiss is returned in offline mode when a request is not journaled.
var ErrOfflineMiss = errors.New("offline: this request has no journaled reply (run without --offline to call the model)")

// callResult is what one fulfilment of a request gives the callers that
// share it: the reply, and the journal record when it came from there.
type callResult struct {
	resp   *llm.Response
	cached *journal.Record
}

// call fulfils one request: from the journal when it holds a usable reply,
// otherwise through the model's transport, journaling each attempt's intent
// before it is sent and its outcome before the reply is used. Identical
// requests in flight at once are sent once. A reply without an answer or
// over its size bound is a failed attempt, never journaled as a reply.
func (e *Engine) call(x *caseExec, stage string, req *llm.Request) (*llm.Response, error) {
	m := x.model
	form := formOf(m, req)
	key := form.key
	st := e.stats[m]
	rec, ok, err := e.journal.Lookup(key)
	if err != nil {
		e.fail(err)
		return nil, err
	}
	if !ok {
		rec, ok = e.fromShared(m, x.c.ID(), stage, key, llm.ReplyLimit(req, m.Spec.Limits.MaxReplyBytes))
	}
	if ok {
		e.emit(x, stage, &form, rec.Attempt, rec.LatencyMS, rec.Time, rec.Resp, "", true, 0, true)
		x.charge(rec.Resp, true)
		st.Calls.Add(1)
		st.Cached.Add(1)
		if rec.Fresh {
			st.Duplicates.Add(1)
		}
		st.Tokens.Add(int64(rec.Resp.Usage.PromptTokens + rec.Resp.Usage.CompletionTokens))
		return rec.Resp, nil
	}
	if e.opts.Offline {
		return nil, x.Errorf(stage, "%w", ErrOfflineMiss)
	}
	if x.ctx.Err() != nil {
		return nil, errInterrupted // no new request once interrupted
	}
	d := e.doers[m]
	if d == nil {
		return nil, x.Errorf(stage, "model %s has no provider", m.Name)
	}
	caseID := x.c.ID()
	limit := llm.ReplyLimit(req, m.Spec.Limits.MaxReplyBytes)
	callCtx := x.ctx
	if e.waves.batched(m) {
		// Waiting on a wave: once every case that could add to it waits
		// too, the wave goes out.
		wc := e.waves.enter(x.c.Model, key)
		defer wc.leave()
		callCtx = transport.WithWaveCall(x.ctx, wc)
	}
	// singleflight reports "shared" to the caller that made the call too;
	// only the callers that waited for another's call were served a copy.
	leader := false
	v, err, _ := e.sf.Do(key, func() (any, error) {
		leader = true
		if rec, ok, err := e.journal.Lookup(key); err == nil && ok {
			return callResult{rec.Resp, rec}, nil
		}
		if e.journal.WasLost(key) {
			e.resent.Add(1)
		}
		var rows []CallRow
		var bad error
		ids := map[int]string{}
		// The spend cap: the call's worst case is held while it is in
		// flight (for a batch model, before its wave is submitted).
		capped := false
		var billed func(resp *llm.Response, failed bool)
		if e.budget != nil {
			worst := WorstCost(m, req, e.waves.batched(m))
			if !e.budget.reserve(worst) {
				return nil, errCapped
			}
			defer e.budget.release(worst)
			var stopRetry context.CancelFunc
			callCtx, stopRetry = context.WithCancel(callCtx)
			defer stopRetry()
			billed = func(resp *llm.Response, failed bool) {
				if !e.budget.pay(m.Spec.Price.CostOf(resp)) && failed {
					capped = true
					stopRetry() // no further attempt: it would not fit
				}
			}
		}
		resp, err := d.Do(llm.WithCallContext(callCtx, e.flight), req, func(a transport.Attempt) {
			if a.Sending {
				id := e.journal.NewAttemptID()
				ids[a.N] = id
				e.inFlight.Add(1)
				if err := e.journal.Append(&journal.Record{Key: key, ID: id, Model: m.Name, Case: caseID, Stage: stage, Attempt: a.N, Time: a.Start.UTC(), Sent: true}); err != nil {
					e.fail(err)
				}
				return
			}
			id, sent := ids[a.N]
			if sent {
				e.inFlight.Add(-1)
			}
			rec := &journal.Record{Key: key, ID: id, Model: m.Name, Case: caseID, Stage: stage, Attempt: a.N, Time: a.Start.UTC(),
				LatencyMS: float64(a.Latency.Microseconds()) / 1000}
			aerr := a.Err
			if aerr == nil {
				aerr = replyError(a.Resp, limit)
				bad = aerr
			}
			if billed != nil && a.Resp != nil {
				billed(a.Resp, aerr != nil)
			}
			if aerr != nil && e.flight.Err() != nil && interruptedErr(aerr) {
				// Cut by an abort or the grace period: paid perhaps, but
				// no reply. Settle the intent so it reads as what it was.
				e.cut.Add(1)
				rec.Err = "aborted: the call was cut off before its reply arrived"
				if sent {
					if err := e.journal.Append(rec); err != nil {
						e.fail(err)
					}
				}
				return
			}
			if aerr != nil && !sent && x.ctx.Err() != nil && interruptedErr(aerr) {
				return // never sent: our own cancellation, not an attempt
			}
			e.attempts.Add(1)
			if a.N > 1 {
				st.Retried.Add(1) // the attempt before this one failed
			}
			if e.interrupted.Load() && sent {
				e.drained.Add(1)
			}
			if aerr != nil {
				rec.Err = secret.Redact(aerr.Error())
			} else {
				rec.Resp = a.Resp
			}
			if err := e.journal.Append(rec); err != nil {
				e.fail(err)
				return
			}
			var resp *llm.Response
			if aerr == nil {
				e.toShared(m, rec)
				resp = a.Resp
				e.newCalls.Add(1)
				e.noteVersion(m.Name, a.Resp.ModelVersion)
			}
			rows = append(rows, e.callRow(x, stage, &form, a.N, rec.LatencyMS, rec.Time, resp, rec.Err, false))
		})
		for i := range rows {
			rows[i].Attempts, rows[i].Final = len(rows), i == len(rows)-1
			e.rows <- rows[i]
		}
		if err == nil && bad != nil {
			err = bad
		}
		if err != nil && capped {
			return nil, errCapped
		}
		if err != nil {
			return nil, err
		}
		return callResult{resp: resp}, nil
	})
	if err != nil {
		if x.ctx.Err() != nil && interruptedErr(err) {
			return nil, errInterrupted
		}
		return nil, x.Errorf(stage, "%w", err)
	}
	cr := v.(callResult)
	resp := cr.resp
	if e.fatal.Load() != nil {
		return nil, *e.fatal.Load()
	}
	shared := !leader || cr.cached != nil
	if shared {
		at, lat, t := 0, 0.0, time.Now().UTC()
		if cr.cached != nil {
			at, lat, t = cr.cached.Attempt, cr.cached.LatencyMS, cr.cached.Time
		}
		e.emit(x, stage, &form, at, lat, t, resp, "", true, 0, true)
	}
	x.charge(resp, shared)
	st.Calls.Add(1)
	if shared {
		st.Cached.Add(1)
		// A caller that waited for another's call, or found the reply
		// that call journaled, shares a request sent in this apply.
		if !leader || cr.cached.Fresh {
			st.Duplicates.Add(1)
		}
	}
	st.Tokens.Add(int64(resp.Usage.PromptTokens + resp.Usage.CompletionTokens))
	if !shared {
		st.costMicros.Add(int64(m.Spec.Price.CostOf(resp) * 1e6))
	}
	return resp, nil
}

// replyError is the engine's own check of a reply any Doer returned (a
// scripted model, a batch job): the contract's rule of what an answer is,
// and the size bound.
func replyError(resp *llm.Response, limit int64) error {
	if p := resp.Problem(); p != "" {
		return &llm.Error{Kind: llm.Transient, Class: llm.ClassEmptyReply, Msg: p}
	}
	if n := resp.Size(); n > limit {
		return &llm.Error{Kind: llm.Permanent, Class: llm.ClassTooLarge,
			Msg: fmt.Sprintf("the reply is %d bytes, over the bound of %d (limits.max_reply_bytes)", n, limit)}
	}
	return nil
}

// fail records an error that makes the run's outputs untrustworthy (the
// journal cannot be written) and stops the run.
func (e *Engine) fail(err error) {
	e.fatal.CompareAndSwap(nil, &err)
	if e.cancel != nil {
		e.cancel()
	}
}

func (e *Engine) noteVersion(model, v string) {
	if v == "" {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.versions[model] == nil {
		e.versions[model] = map[string]bool{}
	}
	e.versions[model][v] = true
}

func (e *Engine) callRow(x *caseExec, stage string, f *callForm, attempt int, latency float64, t time.Time, resp *llm.Response, errText string, cached bool) CallRow {
	row := CallRow{Case: x.c, Stage: stage, Messages: f.messages, Params: f.params}
	row.Attempt, row.Key, row.Resp, row.LatencyMS, row.Time, row.Cached, row.Err, row.Price = attempt, f.key, resp, latency, t, cached, errText, x.model.Spec.Price
	return row
}

// emit queues one calls.parquet row of a call that is complete in itself
// (served from the journal or shared): attempts made, and whether it is the
// row whose reply the case used.
func (e *Engine) emit(x *caseExec, stage string, f *callForm, attempt int, latency float64, t time.Time, resp *llm.Response, errText string, cached bool, attempts int, final bool) {
	row := e.callRow(x, stage, f, attempt, latency, t, resp, errText, cached)
	row.Attempts, row.Final = attempts, final
	e.rows <- row
}

// ModelVersions lists the model versions providers reported, per model.
func (e *Engine) ModelVersions() map[string][]string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := map[string][]string{}
	for m, vs := range e.versions {
		for v := range vs {
			out[m] = append(out[m], v)
		}
		sort.Strings(out[m])
	}
	return out
}
