package pipeline

import (
	"fmt"
	"sync/atomic"

	"golang.org/x/sync/singleflight"
)

// sharedState is an engine's use of the shared response cache
// (sharedcache.go).
type sharedState struct {
	cache *SharedCache // nil: the run's journal is its only cache
	sf    singleflight.Group
	hits  atomic.Int64
}

// openShared opens the shared cache unless the run keeps its own
// (settings.cache: run).
func (e *Engine) openShared() error {
	needed := false
	for m := range e.doers {
		needed = needed || callsEndpoint(m)
	}
	if !needed {
		return nil // no model of this run calls an endpoint
	}
	dir, err := ResolveCacheDir(e.study)
	if err != nil || dir == "" {
		return err
	}
	c, err := OpenSharedCache(dir, e.study.Run.Settings.Fsync)
	if err != nil {
		return err
	}
	e.shared.cache = c
	return nil
}

// sharesCache says a model's replies go to and come from the shared cache:
// models that call an endpoint. A scripted model's replies cost nothing
// and live in the run's journal only.
func (e *Engine) sharesCache(m *Model) bool {
	return e.shared.cache != nil && callsEndpoint(m)
}

func callsEndpoint(m *Model) bool {
	if m.Spec == nil {
		return false
	}
	switch m.Spec.Provider {
	case "scripted", "none", "":
		return false
	}
	return true
}

// fromShared looks a journal miss up in the shared cache. A hit is copied
// into the run's journal before it is used, so the journal stays the record
// of every reply the run used; callers of one key at once share one look-up
// and one copy.
func (e *Engine) fromShared(m *Model, caseID, stage, key string) (*Record, bool) {
	if !e.sharesCache(m) {
		return nil, false
	}
	v, _, _ := e.shared.sf.Do(key, func() (any, error) {
		if rec, ok, err := e.journal.Lookup(key); err == nil && ok {
			return rec, nil // copied by a caller just before
		}
		rec, ok := e.shared.cache.Get(key)
		if !ok {
			return (*Record)(nil), nil
		}
		rec.ID, rec.Model, rec.Case, rec.Stage = "", m.Name, caseID, stage
		if err := e.journal.Append(rec); err != nil {
			e.fail(err)
			return (*Record)(nil), nil
		}
		return rec, nil
	})
	rec, _ := v.(*Record)
	if rec == nil {
		return nil, false
	}
	e.shared.hits.Add(1)
	return rec, true
}

// toShared stores a paid reply, already journaled, in the shared cache.
func (e *Engine) toShared(m *Model, rec *Record) {
	if e.sharesCache(m) {
		e.shared.cache.Put(rec)
	}
}

// sharedSummary fills the summary's shared-cache fields.
func (e *Engine) sharedSummary(sum *Summary) {
	if e.shared.cache != nil {
		sum.SharedCache = e.shared.cache.Root()
		sum.CallsShared = int(e.shared.hits.Load())
	}
}

// sharedWarnings prints what went wrong with the shared cache.
func (e *Engine) sharedWarnings() {
	if e.shared.cache == nil {
		return
	}
	for _, w := range e.shared.cache.Warnings() {
		fmt.Fprintln(e.opts.Log, "promoral: warning:", w)
	}
}
