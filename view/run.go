// Package view serves a run folder for reading its samples (promoral view):
// every case in a filterable, searchable table, a page per case with its
// stages, calls and extraction, unparsed replies grouped by shape, paired
// side-by-side comparisons and the safety judge's audit queue, whose labels
// it appends to the run's labels.jsonl.
//
// A run is read in bounded memory: opening keeps a few bytes per case (the
// columns filters need) and reads the Parquet files one row group at a
// time; text (items, replies, traces) is read on demand, and a search index
// is built in the background after the page is already usable.
package view

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/promoral/promoral/pipeline/audit"
)

// Run is one opened run folder.
type Run struct {
	Dir      string
	Name     string
	Manifest map[string]any
	n        int

	id, item                   []string
	model, strategy, task      []uint16
	gold, label, verdict, errc []uint16
	dicts                      map[string]*dict
	parsed, correct            []int8
	truncated, blocked, audit  []int8
	conf                       []float64
	tokens                     []int32
	cost                       []float32
	subsets                    []uint64
	subsetNames                []string
	repeat                     []int32 // sample index (repeats: k); nil when no case has one above 0
	samples                    samples // the repeats of each item (samples.go)
	byID                       map[string]int32
	rowsPerGroup               int
	hasTrace, hasCalls         bool
	opened                     time.Duration
	openedAt                   time.Time
	stamp                      stamp // the output files read (reload.go)

	polMu    sync.Mutex
	policies map[string]answerPolicy

	mu       sync.RWMutex
	labels   map[int32][]audit.Label // audit labels in force, by case
	labErr   error
	misses   map[int32]*missInfo // read from the trace on demand
	missRead map[int32]bool

	idx *textIndex // built in the background

	caseOf func(i int) (*Case, error) // a bundle's cases, written when it was made (bundle.go)
}

// dict interns the few distinct values of a column; code 0 is "none".
type dict struct {
	vals []string
	code map[string]uint16
}

func newDict() *dict { return &dict{vals: []string{""}, code: map[string]uint16{"": 0}} }

func (d *dict) add(s string) uint16 {
	if c, ok := d.code[s]; ok {
		return c
	}
	if len(d.vals) == math.MaxUint16 {
		return 0 // more distinct values than a filter can show: treated as none
	}
	c := uint16(len(d.vals))
	s = strings.Clone(s)
	d.vals = append(d.vals, s)
	d.code[s] = c
	return c
}

// judgeBrief is what the list needs of the judge's outputs.
type judgeBrief struct {
	Label *string `json:"label"`
	Audit any     `json:"audit"`
}

// Open reads a run folder's results.parquet into the compact index and
// starts building the search index in the background.
func Open(dir string) (*Run, error) {
	start := time.Now()
	path := filepath.Join(dir, "results.parquet")
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("%s is not a finished run folder (no results.parquet): run `promoral apply` first, or name the folder that holds results.parquet", dir)
	}
	// Stamped before reading: files replaced while they are read differ
	// from the stamp, and the next request reads them again.
	r := &Run{Dir: dir, Name: filepath.Base(filepath.Clean(dir)), dicts: map[string]*dict{}, byID: map[string]int32{},
		stamp: stampOf(dir), openedAt: start}
	if data, err := os.ReadFile(filepath.Join(dir, "manifest.json")); err == nil {
		// The typed read refuses a folder of a later format.
		if err := checkFormat(dir); err != nil {
			return nil, err
		}
		if err := json.Unmarshal(data, &r.Manifest); err != nil {
			return nil, fmt.Errorf("%s: %v (the file is damaged; apply again rewrites it)", filepath.Join(dir, "manifest.json"), err)
		}
		if s, ok := r.Manifest["run"].(string); ok && s != "" {
			r.Name = s
		}
	}
	for _, c := range []string{"model", "strategy", "task", "gold", "label", "verdict", "error", "subset"} {
		r.dicts[c] = newDict()
	}
	p, err := openPQ(path)
	if err != nil {
		return nil, err
	}
	defer p.Close()
	r.n = p.rows()
	r.hasTrace = p.has("trace")
	if p.groups() > 0 {
		r.rowsPerGroup = p.start[1]
	}
	r.alloc()
	hasClass := p.has("error_class")
	subsetCode := map[string]int{}
	cols := []string{"case_id", "model", "strategy", "task", "item_id", "gold", "label", "confidence", "parsed", "correct",
		"truncated", "blocked", "judge", "total_tokens", "judge_tokens", "cost_usd", "judge_cost_usd", "error", "error_class", "subsets", "repeat"}
	for g := 0; g < p.groups(); g++ {
		b, err := p.read(g, cols...)
		if err != nil {
			return nil, err
		}
		base := p.start[g]
		for k := 0; k < b.n; k++ {
			i := base + k
			id, _ := b.str("case_id", k)
			r.id[i] = id
			r.byID[id] = int32(i)
			r.item[i], _ = b.str("item_id", k)
			if rep, ok := b.int("repeat", k); ok && rep > 0 {
				if r.repeat == nil {
					r.repeat = make([]int32, r.n)
				}
				r.repeat[i] = int32(rep)
			}
			r.model[i] = r.code("model", b, k, "model")
			r.strategy[i] = r.code("strategy", b, k, "strategy")
			r.task[i] = r.code("task", b, k, "task")
			r.gold[i] = r.code("gold", b, k, "gold")
			r.label[i] = r.code("label", b, k, "label")
			if v, ok := b.float("confidence", k); ok {
				r.conf[i] = v
			} else {
				r.conf[i] = math.NaN()
			}
			r.parsed[i], r.correct[i] = b.tri("parsed", k), b.tri("correct", k)
			r.truncated[i], r.blocked[i] = b.tri("truncated", k), b.tri("blocked", k)
			t1, _ := b.int("total_tokens", k)
			t2, _ := b.int("judge_tokens", k)
			r.tokens[i] = int32(t1 + t2)
			c1, _ := b.float("cost_usd", k)
			c2, _ := b.float("judge_cost_usd", k)
			r.cost[i] = float32(c1 + c2)
			if e, ok := b.strRef("error", k); ok && e != "" {
				class := "error"
				if hasClass {
					if c, ok := b.strRef("error_class", k); ok && c != "" {
						class = c
					}
				}
				r.errc[i] = r.dicts["error"].add(class)
			}
			r.audit[i] = -1
			if j, ok := b.strRef("judge", k); ok && j != "" {
				var jb judgeBrief
				if err := json.Unmarshal([]byte(j), &jb); err != nil {
					return nil, fmt.Errorf("%s: case %s: the judge column is not JSON: %v", path, id, err)
				}
				v := "(no verdict)"
				if jb.Label != nil && *jb.Label != "" {
					v = *jb.Label
				}
				r.verdict[i] = r.dicts["verdict"].add(v)
				r.audit[i] = 0
				if truthy(jb.Audit) {
					r.audit[i] = 1
				}
			}
			if s, ok := b.strRef("subsets", k); ok && s != "" {
				var names []string
				if err := json.Unmarshal([]byte(s), &names); err != nil {
					return nil, fmt.Errorf("%s: case %s: the subsets column is not a JSON list: %v", path, id, err)
				}
				for _, nm := range names {
					c, ok := subsetCode[nm]
					if !ok {
						if len(r.subsetNames) == 64 {
							return nil, fmt.Errorf("%s: more than 64 task subsets; the view filters at most 64", path)
						}
						c = len(r.subsetNames)
						subsetCode[nm] = c
						r.subsetNames = append(r.subsetNames, strings.Clone(nm))
					}
					r.subsets[i] |= 1 << uint(c)
				}
			}
		}
		b.release()
	}
	if _, err := os.Stat(filepath.Join(dir, "calls.parquet")); err == nil {
		r.hasCalls = true
	}
	if err := r.loadLabels(); err != nil {
		r.labErr = err
	}
	r.opened = time.Since(start)
	r.idx = newTextIndex(r)
	go r.idx.build()
	return r, nil
}

func (r *Run) alloc() {
	n := r.n
	r.id, r.item = make([]string, n), make([]string, n)
	r.model, r.strategy, r.task = make([]uint16, n), make([]uint16, n), make([]uint16, n)
	r.gold, r.label, r.verdict, r.errc = make([]uint16, n), make([]uint16, n), make([]uint16, n), make([]uint16, n)
	r.parsed, r.correct, r.truncated, r.blocked, r.audit = make([]int8, n), make([]int8, n), make([]int8, n), make([]int8, n), make([]int8, n)
	r.conf, r.tokens, r.cost = make([]float64, n), make([]int32, n), make([]float32, n)
	r.subsets = make([]uint64, n)
}

func (r *Run) code(d string, b *batch, k int, col string) uint16 {
	s, ok := b.strRef(col, k)
	if !ok {
		return 0
	}
	return r.dicts[d].add(s)
}

func (r *Run) val(d string, c uint16) string { return r.dicts[d].vals[c] }

// Len is the number of cases.
func (r *Run) Len() int { return r.n }

// Close stops the background indexing.
func (r *Run) Close() { r.idx.stop() }

func truthy(v any) bool {
	switch x := v.(type) {
	case bool:
		return x
	case string:
		return x == "true" || x == "yes"
	case float64:
		return x != 0
	}
	return false
}

func jsonFloat(f float64) any {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil
	}
	return f
}

// loadLabels (re)reads labels.jsonl.
func (r *Run) loadLabels() error {
	ls, err := audit.ReadLabels(r.Dir)
	m := map[int32][]audit.Label{}
	for _, l := range ls {
		if i, ok := r.byID[l.CaseID]; ok {
			m[i] = append(m[i], l)
		}
	}
	r.mu.Lock()
	r.labels = m
	r.mu.Unlock()
	return err
}

// addLabel appends a label for case i and records it as in force.
func (r *Run) addLabel(i int, label, note, annotator string) (audit.Label, error) {
	if i < 0 || i >= r.n {
		return audit.Label{}, errors.New("no such case")
	}
	l := audit.Label{CaseID: r.id[i], Task: r.val("task", r.task[i]), ItemID: r.item[i], Model: r.val("model", r.model[i]),
		Strategy: r.val("strategy", r.strategy[i]), Label: label, Annotator: annotator, Time: time.Now().UTC(), Note: note}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err := audit.AppendLabel(r.Dir, l); err != nil {
		return l, err
	}
	kept := r.labels[int32(i)][:0:0]
	for _, o := range r.labels[int32(i)] {
		if o.Annotator != annotator {
			kept = append(kept, o)
		}
	}
	if label != "" {
		kept = append(kept, l)
	}
	r.labels[int32(i)] = kept
	return l, nil
}

func (r *Run) labelsOf(i int) []audit.Label {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return append([]audit.Label(nil), r.labels[int32(i)]...)
}
