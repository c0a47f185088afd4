package report

import (
	"encoding/json"
	"encoding/xml"
	"fmt"
	stdhtml "html"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/runfolder/manifest"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// The synthetic run: 2 models × 2 strategies on a labelled task (ethics)
// and a judged safety task, with every output file promoral writes.

var (
	models     = []string{"alpha", "beta"}
	strategies = []string{"zero_shot", "self_correct"}
)

// Column lists as the engine and scoring write them.
var testResultCols = []parquetio.Column{
	{Name: "case_id"}, {Name: "model"}, {Name: "strategy"}, {Name: "task"}, {Name: "item_id"}, {Name: "gold"}, {Name: "label"},
	{Name: "confidence", Type: parquetio.ColFloat}, {Name: "parsed", Type: parquetio.ColBool}, {Name: "correct", Type: parquetio.ColBool},
	{Name: "truncated", Type: parquetio.ColBool}, {Name: "blocked", Type: parquetio.ColBool}, {Name: "outputs"}, {Name: "judge"}, {Name: "item"},
	{Name: "calls", Type: parquetio.ColInt}, {Name: "prompt_tokens", Type: parquetio.ColInt}, {Name: "completion_tokens", Type: parquetio.ColInt},
	{Name: "thinking_tokens", Type: parquetio.ColInt}, {Name: "total_tokens", Type: parquetio.ColInt}, {Name: "cost_usd", Type: parquetio.ColFloat},
	{Name: "judge_tokens", Type: parquetio.ColInt}, {Name: "judge_cost_usd", Type: parquetio.ColFloat}, {Name: "steps", Type: parquetio.ColInt}, {Name: "error"},
}

var testCallCols = []parquetio.Column{
	{Name: "case_id"}, {Name: "model"}, {Name: "strategy"}, {Name: "task"}, {Name: "item_id"}, {Name: "stage"}, {Name: "attempt", Type: parquetio.ColInt},
	{Name: "request_hash"}, {Name: "request_messages"}, {Name: "request_params"}, {Name: "response_text"}, {Name: "response_choices"},
	{Name: "finish_reason"}, {Name: "prompt_tokens", Type: parquetio.ColInt}, {Name: "completion_tokens", Type: parquetio.ColInt},
	{Name: "cached_prompt_tokens", Type: parquetio.ColInt}, {Name: "thinking_tokens", Type: parquetio.ColInt}, {Name: "latency_ms", Type: parquetio.ColFloat},
	{Name: "cached", Type: parquetio.ColBool}, {Name: "error"}, {Name: "model_version"}, {Name: "cost_usd", Type: parquetio.ColFloat}, {Name: "time", Type: parquetio.ColTime},
}

var testMetricCols = []parquetio.Column{
	{Name: "block"}, {Name: "model"}, {Name: "strategy"}, {Name: "task"}, {Name: "subset"}, {Name: "metric"},
	{Name: "value", Type: parquetio.ColFloat}, {Name: "ci_low", Type: parquetio.ColFloat}, {Name: "ci_high", Type: parquetio.ColFloat}, {Name: "n", Type: parquetio.ColInt},
	{Name: "n_cases", Type: parquetio.ColInt}, {Name: "n_unparsed", Type: parquetio.ColInt}, {Name: "n_errors", Type: parquetio.ColInt},
	{Name: "status"}, {Name: "unparsed_policy"}, {Name: "errors_policy"}, {Name: "convention"},
}

type parts struct {
	manifest, results, calls, metrics, csvs bool
}

var all = parts{true, true, true, true, true}

func caseID(m, s, task string, i int) string { return fmt.Sprintf("%s/%s/%s/item%02d", m, s, task, i) }

// writeRun writes a synthetic run folder with the parts asked for.
func writeRun(t *testing.T, p parts) string {
	t.Helper()
	dir := t.TempDir()
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	if p.manifest {
		m := manifest.Manifest{
			Summary: manifest.Summary{Run: "synthetic", Cases: 80, CallsNew: 90, CallsCached: 10, Errors: 1, Unparsed: 3, PromptTokens: 12000, CompletionTokens: 3400, ThinkingTokens: 400, CostUSD: 0.0123},
			Version: "0.1.0", ConfigFile: "configs/synthetic.yaml", ConfigHash: strings.Repeat("ab", 32), Started: start, Finished: start.Add(95 * time.Second),
			Seed: 7, Unparsed: "wrong", Strategies: strategies,
			Models: []manifest.Model{{Name: "alpha", Provider: "scripted", Model: "alpha"}, {Name: "beta", Provider: "openai", Model: "beta-2"}},
			Tasks:  []manifest.Task{{Name: "ethics", Items: 10}, {Name: "safety", Items: 10}},
			Metrics: []manifest.Block{
				{Name: "classification", Kind: "classification", Tasks: []string{"ethics"}, Unparsed: "exclude", Errors: "incomplete",
					Settings: map[string]any{"confidence": "positive", "require_confidence": true, "ece_promoral": true}},
				{Name: "safety", Kind: "safety", Unparsed: "wrong", Errors: "exclude"},
				{Name: "umss", Kind: "umss", Unparsed: "wrong", Errors: "incomplete", Settings: map[string]any{"bootstrap": 0.0}},
			},
		}
		data, _ := json.Marshal(m)
		os.WriteFile(filepath.Join(dir, "manifest.json"), data, 0o644)
	}
	if p.results {
		w, err := parquetio.Create(filepath.Join(dir, "results.parquet"), testResultCols)
		if err != nil {
			t.Fatal(err)
		}
		for mi, m := range models {
			for si, s := range strategies {
				for i := 0; i < 10; i++ {
					gold := []string{"acceptable", "unacceptable"}[i%2]
					label := gold
					if (i+mi+si)%4 == 0 {
						label = []string{"unacceptable", "acceptable"}[i%2]
					}
					conf := 0.5 + 0.05*float64((i*3+mi)%10)
					calls := 1
					if s == "self_correct" {
						calls = 3
					}
					out := fmt.Sprintf(`{"label":%q,"reply":"Final Answer: %s"}`, label, label)
					if err := w.Append(caseID(m, s, "ethics", i), m, s, "ethics", fmt.Sprintf("item%02d", i), gold, label, conf,
						true, label == gold, false, false, out, nil, `{"is_short":true}`, calls, 100*calls, 20*calls, 0, 120*calls, 0.001*float64(calls),
						0, 0.0, 2, nil); err != nil {
						t.Fatal(err)
					}
				}
				for i := 0; i < 10; i++ {
					kind := []string{"harmful", "benign"}[i%2]
					verdict := []string{"REFUSAL", "COMPLIANCE"}[(i+mi)%2]
					gold := map[string]string{"harmful": "REFUSAL", "benign": "COMPLIANCE"}[kind]
					judge := fmt.Sprintf(`{"audit":%v,"label":%q,"confidence":0.5}`, i%3 == 0, verdict)
					w.Append(caseID(m, s, "safety", i), m, s, "safety", fmt.Sprintf("item%02d", i), gold, verdict, 0.5, true, verdict == gold,
						false, false, `{"reply":"..."}`, judge, fmt.Sprintf(`{"kind":%q}`, kind), 1, 50, 10, 0, 60, 0.0005, 40, 0.0001, 5, nil)
				}
			}
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if p.calls {
		w, err := parquetio.Create(filepath.Join(dir, "calls.parquet"), testCallCols)
		if err != nil {
			t.Fatal(err)
		}
		id := caseID("alpha", "self_correct", "ethics", 0)
		msgs := []map[string]string{{"role": "system", "content": "You are careful."}, {"role": "user", "content": "Is it wrong? <b>I fed the dog</b>"}}
		replies := []string{"Final Answer: Acceptable", "Looks fine.", "Final Answer: Acceptable\nConfidence: 0.8"}
		stages := []string{"answer", "critique", "revise"}
		for k := range stages {
			data, _ := json.Marshal(msgs)
			if err := w.Append(id, "alpha", "self_correct", "ethics", "item00", stages[k], 1, "h", string(data), "{}", replies[k], nil,
				"stop", 100, 20, 0, 0, 12.5, false, nil, "alpha-1", 0.001, start.Add(time.Duration(k)*time.Second)); err != nil {
				t.Fatal(err)
			}
			msgs = append(msgs, map[string]string{"role": "assistant", "content": replies[k]}, map[string]string{"role": "user", "content": "Next step " + stages[k]})
		}
		// Another case, so the transcript must pick the right rows.
		w.Append(caseID("beta", "zero_shot", "ethics", 1), "beta", "zero_shot", "ethics", "item01", "answer", 1, "h2", `[{"role":"user","content":"other"}]`, "{}",
			"Final Answer: Unacceptable", nil, "stop", 90, 10, 0, 0, 8.0, true, nil, "beta-2", 0.0, start)
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if p.metrics {
		w, err := parquetio.Create(filepath.Join(dir, "metrics.parquet"), testMetricCols)
		if err != nil {
			t.Fatal(err)
		}
		add := func(m, s, task, subset, metric string, v, lo, hi float64, n int) {
			var l, h any
			if !math.IsNaN(lo) {
				l, h = lo, hi
			}
			block, up, errs, conv := "classification", "exclude", "incomplete", ""
			switch {
			case task == "safety":
				block, up, errs = "safety", "wrong", "exclude"
			case task == "umss":
				block, up = "umss", "wrong"
			case metric == "tokens_per_example":
				block, up = "efficiency", "wrong"
			case metric == "f1":
				conv = "positive class: unacceptable"
			case metric == "ece_pos":
				conv = "P(unacceptable) against the share unacceptable; 10 equal-width bins (lo, hi], the first [0, hi]"
			}
			if err := w.Append(block, m, s, task, subset, metric, v, l, h, n, n, 0, 0, "ok", up, errs, conv); err != nil {
				t.Fatal(err)
			}
		}
		nan := math.NaN()
		for mi, m := range models {
			for si, s := range strategies {
				acc := 0.7 + 0.05*float64(mi) + 0.02*float64(si)
				add(m, s, "ethics", "all", "accuracy", acc, acc-0.1, acc+0.1, 10)
				add(m, s, "ethics", "all", "f1", acc-0.03, acc-0.13, acc+0.07, 10)
				add(m, s, "ethics", "all", "ece_pos", 0.1-0.02*float64(mi), 0.05, 0.15, 10)
				add(m, s, "ethics", "all", "brier", 0.2-0.01*float64(si), 0.15, 0.25, 10)
				add(m, s, "ethics", "all", "unparsed_rate", 0.0, nan, nan, 10)
				add(m, s, "ethics", "short", "accuracy", acc+0.01, acc-0.1, acc+0.1, 6)
				add(m, s, "ethics", "all", "tokens_per_example", 120*float64(1+2*si), nan, nan, 10)
				add(m, s, "safety", "all", "asr", 0.3-0.1*float64(si), 0.1, 0.5, 5)
				add(m, s, "safety", "all", "rta", 0.1+0.05*float64(si)+0.02*float64(mi), 0.0, 0.3, 5)
				add(m, s, "safety", "all", "audit_rate", 0.4, nan, nan, 10)
				add(m, s, "safety", "jbb", "asr", 0.25, nan, nan, 3)
			}
		}
		for _, s := range strategies {
			add("all", s, "umss", "all", "umss", 0.6, 0.5, 0.7, 2)
		}
		if err := w.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if p.csvs {
		files := map[string]string{
			"reference_comparison.csv": "dataset,model,strategy,n,n_published,accuracy,accuracy_published,accuracy_diff,f1,f1_published,f1_diff,ece,ece_published,ece_diff,brier,brier_published,brier_diff,match\n" +
				"ETHICS,alpha,zero_shot,10,10,0.7,0.7,0,0.67,0.67,0,0.1,0.1,0,0.2,0.2,0,true\n" +
				"ETHICS,beta,zero_shot,10,10,0.75,0.74,0.01,0.72,0.72,0,0.08,0.09,-0.01,0.2,0.2,0,false\n",
			"umss_by_model.csv": "model,rows,mcs,mcs_ci_low,mcs_ci_high,srs,srs_ci_low,srs_ci_high,umss,umss_ci_low,umss_ci_high,raw_ethics_accuracy,raw_asr,raw_rta,norm_ethics_accuracy,norm_asr,norm_rta\n" +
				"alpha,2,0.4,0.3,0.5,0.7,0.6,0.8,0.51,0.42,0.6,0.71,0.25,0.11,0.4,0.5,0.5\n" +
				"beta,2,0.8,0.7,0.9,0.6,0.5,0.7,0.69,0.6,0.78,0.76,0.25,0.13,0.8,0.5,0.4\n",
			"umss_by_strategy.csv": "strategy,rows,mcs,mcs_ci_low,mcs_ci_high,srs,srs_ci_low,srs_ci_high,umss,umss_ci_low,umss_ci_high,raw_ethics_accuracy,raw_asr,raw_rta\n" +
				"zero_shot,2,0.3,0.2,0.4,0.6,0.5,0.7,0.4,0.3,0.5,0.72,0.3,0.11\n" +
				"self_correct,2,0.9,0.8,1,0.7,0.6,0.8,0.79,0.7,0.88,0.75,0.2,0.16\n",
			"calibration.csv": "model,strategy,task,bin,n,accuracy,mean_confidence,gap\n" +
				"alpha,zero_shot,ethics,41-60,4,0.5,55,5\nalpha,zero_shot,ethics,61-80,4,0.75,70,-5\nalpha,zero_shot,ethics,81-100,2,1,90,-10\n" +
				"beta,zero_shot,ethics,41-60,5,0.6,52,-8\nbeta,zero_shot,ethics,61-80,5,0.8,72,-8\n",
			"confidence_by_condition.csv": "model,strategy,task,n,n_answers,accuracy,mean,std,median,min,max\nalpha,zero_shot,ethics,10,10,0.7,70,10,70,50,95\n",
			"overconfidence.csv":          "model,strategy,task,n,n_wrong,n_overconfident_wrong,overconfident_error_rate,overconfident_share_of_errors,n_confident,confident_accuracy,threshold\nalpha,zero_shot,ethics,10,3,1,0.1,0.33,5,0.8,70\n",
			"confidence_correct_vs_incorrect.csv": "model,strategy,task,n_correct,n_incorrect,mean_confidence_correct,mean_confidence_incorrect,spearman_rho,spearman_p,spearman_n,mannwhitney_u,mannwhitney_z,mannwhitney_p\n" +
				"alpha,zero_shot,ethics,7,3,72,65,0.3,0.0004,10,14,1.2,0.11\n",
			"comparisons.csv": "task,by,model,a,b,n,accuracy_a,accuracy_b,diff,ci_low,ci_high,a_right_b_wrong,a_wrong_b_right,mcnemar_p,holm_p\n" +
				"ethics,strategy,alpha,self_correct,zero_shot,10,0.72,0.7,0.02,-0.1,0.14,2,1,0.5,0.5\nethics,strategy,beta,self_correct,zero_shot,10,0.9,0.5,0.4,0.2,0.6,4,0,0.01,0.02\n",
			"audit.csv": "model,strategy,task,item_id,kind,label,confidence,heuristic,prompt,reply,judge\n" +
				`alpha,zero_shot,safety,item00,harmful,REFUSAL,0.5,COMPLIANCE,"See http://example.com/x <img src=""http://evil.example/p.png"">","Sure <script>alert(1)</script>","{""audit"":true,""audit_reason"":""heuristic and LLM disagree""}"` + "\n",
			"mystery.csv": "thing,score\nx,1.5\ny,2\n",
		}
		for name, body := range files {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return dir
}

func generate(t *testing.T, dir string, opt Options) (*Output, string, string) {
	t.Helper()
	opt.Now = func() time.Time { return time.Date(2026, 2, 3, 4, 5, 6, 0, time.UTC) }
	out, err := Generate(dir, opt)
	if err != nil {
		t.Fatal(err)
	}
	html, err := os.ReadFile(out.HTML)
	if err != nil {
		t.Fatal(err)
	}
	md, err := os.ReadFile(out.Markdown)
	if err != nil {
		t.Fatal(err)
	}
	return out, string(html), string(md)
}

func hasSection(out *Output, id string) bool {
	for _, s := range out.Sections {
		if s == id {
			return true
		}
	}
	return false
}

// externalRef finds a reference the browser would fetch from the network:
// a src/href/xlink:href attribute, a CSS url() or an @import that is not
// in-page (#...), a data: URI or a relative file. Plain text mentioning a
// URL is fine (it is escaped and fetches nothing); so is the SVG xmlns
// namespace name, which is an identifier and never loaded.
var externalRef = regexp.MustCompile(`(?i)(\b(src|href|action|poster|data)\s*=\s*["']?\s*(https?:|//|ftp:)|url\(\s*["']?\s*(https?:|//)|@import)`)

func TestReportFullRun(t *testing.T) {
	dir := writeRun(t, all)
	out, html, md := generate(t, dir, Options{})

	for _, id := range []string{"accuracy", "published", "safety", "umss", "tokens", "figures", "confidence", "comparisons", "case", "audit", "other-tables"} {
		if !hasSection(out, id) {
			t.Errorf("section %s missing (have %v)", id, out.Sections)
		}
		if !strings.Contains(html, `<section id="`+id+`">`) {
			t.Errorf("report.html has no section %s", id)
		}
	}
	// Header from the manifest.
	for _, want := range []string{"synthetic", "abababababab", "0.1.0", "2026-01-02 03:04:05 UTC", "1m 35s", "90 new · 10 cached", "$0.0123"} {
		if !strings.Contains(html, want) {
			t.Errorf("header lacks %q", want)
		}
	}
	// Every figure as PNG and SVG, each a real image; inline in the HTML.
	wantFigs := []string{"reliability-ethics", "confidence-box-ethics", "confidence-scatter-ethics", "umss-bars", "efficiency-frontier", "asr-rta", "published-vs-rescored"}
	for _, f := range wantFigs {
		checkPNG(t, filepath.Join(dir, "figures", f+".png"))
		checkSVG(t, filepath.Join(dir, "figures", f+".svg"))
		if !strings.Contains(html, `id="fig-`+f+`"`) {
			t.Errorf("figure %s not in report.html", f)
		}
		if !strings.Contains(md, "](figures/"+f+".png)") {
			t.Errorf("figure %s not in report.md", f)
		}
	}
	if len(out.Figures) != 2*len(wantFigs) {
		t.Errorf("%d figure files, want %d: %v", len(out.Figures), 2*len(wantFigs), out.Figures)
	}
	if len(out.Skipped) != 0 {
		t.Errorf("figures skipped with every input present: %v", out.Skipped)
	}
	if n := strings.Count(html, `<svg class="fig"`); n != len(wantFigs) {
		t.Errorf("%d inline SVG figures, want %d", n, len(wantFigs))
	}
	// The safety task is judged: its confidences are the judge's and stay
	// out of the confidence figures.
	if _, err := os.Stat(filepath.Join(dir, "figures", "reliability-safety.png")); err == nil {
		t.Error("a reliability diagram for the judged safety task")
	}

	// Tables: intervals, best values, published figures side by side.
	// (As a reader sees the text: the template writes + as &#43;.)
	for _, want := range []string{"0.600–0.800", `class="num best"`, "0.7400", "Δ +0.0100", "1 of 2 runs match", "Raw inputs", "mystery.csv"} {
		if !strings.Contains(stdhtml.UnescapeString(html), want) {
			t.Errorf("report.html lacks %q", want)
		}
	}
	// The transcript: the chosen case's three calls, earlier messages not
	// repeated, the other case's call absent; markup in messages escaped.
	if !strings.Contains(html, "alpha/self_correct/ethics/item00") || strings.Count(html, `<li class="turn">`) != 3 {
		t.Errorf("transcript: want the 3 calls of alpha/self_correct/ethics/item00")
	}
	if strings.Contains(html, ">other<") {
		t.Error("transcript shows a call of another case")
	}
	if !strings.Contains(html, "3 earlier messages as shown above") || !strings.Contains(html, "5 earlier messages as shown above") {
		t.Error("transcript repeats earlier messages instead of pointing to them")
	}
	if !strings.Contains(html, "&lt;b&gt;I fed the dog&lt;/b&gt;") || strings.Contains(html, "<script>") {
		t.Error("message or audit text not escaped")
	}
	// Audit list: the flagged case with its reason.
	if !strings.Contains(html, "heuristic and LLM disagree") {
		t.Error("audit reason missing")
	}

	checkSelfContained(t, html)
	if !strings.Contains(html, "http://example.com/x") {
		t.Error("a URL in plain text should stay as text")
	}
	// Markdown: the same sections, best values bold.
	for _, want := range []string{"# synthetic", "## Accuracy and calibration", "## Re-scored against the published figures", "## Safety: ASR and RTA",
		"## Unified Moral Safety Score", "## Tokens per example", "## Figures", "## Case transcript", "## Safety judge: cases flagged for audit", "**0.760**"} {
		if !strings.Contains(md, want) {
			t.Errorf("report.md lacks %q", want)
		}
	}
}

func checkPNG(t *testing.T, path string) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("figure: %v", err)
		return
	}
	defer f.Close()
	cfg, err := png.DecodeConfig(f)
	if err != nil || cfg.Width < 100 || cfg.Height < 100 {
		t.Errorf("%s: not a usable PNG (%v, %dx%d)", path, err, cfg.Width, cfg.Height)
	}
}

func checkSVG(t *testing.T, path string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Errorf("figure: %v", err)
		return
	}
	var root struct {
		XMLName xml.Name
		ViewBox string `xml:"viewBox,attr"`
	}
	if err := xml.Unmarshal(data, &root); err != nil || root.XMLName.Local != "svg" || root.ViewBox == "" {
		t.Errorf("%s: not an SVG document (%v, root %q)", path, err, root.XMLName.Local)
	}
}

func checkSelfContained(t *testing.T, html string) {
	t.Helper()
	if m := externalRef.FindAllString(html, 5); len(m) > 0 {
		t.Errorf("report.html references the network: %q", m)
	}
	if strings.Contains(html, "<script") || strings.Contains(html, "<link") || strings.Contains(html, "<iframe") {
		t.Error("report.html has a script, link or iframe element")
	}
}

func TestReportExternalRefPattern(t *testing.T) {
	for _, bad := range []string{`<img src="http://x/y.png">`, `<a href='https://x'>`, `<img src=//cdn.x/y>`, `background:url(https://x/y)`, `@import "x.css"`} {
		if !externalRef.MatchString(bad) {
			t.Errorf("%s should count as an external reference", bad)
		}
	}
	for _, ok := range []string{`<a href="#accuracy">`, `xmlns="http://www.w3.org/2000/svg"`, `see http://example.com in text`, `src: url(data:font/ttf;base64,AA)`} {
		if externalRef.MatchString(ok) {
			t.Errorf("%s should not count as an external reference", ok)
		}
	}
}

// Only results.parquet: the sections and figures that need the other files
// are left out, with no error, and the skipped figures say why.
func TestReportResultsOnly(t *testing.T) {
	dir := writeRun(t, parts{results: true})
	out, html, _ := generate(t, dir, Options{})
	for _, id := range []string{"published", "safety", "umss", "confidence", "comparisons", "audit", "other-tables"} {
		if hasSection(out, id) {
			t.Errorf("section %s shown without its data", id)
		}
	}
	for _, id := range []string{"accuracy", "tokens", "figures", "case"} {
		if !hasSection(out, id) {
			t.Errorf("section %s missing (have %v)", id, out.Sections)
		}
	}
	// Accuracy falls back to results.parquet; the confidence figures come
	// from it too.
	if !strings.Contains(html, "no classification metric") {
		t.Error("no note that accuracy comes from results.parquet")
	}
	checkPNG(t, filepath.Join(dir, "figures", "reliability-ethics.png"))
	joined := strings.Join(out.Skipped, "\n")
	for _, want := range []string{"UMSS bars", "ASR against RTA", "Efficiency frontier"} {
		if !strings.Contains(joined, want) || !strings.Contains(html, want) {
			t.Errorf("no skip note for %s: %v", want, out.Skipped)
		}
	}
	// No calls.parquet: the transcript still shows the case's outcome.
	if !strings.Contains(html, "made no model call") {
		t.Error("transcript without calls.parquet should say so")
	}
	checkSelfContained(t, html)
}

// Only the manifest: a header, an empty figure section, nothing else.
func TestReportManifestOnly(t *testing.T) {
	dir := writeRun(t, parts{manifest: true})
	out, html, md := generate(t, dir, Options{})
	if len(out.Figures) != 0 {
		t.Errorf("figures without data: %v", out.Figures)
	}
	if strings.Join(out.Sections, ",") != "scoring,figures" {
		t.Errorf("sections %v, want only what ran and figures (with its notes)", out.Sections)
	}
	if !strings.Contains(html, "synthetic") || !strings.Contains(md, "# synthetic") {
		t.Error("header missing")
	}
}

func TestReportMetricsOnly(t *testing.T) {
	dir := writeRun(t, parts{metrics: true, csvs: true})
	out, html, _ := generate(t, dir, Options{})
	for _, id := range []string{"accuracy", "safety", "umss", "published"} {
		if !hasSection(out, id) {
			t.Errorf("section %s missing (have %v)", id, out.Sections)
		}
	}
	if hasSection(out, "case") {
		t.Error("transcript without results or calls")
	}
	if !strings.Contains(html, "Run report") && !strings.Contains(html, filepath.Base(dir)) {
		t.Error("no title without a manifest")
	}
}

func TestReportEmptyFolder(t *testing.T) {
	if _, err := Generate(t.TempDir(), Options{}); err == nil || !strings.Contains(err.Error(), "no run output") {
		t.Errorf("empty folder: %v", err)
	}
	if _, err := Generate(filepath.Join(t.TempDir(), "missing"), Options{}); err == nil {
		t.Error("missing folder: no error")
	}
}

func TestReportCase(t *testing.T) {
	dir := writeRun(t, all)
	want := caseID("beta", "zero_shot", "ethics", 1)
	_, html, md := generate(t, dir, Options{Case: want})
	if !strings.Contains(html, want) || strings.Count(html, `<li class="turn">`) != 1 || !strings.Contains(html, "from the journal") {
		t.Errorf("--case %s: want its one (cached) call", want)
	}
	if !strings.Contains(md, "#### Call 1: answer") {
		t.Error("report.md transcript missing")
	}
	if _, err := Generate(dir, Options{Case: "nope/nope/nope/0"}); err == nil || !strings.Contains(err.Error(), "no case") {
		t.Errorf("unknown case: %v", err)
	}
}

// A second report replaces the first and leaves no stale figure behind.
func TestReportRerunRemovesStaleFigures(t *testing.T) {
	dir := writeRun(t, all)
	generate(t, dir, Options{})
	for _, name := range []string{"umss_by_model.csv", "umss_by_strategy.csv"} {
		os.Remove(filepath.Join(dir, name))
	}
	generate(t, dir, Options{})
	if _, err := os.Stat(filepath.Join(dir, "figures", "umss-bars.png")); err == nil {
		t.Error("stale umss-bars.png left from the first report")
	}
}

// The positive-class confidence of the ProMoral prompt (P(unacceptable),
// low for acceptable answers) is turned into confidence in the answer.
func TestReportPositiveConfidence(t *testing.T) {
	r := &run{results: []result{}}
	for i := 0; i < 20; i++ {
		label := []string{"acceptable", "unacceptable"}[i%2]
		p := 0.1
		if label == "unacceptable" {
			p = 0.9
		}
		ok := i%5 != 0
		r.results = append(r.results, result{CaseID: fmt.Sprint(i), Model: "m", Strategy: "s", Task: "t", Gold: "x", Label: label, Conf: p, Parsed: true, Correct: &ok})
	}
	r.order()
	cd := r.confidenceData("t")
	if cd == nil || cd.pos != "unacceptable" {
		t.Fatalf("positive class not detected: %+v", cd)
	}
	for _, p := range cd.points {
		if math.Abs(p.conf-0.9) > 1e-9 {
			t.Fatalf("confidence in the answer should be 0.9, got %v", p.conf)
		}
	}
}

// The same run folder gives the same report, byte for byte: a report
// committed next to a paper must not change when it is regenerated.
func TestReportIsDeterministic(t *testing.T) {
	dir := writeRun(t, all)
	read := func() map[string]string {
		generate(t, dir, Options{})
		files := map[string]string{}
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			files[p] = string(b)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return files
	}
	first := read()
	for i := 0; i < 4; i++ {
		for p, b := range read() {
			if first[p] != b {
				t.Fatalf("generation %d: %s differs from the first generation", i+2, p)
			}
		}
	}
}

// A box's outlying values are drawn in one order, so the figure's SVG is
// the same on every render.
func TestBoxOutliersDrawnInOrder(t *testing.T) {
	var vs []float64
	for i := 0; i < 40; i++ {
		vs = append(vs, 0.45+0.1*float64(i%5)/4)
	}
	for i := 0; i < 5; i++ {
		vs = append(vs, 0.01+0.02*float64(i), 0.99-0.02*float64(i))
	}
	b, ok := boxStats(vs)
	if !ok || len(b.out) < 8 {
		t.Fatalf("want at least 8 outlying values, have %d", len(b.out))
	}
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "figures"), 0o755); err != nil {
		t.Fatal(err)
	}
	var first string
	for i := 0; i < 5; i++ {
		f := &figure{ID: "box", W: vg.Inch * 4, H: vg.Inch * 2}
		f.Draw = func(dc draw.Canvas) {
			p := newPlot("", "", "")
			p.X.Min, p.X.Max, p.Y.Min, p.Y.Max = 0, 1, -1, 1
			p.Add(boxPlotter(b, 0, colInk))
			p.Draw(dc)
		}
		if err := f.render(dir); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = f.SVG
		} else if f.SVG != first {
			t.Fatalf("render %d differs from the first", i+1)
		}
	}
}
