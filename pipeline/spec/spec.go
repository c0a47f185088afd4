package spec

import (
	"time"

	"gopkg.in/yaml.v3"

	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/scripted"
	"github.com/promoral/promoral/pipeline/simulated"
	"github.com/promoral/promoral/pipeline/yamlstrict"
)

// RunFile is a study: the top-level YAML that `promoral apply` takes.
type RunFile struct {
	Name        string       `yaml:"name" required:"true" doc:"Name of the run, an identifier (letters, digits, ., _ and -, starting with a letter or digit, at most 100 characters); the default output folder is out/<name>."`
	Description string       `yaml:"description,omitempty" doc:"What this run is for."`
	Models      []yaml.Node  `yaml:"models" required:"true" doc:"Models: a name (configs/models/<name>.yaml), an inline model, or {use: <name>, ...overrides}."`
	Tasks       []yaml.Node  `yaml:"tasks" required:"true" doc:"Tasks: a name (configs/tasks/<name>.yaml), an inline task, or {use: <name>, ...overrides}."`
	Strategies  []yaml.Node  `yaml:"strategies" required:"true" doc:"Strategies: a name (configs/strategies/<name>.yaml), an inline strategy, or {use: <name>, name: <new name>, params: {...}}."`
	Matrix      Matrix       `yaml:"matrix,omitempty" doc:"Which models run which strategies on which tasks; default every model x strategy x task."`
	Output      string       `yaml:"output,omitempty" doc:"Output folder, relative to this file's folder like every path in it (default out/<name> in the project folder: the folder holding the prompts folder, so ../out/<name> for a run file in configs/)."`
	Settings    Settings     `yaml:"settings,omitempty" doc:"Run settings."`
	Paths       Paths        `yaml:"paths,omitempty" doc:"Where referenced files live, relative to this file's folder; a name or template they lack is looked up in the shipped library."`
	Metrics     []MetricNode `yaml:"metrics,omitempty" doc:"Metrics computed over the results after the cases (metrics.parquet and CSV tables)."`
}

// Settings are run-wide knobs.
type Settings struct {
	Concurrency int     `yaml:"concurrency,omitempty" min:"1" doc:"Cases in flight per model unless the model sets limits.concurrency (default 8)."`
	Seed        int64   `yaml:"seed,omitempty" doc:"Seed for every seeded choice the run makes (recorded in the manifest)."`
	MaxSteps    int     `yaml:"max_steps,omitempty" min:"1" doc:"Hard bound on stage executions per case, a guard against runaway graphs (default 1000)."`
	Unparsed    string  `yaml:"unparsed,omitempty" enum:"wrong,exclude" doc:"How unparsed answers count in accuracy: wrong (default) or exclude; a metric block's own unparsed: wins."`
	Fsync       bool    `yaml:"fsync,omitempty" doc:"fsync the journal after every call (survives power loss, not just kill -9; slower)."`
	Cache       string  `yaml:"cache,omitempty" enum:"shared,run" doc:"Where replies are cached: shared (default) also keeps every paid reply in the response cache all runs share and takes replies from it (a renamed run folder or --out pays nothing again); run keeps this run's journal as its only cache."`
	CacheDir    string  `yaml:"cache_dir,omitempty" doc:"Folder of the shared response cache, relative to this file's folder (default $PROMORAL_CACHE_DIR, else promoral in the user's cache folder, e.g. ~/.cache/promoral)."`
	Repeats     int     `yaml:"repeats,omitempty" min:"1" max:"1000" doc:"Samples per case: every model x strategy x task x item runs this many times, each repeat its own case (column repeat, 0 to k-1) with its own journal key, so k samples cost k calls and raising k later pays only for the new repeats (default 1). A model entry's or a strategy's repeats: wins, the strategy's first; a model of provider none (recorded replies) is read once. Metric blocks score every sample unless their reduce: says otherwise."`
	MaxCost     float64 `yaml:"max_cost,omitempty" min:"0" doc:"Spend cap of one apply in USD (apply --max-cost wins): no request is sent once what was spent plus the worst case of the calls in flight would pass it; apply again continues, its cap counting from zero. 0 or absent: no cap (apply --max-cost 0 is a cap of zero)."`
	// AllowFixtures lets tests and demos run tasks marked fixture.
	AllowFixtures bool `yaml:"allow_fixtures,omitempty" doc:"Let the run use tasks whose data is an invented fixture (a task's fixture:), for tests and demos; without it such a run fails validate, plan and apply."`
}

// Paths locates referenced files; each is relative to the run file's folder.
type Paths struct {
	Strategies string `yaml:"strategies,omitempty" doc:"Folder of strategy files (default strategies)."`
	Tasks      string `yaml:"tasks,omitempty" doc:"Folder of task files (default tasks)."`
	Models     string `yaml:"models,omitempty" doc:"Folder of model files (default models)."`
	Prompts    string `yaml:"prompts,omitempty" doc:"Folder that template paths are relative to (default ../prompts)."`
}

// Matrix is a list of blocks; a single mapping is accepted as one block.
type Matrix []MatrixBlock

// MatrixBlock crosses its models, strategies and tasks; an empty list means all.
type MatrixBlock struct {
	Models     []string `yaml:"models,omitempty" doc:"Model names (default all)."`
	Strategies []string `yaml:"strategies,omitempty" doc:"Strategy names (default all)."`
	Tasks      []string `yaml:"tasks,omitempty" doc:"Task names (default all)."`
	Exclude    []Cell   `yaml:"exclude,omitempty" doc:"Cells to leave out; an empty field matches anything."`
}

// Cell names one model x strategy x task combination.
type Cell struct {
	Model    string `yaml:"model,omitempty" doc:"Model name."`
	Strategy string `yaml:"strategy,omitempty" doc:"Strategy name."`
	Task     string `yaml:"task,omitempty" doc:"Task name."`
}

// DecodeNode accepts one block (a mapping) or a list of blocks.
func (m *Matrix) DecodeNode(d *yamlstrict.Decoder, n *yaml.Node, path string) {
	n = yamlstrict.ResolveAlias(n)
	if n.Kind == yaml.MappingNode {
		var b MatrixBlock
		d.Decode(n, &b, path)
		*m = Matrix{b}
		return
	}
	var bs []MatrixBlock
	d.Decode(n, &bs, path)
	*m = bs
}

// ModelSpec is one model entry.
type ModelSpec struct {
	Name     string               `yaml:"name" required:"true" doc:"promoral's name for the model, used in the matrix and in outputs."`
	Extends  string               `yaml:"extends,omitempty" doc:"Copy every field of a model declared earlier, then apply the fields given here (e.g. a thinking-on variant)."`
	Provider string               `yaml:"provider" required:"true" enum:"openai,openai-compatible,anthropic,gemini,scripted,simulated,none" doc:"openai, openai-compatible, anthropic, gemini, scripted (replies from rules), simulated (a model of declared accuracy, offline; simulate:) or none (never called)."`
	Model    string               `yaml:"model,omitempty" doc:"The provider's model id (default: name)."`
	BaseURL  string               `yaml:"base_url,omitempty" doc:"API base URL (http:// or https:// with a host), for OpenAI-compatible servers (Together, DeepSeek, vLLM, Ollama, llama.cpp) or a proxy."`
	KeyEnv   string               `yaml:"key_env,omitempty" doc:"Environment variable holding the API key (default per provider, e.g. OPENAI_API_KEY)."`
	Price    Price                `yaml:"price,omitempty" doc:"USD per million tokens, for cost estimates and accounting."`
	Limits   Limits               `yaml:"limits,omitempty" doc:"Rate and concurrency limits."`
	Optional bool                 `yaml:"optional,omitempty" doc:"When the model's key is missing, leave out the cells it runs and the tasks it judges, and say so (in apply's output, the summary and the manifest's skipped), instead of stopping the run: e.g. an LLM judge beside an offline heuristic."`
	Params   GenParams            `yaml:"params,omitempty" doc:"Default generation parameters for every request to this model; a stage's own values win."`
	Vars     map[string]string    `yaml:"vars,omitempty" doc:"Per-model strings templates read as .model.vars.<name> (e.g. a role confirmation)."`
	VarsFile *VarsFile            `yaml:"vars_file,omitempty" doc:"A YAML file of per-model vars written by another run (e.g. the role-confirmation selection): {<model name>: {<var>: <text>}}; its values override vars."`
	Script   *scripted.Script     `yaml:"script,omitempty" doc:"Replies of the scripted provider (provider: scripted)."`
	Simulate *simulated.Spec      `yaml:"simulate,omitempty" doc:"How the simulated provider plays the model (provider: simulated): accuracy, the correlations of its answers, strategy effects, a pilot run, confidence, refusals and unparsed replies; every field has a default."`
	Repeats  int                  `yaml:"repeats,omitempty" min:"1" max:"1000" doc:"Samples per case for the cells of this model (wins over settings.repeats; a strategy's repeats: wins over it)."`
	Sweep    map[string][]float64 `yaml:"sweep,omitempty" doc:"Sampling settings this model runs at, each value a condition of its own without copying the model: temperature, top_p, seed or thinking_budget (tokens; 0 turns thinking off), each a list, e.g. {temperature: [0, 0.7]} (several settings: every combination). Each value wins over the model's and every stage's own value for the strategy's requests (a judge's are its own), and the setting is a factor column of every output (its value as written)."`
	Factors  Factors              `yaml:"factors,omitempty" doc:"Condition factors this model entry sets, e.g. {thinking: on} on a thinking variant, or derived from its settings ({thinking: {expr: 'params.thinking?.enabled == true ? \"on\" : \"off\"'}}; a variant that extends it inherits the derivation): columns of results.parquet and metrics.parquet that the tables and figures group by."`
	Line     int                  `yaml:"-"`
	File     string               `yaml:"-"`
}

// ID is the provider's model id.
func (m *ModelSpec) ID() string {
	if m.Model != "" {
		return m.Model
	}
	return m.Name
}

// VarsFile points at per-model vars produced by another run.
type VarsFile struct {
	Path     string `yaml:"path" required:"true" doc:"The file, relative to the file that declares the model."`
	Optional bool   `yaml:"optional,omitempty" doc:"Use the inline vars when the file does not exist yet (it is written by a run that may not have happened)."`
}

// Price is USD per million tokens.
type Price struct {
	Input       float64 `yaml:"input,omitempty" doc:"USD per million input (prompt) tokens."`
	Output      float64 `yaml:"output,omitempty" doc:"USD per million output tokens (thinking tokens are billed as output)."`
	CachedInput float64 `yaml:"cached_input,omitempty" doc:"USD per million cached prompt tokens (default: the input price)."`
	// Batch prices are separate fields rather than a discount factor: the
	// providers publish them per model, and not always at exactly half.
	BatchInput       float64 `yaml:"batch_input,omitempty" doc:"USD per million input tokens of a provider batch job (default: the input price, i.e. no discount assumed)."`
	BatchOutput      float64 `yaml:"batch_output,omitempty" doc:"USD per million output tokens of a provider batch job (default: the output price)."`
	BatchCachedInput float64 `yaml:"batch_cached_input,omitempty" doc:"USD per million cached prompt tokens of a batch job (default: the batch input price)."`
}

// HasBatch reports whether batch prices are set.
func (p Price) HasBatch() bool { return p.BatchInput != 0 || p.BatchOutput != 0 }

// Batch is the price table batch calls are billed at: the batch fields where
// set, the live ones otherwise.
func (p Price) Batch() Price {
	b := Price{Input: p.BatchInput, Output: p.BatchOutput, CachedInput: p.BatchCachedInput}
	if b.Input == 0 {
		b.Input, b.CachedInput = p.Input, p.CachedInput
	}
	if b.Output == 0 {
		b.Output = p.Output
	}
	return b
}

// CostOf prices one reply: at batch prices when a batch job answered it.
func (p Price) CostOf(r *llm.Response) float64 {
	if r == nil {
		return 0
	}
	if r.Batch != "" {
		return p.Batch().Cost(r.Usage)
	}
	return p.Cost(r.Usage)
}

// Cost of one call's usage in USD.
func (p Price) Cost(u llm.Usage) float64 {
	cachedPrice := p.CachedInput
	if cachedPrice == 0 {
		cachedPrice = p.Input
	}
	uncached := u.PromptTokens - u.CachedPromptTokens
	if uncached < 0 {
		uncached = 0
	}
	out := u.CompletionTokens
	return (float64(uncached)*p.Input + float64(u.CachedPromptTokens)*cachedPrice + float64(out)*p.Output) / 1e6
}

// Limits bound how hard promoral drives one model.
type Limits struct {
	RPM         int           `yaml:"rpm,omitempty" min:"0" doc:"Cap on requests per minute, paced evenly at 98 % (0 = none: the limits the provider states on its replies pace alone)."`
	TPM         int           `yaml:"tpm,omitempty" min:"0" doc:"Cap on tokens per minute (prompt plus max_tokens, corrected from usage), paced evenly at 98 % (0 = none: the provider's stated limits pace alone)."`
	Concurrency int           `yaml:"concurrency,omitempty" min:"1" doc:"Requests in flight at most (default settings.concurrency)."`
	Timeout     time.Duration `yaml:"timeout,omitempty" min:"0" doc:"Per-request timeout (default 120s)."`
	MaxAttempts int           `yaml:"max_attempts,omitempty" min:"1" doc:"Attempts per request that may end in a real error (5xx, timeout, cut connection, empty reply), including the first (default 5); rate-limit 429s wait and do not count."`
	Backoff     time.Duration `yaml:"backoff,omitempty" min:"0" doc:"Base of the exponential backoff with full jitter between attempts (default 1s); after a 429 the jitter comes on top of the server's Retry-After."`
	// The max tag must equal llm.MaxReplyBytesLimit (a test checks it).
	MaxReplyBytes int64         `yaml:"max_reply_bytes,omitempty" min:"1024" max:"8388608" doc:"Largest reply body accepted, in bytes; a longer reply fails its case (error class reply_too_large) without being read into memory. Default: derived from each request's max_tokens (and thinking budget), 32 bytes per token plus 256 KiB."`
	Mode          string        `yaml:"mode,omitempty" enum:"live,batch" doc:"live (default): one HTTP call per request; batch: the provider's batch API (OpenAI, Anthropic, Gemini; OpenAI-compatible servers without one fall back to live), in waves, at batch prices. apply --batch sets it for every model."`
	BatchCases    int           `yaml:"batch_cases,omitempty" min:"1" doc:"In batch mode, cases in flight for this model: each wave carries at most this many requests (default 5000)."`
	BatchPoll     time.Duration `yaml:"batch_poll,omitempty" min:"0" doc:"In batch mode, how often to ask the provider how a job is doing (default 30s)."`
}

// Modes of Limits.Mode.
const (
	ModeLive  = "live"
	ModeBatch = "batch"
)

// GenParams are generation parameters; nil/zero means "not set here".
type GenParams struct {
	Temperature *float64       `yaml:"temperature,omitempty" min:"0" max:"2" doc:"Sampling temperature, 0 to 2 (Anthropic: 0 to 1)."`
	TopP        *float64       `yaml:"top_p,omitempty" min:"0" max:"1" doc:"Nucleus sampling, 0 to 1."`
	MaxTokens   int            `yaml:"max_tokens,omitempty" min:"1" doc:"Most tokens the reply may have; a reply cut off here is flagged truncated."`
	N           int            `yaml:"n,omitempty" min:"1" doc:"Samples per request."`
	Stop        []string       `yaml:"stop,omitempty" doc:"Stop sequences."`
	Seed        *int64         `yaml:"seed,omitempty" doc:"Provider-side sampling seed, where supported."`
	Thinking    *ThinkingSpec  `yaml:"thinking,omitempty" doc:"Model thinking (extended thinking / thinking budget / reasoning effort)."`
	Logprobs    *bool          `yaml:"logprobs,omitempty" doc:"Ask for token log-probabilities where offered."`
	Extra       map[string]any `yaml:"extra,omitempty" doc:"Provider-specific parameters passed through."`
}

// ThinkingSpec configures model thinking.
type ThinkingSpec struct {
	Enabled bool   `yaml:"enabled" doc:"Turn thinking on."`
	Budget  int    `yaml:"budget,omitempty" min:"0" doc:"Thinking budget in tokens (Anthropic, Gemini)."`
	Effort  string `yaml:"effort,omitempty" enum:"low,medium,high" doc:"Reasoning effort low, medium or high (OpenAI reasoning models)."`
}

// Over returns p with every field set in o replacing p's.
func (p GenParams) Over(o GenParams) GenParams {
	if o.Temperature != nil {
		p.Temperature = o.Temperature
	}
	if o.TopP != nil {
		p.TopP = o.TopP
	}
	if o.MaxTokens != 0 {
		p.MaxTokens = o.MaxTokens
	}
	if o.N != 0 {
		p.N = o.N
	}
	if o.Stop != nil {
		p.Stop = o.Stop
	}
	if o.Seed != nil {
		p.Seed = o.Seed
	}
	if o.Thinking != nil {
		p.Thinking = o.Thinking
	}
	if o.Logprobs != nil {
		p.Logprobs = o.Logprobs
	}
	if o.Extra != nil {
		m := map[string]any{}
		for k, v := range p.Extra {
			m[k] = v
		}
		for k, v := range o.Extra {
			m[k] = v
		}
		p.Extra = m
	}
	return p
}

// Apply writes the parameters into a request.
func (p GenParams) Apply(r *llm.Request) {
	r.Temperature = p.Temperature
	r.TopP = p.TopP
	r.MaxTokens = p.MaxTokens
	r.N = p.N
	if r.N == 1 {
		r.N = 0 // one sample is the default; keep the cache key canonical
	}
	r.Stop = p.Stop
	r.Seed = p.Seed
	if p.Thinking != nil && p.Thinking.Enabled {
		r.Thinking = llm.Thinking{Enabled: true, Budget: p.Thinking.Budget, Effort: p.Thinking.Effort}
	}
	r.Logprobs = p.Logprobs != nil && *p.Logprobs
	r.Extra = p.Extra
}

// StrategySpec is one strategy file: a graph of stages and its outputs.
type StrategySpec struct {
	Name        string            `yaml:"name" required:"true" doc:"Strategy name, used in the matrix and outputs."`
	Description string            `yaml:"description,omitempty" doc:"What the strategy does and where it comes from."`
	Source      string            `yaml:"source,omitempty" doc:"Citation for the method (and for any trigger phrase it uses)."`
	AppliesTo   []string          `yaml:"applies_to,omitempty" doc:"Task names or answer types (label, letter, judge) this strategy makes sense for; empty = all."`
	Judge       bool              `yaml:"judge,omitempty" doc:"This strategy judges another strategy's outputs (read as subject.<field>); it runs only as a task's judge, never in the matrix."`
	Params      map[string]any    `yaml:"params,omitempty" doc:"Parameters with defaults, read as .params.<name> in templates and params.<name> in expressions."`
	Repeats     int               `yaml:"repeats,omitempty" min:"1" max:"1000" doc:"Samples per case for the cells of this strategy, e.g. 5 for self-consistency (wins over a model entry's and settings.repeats)."`
	Reduce      string            `yaml:"reduce,omitempty" enum:"none,majority,any,all,first" doc:"How metric blocks that set no reduce: of their own score this strategy's samples: none (default: every sample), majority (self-consistency: the label most samples gave; ties are no answer and reported), any, all or first (see a metric block's reduce:)."`
	Factors     Factors           `yaml:"factors,omitempty" doc:"Condition factors this strategy sets, e.g. {level: 2}, or derived from its params and the cell's model ({confidence_instruction: {expr: 'params.confidence ? \"on\" : \"off\"'}}). A variant ({use: ..., factors: {...}}) overrides written values one by one; a value written after a derivation must equal what it derives (validate says where not). Columns of results.parquet and metrics.parquet that the tables and figures group by."`
	Stages      []StageNode       `yaml:"stages" required:"true" doc:"The stages, run from the first; edges follow list order unless next/branch say otherwise."`
	Outputs     map[string]string `yaml:"outputs" required:"true" doc:"Final outputs as expressions over stages.<name>.<field>; label is required, confidence usual."`
	Verdicts    map[string]string `yaml:"verdicts,omitempty" doc:"A judge's parts that give verdicts of their own: part name -> output holding it (e.g. heuristic: heuristic, llm: llm_label); judge_agreement measures each part beside the whole judge (the label output)."`
	File        string            `yaml:"-"`
	Line        int               `yaml:"-"`
}

// StageNode holds one decoded stage config of whatever kind it names.
type StageNode struct {
	Config Config
	Line   int
	// Name is the stage's name even when its config could not be decoded,
	// so references to it do not add a cascade of follow-on errors.
	Name string
}

// DecodeNode reads the kind first, then decodes the whole mapping into that
// kind's own config struct, so unknown fields are caught per kind.
func (s *StageNode) DecodeNode(d *yamlstrict.Decoder, n *yaml.Node, path string) {
	n = yamlstrict.ResolveAlias(n)
	s.Line = n.Line
	s.Name = scalarField(n, "name")
	k, ok := decodeKind(stageKinds, d, n, path)
	if !ok {
		return
	}
	cfg := k.New()
	d.Decode(n, cfg, path)
	cfg.Base().Line = n.Line
	s.Config = cfg
}

// StringList is a list of strings that may be written as one string.
type StringList []string

// DecodeNode accepts a scalar or a list of scalars.
func (s *StringList) DecodeNode(d *yamlstrict.Decoder, n *yaml.Node, path string) {
	n = yamlstrict.ResolveAlias(n)
	if n.Kind == yaml.ScalarNode {
		if n.Tag != "!!null" {
			*s = StringList{n.Value}
		}
		return
	}
	var xs []string
	d.Decode(n, &xs, path)
	*s = xs
}

// Cache modes (settings.cache).
const (
	CacheShared = "shared" // the default: replies are shared by every run
	CacheRun    = "run"    // the run's journal is its only cache
)
