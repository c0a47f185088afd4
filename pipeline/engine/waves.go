package engine

import (
	"sync"
	"time"

	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/transport"
)

// waves decides when the held requests of each transport.Waver go out. A
// pool is the workers running one model's cases; a pool is full when every
// worker that has a case is waiting on a Waver (a pool whose cases are all
// finished is full too). A Waver flushes when every pool that can call it
// (its own model's, and those whose tasks it judges) is full: nothing
// running could add a request to the wave any more. Since a worker that is
// not waiting always gets there or finishes, every held request eventually
// goes out.
type waves struct {
	e       *Engine
	mu      sync.Mutex
	pools   map[*spec.Model]*wavePool
	targets []*waveTarget
	by      map[*spec.Model]*waveTarget
	groups  map[string]*waveGroup // calls in flight by key, as singleflight sees them
}

// judgeWave is how many cases a model that is never called (recorded
// replies, provider none) keeps in flight when a batch judge reads them:
// the judge's wave, so its jobs carry full waves rather than one request
// per case the model would otherwise run at once. 0: not such a model.
func (e *Engine) judgeWave(m *spec.Model) int {
	if !m.NeverCalls() {
		return 0
	}
	n := 0
	for _, c := range e.study.Cells {
		if c.Model != m || c.Task.Judge == nil {
			continue
		}
		if w, ok := e.doers[c.Task.Judge.Model].(transport.Waver); ok {
			n = max(n, w.CasesInFlight())
		}
	}
	return n
}

type wavePool struct {
	slots, unfinished, blocked int
}

func (p *wavePool) full() bool { return p.blocked >= min(p.slots, p.unfinished) }

type waveTarget struct {
	model    *spec.Model
	w        transport.Waver
	callers  []*wavePool
	finished bool
}

// newWaves returns nil when no model's transport answers in waves; every
// method is a no-op on nil.
func newWaves(e *Engine) *waves {
	ws := &waves{e: e, pools: map[*spec.Model]*wavePool{}, by: map[*spec.Model]*waveTarget{}, groups: map[string]*waveGroup{}}
	for m, d := range e.doers {
		if w, ok := d.(transport.Waver); ok {
			t := &waveTarget{model: m, w: w}
			ws.targets = append(ws.targets, t)
			ws.by[m] = t
		}
	}
	if len(ws.targets) == 0 {
		return nil
	}
	for _, m := range e.study.Models {
		if st := e.stats[m]; st.Total > 0 {
			ws.pools[m] = &wavePool{slots: e.workers(m), unfinished: int(st.Total)}
		}
	}
	for _, t := range ws.targets {
		seen := map[*spec.Model]bool{}
		for _, c := range e.study.Cells {
			calls := c.Model == t.model || (c.Task.Judge != nil && c.Task.Judge.Model == t.model)
			if calls && !seen[c.Model] && ws.pools[c.Model] != nil {
				seen[c.Model] = true
				t.callers = append(t.callers, ws.pools[c.Model])
			}
		}
	}
	return ws
}

func (ws *waves) batched(m *spec.Model) bool {
	return ws != nil && ws.by[m] != nil
}

// waveCall is one engine call to a Waver. The case counts as waiting only
// from the moment the Waver holds its request (Waiting): counted any
// earlier, a wave could leave without it. Calls of the same key share one
// reply (singleflight), and which of them reaches the Waver is singleflight's
// choice, not the order they arrived here: so the calls of a key form a
// group that waits as one, from the moment any of them waits in the Waver
// until it is woken (a group whose call went live is running, not waiting).
type waveCall struct {
	ws      *waves
	pool    *wavePool
	group   *waveGroup
	blocked bool
	over    bool
}

// waveGroup is the calls of one key in flight.
type waveGroup struct {
	key     string
	calls   []*waveCall
	waiting bool
}

func (ws *waves) enter(pool *spec.Model, key string) *waveCall {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	g := ws.groups[key]
	if g == nil {
		g = &waveGroup{key: key}
		ws.groups[key] = g
	}
	c := &waveCall{ws: ws, pool: ws.pools[pool], group: g}
	g.calls = append(g.calls, c)
	if g.waiting {
		c.block()
		ws.check()
	}
	return c
}

func (c *waveCall) block() {
	if !c.blocked && !c.over {
		c.blocked = true
		c.pool.blocked++
	}
}

func (c *waveCall) unblock() {
	if c.blocked {
		c.blocked = false
		c.pool.blocked--
	}
	c.over = true
}

// Waiting implements transport.WaveCall.
func (c *waveCall) Waiting() {
	c.ws.mu.Lock()
	defer c.ws.mu.Unlock()
	// The call that reaches the Waver waits even if an earlier round of
	// its group was released.
	c.over = false
	c.group.waiting = true
	for _, m := range c.group.calls {
		m.block()
	}
	c.ws.check()
}

// Wake implements transport.WaveCall.
func (c *waveCall) Wake() {
	c.ws.mu.Lock()
	defer c.ws.mu.Unlock()
	c.group.waiting = false
	for _, m := range c.group.calls {
		m.unblock()
	}
}

func (c *waveCall) leave() {
	c.ws.mu.Lock()
	defer c.ws.mu.Unlock()
	c.unblock()
	g := c.group
	for i, m := range g.calls {
		if m == c {
			g.calls = append(g.calls[:i], g.calls[i+1:]...)
			break
		}
	}
	if len(g.calls) == 0 && c.ws.groups[g.key] == g {
		delete(c.ws.groups, g.key)
	}
}

func (ws *waves) done(pool *spec.Model) {
	if ws == nil {
		return
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	ws.pools[pool].unfinished--
	ws.check()
}

// check flushes every Waver whose callers are all full, and finishes those
// whose callers have no case left; ws.mu is held.
func (ws *waves) check() {
	for _, t := range ws.targets {
		full, over := true, true
		for _, p := range t.callers {
			full = full && p.full()
			over = over && p.unfinished == 0
		}
		switch {
		case over && !t.finished:
			t.finished = true
			t.w.Finish(ws.e.keeper(t.model))
		case full && !over:
			t.w.Flush()
		}
	}
}

// keeper journals a reply that no case of this run asked for: it was paid
// for, so a later run must find it instead of paying again.
func (e *Engine) keeper(m *spec.Model) func(key string, a transport.Attempt) {
	return func(key string, a transport.Attempt) {
		if a.Err != nil || a.Resp == nil || e.journal.Has(key) {
			return
		}
		rec := &journal.Record{Key: key, Model: m.Name, Attempt: a.N, Time: a.Start.UTC(), LatencyMS: float64(a.Latency/time.Microsecond) / 1000, Resp: a.Resp}
		if err := e.journal.Append(rec); err != nil {
			e.fail(err)
		}
	}
}
