package pipeline

import (
	"fmt"
	"reflect"
	"sort"
	"sync"
)

// Stage is one compiled node of a strategy graph. Run does the stage's work
// for one case and returns the name of the next stage, or "" to follow the
// stage's default edge. Stages do no I/O of their own: a model call goes
// through Exec.Call, which the engine fulfils from the journal or a provider.
type Stage interface {
	Run(x *Exec) (next string, err error)
}

// Config is the decoded YAML of one stage. Every kind's config struct embeds
// StageBase with `yaml:",inline"`, so the common fields (name, kind, next,
// max_visits, exhausted) are spelled the same everywhere.
type Config interface {
	Base() *StageBase
	// Build checks the config and compiles it. Problems go to b's diagnostics
	// with the stage's line; Build may return nil when there were any.
	Build(b *Build) Stage
}

// Targets is implemented by stages that can jump somewhere other than their
// default edge (branch); validation uses it to find loops.
type Targets interface{ Targets() []string }

// StageBase holds the fields every stage kind has.
type StageBase struct {
	Name      string `yaml:"name" required:"true" doc:"Unique name of the stage within the strategy; other stages refer to its fields as stages.<name>.<field>."`
	Kind      string `yaml:"kind" required:"true" doc:"Stage kind (prompt, extract, branch, ...)."`
	Doc       string `yaml:"doc,omitempty" doc:"What this stage is for, for reviewers."`
	Next      string `yaml:"next,omitempty" doc:"Stage to run after this one; default is the next stage in the list, or end after the last. 'end' finishes the case."`
	MaxVisits int    `yaml:"max_visits,omitempty" doc:"Bound on how often this stage may run in one case. Every loop must pass through a stage with a bound."`
	Exhausted string `yaml:"exhausted,omitempty" doc:"Where to go instead of running the stage once max_visits is reached; default end."`
	Line      int    `yaml:"-"`
}

// Base returns the common fields.
func (s *StageBase) Base() *StageBase { return s }

// Kind is a registered stage kind: its name, documentation and a constructor
// for its (self-describing) config struct.
type Kind struct {
	Name string
	Doc  string
	New  func() Config
}

var (
	kindsMu sync.RWMutex
	kinds   = map[string]Kind{}
)

// Register adds a stage kind. Stage packages call it from init.
func Register(k Kind) {
	kindsMu.Lock()
	defer kindsMu.Unlock()
	if _, dup := kinds[k.Name]; dup {
		panic(fmt.Sprintf("pipeline: stage kind %q registered twice", k.Name))
	}
	kinds[k.Name] = k
}

// LookupKind returns the registered kind with that name.
func LookupKind(name string) (Kind, bool) {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	k, ok := kinds[name]
	return k, ok
}

// Kinds returns every registered kind, sorted by name.
func Kinds() []Kind {
	kindsMu.RLock()
	defer kindsMu.RUnlock()
	out := make([]Kind, 0, len(kinds))
	for _, k := range kinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// ConfigType is the Go type of a kind's config struct, for schema generation.
func (k Kind) ConfigType() reflect.Type { return reflect.TypeOf(k.New()).Elem() }

// Checker is implemented by stages that can check themselves against a
// case environment before any model call (prompt stages render their
// templates), so a template naming a missing field fails validation.
type Checker interface {
	Check(t *Task, env map[string]any) error
}

// Sampler is implemented by stage configs that publish fields; Sample
// returns example values of the right types, used for dry runs.
type Sampler interface {
	Sample() map[string]any
}
