package eee

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/promoral/promoral/runfolder/manifest"
)

// evaluationResults are a model × task's metrics.parquet rows as EEE
// results: one per row with a value; the rows without one (a status other
// than ok) are listed in withheld, never given a made-up score.
func evaluationResults(m *manifest.Manifest, k key, metrics []row, gen map[string]genConfig) ([]map[string]any, []string) {
	out := []map[string]any{}
	var withheld []string
	for _, r := range metrics {
		strategy, subset, metric := str(r, "strategy"), str(r, "subset"), str(r, "metric")
		id := []string{str(r, "block"), strategy, subset}
		params := map[string]any{"block": str(r, "block"), "subset": subset}
		for _, f := range m.Factors {
			if v := str(r, f); v != "" {
				id = append(id, f+"="+v)
				params[f] = v
			}
		}
		id = append(id, metric)
		n, _ := num(r, "n")
		cases, _ := num(r, "n_cases")
		value, ok := flt(r, "value")
		if status := str(r, "status"); status != "ok" || !ok {
			withheld = append(withheld, fmt.Sprintf("%s: %s (n %d of %d cases)", strings.Join(id, "/"), orUnknown(status), n, cases))
			continue
		}
		for _, p := range []string{"unparsed_policy", "errors_policy", "convention", "selection"} {
			if v := str(r, p); v != "" {
				params[p] = v
			}
		}
		details := map[string]string{"n": strconv.FormatInt(n, 10), "n_cases": strconv.FormatInt(cases, 10), "status": "ok"}
		for _, c := range []string{"n_unparsed", "n_errors", "ci_reps", "ci_undefined"} {
			if v, ok := num(r, c); ok {
				details[c] = strconv.FormatInt(v, 10)
			}
		}
		score := map[string]any{"score": value, "details": details}
		lo, okLo := flt(r, "ci_low")
		hi, okHi := flt(r, "ci_high")
		if okLo && okHi {
			u := map[string]any{
				"confidence_interval": map[string]any{"lower": lo, "upper": hi, "confidence_level": 0.95, "method": "percentile bootstrap"},
				"num_samples":         n,
			}
			if reps, ok := num(r, "ci_reps"); ok && reps > 0 {
				u["num_bootstrap_samples"] = reps
			}
			score["uncertainty"] = u
		}
		res := map[string]any{
			"evaluation_result_id": strings.Join(id, "/"),
			"evaluation_name":      k.task + "/" + strategy,
			"source_data":          sourceData(m, k.task),
			"metric_config":        metricConfig(m, k.task, metric, params, str(r, "convention")),
			"score_details":        score,
		}
		if g, ok := gen[strategy]; ok {
			res["generation_config"] = g.json()
		}
		out = append(out, res)
	}
	return out, withheld
}

// metricShape is what promoral's metrics are: their family, range and
// direction.
type metricShape struct {
	kind       string
	lower      bool
	proportion bool
}

var shapes = map[string]metricShape{
	"accuracy": {"accuracy", false, true}, "flip_accuracy": {"accuracy", false, true},
	"f1": {"f1", false, true}, "precision": {"precision", false, true}, "recall": {"recall", false, true},
	"weighted_precision": {"precision", false, true}, "weighted_recall": {"recall", false, true},
	"weighted_f1": {"f1", false, true}, "macro_f1": {"f1", false, true},
	"accuracy_repeat_mean": {"accuracy", false, true}, "accuracy_repeat_min": {"accuracy", false, true},
	"accuracy_repeat_max": {"accuracy", false, true}, "flip_rate": {"rate", true, true},
	"ece": {"calibration_error", true, true}, "ece_pos": {"calibration_error", true, true},
	"ece_pos_promoral": {"calibration_error", true, true}, "mce": {"calibration_error", true, true},
	"brier": {"brier", true, true}, "unparsed_rate": {"rate", true, true}, "mean_confidence": {"confidence", false, true},
}

func metricConfig(m *manifest.Manifest, task, metric string, params map[string]any, convention string) map[string]any {
	sh, known := shapes[metric]
	if !known {
		sh.kind = metric
	}
	mc := map[string]any{
		"metric_id": metric, "metric_name": metric, "metric_kind": sh.kind,
		"lower_is_better": sh.lower, "score_type": "continuous", "metric_parameters": params,
		"evaluation_description": fmt.Sprintf("%s of task %s as promoral's metric blocks compute it (docs/metrics.md)", metric, task),
	}
	details := map[string]string{}
	if convention != "" {
		details["convention"] = convention
	}
	if sh.proportion {
		mc["min_score"], mc["max_score"], mc["metric_unit"] = 0.0, 1.0, "proportion"
	} else {
		mc["min_score"], mc["max_score"] = nil, nil
		if !known {
			details["direction"] = "promoral does not state whether lower is better for this metric"
		}
	}
	if len(details) > 0 {
		mc["additional_details"] = details
	}
	for _, t := range m.Tasks {
		if t.Name != task || t.Judge == "" {
			continue
		}
		strategy, on, _ := strings.Cut(t.Judge, " on ")
		judge := map[string]any{"model_info": modelInfo(m, strings.TrimSpace(on)).json()}
		if on == "" {
			judge["model_info"] = model{name: strategy, id: strategy, developer: "unknown", deployment: "unknown"}.json()
		}
		mc["llm_scoring"] = map[string]any{
			"judges":       []any{judge},
			"input_prompt": fmt.Sprintf("the judge strategy %s of the run's config (its rendered prompts are in calls.parquet, stages judge.*)", strategy),
		}
	}
	return mc
}

// sourceData is a task's data: the hub dataset it came from, or its files
// by name, size and sha256.
func sourceData(m *manifest.Manifest, task string) map[string]any {
	for _, t := range m.Tasks {
		if t.Name != task {
			continue
		}
		details := map[string]string{"items": strconv.Itoa(t.Items)}
		if t.Data != nil {
			for i, f := range t.Data.Files {
				p := fmt.Sprintf("file_%d", i)
				details[p] = filepath.Base(f.Path)
				details[p+"_sha256"] = f.SHA256
				details[p+"_bytes"] = strconv.FormatInt(f.Size, 10)
			}
			if t.Data.Hub != "" {
				if t.Data.Commit != "" {
					details["hf_commit"] = t.Data.Commit
				}
				return map[string]any{"dataset_name": task, "source_type": "hf_dataset", "hf_repo": t.Data.Hub,
					"samples_number": t.Items, "additional_details": details}
			}
		}
		return map[string]any{"dataset_name": task, "source_type": "other", "additional_details": details}
	}
	return map[string]any{"dataset_name": task, "source_type": "other"}
}

// genConfig is a strategy's method: its stages and the settings of its
// requests, as the first case of it that made calls shows them.
type genConfig struct {
	strategy    string
	temperature *float64
	topP        *float64
	maxTokens   int64
	steps       []string
	config      map[string]string
}

func (g genConfig) json() map[string]any {
	args := map[string]any{"eval_plan": map[string]any{"name": g.strategy, "steps": g.steps, "config": g.config}}
	if g.temperature != nil {
		args["temperature"] = *g.temperature
	}
	if g.topP != nil {
		args["top_p"] = *g.topP
	}
	if g.maxTokens > 0 {
		args["max_tokens"] = g.maxTokens
	}
	return map[string]any{"generation_args": args}
}

// generation is each strategy's genConfig within one model × task.
func generation(m *manifest.Manifest, results []row, calls map[string][]call) map[string]genConfig {
	out := map[string]genConfig{}
	for _, r := range results {
		s := str(r, "strategy")
		g, seen := out[s]
		cs := ownCalls(calls[str(r, "case_id")])
		if seen && (g.steps != nil || len(cs) == 0) {
			continue
		}
		g = genConfig{strategy: s, config: map[string]string{"strategy": s}}
		for _, f := range m.Factors {
			if v := str(r, f); v != "" {
				g.config["factor."+f] = v
			}
		}
		for p, sum := range m.Files {
			if filepath.Base(filepath.Dir(p)) == "strategies" && strings.TrimSuffix(filepath.Base(p), filepath.Ext(p)) == s {
				g.config["strategy_file_sha256"] = sum
			}
		}
		params := map[string]string{}
		for _, c := range calls[str(r, "case_id")] {
			if _, ok := params[c.stage]; !ok {
				params[c.stage] = c.params
			}
		}
		if len(cs) > 0 {
			var p struct {
				Temperature *float64 `json:"temperature"`
				TopP        *float64 `json:"top_p"`
				MaxTokens   int64    `json:"max_tokens"`
			}
			if json.Unmarshal([]byte(cs[0].params), &p) == nil {
				g.temperature, g.topP, g.maxTokens = p.Temperature, p.TopP, p.MaxTokens
			}
		}
		seenStage := map[string]bool{}
		g.steps = []string{}
		for _, st := range traceOf(r) {
			if seenStage[st.Stage] {
				continue
			}
			seenStage[st.Stage] = true
			step := map[string]any{"stage": st.Stage, "kind": st.Kind}
			if p, ok := params[st.Stage]; ok && p != "" {
				step["request_params"] = json.RawMessage(p)
			}
			b, _ := json.Marshal(step)
			g.steps = append(g.steps, string(b))
		}
		out[s] = g
	}
	return out
}

// ownCalls are a case's calls without its judge's.
func ownCalls(cs []call) []call {
	var out []call
	for _, c := range cs {
		if !strings.HasPrefix(c.stage, "judge.") {
			out = append(out, c)
		}
	}
	return out
}

// step is one entry of results.parquet's trace column.
type step struct {
	Stage string         `json:"stage"`
	Kind  string         `json:"kind"`
	Visit int            `json:"visit"`
	Out   map[string]any `json:"out"`
	Note  map[string]any `json:"note"`
}

func traceOf(r row) []step {
	var t []step
	if s := str(r, "trace"); s != "" {
		json.Unmarshal([]byte(s), &t)
	}
	return t
}
