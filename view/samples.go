package view

import (
	"encoding/json"
	"sort"
	"sync"
)

// Sample is one repeat of an item on the case page: its row and what it
// answered (the strategy's reply output, else all its outputs).
type Sample struct {
	Row
	Reply string `json:"reply,omitempty"`
}

// sampleRows reads the repeats of case i's item from results.parquet (p),
// its row groups through group.
func (r *Run) sampleRows(p *pqFile, group func(g int) (*batch, error), i int32) ([]Sample, error) {
	g := r.samplesOf(i)
	if g == nil {
		return nil, nil
	}
	out := make([]Sample, len(g))
	for k, j := range g {
		out[k].Row = r.row(j)
		grp := p.groupOf(int(j))
		b, err := group(grp)
		if err != nil {
			return out, err
		}
		s, ok := b.str("outputs", int(j)-p.start[grp])
		if !ok {
			continue
		}
		var outs map[string]any
		if json.Unmarshal([]byte(s), &outs) == nil {
			if rep, ok := outs["reply"].(string); ok {
				out[k].Reply = rep
				continue
			}
		}
		out[k].Reply = s
	}
	return out, nil
}

// samples indexes the repeats of each item (repeats: k): the cases of one
// model, strategy, task and item, by repeat.
type samples struct {
	once sync.Once
	of   map[sampleKey][]int32
}

type sampleKey struct {
	model, strategy, task uint16
	item                  string
}

// samplesOf lists the repeats of case i's item, case i among them, in
// repeat order; nil for a run without repeats.
func (r *Run) samplesOf(i int32) []int32 {
	if r.repeat == nil {
		return nil
	}
	s := &r.samples
	s.once.Do(func() {
		s.of = map[sampleKey][]int32{}
		for j := 0; j < r.n; j++ {
			k := sampleKey{r.model[j], r.strategy[j], r.task[j], r.item[j]}
			s.of[k] = append(s.of[k], int32(j))
		}
		for _, g := range s.of {
			sort.Slice(g, func(a, b int) bool { return r.repeat[g[a]] < r.repeat[g[b]] })
		}
	})
	g := s.of[sampleKey{r.model[i], r.strategy[i], r.task[i], r.item[i]}]
	if len(g) < 2 {
		return nil
	}
	return g
}
