package pipeline

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/llm"
)

// CallPlanner is implemented by stages that call a model, so `plan` can see
// what they would send without sending it.
type CallPlanner interface {
	// PlanCall renders the stage's own messages for env and returns them
	// with the stage's generation parameters and the stages it continues.
	PlanCall(env map[string]any) (msgs []llm.Message, params GenParams, cont []string, err error)
}

// PlanRow is the plan for one model (or the total).
type PlanRow struct {
	Model             string  `json:"model"`
	Cases             int     `json:"cases"`
	CasesDone         int     `json:"cases_done"`
	CallsJournaled    int     `json:"calls_journaled"`
	CallsBest         int     `json:"calls_best"`
	CallsWorst        int     `json:"calls_worst"`
	InputTokensBest   int     `json:"input_tokens_best"`
	InputTokensWorst  int     `json:"input_tokens_worst"`
	OutputTokensBest  int     `json:"output_tokens_best"`
	OutputTokensWorst int     `json:"output_tokens_worst"`
	CostBest          float64 `json:"cost_usd_best"`
	CostWorst         float64 `json:"cost_usd_worst"`
	// Mode is live or batch; a batch row's cost is at batch prices, and
	// LiveCost* is what the same calls cost live.
	Mode          string  `json:"mode"`
	LiveCostBest  float64 `json:"live_cost_usd_best"`
	LiveCostWorst float64 `json:"live_cost_usd_worst"`
	// Waves bounds a batch row's waves: the longest chain of sequential
	// calls of a case still to run (its own graph, then its judge's), times
	// the generations of in-flight cases (limits.batch_cases) its cases
	// need. Zero for live rows.
	WavesBest  int `json:"waves_best,omitempty"`
	WavesWorst int `json:"waves_worst,omitempty"`
}

// PlanStrategy is one strategy's chain of sequential calls per case: the
// waves it takes in batch mode.
type PlanStrategy struct {
	Strategy   string `json:"strategy"`
	Judge      bool   `json:"judge,omitempty"`
	WavesBest  int    `json:"waves_best"`
	WavesWorst int    `json:"waves_worst"`
}

// PlanOptions adjust a plan.
type PlanOptions struct {
	// Batch plans every model whose provider has a batch API in batch mode
	// (apply --batch); otherwise only models with limits.mode: batch.
	Batch bool
}

// BatchTurnaround is the completion window the providers promise a batch
// job (OpenAI, Anthropic and Google all say 24 hours; most finish sooner).
const BatchTurnaround = 24 * time.Hour

// DefaultBatchCases is limits.batch_cases when unset.
const DefaultBatchCases = 5000

// BatchMode reports whether a model's calls go through its provider's batch
// API under o.
func (o PlanOptions) BatchMode(m *Model) bool {
	switch m.Spec.Provider {
	case "openai", "openai-compatible", "anthropic", "gemini":
		return o.Batch || m.Spec.Limits.Mode == ModeBatch
	}
	return false
}

// Plan is what an apply would do, computed without any network call.
type Plan struct {
	Run     string    `json:"run"`
	Journal string    `json:"journal"`
	Models  []PlanRow `json:"models"`
	Total   PlanRow   `json:"total"`
	// Strategies lists each strategy's waves per case.
	Strategies []PlanStrategy `json:"strategies"`
	Notes      []string       `json:"notes"`
	// Selection is set when the plan covers part of the study (plan
	// --model, --strategy, --task, --limit, --shard).
	Selection *Selection `json:"selection,omitempty"`
	// Data lists the hub datasets: cached, or what a first run fetches.
	Data []PlanData `json:"data,omitempty"`
}

// HasWork reports whether an apply would make any new call.
func (p *Plan) HasWork() bool { return p.Total.CallsWorst > 0 }

// DefaultMaxTokens is the best case's base when a stage sets no
// max_tokens (a quarter of it, without journal history). The worst case
// there is llm.DefaultReplyTokens: the bound the spend cap reserves and the
// reply size limit allows, since such a request goes out unbounded.
const DefaultMaxTokens = 1024

var errPlanMiss = errors.New("not journaled")

type stageStats struct{ sum, n int }

// MakePlan works out, per model, the cases, the model calls still to make
// (loops at one pass for the best case and at their bound for the worst),
// the calls the journal already holds, tokens and the cost range. It reads
// the journal without locking it and calls no model.
func MakePlan(st *Study, outDir string) (*Plan, error) {
	return MakePlanWith(st, outDir, PlanOptions{})
}

// MakePlanWith is MakePlan with options (batch mode).
func MakePlanWith(st *Study, outDir string, o PlanOptions) (*Plan, error) {
	jpath := outDir + "/journal.jsonl"
	j, err := journal.OpenReadOnly(jpath)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	hist := completionHistory(j)
	p := &Plan{Run: st.Run.Name, Journal: jpath}
	src := planSource(st, j) // the journal, then the shared cache (engineshared.go)
	rows := map[*Model]*PlanRow{}
	chains := map[*Model]*waveChain{}
	for _, m := range st.Models {
		rows[m] = &PlanRow{Model: m.Name, Mode: ModeLive}
		if o.BatchMode(m) {
			rows[m].Mode = ModeBatch
		}
		chains[m] = &waveChain{}
	}
	shapes := map[*Strategy]*shape{}
	usedHist := false
	cb := newCalibration()
	var firstErr error
	st.EachCase(func(c *Case) bool {
		row := rows[c.Model]
		row.Cases++
		sh := shapes[c.Strategy]
		if sh == nil {
			sh = strategyShape(c.Strategy)
			shapes[c.Strategy] = sh
		}
		if jd := c.Task.Judge; jd != nil {
			// The judge's calls go to the judge model's row; the judged
			// reply is not known before the run, so it is always work.
			jc := &Case{Ordinal: c.Ordinal, Cell: c.Cell, Model: jd.Model, Strategy: jd.Strategy, Task: c.Task, Item: c.Item, Repeat: c.Repeat}
			jsh := shapes[jd.Strategy]
			if jsh == nil {
				jsh = strategyShape(jd.Strategy)
				shapes[jd.Strategy] = jsh
			}
			addWork(rows[jd.Model], jc, jsh, 0, hist, &usedHist, cb)
		}
		judge := func(best bool) int {
			if jd := c.Task.Judge; jd != nil {
				if best {
					return shapes[jd.Strategy].best
				}
				return shapes[jd.Strategy].worst
			}
			return 0
		}
		hits, done, err := planWalk(src, c)
		if err != nil && firstErr == nil {
			firstErr = err
		}
		row.CallsJournaled += hits
		if done {
			row.CasesDone++
			return true
		}
		addWork(row, c, sh, hits, hist, &usedHist, cb)
		if row.Mode == ModeBatch {
			ch := chains[c.Model]
			ch.best = append(ch.best, max(sh.best-hits, 1)+judge(true))
			ch.worst = append(ch.worst, max(sh.worst-hits, 1)+judge(false))
		} else if jd := c.Task.Judge; jd != nil && rows[jd.Model].Mode == ModeBatch {
			if _, never := c.Model.Provider.(noCalls); never {
				// Recorded replies: the judge's turns are the case's waves,
				// run as many at once as the judge's wave holds (workers).
				ch := chains[jd.Model]
				ch.best = append(ch.best, judge(true))
				ch.worst = append(ch.worst, judge(false))
			}
		}
		return true
	})
	if firstErr != nil {
		return nil, firstErr
	}
	t := &p.Total
	t.Model = "total"
	var batched, unpriced []string
	for _, m := range st.Models {
		r := rows[m]
		if r.Cases == 0 && r.CallsWorst == 0 {
			continue
		}
		if r.Mode == ModeBatch {
			batched = append(batched, m.Name)
			if !m.Spec.Price.HasBatch() {
				unpriced = append(unpriced, m.Name)
			}
			in := m.Spec.Limits.BatchCases
			if in <= 0 {
				in = DefaultBatchCases
			}
			ch := chains[m]
			r.WavesBest, r.WavesWorst = simulateWaves(ch.best, in), simulateWaves(ch.worst, in)
			t.WavesBest, t.WavesWorst = max(t.WavesBest, r.WavesBest), max(t.WavesWorst, r.WavesWorst)
		}
		p.Models = append(p.Models, *r)
		t.Cases += r.Cases
		t.CasesDone += r.CasesDone
		t.CallsJournaled += r.CallsJournaled
		t.CallsBest += r.CallsBest
		t.CallsWorst += r.CallsWorst
		t.InputTokensBest += r.InputTokensBest
		t.InputTokensWorst += r.InputTokensWorst
		t.OutputTokensBest += r.OutputTokensBest
		t.OutputTokensWorst += r.OutputTokensWorst
		t.CostBest += r.CostBest
		t.CostWorst += r.CostWorst
		t.LiveCostBest += r.LiveCostBest
		t.LiveCostWorst += r.LiveCostWorst
	}
	// A judge model's waves run alongside the cases it judges.
	for i := range p.Models {
		r := &p.Models[i]
		for _, c := range st.Cells {
			if j := c.Task.Judge; j != nil && j.Model.Name == r.Model && r.Mode == ModeBatch && rows[c.Model].Mode == ModeBatch {
				r.WavesBest, r.WavesWorst = max(r.WavesBest, rows[c.Model].WavesBest), max(r.WavesWorst, rows[c.Model].WavesWorst)
			}
		}
	}
	if len(batched) > 0 {
		t.Mode = ModeBatch
	} else {
		t.Mode = ModeLive
	}
	p.Strategies = strategyWaves(st, shapes)
	var exact, estimated []string
	for _, r := range p.Models {
		if name, ok := cb.used[r.Model]; ok {
			exact = append(exact, r.Model+" ("+name+")")
		} else {
			estimated = append(estimated, r.Model)
		}
	}
	if len(exact) > 0 {
		p.Notes = append(p.Notes, "input tokens counted with the model's own tokenizer for "+strings.Join(exact, ", ")+
			fmt.Sprintf(" (exactly for the first %d rendered prompts of each strategy and task, then at their measured characters per token)", calibrationItems*4))
	}
	if len(estimated) > 0 {
		p.Notes = append(p.Notes, "input tokens estimated at 4 characters per token for "+strings.Join(estimated, ", ")+" (no tokenizer for these families exists in Go)")
	}
	p.Notes = append(p.Notes,
		"input tokens are counted from the rendered prompts; earlier turns of a continued conversation are included once",
		"calls: best = every loop taken once, worst = every loop at its max_visits bound",
		fmt.Sprintf("output tokens: worst = max_tokens x samples (%d where a stage sets none: the bound the spend cap reserves for such a request) plus thinking budgets; best = the mean of earlier runs in the journal where it has them, else a quarter of max_tokens (of %d where a stage sets none)", llm.DefaultReplyTokens, DefaultMaxTokens),
	)
	if usedHist {
		p.Notes = append(p.Notes, "the journal's earlier runs informed the best-case output tokens")
	}
	if n := st.repeatsNote(); n != "" {
		p.Notes = append(p.Notes, n)
	}
	if n := UnpricedNames(st); len(n) > 0 {
		p.Notes = append(p.Notes, "no price for "+strings.Join(n, ", ")+": its cost is unknown and counted as $0.00 here; add price: {input, output} (USD per million tokens) to the model")
	}
	if n := src.sharedHits(); n > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d of the journaled calls are in the shared cache %s, not yet in this run's journal: apply copies them there and pays nothing for them", n, src.shared.Root()))
	}
	if len(batched) > 0 {
		p.Notes = append(p.Notes,
			fmt.Sprintf("batch mode for %s: cost at the price table's batch prices (live cost %.2f–%.2f for the same calls)", strings.Join(batched, ", "), t.LiveCostBest, t.LiveCostWorst),
			fmt.Sprintf("batch mode: each turn of a case is one wave, and a wave waits for its jobs; the providers promise each job within %d h (most finish in minutes to hours), so %d–%d waves can take up to %d–%d days",
				int(BatchTurnaround.Hours()), t.WavesBest, t.WavesWorst, t.WavesBest*int(BatchTurnaround.Hours())/24, t.WavesWorst*int(BatchTurnaround.Hours())/24))
		if len(unpriced) > 0 {
			p.Notes = append(p.Notes, "no batch price (price.batch_input/batch_output) for "+strings.Join(unpriced, ", ")+": priced at the live price; an OpenAI-compatible server without a batch API is called live anyway")
		}
	}
	return p, nil
}

// waveChain holds, per case still to run, its chain of sequential calls
// (its own graph's, then its judge's), in the order apply starts them.
type waveChain struct{ best, worst []int }

// simulateWaves counts the waves apply's batch mode takes for cases with
// these chains: at most inFlight cases at once, each contributing one call
// to every wave until its chain is done, a finished case's slot taken by
// the next case in time for the next wave.
func simulateWaves(chains []int, inFlight int) int {
	waves, next := 0, 0
	active := make([]int, 0, min(inFlight, len(chains)))
	for next < len(chains) || len(active) > 0 {
		for len(active) < inFlight && next < len(chains) {
			if chains[next] > 0 {
				active = append(active, chains[next])
			}
			next++
		}
		if len(active) == 0 {
			break
		}
		waves++
		keep := active[:0]
		for _, left := range active {
			if left > 1 {
				keep = append(keep, left-1)
			}
		}
		active = keep
	}
	return waves
}

// strategyWaves lists the waves per case of each strategy the matrix runs
// and of each judge: every call of a case waits for the one before.
func strategyWaves(st *Study, shapes map[*Strategy]*shape) []PlanStrategy {
	var out []PlanStrategy
	seen := map[*Strategy]bool{}
	add := func(s *Strategy, judge bool) {
		if seen[s] {
			return
		}
		seen[s] = true
		sh := shapes[s]
		if sh == nil {
			sh = strategyShape(s)
		}
		out = append(out, PlanStrategy{Strategy: s.Name, Judge: judge, WavesBest: sh.best, WavesWorst: sh.worst})
	}
	for _, c := range st.Cells {
		add(c.Strategy, false)
	}
	for _, c := range st.Cells {
		if c.Task.Judge != nil {
			add(c.Task.Judge.Strategy, true)
		}
	}
	return out
}

// addWork adds the calls, tokens and cost a case still needs to a row.
func addWork(row *PlanRow, c *Case, sh *shape, hits int, hist map[string]*stageStats, usedHist *bool, cb *calibration) {
	if sh.worst == 0 {
		return
	}
	best, worst := sh.best-hits, sh.worst-hits
	if best < 1 && sh.best > 0 {
		best = 1 // an unfinished case makes at least one more call
	}
	best = max(best, 0)
	if worst < best {
		worst = best
	}
	row.CallsBest += best
	row.CallsWorst += worst
	in, outBest, outWorst, fromHist := estimateCase(c, sh, hist, cb)
	*usedHist = *usedHist || fromHist
	// Scale the whole-case estimates to the calls still to make.
	fb := float64(best) / float64(max(sh.best, 1))
	fw := float64(worst) / float64(max(sh.worst, 1))
	ib, iw := int(float64(in.best)*fb), int(float64(in.worst)*fw)
	ob, ow := int(float64(outBest)*fb), int(float64(outWorst)*fw)
	row.InputTokensBest += ib
	row.InputTokensWorst += iw
	row.OutputTokensBest += ob
	row.OutputTokensWorst += ow
	live := c.Model.Spec.Price
	price := live
	if row.Mode == ModeBatch {
		price = live.Batch()
	}
	row.CostBest += price.Cost(llm.Usage{PromptTokens: ib, CompletionTokens: ob})
	row.CostWorst += price.Cost(llm.Usage{PromptTokens: iw, CompletionTokens: ow})
	row.LiveCostBest += live.Cost(llm.Usage{PromptTokens: ib, CompletionTokens: ob})
	row.LiveCostWorst += live.Cost(llm.Usage{PromptTokens: iw, CompletionTokens: ow})
}

// planWalk walks a case using only journaled replies; it reports how many
// calls were served and whether the case would finish without a new call.
func planWalk(j replyLookup, c *Case) (hits int, done bool, err error) {
	hits, werr := walkJournaled(j, c)
	if werr != nil {
		// A miss, or a case that would fail (e.g. a template error on this
		// item): both are work for apply, which reports the failure.
		return hits, false, nil
	}
	if c.Task.Judge != nil {
		return hits, false, nil // judged cases are counted as work; the judge's own calls are not planned
	}
	return hits, true, nil
}

// walkJournaled walks a case's strategy graph on journaled replies only,
// counting the calls served; an error is a miss or a failing stage.
func walkJournaled(j replyLookup, c *Case) (hits int, err error) {
	x := &Exec{
		Ctx: context.Background(), Case: c, Model: c.Model, Task: c.Task, Item: c.Item, Strategy: c.Strategy,
		stages: map[string]any{}, visits: map[string]int{}, convs: map[string]conversation{}, repeat: c.Repeat, sweep: c.Sweep,
	}
	x.caller = func(x *Exec, stage string, req *llm.Request) (*llm.Response, error) {
		rec, ok, err := j.Lookup(CacheKey(x.Model, req))
		if err != nil {
			return nil, err
		}
		if !ok {
			return nil, errPlanMiss
		}
		hits++
		return rec.Resp, nil
	}
	_, _, err = walkGraph(x, nil, 1000)
	return hits, err
}

// completionHistory is the mean completion tokens per model/strategy/stage
// of the replies a journal holds (keys model/strategy/stage).
func completionHistory(j *journal.Journal) map[string]*stageStats {
	hist := map[string]*stageStats{}
	j.Each(func(r *journal.Record) {
		parts := strings.SplitN(r.Case, "/", 3)
		if len(parts) < 2 || r.Resp == nil {
			return
		}
		k := r.Model + "/" + parts[1] + "/" + r.Stage
		s := hist[k]
		if s == nil {
			s = &stageStats{}
			hist[k] = s
		}
		s.sum += r.Resp.Usage.CompletionTokens
		s.n++
	})
	return hist
}

// shape is a strategy's static call structure.
type shape struct {
	prompts []int // node indexes of call-making stages
	worstV  map[int]int
	bestV   map[int]int
	best    int
	worst   int
}

func strategyShape(s *Strategy) *shape {
	sh := &shape{worstV: map[int]int{}, bestV: map[int]int{}}
	comp := sccs(s)
	for i, n := range s.Nodes {
		if _, ok := n.Stage.(CallPlanner); !ok {
			continue
		}
		sh.prompts = append(sh.prompts, i)
		mult := 1
		if comp.cyclic[comp.id[i]] {
			for k, m := range s.Nodes {
				if comp.id[k] == comp.id[i] && m.Base.MaxVisits > mult {
					mult = m.Base.MaxVisits
				}
			}
		}
		if n.Base.MaxVisits > 0 && n.Base.MaxVisits < mult {
			mult = n.Base.MaxVisits
		}
		sh.worstV[i] = mult
		sh.worst += mult
	}
	// Best: the path to end that makes the fewest calls (loops once).
	path := fewestCalls(s)
	for _, i := range path {
		if _, ok := s.Nodes[i].Stage.(CallPlanner); ok {
			sh.bestV[i]++
			sh.best++
		}
	}
	return sh
}

type sccResult struct {
	id     []int
	cyclic map[int]bool
}

// sccs finds strongly connected components (Tarjan) over the stage graph.
func sccs(s *Strategy) sccResult {
	n := len(s.Nodes)
	index := make([]int, n)
	low := make([]int, n)
	on := make([]bool, n)
	for i := range index {
		index[i] = -1
	}
	res := sccResult{id: make([]int, n), cyclic: map[int]bool{}}
	var stack []int
	counter, comps := 0, 0
	var strong func(v int)
	strong = func(v int) {
		index[v], low[v] = counter, counter
		counter++
		stack = append(stack, v)
		on[v] = true
		self := false
		for _, w := range s.succ(v) {
			if w < 0 {
				continue
			}
			if w == v {
				self = true
			}
			if index[w] < 0 {
				strong(w)
				low[v] = min(low[v], low[w])
			} else if on[w] {
				low[v] = min(low[v], index[w])
			}
		}
		if low[v] == index[v] {
			size := 0
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				on[w] = false
				res.id[w] = comps
				size++
				if w == v {
					break
				}
			}
			res.cyclic[comps] = size > 1 || self
			comps++
		}
	}
	for v := 0; v < n; v++ {
		if index[v] < 0 {
			strong(v)
		}
	}
	return res
}

// fewestCalls returns the node path from the first stage to end that enters
// the fewest call-making stages (0-1 BFS over the graph's ordinary edges).
func fewestCalls(s *Strategy) []int {
	n := len(s.Nodes)
	if n == 0 {
		return nil
	}
	const inf = 1 << 30
	dist := make([]int, n)
	prev := make([]int, n)
	for i := range dist {
		dist[i], prev[i] = inf, -2
	}
	cost := func(i int) int {
		if _, ok := s.Nodes[i].Stage.(CallPlanner); ok {
			return 1
		}
		return 0
	}
	dist[0] = cost(0)
	prev[0] = -1
	deque := []int{0}
	bestEnd, endFrom := inf, -1
	for len(deque) > 0 {
		v := deque[0]
		deque = deque[1:]
		for _, w := range s.succ(v) {
			if w < 0 {
				if dist[v] < bestEnd {
					bestEnd, endFrom = dist[v], v
				}
				continue
			}
			if d := dist[v] + cost(w); d < dist[w] {
				dist[w], prev[w] = d, v
				if cost(w) == 0 {
					deque = append([]int{w}, deque...)
				} else {
					deque = append(deque, w)
				}
			}
		}
	}
	var path []int
	for v := endFrom; v >= 0; v = prev[v] {
		path = append([]int{v}, path...)
	}
	return path
}

type tokenRange struct{ best, worst int }

// calibration holds, per model x strategy x task, the characters per token
// of the rendered prompts as the model's tokenizer counts them (measured on
// the first items only: tokenizing every prompt of a large study is slow,
// and the ratio is stable).
type calibration struct {
	mu     sync.Mutex
	ratio  map[string]float64
	seen   map[string]int
	chars  map[string]int
	tokens map[string]int
	used   map[string]string // model -> tokenizer name
}

const calibrationItems = 10

func newCalibration() *calibration {
	return &calibration{ratio: map[string]float64{}, seen: map[string]int{}, chars: map[string]int{}, tokens: map[string]int{}, used: map[string]string{}}
}

// tokens converts a rendered prompt to tokens for a case.
func (cb *calibration) count(c *Case, text string) int {
	if cb == nil {
		return (len(text) + 3) / 4
	}
	key := c.Model.Name + "/" + c.Strategy.Name + "/" + c.Task.Name
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.seen[key] < calibrationItems*4 {
		if count, name, ok := Tokenizer(c.Model.Spec); ok {
			n := count(text)
			cb.seen[key]++
			cb.chars[key] += len(text)
			cb.tokens[key] += n
			cb.ratio[key] = float64(cb.chars[key]) / float64(max(cb.tokens[key], 1))
			cb.used[c.Model.Name] = name
			return n
		}
	}
	if r, ok := cb.ratio[key]; ok && r > 0 {
		return int(float64(len(text))/r + 0.5)
	}
	return (len(text) + 3) / 4
}

// estimateCase estimates one whole case's input tokens (best and worst) and
// output tokens from the rendered prompts of this item.
func estimateCase(c *Case, sh *shape, hist map[string]*stageStats, cb *calibration) (in tokenRange, outBest, outWorst int, fromHist bool) {
	env := SampleEnv(c.Model, c.Strategy, c.Task, c.Item)
	if te, err := c.Task.env(env); err == nil {
		env["task"] = te
	}
	// A judge reads the judged outputs; stand-ins give its prompt a size.
	env["subject"] = map[string]any{"reply": "(the judged reply)", "label": "", "confidence": nil, "model": "", "strategy": ""}
	type est struct{ own, out, outBest int }
	ests := map[string]est{}
	conts := map[string][]string{}
	for _, i := range sh.prompts {
		n := c.Strategy.Nodes[i]
		cp := n.Stage.(CallPlanner)
		msgs, params, cont, err := cp.PlanCall(env)
		if err != nil {
			continue
		}
		var text strings.Builder
		for _, m := range msgs {
			text.WriteString(m.Content)
		}
		gp := c.Sweep.overParams(c.Model.Spec.Params.Over(params))
		samples := max(gp.N, 1)
		maxTok, bound := gp.MaxTokens, gp.MaxTokens
		if maxTok == 0 {
			maxTok, bound = DefaultMaxTokens, llm.DefaultReplyTokens
		}
		// As the spend cap reserves it (WorstCost): the reply and the
		// thinking budget, per sample.
		worst := bound
		if gp.Thinking != nil && gp.Thinking.Enabled {
			if gp.Thinking.Budget > 0 {
				worst += gp.Thinking.Budget
			} else {
				worst += llm.DefaultReplyTokens
			}
		}
		worst *= samples
		best := maxTok / 4 * samples
		if h := hist[c.Model.Name+"/"+c.Strategy.Name+"/"+n.Base.Name]; h != nil && h.n > 0 {
			best = h.sum / h.n
			fromHist = true
		}
		ests[n.Base.Name] = est{own: cb.count(c, text.String()), out: worst, outBest: best}
		conts[n.Base.Name] = cont
	}
	// The input of a continued conversation includes the earlier turns.
	var context func(name string, seen map[string]bool, worst bool) int
	context = func(name string, seen map[string]bool, worst bool) int {
		if seen[name] {
			return 0
		}
		seen[name] = true
		e := ests[name]
		total := e.own
		extra := 0
		for _, c := range conts[name] {
			ce, ok := ests[c]
			if !ok {
				continue
			}
			out := ce.outBest
			if worst {
				out = ce.out
			}
			if v := context(c, seen, worst) + out; v > extra {
				extra = v
			}
		}
		return total + extra
	}
	for _, i := range sh.prompts {
		name := c.Strategy.Nodes[i].Base.Name
		e := ests[name]
		in.best += sh.bestV[i] * context(name, map[string]bool{}, false)
		in.worst += sh.worstV[i] * context(name, map[string]bool{}, true)
		outBest += sh.bestV[i] * e.outBest
		outWorst += sh.worstV[i] * e.out
	}
	return in, outBest, outWorst, fromHist
}
