package review

import (
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/spec"
	"github.com/promoral/promoral/runfolder/manifest"
)

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
	// Unpriced: some of the row's calls go to a model without a price, so
	// its cost is unknown beyond CostBest..CostWorst (apply's $?).
	Unpriced bool `json:"unpriced,omitempty"`
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
func (o PlanOptions) BatchMode(m *spec.Model) bool {
	switch m.Spec.Provider {
	case "openai", "openai-compatible", "anthropic", "gemini":
		return o.Batch || m.Spec.Limits.Mode == spec.ModeBatch
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
	Selection *manifest.Selection `json:"selection,omitempty"`
	// Data lists the hub datasets: cached, or what a first run fetches.
	Data []spec.PlanData `json:"data,omitempty"`
	// Power is what the compare blocks can detect (MakePower).
	Power *Power `json:"power,omitempty"`
	// cells: the cost of each cell's cases still to run (power.go).
	cells map[cellKey]*cellCost
}

// HasWork reports whether an apply would make any new call.
func (p *Plan) HasWork() bool { return p.Total.CallsWorst > 0 }

// DefaultMaxTokens is the best case's base when a stage sets no
// max_tokens (a quarter of it, without journal history). The worst case
// there is llm.DefaultReplyTokens: the bound the spend cap reserves and the
// reply size limit allows, since such a request goes out unbounded.
const DefaultMaxTokens = 1024

type stageStats struct{ sum, n int }

// MakePlanWith works out, per model, the cases, the model calls still to
// make (loops at one pass for the best case and at their bound for the
// worst), the calls the journal already holds, tokens and the cost range,
// with options o (batch mode). It reads the journal without locking it and
// calls no model.
func MakePlanWith(st *spec.Study, outDir string, o PlanOptions) (*Plan, error) {
	jpath := outDir + "/journal.jsonl"
	j, err := journal.OpenReadOnly(jpath)
	if err != nil {
		return nil, err
	}
	defer j.Close()
	hist := completionHistory(j)
	p := &Plan{Run: st.Run.Name, Journal: jpath}
	src := engine.NewReplySource(st, j) // the journal, then the shared cache
	cm := newCostModel(src, hist, o)
	rows := map[*spec.Model]*PlanRow{}
	chains := map[*spec.Model]*waveChain{}
	for _, m := range st.Models {
		rows[m] = &PlanRow{Model: m.Name, Mode: spec.ModeLive}
		if o.BatchMode(m) {
			rows[m].Mode = spec.ModeBatch
		}
		chains[m] = &waveChain{}
	}
	var firstErr error
	st.EachCase(func(c *spec.Case) bool {
		row := rows[c.Model]
		row.Cases++
		sh := cm.shape(c.Strategy)
		judge := func(best bool) int {
			if jd := c.Task.Judge; jd != nil {
				if best {
					return cm.shape(jd.Strategy).Best
				}
				return cm.shape(jd.Strategy).Worst
			}
			return 0
		}
		hits, done := cm.walk(c)
		row.CallsJournaled += hits
		if done {
			row.CasesDone++
			return true
		}
		var jrow *PlanRow
		if jd := c.Task.Judge; jd != nil {
			jrow = rows[jd.Model]
		}
		b0, w0 := row.CostBest, row.CostWorst
		cm.add(c, hits, row, jrow)
		p.addCellCost(c, row.CostBest-b0, row.CostWorst-w0)
		if row.Mode == spec.ModeBatch {
			ch := chains[c.Model]
			ch.best = append(ch.best, max(sh.Best-hits, 1)+judge(true))
			ch.worst = append(ch.worst, max(sh.Worst-hits, 1)+judge(false))
		} else if jd := c.Task.Judge; jd != nil && jrow != nil && jrow.Mode == spec.ModeBatch {
			if c.Model.NeverCalls() {
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
		if r.Mode == spec.ModeBatch {
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
		t.sum(r)
	}
	// A judge model's waves run alongside the cases it judges.
	for i := range p.Models {
		r := &p.Models[i]
		for _, c := range st.Cells {
			if j := c.Task.Judge; j != nil && j.Model.Name == r.Model && r.Mode == spec.ModeBatch && rows[c.Model].Mode == spec.ModeBatch {
				r.WavesBest, r.WavesWorst = max(r.WavesBest, rows[c.Model].WavesBest), max(r.WavesWorst, rows[c.Model].WavesWorst)
			}
		}
	}
	if len(batched) > 0 {
		t.Mode = spec.ModeBatch
	} else {
		t.Mode = spec.ModeLive
	}
	p.Strategies = strategyWaves(st, cm.shapes)
	var exact, estimated []string
	for _, r := range p.Models {
		if name, ok := cm.cb.used[r.Model]; ok {
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
	if cm.usedHist {
		p.Notes = append(p.Notes, "the journal's earlier runs informed the best-case output tokens")
	}
	if n := repeatsNote(st); n != "" {
		p.Notes = append(p.Notes, n)
	}
	p.Notes = append(p.Notes, st.Notes...)
	if n := spec.UnpricedNames(st); len(n) > 0 {
		p.Notes = append(p.Notes, "no price for "+strings.Join(n, ", ")+": its cost is unknown (shown as ?, and left out of the totals); add price: {input, output} (USD per million tokens) to the model")
	}
	if n := src.SharedHits(); n > 0 {
		p.Notes = append(p.Notes, fmt.Sprintf("%d of the journaled calls are in the shared cache %s, not yet in this run's journal: apply copies them there and pays nothing for them", n, src.SharedCache()))
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
func strategyWaves(st *spec.Study, shapes map[*spec.Strategy]*spec.CallShape) []PlanStrategy {
	var out []PlanStrategy
	seen := map[*spec.Strategy]bool{}
	add := func(s *spec.Strategy, judge bool) {
		if seen[s] {
			return
		}
		seen[s] = true
		sh := shapes[s]
		if sh == nil {
			sh = spec.ShapeOf(s)
		}
		out = append(out, PlanStrategy{Strategy: s.Name, Judge: judge, WavesBest: sh.Best, WavesWorst: sh.Worst})
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

// planWalk walks a case using only journaled replies; it reports how many
// calls were served and whether the case would finish without a new call.
func planWalk(src *engine.ReplySource, c *spec.Case) (hits int, done bool, err error) {
	hits, werr := engine.WalkCase(src, c)
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
func (cb *calibration) count(c *spec.Case, text string) int {
	if cb == nil {
		return (len(text) + 3) / 4
	}
	key := c.Model.Name + "/" + c.Strategy.Name + "/" + c.Task.Name
	cb.mu.Lock()
	defer cb.mu.Unlock()
	if cb.seen[key] < calibrationItems*4 {
		if count, name, ok := engine.Tokenizer(c.Model.Spec); ok {
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
func estimateCase(c *spec.Case, sh *spec.CallShape, hist map[string]*stageStats, cb *calibration) (in tokenRange, outBest, outWorst int, fromHist bool) {
	env := spec.PromptEnv(c.Model, c.Strategy, c.Task, c.Item)
	// A judge reads the judged outputs; stand-ins give its prompt a size.
	env["subject"] = map[string]any{"reply": "(the judged reply)", "label": "", "confidence": nil, "model": "", "strategy": ""}
	type est struct{ own, out, outBest int }
	ests := map[string]est{}
	conts := map[string][]string{}
	for _, i := range sh.Calls {
		n := c.Strategy.Nodes[i]
		cp := n.Stage.(spec.CallPlanner)
		msgs, params, cont, err := cp.PlanCall(env)
		if err != nil {
			continue
		}
		var text strings.Builder
		for _, m := range msgs {
			text.WriteString(m.Content)
		}
		gp := sweptParams(c.Sweep, c.Model.Spec.Params.Over(params))
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
	for _, i := range sh.Calls {
		name := c.Strategy.Nodes[i].Base.Name
		e := ests[name]
		in.best += sh.BestVisits[i] * context(name, map[string]bool{}, false)
		in.worst += sh.WorstVisits[i] * context(name, map[string]bool{}, true)
		outBest += sh.BestVisits[i] * e.outBest
		outWorst += sh.WorstVisits[i] * e.out
	}
	return in, outBest, outWorst, fromHist
}

// sweptParams is p with a case's swept settings in force.
func sweptParams(s *spec.Sweep, p spec.GenParams) spec.GenParams {
	if s == nil {
		return p
	}
	if s.ThinkingBudget != nil {
		p.Thinking = nil
		if b := *s.ThinkingBudget; b > 0 {
			p.Thinking = &spec.ThinkingSpec{Enabled: true, Budget: b}
		}
	}
	return p
}

// repeatsNote is plan's note on repeats ("" without any).
func repeatsNote(st *spec.Study) string {
	r := st.RepeatsNote()
	if r == "" {
		return ""
	}
	return fmt.Sprintf("cases count every repeat (%s%s): each repeat makes its own calls, a judge's calls aside (the same answer judged twice is one call)",
		spec.Plural(st.NumCells(), "cell", "cells"), r)
}
