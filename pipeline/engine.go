package pipeline

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/expr-lang/expr"
	"golang.org/x/sync/singleflight"

	"github.com/promoral/promoral/pipeline/llm"
)

// Version is promoral's version, recorded in every manifest.
var Version = "0.1.0"

// Attempt is one try at a model call, as the transport reports it.
type Attempt struct {
	N       int
	Start   time.Time
	Latency time.Duration
	Err     error
	Resp    *llm.Response
}

// Doer sends requests to one model: retries, rate limits and concurrency
// live behind it. The engine calls it only on a journal miss.
type Doer interface {
	Do(ctx context.Context, req *llm.Request, onAttempt func(Attempt)) (*llm.Response, error)
}

// Direct is a Doer that makes exactly one attempt; tests and the scripted
// provider use it.
type Direct struct{ P llm.Provider }

// Do implements Doer.
func (d Direct) Do(ctx context.Context, req *llm.Request, onAttempt func(Attempt)) (*llm.Response, error) {
	start := time.Now()
	resp, err := d.P.Complete(ctx, req)
	onAttempt(Attempt{N: 1, Start: start, Latency: time.Since(start), Err: err, Resp: resp})
	return resp, err
}

// Options adjust one apply.
type Options struct {
	OutDir      string // overrides the run file's output
	Concurrency int    // overrides settings.concurrency
	Offline     bool   // serve only journaled replies; a miss is an error
	// Doer builds the transport for a model; nil means Direct over the
	// model's provider.
	Doer func(m *Model) (Doer, error)
	Log  io.Writer
}

// Summary is what an apply did; it is also the manifest's counts.
type Summary struct {
	Run              string  `json:"run"`
	OutDir           string  `json:"out_dir"`
	Cases            int     `json:"cases"`
	CallsNew         int     `json:"calls_new"`
	CallsCached      int     `json:"calls_cached"`
	Attempts         int     `json:"attempts"`
	Errors           int     `json:"errors"`
	Unparsed         int     `json:"unparsed"`
	Truncated        int     `json:"truncated"`
	PromptTokens     int     `json:"prompt_tokens"`
	CompletionTokens int     `json:"completion_tokens"`
	ThinkingTokens   int     `json:"thinking_tokens"`
	CostUSD          float64 `json:"cost_usd"`
	Interrupted      bool    `json:"interrupted,omitempty"`
	// Report holds what the metrics asked to print after the summary.
	Report []string `json:"-"`
}

func (s *Summary) String() string {
	msg := fmt.Sprintf("%s: %d cases, %d calls (%d new, %d cached), %d errors, %d unparsed, %d truncated, %d prompt + %d completion tokens, $%.4f -> %s",
		s.Run, s.Cases, s.CallsNew+s.CallsCached, s.CallsNew, s.CallsCached, s.Errors, s.Unparsed, s.Truncated,
		s.PromptTokens, s.CompletionTokens, s.CostUSD, s.OutDir)
	if s.Interrupted {
		msg += " (interrupted: run apply again to resume)"
	}
	return msg
}

// Result is one case's outcome.
type Result struct {
	Done    bool
	Outputs map[string]any
	// Judge holds the judge graph's outputs when the task has a judge; the
	// label and confidence then come from it.
	Judge      map[string]any
	JudgeAcct  Account
	Label      string
	Confidence *float64
	Parsed     bool
	Correct    *bool
	Err        string
	Acct       Account
	Steps      int
}

// ModelStats are live counters for one model, read by the progress display.
type ModelStats struct {
	Name                       string
	Total                      int64
	Done, Calls, Cached, Fails atomic.Int64
	Tokens                     atomic.Int64
	costMicros                 atomic.Int64
	Start                      time.Time
}

// Cost is the USD spent so far.
func (m *ModelStats) Cost() float64 { return float64(m.costMicros.Load()) / 1e6 }

// Engine runs a study's cases.
type Engine struct {
	study   *Study
	opts    Options
	journal *Journal
	doers   map[*Model]Doer
	sf      singleflight.Group
	stats   map[*Model]*ModelStats
	order   []*ModelStats
	rows    chan CallRow
	waves   *waves
	fatal   atomic.Pointer[error]
	cancel  context.CancelFunc

	mu       sync.Mutex
	versions map[string]map[string]bool
	newCalls atomic.Int64
	attempts atomic.Int64
}

// NewEngine prepares an engine; Run does the work.
func NewEngine(s *Study, o Options) *Engine {
	if o.OutDir == "" {
		o.OutDir = s.OutDir
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	e := &Engine{study: s, opts: o, doers: map[*Model]Doer{}, stats: map[*Model]*ModelStats{}, versions: map[string]map[string]bool{}}
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
	return e
}

// Stats returns live per-model counters (models with cases only).
func (e *Engine) Stats() []*ModelStats { return e.order }

// PrepareOutDir creates the output folder and proves it is writable before
// any model call, so a bad path costs nothing.
func PrepareOutDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("output folder %s: %w (pass --out with a writable folder)", dir, err)
	}
	f, err := os.CreateTemp(dir, ".write-test-*")
	if err != nil {
		return fmt.Errorf("output folder %s is not writable: %w (pass --out with a writable folder)", dir, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// Run executes every case, writes calls.parquet, results.parquet and
// manifest.json, and returns the summary. When ctx is cancelled it stops
// taking cases, keeps the journal, and leaves earlier outputs untouched.
func (e *Engine) Run(ctx context.Context) (*Summary, []Result, error) {
	s := e.study
	out := e.opts.OutDir
	if err := PrepareOutDir(out); err != nil {
		return nil, nil, err
	}
	judges := map[*Model]bool{}
	for _, c := range s.Cells {
		if c.Task.Judge != nil {
			judges[c.Task.Judge.Model] = true
		}
	}
	for _, m := range s.Models {
		if e.stats[m].Total == 0 && !judges[m] {
			continue
		}
		var d Doer
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
	}
	j, err := OpenJournal(filepath.Join(out, "journal.jsonl"), s.Run.Settings.Fsync)
	if err != nil {
		return nil, nil, err
	}
	defer j.Close()
	e.journal = j
	e.waves = newWaves(e)

	started := time.Now().UTC()
	calls, err := CreateParquet(filepath.Join(out, "calls.parquet"), callColumns, compress.Codecs.Snappy)
	if err != nil {
		return nil, nil, err
	}
	e.rows = make(chan CallRow, 4096)
	writerDone := make(chan error, 1)
	go func() {
		var werr error
		for r := range e.rows {
			if werr == nil {
				werr = r.append(calls)
			}
		}
		writerDone <- werr
	}()

	ctx, cancel := context.WithCancel(ctx)
	e.cancel = cancel
	defer cancel()
	results := make([]Result, s.NumCases())
	var wg sync.WaitGroup
	for _, m := range s.Models {
		st := e.stats[m]
		if st.Total == 0 {
			continue
		}
		st.Start = time.Now()
		conc := e.workers(m)
		jobs := make(chan *Case, conc)
		wg.Add(1)
		go func(m *Model) {
			defer wg.Done()
			defer close(jobs)
			s.EachCase(func(c *Case) bool {
				if c.Model != m {
					return true
				}
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
					if ctx.Err() != nil && !r.Done {
						continue
					}
					results[c.Ordinal] = r
					st.Done.Add(1)
					if r.Err != "" {
						st.Fails.Add(1)
					}
				}
			}()
		}
	}
	wg.Wait()
	close(e.rows)
	werr := <-writerDone

	sum := &Summary{Run: s.Run.Name, OutDir: out, Cases: len(results)}
	sum.CallsNew = int(e.newCalls.Load())
	sum.Attempts = int(e.attempts.Load())
	for i := range results {
		r := &results[i]
		sum.CallsCached += r.Acct.CachedCalls
		sum.PromptTokens += r.Acct.PromptTokens
		sum.CompletionTokens += r.Acct.CompletionTokens
		sum.ThinkingTokens += r.Acct.ThinkingTokens
		sum.CostUSD += r.Acct.CostUSD + r.JudgeAcct.CostUSD
		sum.CallsCached += r.JudgeAcct.CachedCalls
		switch {
		case !r.Done: // not reached before an interruption
		case r.Err != "":
			sum.Errors++
		case !r.Parsed:
			sum.Unparsed++
		}
		if r.Acct.Truncated {
			sum.Truncated++
		}
	}
	if f := e.fatal.Load(); f != nil {
		calls.Abort()
		return sum, nil, *f
	}
	if ctx.Err() != nil {
		calls.Abort()
		sum.Interrupted = true
		return sum, nil, nil
	}
	if werr != nil {
		calls.Abort()
		return sum, nil, fmt.Errorf("writing calls.parquet: %w", werr)
	}
	if err := calls.Commit(); err != nil {
		return sum, nil, err
	}
	if err := e.writeResults(filepath.Join(out, "results.parquet"), results); err != nil {
		return sum, nil, err
	}
	texts, err := Score(NewResultSet(s, results, out))
	if err != nil {
		return sum, nil, fmt.Errorf("scoring: %w", err)
	}
	sum.Report = texts
	if err := e.writeManifest(filepath.Join(out, "manifest.json"), sum, started); err != nil {
		return sum, nil, err
	}
	return sum, results, nil
}

// workers is the number of cases of model m in flight at once.
func (e *Engine) workers(m *Model) int {
	if w, ok := e.doers[m].(Waver); ok && w.CasesInFlight() > 0 {
		return w.CasesInFlight()
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
// graph (if any) over the strategy's outputs.
func (e *Engine) runCase(ctx context.Context, c *Case) (r Result) {
	x := e.newExec(ctx, c, c.Model, c.Strategy)
	defer func() {
		if p := recover(); p != nil {
			r = Result{Done: true, Err: fmt.Sprintf("internal error in case %s: %v\n%s", c.ID(), p, debug.Stack()), Acct: x.acct}
		}
	}()
	outputs, steps, err := e.walk(x, nil)
	r = Result{Done: true, Steps: steps, Acct: x.acct, Outputs: outputs}
	if err != nil {
		if ctx.Err() != nil {
			return Result{Acct: x.acct}
		}
		r.Err = err.Error()
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
		jx.stagePrefix = "judge."
		jout, jsteps, err := e.walk(jx, subject)
		r.Steps += jsteps
		r.JudgeAcct = jx.acct
		if err != nil {
			if ctx.Err() != nil {
				return Result{Acct: x.acct}
			}
			r.Err = "judge: " + err.Error()
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

func (e *Engine) newExec(ctx context.Context, c *Case, m *Model, s *Strategy) *Exec {
	return &Exec{
		Ctx: ctx, Case: c, Model: m, Task: c.Task, Item: c.Item, Strategy: s,
		stages: make(map[string]any, len(s.Nodes)),
		visits: make(map[string]int, len(s.Nodes)),
		convs:  map[string]conversation{},
		caller: e.call,
	}
}

// walk runs a strategy graph in x and evaluates its outputs. subject, when
// set, is what a judge graph judges (the strategy's outputs, model and
// strategy name), visible as subject.<field>.
func (e *Engine) walk(x *Exec, subject map[string]any) (map[string]any, int, error) {
	maxSteps := e.study.Run.Settings.MaxSteps
	if maxSteps <= 0 {
		maxSteps = 1000
	}
	return walkGraph(x, subject, maxSteps)
}

func walkGraph(x *Exec, subject map[string]any, maxSteps int) (map[string]any, int, error) {
	s := x.Strategy
	visits := make(map[string]any, len(s.Nodes))
	for _, n := range s.Nodes {
		x.stages[n.Base.Name] = map[string]any{}
		visits[n.Base.Name] = 0
	}
	x.Env = map[string]any{
		"item":     x.Item.Fields,
		"stages":   x.stages,
		"visits":   visits,
		"params":   s.Params,
		"model":    x.Model.Env,
		"strategy": map[string]any{"name": s.Name},
		"subject":  subject,
	}
	taskEnv, err := x.Task.env(x.Env)
	if err != nil {
		return nil, 0, err
	}
	x.Env["task"] = taskEnv
	cur, steps := 0, 0
	for cur >= 0 {
		n := s.Nodes[cur]
		name := n.Base.Name
		if n.Base.MaxVisits > 0 && x.visits[name] >= n.Base.MaxVisits {
			cur = n.exhausted
			continue
		}
		steps++
		if steps > maxSteps {
			return nil, steps, fmt.Errorf("case %s ran more than settings.max_steps=%d stages", x.Case.ID(), maxSteps)
		}
		x.visits[name]++
		visits[name] = x.visits[name]
		next, err := n.Stage.Run(x)
		if err != nil {
			return nil, steps, err
		}
		switch next {
		case "":
			cur = n.next
		case End:
			cur = -1
		default:
			i, ok := s.index[next]
			if !ok {
				return nil, steps, fmt.Errorf("stage %q chose %q, which is not a stage", name, next)
			}
			cur = i
		}
	}
	out := make(map[string]any, len(s.outputs))
	for _, o := range s.outputs {
		v, err := expr.Run(o.prog, x.Env)
		if err != nil {
			return nil, steps, fmt.Errorf("output %s: %v", o.name, err)
		}
		out[o.name] = v
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

// CacheKey is the journal key of a request to a model: the provider identity
// plus the request's canonical form.
func CacheKey(m *Model, req *llm.Request) string {
	h := sha256.New()
	h.Write([]byte(m.Identity))
	h.Write([]byte{0})
	h.Write(req.Canonical())
	return hex.EncodeToString(h.Sum(nil))
}

// ErrOfflineMiss is returned in offline mode when a request is not journaled.
var ErrOfflineMiss = errors.New("offline: this request has no journaled reply (run without --offline to call the model)")

// call fulfils one request: from the journal when it holds the reply,
// otherwise through the model's transport, journaling every attempt before
// the reply is used. Identical requests in flight at once are sent once.
func (e *Engine) call(x *Exec, stage string, req *llm.Request) (*llm.Response, error) {
	m := x.Model
	key := CacheKey(m, req)
	st := e.stats[m]
	if rec, ok, err := e.journal.Lookup(key); err != nil {
		e.fail(err)
		return nil, err
	} else if ok {
		e.emit(x, stage, req, key, rec.Attempt, rec.LatencyMS, rec.Time, rec.Resp, "", true)
		x.account(rec.Resp, true)
		st.Calls.Add(1)
		st.Cached.Add(1)
		st.Tokens.Add(int64(rec.Resp.Usage.PromptTokens + rec.Resp.Usage.CompletionTokens))
		return rec.Resp, nil
	}
	if e.opts.Offline {
		return nil, x.Errorf(stage, "%v", ErrOfflineMiss)
	}
	d := e.doers[m]
	if d == nil {
		return nil, x.Errorf(stage, "model %s has no provider", m.Name)
	}
	caseID := x.Case.ID()
	callCtx := x.Ctx
	if e.waves.batched(m) {
		// Waiting on a wave: once every case that could add to it waits
		// too, the wave goes out.
		wc := e.waves.enter(x.Case.Model, key)
		defer wc.leave()
		callCtx = context.WithValue(x.Ctx, waveKey{}, wc)
	}
	// singleflight reports "shared" to the caller that made the call too;
	// only the callers that waited for another's call were served a copy.
	leader := false
	v, err, _ := e.sf.Do(key, func() (any, error) {
		leader = true
		if rec, ok, err := e.journal.Lookup(key); err == nil && ok {
			return rec.Resp, nil
		}
		resp, err := d.Do(callCtx, req, func(a Attempt) {
			if x.Ctx.Err() != nil && a.Err != nil {
				return // our own cancellation is not a failed attempt
			}
			e.attempts.Add(1)
			rec := &Record{Key: key, Model: m.Name, Case: caseID, Stage: stage, Attempt: a.N, Time: a.Start.UTC(),
				LatencyMS: float64(a.Latency.Microseconds()) / 1000}
			if a.Err != nil {
				rec.Err = a.Err.Error()
			} else {
				rec.Resp = a.Resp
			}
			if err := e.journal.Append(rec); err != nil {
				e.fail(err)
				return
			}
			errText := rec.Err
			e.emit(x, stage, req, key, a.N, rec.LatencyMS, rec.Time, a.Resp, errText, false)
			if a.Err == nil {
				e.newCalls.Add(1)
				e.noteVersion(m.Name, a.Resp.ModelVersion)
			}
		})
		if err != nil {
			return nil, err
		}
		return resp, nil
	})
	if err != nil {
		if x.Ctx.Err() != nil {
			return nil, x.Ctx.Err()
		}
		return nil, x.Errorf(stage, "%v", err)
	}
	resp := v.(*llm.Response)
	shared := !leader
	if e.fatal.Load() != nil {
		return nil, *e.fatal.Load()
	}
	if shared {
		e.emit(x, stage, req, key, 0, 0, time.Now().UTC(), resp, "", true)
	}
	x.account(resp, shared)
	st.Calls.Add(1)
	if shared {
		st.Cached.Add(1)
	}
	st.Tokens.Add(int64(resp.Usage.PromptTokens + resp.Usage.CompletionTokens))
	if !shared {
		st.costMicros.Add(int64(m.Spec.Price.CostOf(resp) * 1e6))
	}
	return resp, nil
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

func (e *Engine) emit(x *Exec, stage string, req *llm.Request, key string, attempt int, latency float64, t time.Time, resp *llm.Response, errText string, cached bool) {
	row := newCallRow(x.Case, stage, req)
	row.Attempt, row.Key, row.Resp, row.LatencyMS, row.Time, row.Cached, row.Err, row.Price = attempt, key, resp, latency, t, cached, errText, x.Model.Spec.Price
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

func jsonString(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%q", fmt.Sprint(v))
	}
	return string(b)
}
