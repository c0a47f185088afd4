// Package batch sends a model's requests through its provider's batch API
// (OpenAI Batches, Anthropic Message Batches, Gemini batch mode) in waves:
// the engine keeps thousands of cases in flight, each case's next request
// waits here, and when every case that could add one is waiting the wave
// goes out as one job per model (split at the provider's limits). Replies
// reach the journal through the engine's usual attempt callback, the cases
// advance, and the next wave forms. Multi-turn strategies take one wave per
// turn.
//
// Every job is recorded in the run folder's batches.jsonl before anything
// is uploaded: its name, every line's custom id and cache key. A run killed
// at any point is picked up by the next apply, which re-attaches to the jobs
// in flight (finding by name a job whose creation was never recorded),
// ingests finished ones and sends again only lines that failed, expired or
// were cancelled: no request is paid for twice.
package batch

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"sync"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/providers"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/transport"
)

// Defaults of the model's limits in batch mode.
const (
	DefaultCases = 5000
	DefaultPoll  = 30 * time.Second
	// createAttempts bounds tries at creating one job (429s, 5xx).
	createAttempts = 8
	// cancelWait is how long an interrupted case waits for a job creation
	// under way to be recorded, so the next run need not search for it.
	cancelWait = 30 * time.Second
)

// Options configure the batch transports of one apply.
type Options struct {
	// Dir is the run folder, where batches.jsonl lives.
	Dir string
	// All puts every model whose provider has a batch API in batch mode
	// (apply --batch); otherwise only models with limits.mode: batch.
	All bool
	// Poll, when set, overrides every model's limits.batch_poll.
	Poll time.Duration
	// MaxRequests, when set, caps a job's requests below the provider's
	// own limit (smaller jobs finish sooner; tests split waves with it).
	MaxRequests int
	// Live builds a model's live transport: for models not in batch mode,
	// requests a job cannot carry, and servers without a batch API.
	Live func(m *spec.Model) (transport.Doer, error)
	// Log receives one line per job event (submitted, state changes,
	// ended) and every fallback to live calls.
	Log io.Writer
}

// Transports is the Options.Doer of an apply with batch mode: a batch Doer
// for each model in batch mode, the live transport for the others.
func Transports(o Options) func(m *spec.Model) (transport.Doer, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	o.Log = &lockedWriter{w: o.Log}
	file := NewFile(o.Dir)
	return func(m *spec.Model) (transport.Doer, error) {
		live, err := o.Live(m)
		if err != nil {
			return nil, err
		}
		if !o.All && m.Spec.Limits.Mode != spec.ModeBatch {
			return live, nil
		}
		b, ok := m.Provider.(llm.Batcher)
		if !ok {
			return live, nil // scripted and none models answer at once anyway
		}
		return newDoer(m, b, live, file, o), nil
	}
}

// lockedWriter serialises the notes of the models' jobs.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// Doer is one model's batch transport; it implements transport.Waver.
type Doer struct {
	m        *spec.Model
	b        llm.Batcher
	live     transport.Doer
	file     *File
	log      io.Writer
	cases    int
	poll     time.Duration
	attempts int
	backoff  time.Duration
	maxReq   int
	maxBytes int64
	keyEnv   string

	once     sync.Once
	startErr error

	mu       sync.Mutex
	ctx      context.Context // the run's
	pending  []*waiter
	attached map[string]*line // lines of jobs left in flight, by cache key, not yet asked for
	held     map[string]*heldReply
	jobs     map[string]*job
	liveAll  bool
	noted    map[string]bool
}

type job struct {
	name, id  string
	submitted time.Time
	lines     map[string]*line // by custom id
	created   chan struct{}    // closed once the creation is resolved and recorded
	open      int              // lines without an outcome yet
	held      int              // replies held for no waiter
	ok, fail  int
	state     string
}

type line struct {
	id, key string
	samples int
	attempt int
	req     *llm.Request // nil for a line of an earlier run until a case asks
	w       *waiter
	job     *job
	done    bool
}

type heldReply struct {
	a   transport.Attempt
	job *job
}

// waiter is one Do call waiting for its reply.
type waiter struct {
	key       string
	req       *llm.Request
	ctx       context.Context
	onAttempt func(transport.Attempt)
	attempts  int // attempts made: the next job line is attempt attempts+1
	job       *job

	mu       sync.Mutex
	gone     bool // Do returned without a reply: report nothing more
	finished bool
	resp     *llm.Response
	err      error
	done     chan struct{}
}

func newDoer(m *spec.Model, b llm.Batcher, live transport.Doer, file *File, o Options) *Doer {
	lim := m.Spec.Limits
	d := &Doer{m: m, b: b, live: live, file: file, log: o.Log, cases: lim.BatchCases, poll: lim.BatchPoll,
		attempts: lim.MaxAttempts, backoff: lim.Backoff, keyEnv: m.Spec.KeyEnv,
		attached: map[string]*line{}, held: map[string]*heldReply{}, jobs: map[string]*job{}, noted: map[string]bool{}}
	if d.cases <= 0 {
		d.cases = DefaultCases
	}
	if o.Poll > 0 {
		d.poll = o.Poll
	}
	if d.poll <= 0 {
		d.poll = DefaultPoll
	}
	if d.attempts <= 0 {
		d.attempts = 5
	}
	if d.backoff <= 0 {
		d.backoff = time.Second
	}
	if d.keyEnv == "" {
		d.keyEnv = providers.DefaultKeyVar(m.Spec.Provider, m.Spec.BaseURL)
	}
	d.maxReq, d.maxBytes = b.BatchLimits()
	if o.MaxRequests > 0 {
		d.maxReq = min(d.maxReq, o.MaxRequests)
	}
	return d
}

var _ transport.Waver = (*Doer)(nil)

// CasesInFlight implements transport.Waver.
func (d *Doer) CasesInFlight() int { return d.cases }

// Do implements transport.Doer: the request waits for the next wave.
func (d *Doer) Do(ctx context.Context, req *llm.Request, onAttempt func(transport.Attempt)) (*llm.Response, error) {
	d.once.Do(func() { d.startErr = d.attach(ctx) })
	if d.startErr != nil {
		return nil, d.startErr
	}
	key := transport.CacheKey(d.m.Identity, req)
	w := &waiter{key: key, req: req, ctx: ctx, onAttempt: onAttempt, done: make(chan struct{})}
	d.mu.Lock()
	if h := d.held[key]; h != nil {
		// A reply from a job an earlier run left in flight: journaled now,
		// through the case that asks for it.
		delete(d.held, key)
		d.mu.Unlock()
		w.report(h.a)
		d.release(h.job, true)
		return h.a.Resp, nil
	}
	if d.liveAll {
		d.mu.Unlock()
		return d.live.Do(ctx, req, onAttempt)
	}
	if ln := d.attached[key]; ln != nil {
		delete(d.attached, key)
		ln.w, ln.req = w, req
		w.job, w.attempts = ln.job, ln.attempt
	} else {
		d.pending = append(d.pending, w)
	}
	d.mu.Unlock()
	transport.Waiting(ctx)
	return d.wait(w)
}

func (d *Doer) wait(w *waiter) (*llm.Response, error) {
	select {
	case <-w.done:
		return w.resp, w.err
	case <-w.ctx.Done():
	}
	w.mu.Lock()
	if w.finished {
		w.mu.Unlock()
		return w.resp, w.err
	}
	w.gone = true
	w.mu.Unlock()
	d.mu.Lock()
	j := w.job
	for i, p := range d.pending {
		if p == w {
			d.pending = append(d.pending[:i], d.pending[i+1:]...)
			break
		}
	}
	d.mu.Unlock()
	if j != nil {
		// Let a creation under way be recorded: the next run then
		// re-attaches by id instead of searching the provider for it.
		select {
		case <-j.created:
		case <-time.After(cancelWait):
		}
	}
	return nil, w.ctx.Err()
}

// report passes an attempt to the engine unless Do has already returned.
func (w *waiter) report(a transport.Attempt) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone {
		return false
	}
	w.onAttempt(a)
	return true
}

// settle reports the attempt and, when final, ends the wait with it.
func (w *waiter) settle(a transport.Attempt, final bool) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone || w.finished {
		return false
	}
	w.onAttempt(a)
	if final {
		w.finished, w.resp, w.err = true, a.Resp, a.Err
		close(w.done)
	}
	return true
}

func (w *waiter) finish(resp *llm.Response, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.gone || w.finished {
		return
	}
	w.finished, w.resp, w.err = true, resp, err
	close(w.done)
}

func (d *Doer) note(format string, args ...any) {
	fmt.Fprintf(d.log, "%s: %s\n", d.m.Name, fmt.Sprintf(format, args...))
}

func (d *Doer) runCtx() context.Context {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.ctx == nil {
		return context.Background()
	}
	return d.ctx
}

// goLive sends one waiting request as a live call.
func (d *Doer) goLive(w *waiter) {
	transport.Wake(w.ctx) // a live call makes progress on its own
	go func() {
		resp, err := d.live.Do(w.ctx, w.req, func(a transport.Attempt) { w.report(a) })
		w.finish(resp, err)
	}()
}

// Flush implements transport.Waver: the requests waiting go out as jobs.
func (d *Doer) Flush() {
	d.mu.Lock()
	ws := d.pending
	d.pending = nil
	d.mu.Unlock()
	if len(ws) > 0 {
		go d.send(ws)
	}
}

// send encodes the waiting requests and submits them as one job, or more
// where the provider's request or byte limit says so.
func (d *Doer) send(ws []*waiter) {
	name := newName()
	var lines []llm.BatchLine
	var batch []*waiter
	var size int64
	flush := func() {
		if len(lines) > 0 {
			// Each job is created and followed on its own: a wave split at
			// a size limit must not wait for one job before the next.
			go d.submit(name, batch, lines)
		}
		name, lines, batch, size = newName(), nil, nil, 0
	}
	for _, w := range ws {
		id := fmt.Sprintf("%s-%d", name, len(lines))
		bl, err := d.b.BatchLine(id, w.req)
		if err != nil {
			if !llm.IsPermanent(err) {
				d.mu.Lock()
				if !d.noted[err.Error()] {
					d.noted[err.Error()] = true
					d.note("%v", err)
				}
				d.mu.Unlock()
				d.goLive(w)
				continue
			}
			w.settle(transport.Attempt{N: w.attempts + 1, Start: time.Now(), Err: err}, true)
			continue
		}
		if len(lines) > 0 && (len(lines) >= d.maxReq || size+int64(bl.Size) > d.maxBytes) {
			flush()
			id = fmt.Sprintf("%s-%d", name, 0)
			if bl, err = d.b.BatchLine(id, w.req); err != nil {
				w.settle(transport.Attempt{N: w.attempts + 1, Start: time.Now(), Err: err}, true)
				continue
			}
		}
		lines, batch, size = append(lines, bl), append(batch, w), size+int64(bl.Size)
	}
	flush()
}

func newName() string {
	var b [6]byte
	rand.Read(b[:])
	return "pm" + hex.EncodeToString(b[:])
}

// submit records a job, creates it and follows it to its end.
func (d *Doer) submit(name string, ws []*waiter, lines []llm.BatchLine) {
	j := &job{name: name, submitted: time.Now().UTC(), lines: map[string]*line{}, created: make(chan struct{}), open: len(ws)}
	recs := make([]LineRec, len(ws))
	samples := make([]int, len(ws))
	d.mu.Lock()
	for i, w := range ws {
		w.attempts++
		w.job = j
		ln := &line{id: lines[i].ID, key: w.key, samples: lines[i].Samples, attempt: w.attempts, req: w.req, w: w, job: j}
		j.lines[ln.id] = ln
		recs[i] = LineRec{ID: ln.id, Key: ln.key, Samples: ln.samples, Attempt: ln.attempt}
		samples[i] = ln.samples
	}
	d.jobs[name] = j
	d.mu.Unlock()
	fail := func(err error) {
		for _, w := range ws {
			w.settle(transport.Attempt{N: w.attempts, Start: j.submitted, Latency: time.Since(j.submitted), Err: err}, true)
		}
	}
	err := d.file.Append(&Entry{T: EntrySubmit, Batch: name, Model: d.m.Name, Provider: d.m.Spec.Provider,
		BaseURL: d.m.Spec.BaseURL, KeyEnv: d.keyEnv, Lines: recs, Time: j.submitted})
	if err != nil {
		d.mu.Lock()
		delete(d.jobs, name)
		d.mu.Unlock()
		close(j.created)
		// Without the record a crash could pay for the job twice.
		fail(fmt.Errorf("not sent: %w", err))
		return
	}
	id, how, err := d.create(name, lines, j.submitted, samples)
	if err != nil {
		d.mu.Lock()
		delete(d.jobs, name)
		d.mu.Unlock()
	}
	switch {
	case errors.Is(err, llm.ErrNoBatchEndpoint):
		d.file.Append(&Entry{T: EntryAbandoned, Batch: name, Note: err.Error()})
		close(j.created)
		d.mu.Lock()
		d.liveAll = true
		rest := d.pending
		d.pending = nil
		d.mu.Unlock()
		d.note("%s has no batch API (%v): its requests go out as live calls at the live price", d.m.Spec.BaseURL, err)
		for _, w := range append(ws, rest...) {
			w.attempts--
			d.goLive(w)
		}
		return
	case err != nil:
		d.file.Append(&Entry{T: EntryAbandoned, Batch: name, Note: err.Error()})
		close(j.created)
		d.note("batch job of %d requests not created: %v", len(ws), err)
		fail(err)
		return
	}
	if err := d.file.Append(&Entry{T: EntryCreated, Batch: name, ID: id, Note: how}); err != nil {
		d.note("job %s created but not recorded (%v); the next apply finds it by name", id, err)
	}
	d.mu.Lock()
	j.id = id
	d.mu.Unlock()
	close(j.created)
	if how != "" {
		how = " (" + how + ")"
	}
	d.note("batch job %s submitted: %d requests%s", id, len(ws), how)
	d.follow(j, false)
}

// create makes the job, retrying transient failures (a 429 on create is
// common when many jobs are queued). A failed creation may still have
// gone through, so before each retry the provider is asked for a job of
// this name.
func (d *Doer) create(name string, lines []llm.BatchLine, since time.Time, samples []int) (id, how string, err error) {
	ctx := context.Background() // a Ctrl-C must not cut a creation half way
	for attempt := 1; ; attempt++ {
		id, err = d.b.SubmitBatch(ctx, name, lines)
		if err == nil {
			return id, "", nil
		}
		var le *llm.Error
		if !errors.As(err, &le) || le.Kind != llm.Transient || attempt >= createAttempts || d.runCtx().Err() != nil {
			return "", "", err
		}
		if id, ok, ferr := d.b.FindBatch(ctx, name, since, samples, d.file.Known()); ferr == nil && ok {
			return id, "created although the provider reported a failure", nil
		}
		wait := min(time.Duration(float64(d.backoff)*math.Pow(2, float64(attempt-1))), time.Minute)
		if le.RetryAfter > 0 {
			wait = le.RetryAfter
		}
		select {
		case <-time.After(wait):
		case <-d.runCtx().Done():
			return "", "", err
		}
	}
}

// follow polls a job until it ends, then ingests its results. A poll that
// fails transiently is tried again at the next interval; the run's end
// (Ctrl-C) leaves the job in flight for the next apply.
func (d *Doer) follow(j *job, now bool) {
	ctx := d.runCtx()
	last := ""
	for first := true; ; first = false {
		if !(first && now) {
			select {
			case <-ctx.Done():
				return
			case <-time.After(d.poll):
			}
		}
		st, err := d.b.BatchStatus(ctx, j.id)
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if llm.IsPermanent(err) {
				// The job is not ours to give up on: it stays open in the
				// record for a later run (with the right key, say).
				d.note("batch job %s cannot be read: %v", j.id, err)
				d.failOpen(j, fmt.Errorf("batch job %s cannot be read: %w (promoral batches shows it; the next apply tries again)", j.id, err))
				return
			}
			continue
		}
		if st.State != last {
			last = st.State
			if st.Total > 0 {
				d.note("batch job %s %s (%d of %d done)", j.id, st.State, st.Done, st.Total)
			} else {
				d.note("batch job %s %s", j.id, st.State)
			}
		}
		if st.Ended {
			d.ingest(ctx, j, st)
			return
		}
	}
}

// failOpen ends the waits of a job's lines without closing the job.
func (d *Doer) failOpen(j *job, err error) {
	d.mu.Lock()
	var ws []*waiter
	for _, ln := range j.lines {
		if !ln.done && ln.w != nil {
			ws = append(ws, ln.w)
			ln.w = nil
		}
	}
	d.mu.Unlock()
	for _, w := range ws {
		w.finish(nil, err)
	}
}

// ingest reads a finished job's results: each reply goes to the case
// waiting for it (journaled by the engine before the case goes on), or is
// held until a case asks; failed lines go out again in the next wave while
// attempts remain. Lines without a result (an expired or cancelled job)
// are failed lines too.
func (d *Doer) ingest(ctx context.Context, j *job, st *llm.BatchState) {
	var requeue []*waiter
	var done []*released
	settle := func(ln *line, resp *llm.Response, err error) {
		again, rel := d.outcome(j, ln, resp, err)
		if again != nil {
			requeue = append(requeue, again)
		}
		if rel != nil {
			done = append(done, rel)
		}
	}
	foreign := 0
	lookup := func(id string) *llm.Request {
		d.mu.Lock()
		defer d.mu.Unlock()
		if ln := j.lines[id]; ln != nil {
			return ln.req
		}
		return nil
	}
	var err error
	for try := 1; try <= 3; try++ {
		err = d.b.BatchResults(ctx, j.id, lookup, func(r llm.BatchResult) error {
			d.mu.Lock()
			ln := j.lines[r.ID]
			if ln == nil || ln.done {
				d.mu.Unlock()
				foreign++
				return nil
			}
			ln.done = true
			d.mu.Unlock()
			settle(ln, r.Resp, r.Err)
			return nil
		})
		if err == nil || llm.IsPermanent(err) || ctx.Err() != nil {
			break
		}
		time.Sleep(d.poll)
	}
	if ctx.Err() != nil {
		return
	}
	if err != nil {
		d.note("results of batch job %s cannot be read: %v", j.id, err)
		d.failOpen(j, fmt.Errorf("results of batch job %s cannot be read: %w", j.id, err))
		return
	}
	why := "the batch " + st.State + " before this request ran"
	if st.State == llm.BatchFailed && st.Err != "" {
		why = "the batch failed: " + st.Err
	}
	d.mu.Lock()
	var rest []*line
	for _, ln := range j.lines {
		if !ln.done {
			ln.done = true
			rest = append(rest, ln)
		}
	}
	j.state = st.State
	d.mu.Unlock()
	for _, ln := range rest {
		settle(ln, nil, &llm.Error{Kind: llm.Transient, Msg: why})
	}
	// Every case this job answered counts as running before any of them
	// runs, so none can start a wave of one while the others wake up.
	for _, r := range done {
		transport.Wake(r.w.ctx)
	}
	for _, r := range done {
		r.w.finish(r.resp, r.err)
	}
	if foreign > 0 {
		d.note("batch job %s returned %d results this run never asked for (ignored)", j.id, foreign)
	}
	d.note("batch job %s ingested: %d replies, %d failed", j.id, j.ok, j.fail)
	if len(requeue) > 0 {
		// Their cases are still waiting, so nothing else will flush them.
		d.mu.Lock()
		d.pending = append(d.pending, requeue...)
		d.mu.Unlock()
		d.Flush()
	}
	d.release(j, false)
}

// released is a waiter whose wait a job has decided.
type released struct {
	w    *waiter
	resp *llm.Response
	err  error
}

// outcome reports one line's attempt to its waiter (the engine journals it)
// and says what becomes of the waiter: sent again, or released with a
// reply or a final error. A reply nobody waits for is held.
func (d *Doer) outcome(j *job, ln *line, resp *llm.Response, err error) (again *waiter, done *released) {
	a := transport.Attempt{N: ln.attempt, Start: j.submitted, Latency: time.Since(j.submitted), Resp: resp, Err: err}
	d.mu.Lock()
	w := ln.w
	j.open--
	if resp != nil {
		resp.Batch = j.id
		j.ok++
	} else {
		j.fail++
	}
	d.mu.Unlock()
	if w != nil && w.report(a) {
		switch {
		case resp != nil:
			return nil, &released{w: w, resp: resp}
		case !llm.IsPermanent(err) && w.attempts < d.attempts:
			d.mu.Lock()
			w.job = nil
			d.mu.Unlock()
			return w, nil
		default:
			return nil, &released{w: w, err: err}
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.attached, ln.key)
	if resp != nil {
		// Paid for and asked for by no waiting case (yet): keep it.
		d.held[ln.key] = &heldReply{a: a, job: j}
		j.held++
	}
	return nil, nil
}

// release closes a job in the record once every line has an outcome and no
// reply of it waits to be journaled; journaled says one held reply was.
func (d *Doer) release(j *job, journaled bool) {
	d.mu.Lock()
	if journaled {
		j.held--
	}
	if j.open > 0 || j.held > 0 || d.jobs[j.name] == nil || j.state == "" {
		d.mu.Unlock()
		return
	}
	delete(d.jobs, j.name)
	e := &Entry{T: EntryEnded, Batch: j.name, ID: j.id, State: j.state, OK: j.ok, Failed: j.fail}
	d.mu.Unlock()
	if err := d.file.Append(e); err != nil {
		d.note("%v", err)
	}
}

// Finish implements transport.Waver: replies no case asked for are
// journaled, and their jobs closed.
func (d *Doer) Finish(keep func(key string, a transport.Attempt)) {
	d.mu.Lock()
	held := d.held
	d.held = map[string]*heldReply{}
	d.mu.Unlock()
	for key, h := range held {
		keep(key, h.a)
		d.release(h.job, true)
	}
	if len(held) > 0 {
		d.note("%d batch replies no case of this config asked for were journaled", len(held))
	}
	d.mu.Lock()
	open := 0
	for _, j := range d.jobs {
		if j.open > 0 {
			open++
		}
	}
	d.mu.Unlock()
	if open > 0 {
		d.note("%d batch job(s) still in flight hold no request this run needs; the next apply collects them (promoral batches shows them)", open)
	}
}

// attach re-attaches to the jobs an earlier run left open: jobs in flight
// are polled again, and a job whose creation was never recorded is looked
// for by name; one that does not exist was never created.
func (d *Doer) attach(ctx context.Context) error {
	d.mu.Lock()
	d.ctx = ctx
	d.mu.Unlock()
	jobs, err := d.file.Read()
	if err != nil {
		return err
	}
	for _, rec := range jobs {
		if rec.Model != d.m.Name || !rec.Open() {
			continue
		}
		if rec.Status == StatusSubmitting {
			samples := make([]int, len(rec.Lines))
			for i, l := range rec.Lines {
				samples[i] = l.Samples
			}
			id, found, err := d.find(ctx, rec.Name, rec.Submitted, samples)
			if err != nil {
				return fmt.Errorf("cannot tell whether batch job %s was created before the last run stopped (%w); run apply again when the provider answers", rec.Name, err)
			}
			if !found {
				if err := d.file.Append(&Entry{T: EntryAbandoned, Batch: rec.Name, Note: "never created: no job of this name exists"}); err != nil {
					return err
				}
				continue
			}
			if err := d.file.Append(&Entry{T: EntryCreated, Batch: rec.Name, ID: id, Note: "found by name after the run that created it stopped"}); err != nil {
				return err
			}
			rec.ID = id
		}
		j := &job{name: rec.Name, id: rec.ID, submitted: rec.Submitted, lines: map[string]*line{}, created: make(chan struct{}), open: len(rec.Lines)}
		close(j.created)
		d.mu.Lock()
		for _, l := range rec.Lines {
			ln := &line{id: l.ID, key: l.Key, samples: l.Samples, attempt: max(l.Attempt, 1), job: j}
			j.lines[l.ID] = ln
			d.attached[l.Key] = ln
		}
		d.jobs[j.name] = j
		d.mu.Unlock()
		d.note("re-attached to batch job %s (%d requests)", j.id, len(rec.Lines))
		go d.follow(j, true)
	}
	return nil
}

func (d *Doer) find(ctx context.Context, name string, since time.Time, samples []int) (string, bool, error) {
	var err error
	for try := 1; try <= 3; try++ {
		var id string
		var found bool
		id, found, err = d.b.FindBatch(ctx, name, since, samples, d.file.Known())
		if err == nil || llm.IsPermanent(err) {
			return id, found, err
		}
		select {
		case <-time.After(d.backoff * time.Duration(try)):
		case <-ctx.Done():
			return "", false, ctx.Err()
		}
	}
	return "", false, err
}
