// Package eee writes a run folder as Every Eval Ever records (schema
// 0.3.0): one aggregate record per model × task, with its metrics, their
// intervals and denominators, the strategies as the method and promoral as
// the library, and beside it the per-sample file {uuid}_samples.jsonl, one
// line per case. It reads the run folder's files (results.parquet,
// calls.parquet, metrics.parquet, manifest.json) through parquetio and
// imports nothing of the engine.
package eee

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/runfolder/manifest"
)

// SchemaVersion is the Every Eval Ever schema version written.
const SchemaVersion = "0.3.0"

// Options are what a run folder does not say.
type Options struct {
	// Org is the organisation that ran the evaluation (source_metadata;
	// "unknown" when empty).
	Org string
	// Now is the time the records are made (retrieved_timestamp); zero:
	// the time the run finished, so one run folder always exports the
	// same files.
	Now time.Time
}

// Record is one aggregate record written, with its samples file.
type Record struct {
	Model, Task     string
	Path, Samples   string
	Results, Rows   int
	WithheldMetrics int
}

// Export writes the records of the run folder run under dir, in the
// layout of the Every Eval Ever repository:
// dir/data/<task>/<developer>/<model>/<uuid>.json and <uuid>_samples.jsonl.
func Export(run, dir string, opts Options) ([]Record, error) {
	m, err := readManifest(run)
	if err != nil {
		return nil, err
	}
	if opts.Org == "" {
		opts.Org = "unknown"
	}
	if opts.Now.IsZero() {
		opts.Now = m.Finished
	}
	metrics, err := readMetrics(filepath.Join(run, "metrics.parquet"))
	if err != nil {
		return nil, err
	}
	calls, err := readCalls(filepath.Join(run, "calls.parquet"))
	if err != nil {
		return nil, err
	}
	groups, order, err := readResults(filepath.Join(run, "results.parquet"))
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, k := range order {
		rec, err := writeGroup(dir, m, k, groups[k], metrics[k], calls, opts)
		if err != nil {
			return out, err
		}
		out = append(out, rec)
	}
	return out, nil
}

func readManifest(run string) (*manifest.Manifest, error) {
	m, err := manifest.Read(run)
	if errors.Is(err, fs.ErrNotExist) {
		path := filepath.Join(run, "manifest.json")
		return nil, fmt.Errorf("%s: no manifest.json; is %s a run folder? (apply a study to make one)", path, run)
	}
	return m, err
}

// key is one aggregate record's model and task, as results.parquet
// reports them.
type key struct{ model, task string }

// row is a results.parquet or metrics.parquet row.
type row = map[string]any

func str(r row, k string) string { s, _ := r[k].(string); return s }
func num(r row, k string) (int64, bool) {
	n, ok := r[k].(int64)
	return n, ok
}
func flt(r row, k string) (float64, bool) {
	f, ok := r[k].(float64)
	return f, ok && !math.IsNaN(f) && !math.IsInf(f, 0)
}

func readResults(path string) (map[key][]row, []key, error) {
	groups := map[key][]row{}
	var order []key
	err := parquetio.Scan(path, nil, nil, func(r row) {
		k := key{str(r, "model"), str(r, "task")}
		if _, ok := groups[k]; !ok {
			order = append(order, k)
		}
		groups[k] = append(groups[k], r)
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return groups, order, nil
}

func readMetrics(path string) (map[key][]row, error) {
	out := map[key][]row{}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		return out, nil // a study without metric blocks
	}
	err := parquetio.Scan(path, nil, nil, func(r row) {
		k := key{str(r, "model"), str(r, "task")}
		out[k] = append(out[k], r)
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// call is what a sample takes from a calls.parquet row.
type call struct {
	stage, messages, params, text, choices, err string
	cachedPrompt                                int64
}

// readCalls keeps the final row of every call (the reply the case used),
// by case, in file order.
func readCalls(path string) (map[string][]call, error) {
	out := map[string][]call{}
	cols := []string{"case_id", "stage", "request_messages", "request_params", "response_text", "response_choices", "error", "final", "cached_prompt_tokens"}
	err := parquetio.Scan(path, cols, nil, func(r row) {
		if f, _ := r["final"].(bool); !f {
			return
		}
		cp, _ := num(r, "cached_prompt_tokens")
		id := str(r, "case_id")
		out[id] = append(out[id], call{stage: str(r, "stage"), messages: str(r, "request_messages"), params: str(r, "request_params"),
			text: str(r, "response_text"), choices: str(r, "response_choices"), err: str(r, "error"), cachedPrompt: cp})
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return out, nil
}

// writeGroup writes one model × task's aggregate record and samples.
func writeGroup(dir string, m *manifest.Manifest, k key, results, metrics []row, calls map[string][]call, opts Options) (Record, error) {
	mi := modelInfo(m, k.model)
	developer := safeName(mi.developer)
	evalID := fmt.Sprintf("promoral/%s/%s/%s/%d", m.Run, mi.id, k.task, m.Finished.Unix())
	uuid := uuidOf(evalID)
	rel := fmt.Sprintf("data/%s/%s/%s", safeName(k.task), developer, safeName(k.model))
	base := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(base, 0o777); err != nil {
		return Record{}, err
	}
	samplesRel := rel + "/" + uuid + "_samples.jsonl"
	samplesPath := filepath.Join(dir, filepath.FromSlash(samplesRel))
	n, sum, err := writeSamples(samplesPath, evalID, mi.id, results, calls)
	if err != nil {
		return Record{}, err
	}
	gen := generation(m, results, calls)
	evals, withheld := evaluationResults(m, k, metrics, gen)
	srcDetails := map[string]string{"run": m.Run, "config_hash": m.ConfigHash}
	if len(withheld) > 0 {
		srcDetails["metrics_without_value"] = strings.Join(withheld, "; ")
	}
	rec := map[string]any{
		"schema_version":       SchemaVersion,
		"evaluation_id":        evalID,
		"evaluation_timestamp": strconv.FormatInt(m.Finished.Unix(), 10),
		"retrieved_timestamp":  strconv.FormatInt(opts.Now.Unix(), 10),
		"source_metadata": map[string]any{
			"source_name": "promoral", "source_type": "evaluation_run", "source_organization_name": opts.Org,
			"evaluator_relationship": "third_party", "additional_details": srcDetails,
		},
		"eval_library": map[string]any{
			"name": "promoral", "version": orUnknown(m.Version),
			"additional_details": map[string]string{"unparsed_policy": m.Unparsed, "seed": strconv.FormatInt(m.Seed, 10)},
		},
		"model_info":         mi.json(),
		"evaluation_results": evals,
		"detailed_evaluation_results": map[string]any{
			"format": "jsonl", "file_path": samplesRel, "hash_algorithm": "sha256", "checksum": sum, "total_rows": n,
		},
	}
	data, err := json.MarshalIndent(rec, "", "  ")
	if err != nil {
		return Record{}, err
	}
	path := filepath.Join(base, uuid+".json")
	if err := parquetio.WriteFileAtomic(path, append(data, '\n')); err != nil {
		return Record{}, err
	}
	return Record{Model: k.model, Task: k.task, Path: path, Samples: samplesPath, Results: len(evals), Rows: n, WithheldMetrics: len(withheld)}, nil
}

// model is a model as EEE names it.
type model struct {
	name, id, developer, provider, deployment string
	versions                                  []string
}

func modelInfo(m *manifest.Manifest, name string) model {
	mi := model{name: name, id: name, developer: "unknown", deployment: "unknown"}
	for _, md := range m.Models {
		if md.Name != name {
			continue
		}
		mi.provider = md.Provider
		if dev, ok := developers[md.Provider]; ok {
			mi.developer, mi.deployment = dev, "externally_managed"
			mi.id = md.Provider + "/" + md.Model
		}
	}
	mi.versions = m.ModelVersions[name]
	return mi
}

// developers are the providers whose models their maker serves.
var developers = map[string]string{"openai": "openai", "anthropic": "anthropic", "gemini": "google"}

func (mi model) json() map[string]any {
	details := map[string]string{"deployment_type": mi.deployment, "model_availability": "unknown"}
	if len(mi.versions) > 0 {
		details["model_versions"] = strings.Join(mi.versions, ", ")
	}
	out := map[string]any{"name": mi.name, "id": mi.id, "developer": mi.developer, "additional_details": details}
	if mi.provider != "" {
		out["inference_platform"] = mi.provider
	}
	return out
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// safeName makes a name one path component.
func safeName(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' || r < ' ' {
			return '_'
		}
		return r
	}, s)
	if s == "" || s == "." || s == ".." {
		return "_"
	}
	return s
}

// uuidOf is a version-4-shaped UUID drawn from a hash of s, so the same
// record gets the same file name on every export.
func uuidOf(s string) string {
	h := sha256.Sum256([]byte(s))
	h[6] = h[6]&0x0f | 0x40
	h[8] = h[8]&0x3f | 0x80
	x := hex.EncodeToString(h[:16])
	return x[:8] + "-" + x[8:12] + "-" + x[12:16] + "-" + x[16:20] + "-" + x[20:32]
}

// writeSamples writes the samples file and returns its rows and sha256.
func writeSamples(path, evalID, modelID string, results []row, calls map[string][]call) (int, string, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, "", err
	}
	h := sha256.New()
	w := bufio.NewWriter(f)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	for _, r := range results {
		s := sample(evalID, modelID, r, calls[str(r, "case_id")])
		if err := enc.Encode(s); err != nil {
			f.Close()
			return 0, "", err
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, "", err
	}
	if err := f.Close(); err != nil {
		return 0, "", err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, "", err
	}
	h.Write(data)
	return len(results), hex.EncodeToString(h.Sum(nil)), nil
}
