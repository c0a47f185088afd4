package view

import (
	"fmt"
	"sort"
	"strings"

	"github.com/promoral/promoral/pipeline/stats"
)

// Compare puts two sides next to each other on the same items: two
// strategies (or two models) of one run, or the same cells of two runs.
type Compare struct {
	By   string // strategy, model or run
	A, B string // the two strategies or models (by run: unused)
	Q    Query  // filters on both sides (besides the compared one)
	Only string // "" all pairs, "flips": correctness changed, "changed": label changed
}

// Comparison is the side-by-side page.
type Comparison struct {
	By      string     `json:"by"`
	A       string     `json:"a"`
	B       string     `json:"b"`
	RunA    string     `json:"run_a"`
	RunB    string     `json:"run_b"`
	Cells   []PairCell `json:"cells"`
	Pairs   []Pair     `json:"pairs"`
	Total   int        `json:"total"` // pairs after Only
	Paired  int        `json:"paired"`
	Flips   int        `json:"flips"`
	Changed int        `json:"changed"`
	Alone   int        `json:"alone"` // A cases with no B case on the same item
	Offset  int        `json:"offset"`
	Method  string     `json:"method"`
}

// PairCell is the paired accuracy of one cell, as `promoral diff` computes
// it: accuracy of B minus A on the items both scored, its paired bootstrap
// interval, McNemar's exact p and its Holm adjustment over the cells.
type PairCell struct {
	Cell     string `json:"cell"`
	N        int    `json:"n"`
	Unscored int    `json:"unscored"` // pairs left out: no gold, or an answer its run's policy leaves out (unparsed under exclude, errored)
	// Incomplete: a side counts errored cases as incomplete (errors:
	// incomplete) and has some in this cell, so no paired figure is given.
	Incomplete bool `json:"incomplete,omitempty"`
	AccA       any  `json:"acc_a"`
	AccB       any  `json:"acc_b"`
	Diff       any  `json:"diff"`
	Lo         any  `json:"lo"`
	Hi         any  `json:"hi"`
	RightToW   int  `json:"a_right_b_wrong"`
	WrongToR   int  `json:"a_wrong_b_right"`
	P          any  `json:"p"`
	Holm       any  `json:"holm"`
	// Repeats: the sides have several samples of an item (repeats: k),
	// paired repeat by repeat; N counts items, each scored by its share of
	// right samples, the interval resamples items and P is a sign test on
	// the items whose score fell (a_right_b_wrong) or rose, as diff does.
	Repeats bool `json:"repeats,omitempty"`
}

// Pair is one item with both sides.
type Pair struct {
	Cell string `json:"cell"`
	Task string `json:"task"`
	Item string `json:"item"`
	A    Row    `json:"a"`
	B    Row    `json:"b"`
	Flip string `json:"flip,omitempty"` // "now right", "now wrong", "label changed"
}

// diffSeed and diffReps are those of `promoral diff`, so the page and the
// command print the same intervals.
const diffSeed, diffReps = 1, 1000

// CompareRuns pairs cases of a (run ra) and b (run rb; the same run unless
// by is "run").
func CompareRuns(ra, rb *Run, c Compare) (*Comparison, error) {
	switch c.By {
	case "strategy", "model":
		if c.A == "" || c.B == "" {
			return nil, fmt.Errorf("choose the two %ss to compare (a= and b=)", c.By)
		}
	case "run":
		if ra == rb {
			return nil, fmt.Errorf("comparing runs needs a second run: promoral view RUN_A RUN_B")
		}
	default:
		return nil, fmt.Errorf("by %q: compare by strategy, model or run", c.By)
	}
	qa, qb := c.Q, c.Q
	qa.Sel, qb.Sel = copySel(c.Q.Sel), copySel(c.Q.Sel)
	if c.By != "run" {
		qa.Sel[c.By], qb.Sel[c.By] = []string{c.A}, []string{c.B}
	}
	ma, err := ra.Find(qa)
	if err != nil {
		return nil, err
	}
	mb, err := rb.Find(qb)
	if err != nil {
		return nil, err
	}
	out := &Comparison{By: c.By, A: c.A, B: c.B, RunA: ra.Name, RunB: rb.Name, Offset: c.Q.Offset, Cells: []PairCell{},
		Method: fmt.Sprintf("B − A accuracy on the items both sides scored; 95%% paired bootstrap interval (%d resamples, seed %d) and McNemar's exact p, Holm-adjusted over the cells, as promoral diff computes them. Each run's answers count under its own policies, read from its manifest: an unparsed answer is wrong, or left out under unparsed: exclude; an errored one is left out (or counts as unparsed under errors: unparsed), and a cell where a run with errors: incomplete has errored cases gets no figure. Pairs left out, and items without gold, are counted.", diffReps, diffSeed)}
	if c.By == "run" {
		out.A, out.B = ra.Name, rb.Name
	}
	bOf := map[string]int32{}
	for _, j := range mb.Cases {
		bOf[pairKey(rb, j, c.By)] = j
	}
	type vec struct {
		a, b       []bool
		unscored   int
		errA, errB bool
		task       string
		// per item (repeats: k): right and scored samples a side
		at             map[string]int
		ar, an, br, bn []int
	}
	cells := map[string]*vec{}
	var cellOrder []string
	var pairs []Pair
	for _, i := range ma.Cases {
		j, ok := bOf[pairKey(ra, i, c.By)]
		if !ok {
			out.Alone++
			continue
		}
		cell := cellName(ra, i, c.By)
		v := cells[cell]
		if v == nil {
			v = &vec{task: ra.val("task", ra.task[i]), at: map[string]int{}}
			cells[cell] = v
			cellOrder = append(cellOrder, cell)
		}
		task := ra.val("task", ra.task[i])
		p := Pair{Cell: cell, Task: task, Item: baseItem(ra, i), A: ra.row(i), B: rb.row(j)}
		okA, ca := ra.scored(i, task)
		okB, cb := rb.scored(j, task)
		v.errA = v.errA || ra.errc[i] != 0
		v.errB = v.errB || rb.errc[j] != 0
		if !okA || !okB {
			v.unscored++
		} else {
			v.a, v.b = append(v.a, ca), append(v.b, cb)
			// Without repeats every pair is an item of its own.
			k, ok := v.at[p.Item]
			if !ok || ra.repeat == nil && rb.repeat == nil {
				k = len(v.ar)
				v.at[p.Item] = k
				v.ar, v.an, v.br, v.bn = append(v.ar, 0), append(v.an, 0), append(v.br, 0), append(v.bn, 0)
			}
			v.an[k]++
			v.bn[k]++
			if ca {
				v.ar[k]++
			}
			if cb {
				v.br[k]++
			}
			switch {
			case ca && !cb:
				p.Flip = "now wrong"
			case !ca && cb:
				p.Flip = "now right"
			}
		}
		if p.Flip == "" && p.A.Label != p.B.Label {
			p.Flip = "label changed"
		}
		if p.Flip == "" && p.A.Verdict != p.B.Verdict {
			p.Flip = "label changed"
		}
		switch p.Flip {
		case "now right", "now wrong":
			out.Flips++
		case "label changed":
			out.Changed++
		}
		out.Paired++
		pairs = append(pairs, p)
	}
	counts := make([]stats.PairedCounts, len(cellOrder))
	for k, name := range cellOrder {
		v := cells[name]
		// As diff: a side that counts errored cases as incomplete gives no
		// paired figure for a cell where it has any.
		void := v.errA && ra.policy(v.task).Incomplete || v.errB && rb.policy(v.task).Incomplete
		counts[k] = stats.PairedCounts{AR: v.ar, AN: v.an, BR: v.br, BN: v.bn, Void: void}
	}
	diffs, repeats, holm := stats.PairedCells(counts, diffReps, diffSeed)
	for k, name := range cellOrder {
		v := cells[name]
		pc := PairCell{Cell: name, N: len(v.a), Unscored: v.unscored, Incomplete: counts[k].Void, Holm: jsonFloat(holm[k])}
		// Some item paired more than one sample of a run with repeats.
		if repeats[k] {
			pc.N, pc.Repeats = len(v.ar), true
		}
		if len(v.a) > 0 && !pc.Incomplete {
			d := diffs[k]
			pc.AccA, pc.AccB = jsonFloat(mean(v.a)), jsonFloat(mean(v.b))
			pc.Diff, pc.Lo, pc.Hi, pc.P = jsonFloat(d.MeanDiff), jsonFloat(d.Lo), jsonFloat(d.Hi), jsonFloat(d.McNemarP)
			pc.RightToW, pc.WrongToR = d.B, d.C
		}
		out.Cells = append(out.Cells, pc)
	}
	rank := map[string]int{"now wrong": 0, "now right": 1, "label changed": 2, "": 3}
	sort.SliceStable(pairs, func(x, y int) bool { return rank[pairs[x].Flip] < rank[pairs[y].Flip] })
	kept := pairs[:0]
	for _, p := range pairs {
		switch {
		case c.Only == "flips" && p.Flip != "now right" && p.Flip != "now wrong":
		case c.Only == "changed" && p.Flip == "":
		default:
			kept = append(kept, p)
		}
	}
	out.Total = len(kept)
	lo := min(c.Q.Offset, len(kept))
	hi := min(lo+c.Q.Limit, len(kept))
	out.Pairs = append([]Pair{}, kept[lo:hi]...)
	return out, nil
}

func copySel(m map[string][]string) map[string][]string {
	out := make(map[string][]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func mean(v []bool) float64 {
	n := 0
	for _, b := range v {
		if b {
			n++
		}
	}
	return float64(n) / float64(len(v))
}

// baseItem is the item id without the answering model and strategy:
// re-scored recorded replies (task report_as) carry them in their ids
// ("gpt-4.1:zero_shot:17"), and the same item under two strategies must
// pair.
func baseItem(r *Run, i int32) string {
	id := r.item[i]
	if !strings.Contains(id, ":") {
		return id
	}
	m, s := r.val("model", r.model[i]), r.val("strategy", r.strategy[i])
	var keep []string
	for _, part := range strings.Split(id, ":") {
		if part != m && part != s {
			keep = append(keep, part)
		}
	}
	return strings.Join(keep, ":")
}

func pairKey(r *Run, i int32, by string) string {
	t, it := r.val("task", r.task[i]), baseItem(r, i)
	if r.repeat != nil && r.repeat[i] > 0 {
		it += fmt.Sprintf("\x00%d", r.repeat[i]) // a repeat pairs with the same repeat
	}
	switch by {
	case "strategy":
		return r.val("model", r.model[i]) + "\x00" + t + "\x00" + it
	case "model":
		return r.val("strategy", r.strategy[i]) + "\x00" + t + "\x00" + it
	}
	return r.val("model", r.model[i]) + "\x00" + r.val("strategy", r.strategy[i]) + "\x00" + t + "\x00" + it
}

func cellName(r *Run, i int32, by string) string {
	t := r.val("task", r.task[i])
	switch by {
	case "strategy":
		return r.val("model", r.model[i]) + " · " + t
	case "model":
		return r.val("strategy", r.strategy[i]) + " · " + t
	}
	return r.val("model", r.model[i]) + " · " + r.val("strategy", r.strategy[i]) + " · " + t
}

// policy is how this run counts a task's answers in a pairing (cached).
func (r *Run) policy(task string) answerPolicy {
	r.polMu.Lock()
	defer r.polMu.Unlock()
	if p, ok := r.policies[task]; ok {
		return p
	}
	if r.policies == nil {
		r.policies = map[string]answerPolicy{}
	}
	p := answerPolicyOf(r.Dir, task)
	r.policies[task] = p
	return p
}

// scored says whether case i enters a pairing under its run's policy, and
// whether it counts as right. Items without gold never do.
func (r *Run) scored(i int32, task string) (ok, right bool) {
	errored := r.errc[i] != 0
	if r.correct[i] == -1 && !errored {
		return false, false
	}
	return r.policy(task).Score(errored, r.parsed[i] == 1, r.correct[i] == 1)
}
