// Package simulated is an offline provider that plays a model of known
// accuracy (provider: simulated): per item a chance of answering right,
// drawn from the latent item model of the power analysis (stats.Latent) or
// read from a pilot run, noise from sample to sample across repeats, a
// stated confidence that depends on whether the answer is right, refusals
// on judged (safety) tasks and a share of replies with no answer. A
// strategy can shift the accuracy by a declared effect, so a study with a
// known true difference can be rehearsed end to end.
//
// Every draw is a hash of the settings' seed, the model, the strategy, the
// task, the item, the repeat and the sample, so a study gives the same
// replies on every run and the draws of one case do not depend on any
// other case. The request's llm.CaseInfo says which case it is for; the
// reply is written in the form the prompt asks for (answer and confidence
// tags when it mentions them, else Confidence and Final Answer lines).
package simulated

import (
	"context"
	"fmt"
	"math"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/stats"
)

// Spec is the YAML of a simulated model (simulate:). Every field has a
// default, so provider: simulated alone plays a model.
type Spec struct {
	Accuracy    *float64           `yaml:"accuracy,omitempty" min:"0" max:"1" default:"0.75" doc:"Mean chance of a right answer over the items, for a strategy without an effect (default 0.75)."`
	Correlation *float64           `yaml:"correlation,omitempty" min:"0" max:"1" default:"0.5" doc:"Correlation (phi) of two strategies' correctness on one item, one sample each: how much the strategies find the same items hard (default 0.5)."`
	Consistency *float64           `yaml:"consistency,omitempty" min:"0" max:"1" default:"0.7" doc:"Correlation (phi) of two samples of one strategy on one item (across repeats): 0 makes every sample a fresh coin, near 1 makes each item always right or always wrong (default 0.7; at least the correlation)."`
	Effects     map[string]float64 `yaml:"effects,omitempty" doc:"Accuracy points a strategy adds to the model's accuracy, by strategy name, e.g. {self_correct: 0.03}; the true difference a compare pair should find."`
	Pilot       string             `yaml:"pilot,omitempty" doc:"A run folder (relative to the file declaring the model) whose results.parquet gives each item's chance of a right answer: its share of right samples for this model (or pilot_model), over every strategy, smoothed by one right and one wrong sample. Items the pilot lacks are drawn as without it."`
	PilotModel  string             `yaml:"pilot_model,omitempty" doc:"The model of the pilot run whose answers to read (default: this model's name)."`
	Confidence  Confidence         `yaml:"confidence,omitempty" doc:"The confidence the replies state, by whether the answer is right."`
	Refusal     *float64           `yaml:"refusal,omitempty" min:"0" max:"1" default:"0.9" doc:"On a judged task (type judge, e.g. safety): the chance of refusing an item whose expected behaviour is a refusal (its gold label names a refusal, else is the first label) (default 0.9)."`
	OverRefusal *float64           `yaml:"over_refusal,omitempty" min:"0" max:"1" default:"0.1" doc:"On a judged task: the chance of refusing any other item (default 0.1)."`
	Unparsed    *float64           `yaml:"unparsed,omitempty" min:"0" max:"1" default:"0.02" doc:"Share of replies that give no answer the extraction can find (default 0.02)."`
	Seed        int64              `yaml:"seed,omitempty" doc:"Seed of every draw (default 0); a different seed is a different simulated study."`
	Version     string             `yaml:"version,omitempty" doc:"Model version to report (default simulated-1)."`
}

// Confidence is the stated confidence's distribution.
type Confidence struct {
	Right *float64 `yaml:"right,omitempty" min:"0" max:"1" default:"0.85" doc:"Mean confidence stated with a right answer (default 0.85)."`
	Wrong *float64 `yaml:"wrong,omitempty" min:"0" max:"1" default:"0.7" doc:"Mean confidence stated with a wrong answer (default 0.7)."`
	SD    *float64 `yaml:"sd,omitempty" min:"0" max:"1" default:"0.1" doc:"Standard deviation around those means (default 0.1); the value is kept within 0.01 to 0.99."`
}

// Defaults of the fields.
const (
	DefaultAccuracy    = stats.DefaultPowerAccuracy
	DefaultCorrelation = stats.DefaultPowerCorrelation
	DefaultConsistency = stats.DefaultPowerConsistency
	DefaultRefusal     = 0.9
	DefaultOverRefusal = 0.1
	DefaultUnparsed    = 0.02
	DefaultConfRight   = 0.85
	DefaultConfWrong   = 0.7
	DefaultConfSD      = 0.1
)

func or(p *float64, d float64) float64 {
	if p == nil {
		return d
	}
	return *p
}

// Model is a compiled simulated model: what decides each sample.
type Model struct {
	acc, refusal, overRefusal, unparsed float64
	confRight, confWrong, confSD        float64
	latent                              stats.Latent
	effects                             map[string]float64
	seed                                int64
	// pilot: per task and item, the item's chance of a right answer, and
	// per strategy the probit shift that moves their mean by its effect.
	pilot  map[string]map[string]float64
	shifts map[string]map[string]float64 // task -> strategy -> shift
}

// New compiles a spec; pilot holds the pilot's items (ReadPilot), or nil.
func New(s *Spec, pilot map[string]map[string]float64) (*Model, error) {
	if s == nil {
		s = &Spec{}
	}
	m := &Model{
		acc: or(s.Accuracy, DefaultAccuracy), refusal: or(s.Refusal, DefaultRefusal), overRefusal: or(s.OverRefusal, DefaultOverRefusal),
		unparsed: or(s.Unparsed, DefaultUnparsed), confRight: or(s.Confidence.Right, DefaultConfRight),
		confWrong: or(s.Confidence.Wrong, DefaultConfWrong), confSD: or(s.Confidence.SD, DefaultConfSD),
		effects: s.Effects, seed: s.Seed, pilot: pilot,
	}
	cons, corr := or(s.Consistency, DefaultConsistency), or(s.Correlation, DefaultCorrelation)
	if corr > cons {
		return nil, fmt.Errorf("correlation %.3g is above consistency %.3g: two strategies cannot agree on an item more than one strategy agrees with itself; lower correlation or raise consistency", corr, cons)
	}
	for name, e := range s.Effects {
		if a := m.acc + e; a <= 0 || a >= 1 {
			return nil, fmt.Errorf("effects.%s: accuracy %.3g + effect %.3g = %.3g is not between 0 and 1", name, m.acc, e, a)
		}
	}
	m.latent = stats.LatentOf(stats.PowerAssumptions{Accuracy: m.acc, Correlation: corr, Consistency: cons})
	if pilot != nil {
		m.shifts = map[string]map[string]float64{}
		for task, items := range pilot {
			m.shifts[task] = map[string]float64{}
			for strat, e := range s.Effects {
				m.shifts[task][strat] = shiftFor(items, e)
			}
		}
	}
	return m, nil
}

// shiftFor is the probit shift that moves the mean of the items' chances
// by effect (bisection; the mean rises with the shift).
func shiftFor(items map[string]float64, effect float64) float64 {
	if effect == 0 || len(items) == 0 {
		return 0
	}
	mean := func(s float64) float64 {
		t := 0.0
		for _, p := range items {
			t += stats.NormCDF(stats.NormQuantile(p) + s)
		}
		return t / float64(len(items))
	}
	target := mean(0) + effect
	lo, hi := -10.0, 10.0
	for i := 0; i < 60; i++ {
		mid := (lo + hi) / 2
		if mean(mid) < target {
			lo = mid
		} else {
			hi = mid
		}
	}
	return (lo + hi) / 2
}

// Accuracy is the model's mean accuracy under a strategy (its effect added).
func (m *Model) Accuracy(strategy string) float64 { return m.acc + m.effects[strategy] }

// Latent is the item model the draws come from (without a pilot).
func (m *Model) Latent() stats.Latent { return m.latent }

// Right decides whether sample (repeat, choice) of a case is right.
func (m *Model) Right(c *llm.CaseInfo, repeat, choice int) bool {
	u := m.draw(c.Model, c.Strategy, c.Task, c.Item, "eps", repeat, choice)
	if p, ok := m.pilot[c.Task][c.Item]; ok {
		return u < stats.NormCDF(stats.NormQuantile(p)+m.shifts[c.Task][c.Strategy])
	}
	// The item's difficulty z is the model's on the item whatever the
	// strategy; e is the strategy's own on it.
	z := stats.NormQuantile(m.draw(c.Model, "", c.Task, c.Item, "z", 0, 0))
	e := stats.NormQuantile(m.draw(c.Model, c.Strategy, c.Task, c.Item, "e", 0, 0))
	// right when m + σ(√r z + √(1−r) e) + ε > 0, ε = Φ⁻¹(1 − u): P = ItemProb
	return u < m.latent.ItemProb(m.latent.Threshold(m.Accuracy(c.Strategy)), z, e)
}

// uniform is the draw named what for a case's sample, in (0, 1).
func (m *Model) uniform(c *llm.CaseInfo, repeat, choice int, what string) float64 {
	return m.draw(c.Model, c.Strategy, c.Task, c.Item, what, repeat, choice)
}

// draw hashes the seed, the names and the sample (FNV-1a, then
// splitmix64's finaliser, which spreads FNV's weak high bits) to (0, 1).
func (m *Model) draw(model, strategy, task, item, what string, repeat, choice int) float64 {
	const prime = 1099511628211
	x := uint64(14695981039346656037)
	mix := func(v uint64) {
		for i := 0; i < 8; i++ {
			x ^= v & 0xff
			x *= prime
			v >>= 8
		}
	}
	mix(uint64(m.seed))
	for _, s := range [...]string{model, strategy, task, item, what} {
		for i := 0; i < len(s); i++ {
			x ^= uint64(s[i])
			x *= prime
		}
		x ^= 0
		x *= prime
	}
	mix(uint64(repeat)<<32 | uint64(uint32(choice)))
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	x ^= x >> 31
	return (float64(x>>11) + 0.5) / (1 << 53)
}

// Provider answers requests as the model.
type Provider struct {
	m       *Model
	version string
	calls   atomic.Int64
}

// NewProvider is the provider of a compiled model.
func NewProvider(m *Model, version string) *Provider {
	if version == "" {
		version = "simulated-1"
	}
	return &Provider{m: m, version: version}
}

// Calls is how many requests the provider has answered.
func (p *Provider) Calls() int64 { return p.calls.Load() }

var (
	refusalLabel = regexp.MustCompile(`(?i)refus`)
	wantsTags    = regexp.MustCompile(`<answer>`)
	wantsConfTag = regexp.MustCompile(`<confidence>`)
)

// Replies with no answer, and on judged tasks refusals and compliance.
const (
	noAnswer   = "Hard to say; both readings have something going for them."
	refuseText = "I'm sorry, but I can't help with that request."
	complyText = "Sure. Here is a direct, helpful answer to your request, with the steps in order and a short note on each."
)

// Complete implements llm.Provider.
func (p *Provider) Complete(ctx context.Context, req *llm.Request) (*llm.Response, error) {
	p.calls.Add(1)
	c := req.Case
	if c == nil {
		return nil, &llm.Error{Kind: llm.Permanent, Msg: "a simulated model answers the cases of a study; this request names no case"}
	}
	var all strings.Builder
	for _, msg := range req.Messages {
		all.WriteString(msg.Content)
		all.WriteByte('\n')
	}
	prompt := all.String()
	resp := &llm.Response{ModelVersion: p.version}
	for i := 0; i < req.Samples(); i++ {
		text := p.reply(c, req.Repeat, i, prompt)
		resp.Choices = append(resp.Choices, llm.Choice{Text: text, FinishReason: llm.FinishStop})
		resp.Usage.CompletionTokens += (len(text) + 3) / 4
	}
	resp.Usage.PromptTokens = (len(prompt) + 3) / 4
	return resp, nil
}

func (p *Provider) reply(c *llm.CaseInfo, repeat, choice int, prompt string) string {
	m := p.m
	if c.Judged {
		refuse := m.overRefusal
		if c.Gold != "" && (refusalLabel.MatchString(c.Gold) || (!anyRefusal(c.Labels) && len(c.Labels) > 0 && c.Gold == c.Labels[0])) {
			refuse = m.refusal
		}
		if m.uniform(c, repeat, choice, "refuse") < refuse {
			return refuseText
		}
		return complyText
	}
	if m.uniform(c, repeat, choice, "unparsed") < m.unparsed || len(c.Labels) == 0 {
		return noAnswer
	}
	right := c.Gold != "" && m.Right(c, repeat, choice)
	label := c.Gold
	if !right {
		var others []string
		for _, l := range c.Labels {
			if l != c.Gold {
				others = append(others, l)
			}
		}
		if len(others) == 0 {
			others = c.Labels
		}
		label = others[int(m.uniform(c, repeat, choice, "wrong")*float64(len(others)))%len(others)]
	}
	mean := m.confWrong
	if right {
		mean = m.confRight
	}
	conf := mean + m.confSD*stats.NormQuantile(m.uniform(c, repeat, choice, "conf"))
	conf = math.Min(math.Max(conf, 0.01), 0.99)
	if wantsTags.MatchString(prompt) {
		s := "<answer>" + label + "</answer>"
		if wantsConfTag.MatchString(prompt) {
			s += fmt.Sprintf("\nYour confidence (0-100): <confidence>%d</confidence>", int(math.Round(conf*100)))
		}
		return s
	}
	return fmt.Sprintf("Confidence: %.2f\nFinal Answer: %s", conf, label)
}

func anyRefusal(labels []string) bool {
	for _, l := range labels {
		if refusalLabel.MatchString(l) {
			return true
		}
	}
	return false
}

// ScanFunc streams the named columns of each row of the Parquet file at
// path to fn, with the values' own types.
type ScanFunc func(path string, cols []string, fn func(map[string]any)) error

// ReadPilot reads a pilot run folder's results.parquet: per task and item,
// the chance of a right answer of the named model, its share of right
// samples over every strategy and repeat smoothed by one right and one
// wrong sample ((right + 1) / (samples + 2)), so no item is certain.
// Samples without a gold label (correct is null) are left out. scan reads
// the file (dataset.ScanFile of format parquet), so that this package
// links no Parquet library.
func ReadPilot(dir, model string, scan ScanFunc) (map[string]map[string]float64, error) {
	path := filepath.Join(dir, "results.parquet")
	type count struct{ right, n int }
	counts := map[string]map[string]*count{}
	found := false
	err := scan(path, []string{"model", "task", "item_id", "correct"}, func(r map[string]any) {
		if fmt.Sprint(r["model"]) != model {
			return
		}
		found = true
		ok, isBool := r["correct"].(bool)
		if !isBool {
			return
		}
		task, item := fmt.Sprint(r["task"]), fmt.Sprint(r["item_id"])
		if counts[task] == nil {
			counts[task] = map[string]*count{}
		}
		c := counts[task][item]
		if c == nil {
			c = &count{}
			counts[task][item] = c
		}
		c.n++
		if ok {
			c.right++
		}
	})
	if err != nil {
		return nil, fmt.Errorf("pilot %s: %w (name a folder apply wrote)", dir, err)
	}
	if !found {
		return nil, fmt.Errorf("pilot %s: no answer of model %q in results.parquet; set pilot_model to the model the pilot ran", dir, model)
	}
	out := map[string]map[string]float64{}
	for task, items := range counts {
		out[task] = map[string]float64{}
		for item, c := range items {
			out[task][item] = (float64(c.right) + 1) / (float64(c.n) + 2)
		}
	}
	return out, nil
}
