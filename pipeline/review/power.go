package review

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sort"
	"strconv"

	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/pipeline/stats"
)

// Power is what the study can detect: for each compare block, the minimum
// detectable difference of its pairs at 80% power, and with Detect the
// designs (items × repeats) that detect a given difference, cheapest first.
type Power struct {
	Blocks []PowerBlock `json:"blocks"`
	Notes  []string     `json:"notes,omitempty"`
}

// PowerBlock is one compare block's power.
type PowerBlock struct {
	Block string `json:"block"`
	// Tests is the number of comparisons the block makes, which Holm
	// adjusts across; Level = Alpha / Tests is the level of Holm's first
	// step, the level the MDE is computed at (Holm rejects at least
	// whatever a test at that level rejects).
	Tests  int          `json:"tests"`
	Alpha  float64      `json:"alpha"`
	Level  float64      `json:"level"`
	Rows   []PowerRow   `json:"rows"`
	Detect []DetectTask `json:"detect,omitempty"`
	Delta  float64      `json:"detect_difference,omitempty"`
}

// PowerRow is the MDE of comparisons alike: one task, items, repeats and
// assumptions (with a pilot, one comparison).
type PowerRow struct {
	Task string `json:"task"`
	// Pair is "model: a vs b" for one comparison, or "" for Pairs of them.
	Pair        string                 `json:"pair,omitempty"`
	Pairs       int                    `json:"pairs"`
	Items       int                    `json:"items"`
	Repeats     int                    `json:"repeats"`
	Source      string                 `json:"source"`
	Assumptions stats.PowerAssumptions `json:"assumptions"`
	// MDE is NaN (null in JSON) when no difference is detectable.
	MDE Num `json:"mde"`
	// MDELo, MDEHi: the 95% range of the MDE over bootstrap resamples of
	// the pilot's items (a pilot row only; NaN otherwise).
	MDELo Num `json:"mde_low"`
	MDEHi Num `json:"mde_high"`
}

// Num is a number that is null in JSON when it is not finite (encoding/json
// refuses NaN).
type Num float64

// MarshalJSON implements json.Marshaler.
func (n Num) MarshalJSON() ([]byte, error) {
	f := float64(n)
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, f, 'g', -1, 64), nil
}

// DetectTask is what detecting a difference takes on one task: every pair
// of the task runs on the same items and repeats, so a design is the
// task's.
type DetectTask struct {
	Task      string         `json:"task"`
	ItemsNow  int            `json:"items_now"`
	Options   []DetectOption `json:"options"`
	Unlimited int            `json:"items_unlimited_repeats"` // 0: more than the bound
	// RepeatsHelp: some number of repeats costs less than more items.
	RepeatsHelp bool   `json:"repeats_help"`
	Hardest     string `json:"hardest_pair,omitempty"`
}

// DetectOption is one design: items × repeats, and its cost over every
// cell the task's pairs compare (the judges' calls not counted).
type DetectOption struct {
	Items     int     `json:"items"`
	Repeats   int     `json:"repeats"`
	Calls     int     `json:"cases"`
	CostBest  float64 `json:"cost_usd_best"`
	CostWorst float64 `json:"cost_usd_worst"`
	// TooFew: the task has fewer items than the design needs.
	TooFew bool `json:"too_few_items,omitempty"`
}

// PowerOptions adjust the power analysis.
type PowerOptions struct {
	// Pilot is a run folder whose paired items estimate each pair's
	// assumptions.
	Pilot string
	// Detect, when above 0, asks for the designs that detect it.
	Detect float64
}

// detectRepeats are the repeats a design is tried at.
var detectRepeats = []int{1, 2, 3, 5, 10}

// maxItems bounds the items a design may need.
const maxItems = 10_000_000

// comparison is one test a compare block makes.
type comparison struct {
	task           *spec.Task
	other, a, b    string // other: the model (or strategy) within which a, b compare
	cellA, cellB   cellKey
	items, repeats int
	assume         stats.PowerAssumptions
	source         string
	pilot          *stats.PilotPair
}

// cellKey names a model × strategy × task cell.
type cellKey struct{ model, strategy, task string }

// cellCost is what a cell's cases still to run cost (plan's cost model).
type cellCost struct {
	cases       int
	best, worst float64
}

// addCellCost records a case's cost for the power analysis.
func (p *Plan) addCellCost(c *spec.Case, best, worst float64) {
	if p.cells == nil {
		p.cells = map[cellKey]*cellCost{}
	}
	k := cellKey{c.Model.Name, c.Strategy.Name, c.Task.Name}
	cc := p.cells[k]
	if cc == nil {
		cc = &cellCost{}
		p.cells[k] = cc
	}
	cc.cases++
	cc.best += best
	cc.worst += worst
}

// perCase is a cell's cost of one case (0 when it has no case to run).
func (p *Plan) perCase(k cellKey) (best, worst float64) {
	cc := p.cells[k]
	if cc == nil || cc.cases == 0 {
		return 0, 0
	}
	return cc.best / float64(cc.cases), cc.worst / float64(cc.cases)
}

// MakePower works out what the study's compare blocks can detect, from
// their declared assumptions or a pilot run; p (MakePlanWith's) prices the
// designs of o.Detect.
func MakePower(st *spec.Study, p *Plan, o PowerOptions) (*Power, error) {
	var pilot map[pilotKey]*pilotCounts
	if o.Pilot != "" {
		var err error
		if pilot, err = readPilotCounts(o.Pilot); err != nil {
			return nil, err
		}
	}
	seed := uint64(1)
	if st.Run != nil && st.Run.Settings.Seed != 0 {
		seed = uint64(st.Run.Settings.Seed)
	}
	pw := &Power{}
	for _, m := range st.Metrics {
		c, ok := m.(spec.Comparer)
		if !ok {
			continue
		}
		cs := c.Comparisons()
		comps := comparisonsOf(st, cs)
		if len(comps) == 0 {
			continue
		}
		b := PowerBlock{Block: cs.Block, Tests: len(comps), Alpha: stageAlpha}
		b.Level = b.Alpha / float64(b.Tests)
		fallback, src := cs.Power.Assumptions(), "default"
		if cs.Power.Declared() {
			src = "declared"
		}
		usedPilot := 0
		for i := range comps {
			c := &comps[i]
			c.assume, c.source = fallback, src
			if pilot != nil {
				if pp := pilotPair(pilot, cs.ByModel, c); pp != nil && len(pp.ARight) >= 10 {
					a, _ := pairAssumptions(*pp, fallback) // the study's repeats count, not the pilot's
					c.assume, c.source, c.pilot = a, fmt.Sprintf("pilot, %d items", len(pp.ARight)), pp
					usedPilot++
				}
			}
		}
		b.Rows = powerRows(comps, b.Level, seed)
		if o.Detect > 0 {
			b.Delta = o.Detect
			b.Detect = detect(comps, p, o.Detect, b.Level)
		}
		pw.Blocks = append(pw.Blocks, b)
		seen := map[*spec.Task]bool{}
		for _, c := range comps {
			if t := c.task; !seen[t] && t.Data != nil && t.Data.Pending {
				seen[t] = true
				pw.Notes = append(pw.Notes, fmt.Sprintf("task %s: its data is not fetched yet, so every one of its %d declared rows is taken as an item with a gold label", t.Name, c.items))
			}
		}
		if pilot != nil && usedPilot < len(comps) {
			pw.Notes = append(pw.Notes, fmt.Sprintf("block %s: the pilot has at least 10 paired items for %d of %d comparisons; the others use the block's %s assumptions", cs.Block, usedPilot, len(comps), src))
		}
	}
	if len(pw.Blocks) > 0 {
		pw.Notes = append(pw.Notes,
			"power: of the test the compare block runs (McNemar's exact test, or with repeats the exact sign test on the items whose share of right samples rose or fell) at Holm's first level, alpha / the block's tests: Holm rejects at least what that level rejects, whatever the other pairs do",
			"MDE: the smallest accuracy gain of b over a the test detects with 80% power, under the latent item model of docs/metrics.md")
	}
	return pw, nil
}

// stageAlpha is the level the compare table marks significance at.
const stageAlpha = 0.05

// comparisonsOf lists the tests a compare block makes on the study's cells,
// in the block's order: per task, per model (or strategy), each pair.
func comparisonsOf(st *spec.Study, cs spec.Comparisons) []comparison {
	type group struct{ task, other string }
	var groups []group
	names := map[group][]string{}
	reps := map[cellKey]int{}
	for _, c := range st.Cells {
		if c.Repeat != 0 || cs.Tasks[c.Task.Name] == nil || c.Model.NeverCalls() {
			continue
		}
		g, name := group{c.Task.Name, c.Model.Name}, c.Strategy.Name
		if cs.ByModel {
			g, name = group{c.Task.Name, c.Strategy.Name}, c.Model.Name
		}
		if _, ok := names[g]; !ok {
			groups = append(groups, g)
		}
		if !slices.Contains(names[g], name) {
			names[g] = append(names[g], name)
		}
		reps[cellKey{c.Model.Name, c.Strategy.Name, c.Task.Name}] = st.RepeatsOf(c.Model, c.Strategy)
	}
	var out []comparison
	for _, g := range groups {
		ns := names[g]
		var pairs [][2]string
		if len(cs.Pairs) > 0 {
			for _, p := range cs.Pairs {
				if slices.Contains(ns, p[0]) && slices.Contains(ns, p[1]) {
					pairs = append(pairs, p)
				}
			}
		} else {
			for i := range ns {
				for j := i + 1; j < len(ns); j++ {
					pairs = append(pairs, [2]string{ns[i], ns[j]})
				}
			}
		}
		t := cs.Tasks[g.task]
		items := 0
		for i := range t.Items {
			if t.Items[i].Gold != "" {
				items++
			}
		}
		if t.Data != nil && t.Data.Pending {
			items = len(t.Items) // stand-ins for the declared rows, gold unknown yet
		}
		for _, p := range pairs {
			ka, kb := cellKey{g.other, p[0], g.task}, cellKey{g.other, p[1], g.task}
			if cs.ByModel {
				ka, kb = cellKey{p[0], g.other, g.task}, cellKey{p[1], g.other, g.task}
			}
			out = append(out, comparison{task: t, other: g.other, a: p[0], b: p[1], cellA: ka, cellB: kb, items: items, repeats: min(reps[ka], reps[kb])})
		}
	}
	return out
}

// mdeKey identifies comparisons with one MDE.
type mdeKey struct {
	items, repeats int
	a              stats.PowerAssumptions
	level          float64
}

var mdeCache = map[mdeKey]float64{}

func mdeOf(a stats.PowerAssumptions, items, repeats int, level float64) float64 {
	k := mdeKey{items, repeats, a, level}
	if v, ok := mdeCache[k]; ok {
		return v
	}
	v := stats.LatentOf(a).MDE(a.Accuracy, items, repeats, level, stats.DefaultPower)
	mdeCache[k] = v
	return v
}

// powerRows groups the comparisons alike into rows, pilot ones each on
// its own with the MDE's range over resamples of the pilot's items.
func powerRows(comps []comparison, level float64, seed uint64) []PowerRow {
	var rows []PowerRow
	at := map[string]int{}
	for _, c := range comps {
		if c.pilot != nil {
			r := PowerRow{Task: c.task.Name, Pair: fmt.Sprintf("%s: %s vs %s", c.other, c.a, c.b), Pairs: 1, Items: c.items, Repeats: c.repeats,
				Source: c.source, Assumptions: c.assume, MDE: Num(mdeOf(c.assume, c.items, c.repeats, level))}
			lo, hi := pilotRange(*c.pilot, c.assume, c.items, c.repeats, level, seed)
			r.MDELo, r.MDEHi = Num(lo), Num(hi)
			rows = append(rows, r)
			continue
		}
		k := fmt.Sprint(c.task.Name, c.items, c.repeats, c.assume, c.source)
		if i, ok := at[k]; ok {
			rows[i].Pairs++
			continue
		}
		at[k] = len(rows)
		rows = append(rows, PowerRow{Task: c.task.Name, Pairs: 1, Items: c.items, Repeats: c.repeats, Source: c.source, Assumptions: c.assume,
			MDE: Num(mdeOf(c.assume, c.items, c.repeats, level)), MDELo: Num(math.NaN()), MDEHi: Num(math.NaN())})
	}
	return rows
}

// pilotRange is the 95% range of the MDE over 100 bootstrap resamples of
// the pilot's items (the assumptions measured again on each).
func pilotRange(pp stats.PilotPair, fallback stats.PowerAssumptions, items, repeats int, level float64, seed uint64) (lo, hi float64) {
	r := rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15))
	n := len(pp.ARight)
	var vals []float64
	for b := 0; b < 100; b++ {
		var q stats.PilotPair
		for i := 0; i < n; i++ {
			j := r.IntN(n)
			q.ARight, q.AN = append(q.ARight, pp.ARight[j]), append(q.AN, pp.AN[j])
			q.BRight, q.BN = append(q.BRight, pp.BRight[j]), append(q.BN, pp.BN[j])
		}
		a, _ := pairAssumptions(q, fallback)
		if v := stats.LatentOf(a).MDE(a.Accuracy, items, repeats, level, stats.DefaultPower); !math.IsNaN(v) {
			vals = append(vals, v)
		} else {
			vals = append(vals, math.Inf(1))
		}
	}
	sort.Float64s(vals)
	return vals[2], vals[97]
}

// detect works out, per task, the items each number of repeats needs for
// every comparison of the task to detect delta, and what that costs.
func detect(comps []comparison, p *Plan, delta, level float64) []DetectTask {
	var tasks []*spec.Task
	byTask := map[*spec.Task][]comparison{}
	for _, c := range comps {
		if byTask[c.task] == nil {
			tasks = append(tasks, c.task)
		}
		byTask[c.task] = append(byTask[c.task], c)
	}
	var out []DetectTask
	for _, t := range tasks {
		cs := byTask[t]
		dt := DetectTask{Task: t.Name, ItemsNow: cs[0].items}
		// The cells compared, and one case of each.
		cells := map[cellKey]bool{}
		var best, worst float64
		for _, c := range cs {
			for _, k := range []cellKey{c.cellA, c.cellB} {
				if !cells[k] {
					cells[k] = true
					b, w := p.perCase(k)
					best, worst = best+b, worst+w
				}
			}
		}
		// Each distinct set of assumptions needs its own items; the task
		// needs the most.
		need := func(k int) (int, string) {
			n, hardest := 0, ""
			seen := map[stats.PowerAssumptions]int{}
			for _, c := range cs {
				v, ok := seen[c.assume]
				if !ok {
					v = stats.LatentOf(c.assume).ItemsNeeded(c.assume.Accuracy, delta, k, level, stats.DefaultPower, maxItems)
					if c.assume.Accuracy+delta >= 1 {
						v = 0
					}
					seen[c.assume] = v
				}
				if v == 0 {
					return 0, fmt.Sprintf("%s: %s vs %s", c.other, c.a, c.b)
				}
				if v > n {
					n, hardest = v, fmt.Sprintf("%s: %s vs %s", c.other, c.a, c.b)
				}
			}
			return n, hardest
		}
		for _, k := range detectRepeats {
			n, hardest := need(k)
			if k == 1 {
				dt.Hardest = hardest
			}
			if n == 0 {
				continue
			}
			dt.Options = append(dt.Options, DetectOption{Items: n, Repeats: k, Calls: n * k * len(cells),
				CostBest: float64(n*k) * best, CostWorst: float64(n*k) * worst, TooFew: n > dt.ItemsNow})
		}
		dt.Unlimited, _ = need(0)
		if len(dt.Options) > 0 {
			one := dt.Options[0]
			for _, o := range dt.Options[1:] {
				if o.Repeats > 1 && one.Repeats == 1 && o.Items*o.Repeats < one.Items {
					dt.RepeatsHelp = true
				}
			}
			if one.Repeats != 1 {
				dt.RepeatsHelp = true // one repeat cannot reach it at all
			}
		}
		slices.SortStableFunc(dt.Options, func(x, y DetectOption) int {
			return cmp.Or(cmp.Compare(x.CostBest+x.CostWorst, y.CostBest+y.CostWorst), cmp.Compare(x.Calls, y.Calls))
		})
		out = append(out, dt)
	}
	return out
}

// pilotKey is one answer's cell and item in a pilot run.
type pilotKey struct{ model, strategy, task, item string }

type pilotCounts struct{ right, n int }

// readPilotCounts reads a pilot run's answers with gold: per cell and item,
// the right samples and the samples (an unparsed answer counts wrong, as
// the compare block's default policy does).
func readPilotCounts(dir string) (map[pilotKey]*pilotCounts, error) {
	out := map[pilotKey]*pilotCounts{}
	err := parquetio.Scan(filepath.Join(dir, "results.parquet"), []string{"model", "strategy", "task", "item_id", "correct"}, nil, func(r map[string]any) {
		ok, isBool := r["correct"].(bool)
		if !isBool {
			return
		}
		k := pilotKey{fmt.Sprint(r["model"]), fmt.Sprint(r["strategy"]), fmt.Sprint(r["task"]), fmt.Sprint(r["item_id"])}
		c := out[k]
		if c == nil {
			c = &pilotCounts{}
			out[k] = c
		}
		c.n++
		if ok {
			c.right++
		}
	})
	if err != nil {
		return nil, fmt.Errorf("pilot %s: %w (name a folder apply wrote)", dir, err)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("pilot %s: results.parquet has no answer with a gold label", dir)
	}
	return out, nil
}

// pilotPair collects the pilot's items both cells of c answered.
func pilotPair(pilot map[pilotKey]*pilotCounts, byModel bool, c *comparison) *stats.PilotPair {
	items := map[string]bool{}
	var order []string
	for k := range pilot {
		if k.task == c.task.Name && k.model == c.cellA.model && k.strategy == c.cellA.strategy && !items[k.item] {
			items[k.item] = true
			order = append(order, k.item)
		}
	}
	sort.Strings(order)
	pp := &stats.PilotPair{}
	for _, it := range order {
		a := pilot[pilotKey{c.cellA.model, c.cellA.strategy, c.task.Name, it}]
		b := pilot[pilotKey{c.cellB.model, c.cellB.strategy, c.task.Name, it}]
		if a == nil || b == nil {
			continue
		}
		pp.ARight, pp.AN = append(pp.ARight, a.right), append(pp.AN, a.n)
		pp.BRight, pp.BN = append(pp.BRight, b.right), append(pp.BN, b.n)
	}
	return pp
}

// pairAssumptions measures a pair's assumptions on its pilot items, the
// fallback's where they cannot say (stages.PairAssumptions does the same
// for the compare block's MDE).
func pairAssumptions(pp stats.PilotPair, fallback stats.PowerAssumptions) (stats.PowerAssumptions, int) {
	return stats.PairAssumptionsOf(pp, fallback)
}
