package manifest

import "time"

// Manifest is manifest.json: what ran, on which config, with what outcome.
type Manifest struct {
	Summary
	// Format is the run folder's format version (FormatVersion when
	// written). A folder written before the field existed has none;
	// Read reads it as format 1.
	Format        int                 `json:"format_version,omitempty"`
	Version       string              `json:"version"`
	ConfigFile    string              `json:"config_file"`
	ConfigHash    string              `json:"config_hash"`
	Files         map[string]string   `json:"files"`
	Started       time.Time           `json:"started"`
	Finished      time.Time           `json:"finished"`
	Seed          int64               `json:"seed"`
	Unparsed      string              `json:"unparsed_policy"`
	Models        []Model             `json:"models"`
	ModelVersions map[string][]string `json:"model_versions"`
	Strategies    []string            `json:"strategies"`
	Tasks         []Task              `json:"tasks"`
	// Factors are the condition factor columns; Metrics every metric
	// block with the policies it scored under (numbers).
	Factors []string `json:"factors,omitempty"`
	Metrics []Block  `json:"metrics,omitempty"`
	// ResultsKey names what the results depend on (not the metric blocks),
	// JournalBytes the journal's size when they were written: a re-apply
	// with the same key takes their good rows instead of walking again.
	ResultsKey   string `json:"results_key,omitempty"`
	JournalBytes int64  `json:"journal_bytes,omitempty"`
	// CasesDigest names the cases the rows are, in ordinal order: the rows
	// are matched to cases by ordinal, so only the same cases line up.
	CasesDigest string `json:"cases_digest,omitempty"`
}

// Model records a model entry without anything secret.
type Model struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	BaseURL  string `json:"base_url,omitempty"`
	Price    Price  `json:"price"`
	// Extends and Factors say which model a variant varies and how.
	Extends string            `json:"extends,omitempty"`
	Factors map[string]string `json:"factors,omitempty"`
}

// Task records a task and its item count.
type Task struct {
	Name  string `json:"name"`
	Items int    `json:"items"`
	Data  *Data  `json:"data,omitempty"`
	Judge string `json:"judge,omitempty"` // the task's judge: strategy, and "on <model>" when it calls one
}

// Summary is what an apply did; it is also the manifest's counts.
type Summary struct {
	Run    string `json:"run"`
	OutDir string `json:"out_dir"`
	// Cases counts the cases that finished: all of them, unless the run
	// was interrupted (CasesPlanned is the whole matrix).
	Cases        int `json:"cases"`
	CasesPlanned int `json:"cases_planned"`
	CallsNew     int `json:"calls_new"`
	CallsCached  int `json:"calls_cached"`
	Attempts     int `json:"attempts"`
	// Errors counts errored cases whose row is an error row; Kept those
	// that errored in this apply but kept an earlier apply's good row (same
	// config, same item: see kept_from in results.parquet).
	Errors           int          `json:"errors"`
	Kept             int          `json:"kept"`
	ErrorClasses     []ClassCount `json:"error_classes,omitempty"`
	Unparsed         int          `json:"unparsed"`
	Truncated        int          `json:"truncated"`
	PromptTokens     int          `json:"prompt_tokens"`
	CompletionTokens int          `json:"completion_tokens"`
	ThinkingTokens   int          `json:"thinking_tokens"`
	CostUSD          float64      `json:"cost_usd"`
	Interrupted      bool         `json:"interrupted,omitempty"`
	// Drained counts calls in flight at an interruption that finished and
	// were journaled; Cut those an abort (or the grace period) cut off,
	// paid for perhaps but without a reply.
	Drained int `json:"drained,omitempty"`
	Cut     int `json:"cut,omitempty"`
	// LostInFlight counts calls the journal shows in flight when an
	// earlier apply was killed; Resent how many of them this apply sent
	// again.
	LostInFlight int `json:"lost_in_flight,omitempty"`
	Resent       int `json:"resent,omitempty"`
	// Reused counts the cases whose rows were taken from the outputs in
	// force, computed from the same code, configs and data (reuse.go).
	Reused int `json:"reused,omitempty"`
	// CallsShared counts the cached calls that came from the response
	// cache runs share (copied into this run's journal, not paid again);
	// SharedCache is its folder, "" when the run keeps its own cache.
	CallsShared int    `json:"calls_shared,omitempty"`
	SharedCache string `json:"shared_cache,omitempty"`
	// LastComplete is the folder of the last outputs without errors, kept
	// when this apply's have errored cases.
	LastComplete string `json:"-"`
	// Report holds what the metrics asked to print after the summary.
	Report []string `json:"-"`
	// Skipped: optional models left out for want of a key, with what
	// they would have run (Study.Skipped).
	Skipped []string `json:"skipped,omitempty"`
	// Selection is set when the apply ran part of the study (--model,
	// --strategy, --task, --limit, --shard): its outputs describe those
	// cases only (Selection).
	Selection *Selection `json:"selection,omitempty"`
	// Capped is set when the apply stopped at its spend cap (budget.go).
	Capped *CapStop `json:"capped,omitempty"`
	// MergedFrom lists the shards a merge joined (package review).
	MergedFrom []MergedShard `json:"merged_from,omitempty"`
}

// ClassCount is one error class of a run: how many cases, and one of them.
type ClassCount struct {
	Class   string `json:"class"`
	Cases   int    `json:"cases"`
	Example string `json:"example"`
}

// CapStop is what an apply stopped at its spend cap reports.
type CapStop struct {
	CapUSD float64 `json:"cap_usd"`
	// SpentUSD is what the replies of this apply's new calls were billed,
	// at the price table (rejected replies included).
	SpentUSD float64 `json:"spent_usd"`
	// Refused counts the calls not sent because their worst case did not
	// fit; NotDone the cases left without a result (their replies so far
	// are journaled), by model.
	Refused int          `json:"calls_refused"`
	NotDone int          `json:"cases_not_done"`
	ByModel []ModelCases `json:"cases_not_done_by_model"`
	// Example is the first case left, in case order.
	Example string `json:"example,omitempty"`
}

// ModelCases is a count of cases of one model.
type ModelCases struct {
	Model string `json:"model"`
	Cases int    `json:"cases"`
}

// MergedShard is one shard a merge joined, as the merged manifest lists it.
type MergedShard struct {
	Dir        string `json:"dir"`
	Shard      string `json:"shard"`
	Generation string `json:"generation"`
	Cases      int    `json:"cases"`
	Errors     int    `json:"errors"`
	Kept       int    `json:"kept"`
	CallsNew   int    `json:"calls_new"`
	// CallsShared counts the shard's cached calls that came from the
	// shared response cache SharedCache.
	CallsShared int       `json:"calls_shared,omitempty"`
	SharedCache string    `json:"shared_cache,omitempty"`
	CostUSD     float64   `json:"cost_usd"`
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
}

// Block records a metric block in manifest.json: what it scored
// and under which policies, so a reader of the numbers (or the report)
// can say how each was counted.
type Block struct {
	Name  string   `json:"name"`
	Kind  string   `json:"kind"`
	Tasks []string `json:"tasks,omitempty"`
	// Unparsed is the block's unparsed policy in force (its own, else the
	// run's); empty for kinds without one.
	Unparsed string `json:"unparsed_policy,omitempty"`
	Errors   string `json:"errors_policy"`
	// Settings are the block's other fields as written in the run file
	// (confidence meaning, require_confidence, bins, thresholds, ...).
	Settings map[string]any `json:"settings,omitempty"`
	// Draw is what the block's kind declares about its rows, so that a
	// reader that knows no kind (the report) can say how it counted and
	// draw it. Absent in a folder written before it, and for a kind that
	// declares nothing.
	Draw *BlockDraw `json:"draw,omitempty"`
}

// Data records a task's data in manifest.json: every file read
// with its sha256, and the hub reference and commit it came from.
type Data struct {
	Hub    string `json:"hub,omitempty"`
	Commit string `json:"commit,omitempty"`
	Files  []File `json:"files"`
}

// File is one data file a task read.
type File struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// Price is a model's price table as the manifest records it: USD per
// million tokens (the fields of the run file's price:).
type Price struct {
	Input, Output, CachedInput                float64
	BatchInput, BatchOutput, BatchCachedInput float64
}

// FormatVersion is the run folder format this package writes: manifest.json
// carries it as format_version. Format 1 is a folder written before the
// field existed (no format_version); format 2 adds the field and changes
// nothing else, so both read alike.
const FormatVersion = 2
