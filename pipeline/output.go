package pipeline

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"sort"
	"time"

	"github.com/promoral/promoral/pipeline/llm"
)

// CallRow is one row of calls.parquet: one attempt at one model call, or a
// reply served from the journal (cached). The worker that made the call
// formats it (JSON of the messages), so the single Parquet writer only
// appends.
type CallRow struct {
	Case      *Case
	Stage     string
	Attempt   int
	Key       string
	Messages  string
	Params    string
	Resp      *llm.Response
	LatencyMS float64
	Time      time.Time
	Cached    bool
	Err       string
	Price     Price
}

func newCallRow(c *Case, stage string, req *llm.Request) CallRow {
	params := *req
	params.Messages = nil
	return CallRow{Case: c, Stage: stage, Messages: llm.MessagesJSON(req.Messages), Params: jsonString(&params)}
}

var callColumns = []Column{
	{"case_id", ColString, false}, {"model", ColString, true}, {"strategy", ColString, true}, {"task", ColString, true},
	{"item_id", ColString, false}, {"stage", ColString, true}, {"attempt", ColInt, false}, {"request_hash", ColString, false},
	{"request_messages", ColString, false}, {"request_params", ColString, true}, {"response_text", ColString, false},
	{"response_choices", ColString, false}, {"finish_reason", ColString, true},
	{"prompt_tokens", ColInt, false}, {"completion_tokens", ColInt, false}, {"cached_prompt_tokens", ColInt, false},
	{"thinking_tokens", ColInt, false}, {"latency_ms", ColFloat, false}, {"cached", ColBool, false}, {"error", ColString, false},
	{"model_version", ColString, true}, {"cost_usd", ColFloat, false}, {"time", ColTime, false},
	{"batch_id", ColString, true},
}

func (r *CallRow) append(w *ParquetWriter) error {
	c := r.Case
	var text, finish, version any
	var choices any
	var pt, ct, cpt, tt, cost any
	var errText, batch any
	if r.Resp != nil && r.Resp.Batch != "" {
		batch = r.Resp.Batch
	}
	if r.Resp != nil {
		text, finish, version = r.Resp.Text(), "", r.Resp.ModelVersion
		if len(r.Resp.Choices) > 0 {
			finish = r.Resp.Choices[0].FinishReason
		}
		if len(r.Resp.Choices) > 1 {
			choices = jsonString(r.Resp.Choices)
		}
		u := r.Resp.Usage
		pt, ct, cpt, tt = u.PromptTokens, u.CompletionTokens, u.CachedPromptTokens, u.ThinkingTokens
		cost = r.Price.CostOf(r.Resp)
		if r.Cached {
			cost = 0.0 // nothing was paid for this row
		}
	}
	if r.Err != "" {
		errText = r.Err
	}
	return w.Append(c.ID(), c.Model.Name, c.Strategy.Name, c.Task.Name, c.Item.ID, r.Stage, r.Attempt, r.Key,
		r.Messages, r.Params, text, choices, finish, pt, ct, cpt, tt, r.LatencyMS, r.Cached, errText, version, cost, r.Time, batch)
}

func (e *Engine) resultColumns() []Column {
	return []Column{
		{"case_id", ColString, false}, {"model", ColString, true}, {"strategy", ColString, true}, {"task", ColString, true},
		{"item_id", ColString, false}, {"gold", ColString, true}, {"label", ColString, true}, {"confidence", ColFloat, false},
		{"parsed", ColBool, false}, {"correct", ColBool, false}, {"truncated", ColBool, false}, {"blocked", ColBool, false},
		{"outputs", ColString, false}, {"judge", ColString, false}, {"item", ColString, false}, {"calls", ColInt, false},
		{"prompt_tokens", ColInt, false}, {"completion_tokens", ColInt, false}, {"thinking_tokens", ColInt, false},
		{"total_tokens", ColInt, false}, {"cost_usd", ColFloat, false}, {"judge_tokens", ColInt, false},
		{"judge_cost_usd", ColFloat, false}, {"steps", ColInt, false}, {"error", ColString, false},
	}
}

func (e *Engine) writeResults(path string, results []Result) error {
	w, err := CreateParquet(path, e.resultColumns())
	if err != nil {
		return err
	}
	var werr error
	e.study.EachCase(func(c *Case) bool {
		r := &results[c.Ordinal]
		var gold, label, errText, item any
		if c.Item.Gold != "" {
			gold = c.Item.Gold
		}
		if r.Label != "" {
			label = r.Label
		}
		if r.Err != "" {
			errText = r.Err
		}
		if keep := c.Task.Spec.Keep; len(keep) > 0 {
			m := make(map[string]any, len(keep))
			for _, k := range keep {
				m[k] = c.Item.Fields[k]
			}
			item = jsonString(m)
		}
		var correct any
		if r.Correct != nil {
			correct = *r.Correct
		}
		var outputs, judge any
		if r.Outputs != nil {
			outputs = jsonString(r.Outputs)
		}
		if r.Judge != nil {
			judge = jsonString(r.Judge)
		}
		model, strategy := c.ReportedNames()
		a, ja := r.Acct, r.JudgeAcct
		werr = w.Append(c.ID(), model, strategy, c.Task.Name, c.Item.ID, gold, label, r.Confidence,
			r.Parsed, correct, a.Truncated, a.Blocked, outputs, judge, item, a.Calls,
			a.PromptTokens, a.CompletionTokens, a.ThinkingTokens, a.PromptTokens+a.CompletionTokens, a.CostUSD,
			ja.PromptTokens+ja.CompletionTokens, ja.CostUSD, r.Steps, errText)
		return werr == nil
	})
	if werr != nil {
		w.Abort()
		return werr
	}
	return w.Commit()
}

// Manifest is manifest.json: what ran, on which config, with what outcome.
type Manifest struct {
	Summary
	Version       string              `json:"version"`
	ConfigFile    string              `json:"config_file"`
	ConfigHash    string              `json:"config_hash"`
	Files         map[string]string   `json:"files"`
	Started       time.Time           `json:"started"`
	Finished      time.Time           `json:"finished"`
	Seed          int64               `json:"seed"`
	Unparsed      string              `json:"unparsed_policy"`
	Models        []ManifestModel     `json:"models"`
	ModelVersions map[string][]string `json:"model_versions"`
	Strategies    []string            `json:"strategies"`
	Tasks         []ManifestTask      `json:"tasks"`
}

// ManifestModel records a model entry without anything secret.
type ManifestModel struct {
	Name     string `json:"name"`
	Provider string `json:"provider"`
	Model    string `json:"model"`
	BaseURL  string `json:"base_url,omitempty"`
	Price    Price  `json:"price"`
}

// ManifestTask records a task and its item count.
type ManifestTask struct {
	Name  string `json:"name"`
	Items int    `json:"items"`
}

func (e *Engine) writeManifest(path string, sum *Summary, started time.Time) error {
	s := e.study
	m := Manifest{
		Summary: *sum, Version: Version, ConfigFile: s.File, ConfigHash: s.ConfigHash,
		Files: map[string]string{}, Started: started, Finished: time.Now().UTC(),
		Seed: s.Run.Settings.Seed, Unparsed: s.UnparsedPolicy(), ModelVersions: e.ModelVersions(),
	}
	for _, f := range s.Files {
		if data, err := os.ReadFile(f); err == nil {
			h := sha256.Sum256(data)
			m.Files[f] = hex.EncodeToString(h[:])
		}
	}
	for _, md := range s.Models {
		m.Models = append(m.Models, ManifestModel{Name: md.Name, Provider: md.Spec.Provider, Model: md.Spec.ID(), BaseURL: md.Spec.BaseURL, Price: md.Spec.Price})
	}
	for _, st := range s.Strategies {
		m.Strategies = append(m.Strategies, st.Name)
	}
	sort.Strings(m.Strategies)
	for _, t := range s.Tasks {
		m.Tasks = append(m.Tasks, ManifestTask{t.Name, len(t.Items)})
	}
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	return WriteFileAtomic(path, append(data, '\n'))
}

// UnparsedPolicy is "wrong" (default) or "exclude".
func (s *Study) UnparsedPolicy() string {
	if s.Run.Settings.Unparsed == "" {
		return "wrong"
	}
	return s.Run.Settings.Unparsed
}
