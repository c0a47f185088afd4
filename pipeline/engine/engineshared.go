package engine

import (
	"fmt"
	"os"
	"path/filepath"
	"sync/atomic"

	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/spec"
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
func (e *Engine) sharesCache(m *spec.Model) bool {
	return e.shared.cache != nil && callsEndpoint(m)
}

func callsEndpoint(m *spec.Model) bool {
	if m.Spec == nil {
		return false
	}
	switch m.Spec.Provider {
	case "scripted", "simulated", "none", "":
		return false
	}
	return true
}

// fromShared looks a journal miss up in the shared cache. A hit is copied
// into the run's journal before it is used, so the journal stays the record
// of every reply the run used; callers of one key at once share one look-up
// and one copy.
func (e *Engine) fromShared(m *spec.Model, caseID, stage, key string, limit int64) (*journal.Record, bool) {
	if !e.sharesCache(m) {
		return nil, false
	}
	v, _, _ := e.shared.sf.Do(key, func() (any, error) {
		if rec, ok, err := e.journal.Lookup(key); err == nil && ok {
			return rec, nil // copied by a caller just before
		}
		rec, ok := e.shared.cache.get(key, true, limit)
		if !ok {
			return (*journal.Record)(nil), nil
		}
		rec.ID, rec.Model, rec.Case, rec.Stage = "", m.Name, caseID, stage
		if err := e.journal.Append(rec); err != nil {
			e.fail(err)
			return (*journal.Record)(nil), nil
		}
		return rec, nil
	})
	rec, _ := v.(*journal.Record)
	if rec == nil {
		return nil, false
	}
	e.shared.hits.Add(1)
	return rec, true
}

// toShared stores a paid reply, already journaled, in the shared cache.
func (e *Engine) toShared(m *spec.Model, rec *journal.Record) {
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

// ReplySource serves replies already paid for, by request key, without
// calling a model: a run's journal, with the shared response cache behind
// it when the run uses one. It reads both and changes neither: plan and
// diff walk cases on it (WalkCase) to see what an apply would still send.
type ReplySource struct {
	j      *journal.Journal
	shared *SharedCache
	hits   int
}

// NewReplySource is j with st's shared cache behind it, if st uses one and
// it exists.
func NewReplySource(st *spec.Study, j *journal.Journal) *ReplySource {
	src := &ReplySource{j: j}
	if dir, err := ResolveCacheDir(st); err == nil && dir != "" {
		if fi, err := os.Stat(filepath.Join(dir, repliesDir)); err == nil && fi.IsDir() {
			src.shared = &SharedCache{root: dir}
		}
	}
	return src
}

// lookup finds the usable reply to a request key: in the journal, else in
// the shared cache, reading a shared entry only within the reply bound
// limit of the request (0: any reply a journal line holds).
func (s *ReplySource) lookup(key string, limit int64) (*journal.Record, bool, error) {
	rec, ok, err := s.j.Lookup(key)
	if ok || err != nil || s.shared == nil {
		return rec, ok, err
	}
	if rec, ok = s.shared.get(key, false, limit); ok {
		s.hits++
	}
	return rec, ok, nil
}

// SharedHits counts the replies Lookup has found in the shared cache, not
// in the journal: calls an apply copies into its journal and pays nothing
// for.
func (s *ReplySource) SharedHits() int {
	if s.shared == nil {
		return 0
	}
	return s.hits
}

// SharedCache is the folder of the shared cache behind the journal, ""
// when there is none.
func (s *ReplySource) SharedCache() string {
	if s.shared == nil {
		return ""
	}
	return s.shared.Root()
}
