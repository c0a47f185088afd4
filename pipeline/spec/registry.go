package spec

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/yamlstrict"
	"gopkg.in/yaml.v3"
)

// Stage is one compiled node of a strategy graph. Run does the stage's work
// for one case and returns the name of the next stage, or "" to follow the
// stage's default edge. Stages do no I/O of their own: a model call goes
// through Exec.Call, which the engine fulfils from the journal or a provider.
type Stage interface {
	Run(x Exec) (next string, err error)
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
	MaxVisits int    `yaml:"max_visits,omitempty" min:"1" doc:"Bound on how often this stage may run in one case. Every loop must pass through a stage with a bound."`
	Exhausted string `yaml:"exhausted,omitempty" default:"end" doc:"Where to go instead of running the stage once max_visits is reached; default end."`
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

// kindTable is a registry of named kinds (stage kinds, metric kinds).
type kindTable[K any] struct {
	mu   sync.RWMutex
	m    map[string]K
	what string
}

func (t *kindTable[K]) register(name string, k K) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, dup := t.m[name]; dup {
		panic(fmt.Sprintf("spec: %s %q registered twice", t.what, name))
	}
	if t.m == nil {
		t.m = map[string]K{}
	}
	t.m[name] = k
}

func (t *kindTable[K]) lookup(name string) (K, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	k, ok := t.m[name]
	return k, ok
}

// sorted returns the kinds ordered by name.
func (t *kindTable[K]) sorted() []K {
	t.mu.RLock()
	defer t.mu.RUnlock()
	names := make([]string, 0, len(t.m))
	for n := range t.m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]K, len(names))
	for i, n := range names {
		out[i] = t.m[n]
	}
	return out
}

func (t *kindTable[K]) names() []string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	names := make([]string, 0, len(t.m))
	for n := range t.m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (t *kindTable[K]) hint() string {
	return "known " + t.what + "s: " + strings.Join(t.names(), ", ")
}

// decodeKind finds the kind a mapping names in the table, reporting a
// missing or unknown kind; the caller then decodes the mapping into that
// kind's own config struct, so unknown fields are caught per kind.
func decodeKind[K any](t *kindTable[K], d *yamlstrict.Decoder, n *yaml.Node, path string) (K, bool) {
	var zero K
	if n.Kind != yaml.MappingNode {
		d.Errf(n, path, "write it as a mapping with a kind", "expected a mapping, got %s", yamlstrict.KindName(n))
		return zero, false
	}
	var kn *yaml.Node
	for _, kv := range yamlstrict.MappingPairs(n) {
		if kv[0].Value == "kind" {
			kn = kv[1]
		}
	}
	if kn == nil {
		d.Errf(n, yamlstrict.JoinPath(path, "kind"), t.hint(), "no kind given")
		return zero, false
	}
	k, ok := t.lookup(kn.Value)
	if !ok {
		hint := t.hint()
		if dm := yamlstrict.DidYouMean(kn.Value, t.names()); dm != "" {
			hint = dm + " " + hint
		}
		d.Errf(kn, yamlstrict.JoinPath(path, "kind"), hint, "unknown %s %q", t.what, kn.Value)
	}
	return k, ok
}

var stageKinds = &kindTable[Kind]{what: "stage kind"}

// Register adds a stage kind. Stage packages call it from init.
func Register(k Kind) { stageKinds.register(k.Name, k) }

// Kinds returns every registered kind, sorted by name.
func Kinds() []Kind { return stageKinds.sorted() }

// ConfigType is the Go type of a kind's config struct, for schema generation.
func (k Kind) ConfigType() reflect.Type { return reflect.TypeOf(k.New()).Elem() }

// Checker is implemented by stages that can check themselves against a
// case environment before any model call (prompt stages render their
// templates), so a template naming a missing field fails validation.
type Checker interface {
	Check(t *Task, env map[string]any) error
}

// CallPlanner is implemented by stages that call a model, so `plan` can see
// what they would send without sending it.
type CallPlanner interface {
	// PlanCall renders the stage's own messages for env and returns them
	// with the stage's generation parameters and the stages it continues.
	PlanCall(env map[string]any) (msgs []llm.Message, params GenParams, cont []string, err error)
}

// Sampler is implemented by stage configs that publish fields; Sample
// returns example values of the right types, used for dry runs.
type Sampler interface {
	Sample() map[string]any
}
