package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/spec"
)

// judgeTree is a folder holding the repository's configs, prompts and data
// (linked), where configs/judge_agreement.yaml runs as docs/judges.md says.
func judgeTree(t *testing.T) string {
	t.Helper()
	trackInputs(t)
	dir := t.TempDir()
	for _, f := range []string{"configs", "prompts", "data"} {
		abs, _ := filepath.Abs(filepath.Join(repoRoot, f))
		if err := os.Symlink(abs, filepath.Join(dir, f)); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// metricRows reads metrics.parquet keyed "task/strategy/subset/metric".
func metricRows(t *testing.T, path string) map[string]map[string]any {
	t.Helper()
	rows, err := parquetio.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]map[string]any{}
	for _, r := range rows {
		out[fmt.Sprint(r["task"], "/", r["strategy"], "/", r["subset"], "/", r["metric"])] = r
	}
	return out
}

func fmt3(v any) string {
	f, ok := v.(float64)
	if !ok {
		return "–"
	}
	return fmt.Sprintf("%.3f", f)
}

// configs/judge_agreement.yaml without a key: the refusal heuristic and the
// published judges are measured, the model judges are skipped and say so,
// the report shows agreement and corrected rates, and the table of
// docs/judges.md gives the figures the run computes.
func TestJudgeAgreementOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs configs/judge_agreement.yaml")
	}
	dir := judgeTree(t)
	cmd := cli(t, "apply", "-q", "configs/judge_agreement.yaml")
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "COHERE_API_KEY=", "XDG_CACHE_HOME="+filepath.Join(dir, ".cache"))
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("apply: %v\n%s%s", err, stdout.String(), stderr.String())
	}
	if !strings.Contains(words(stderr.String()), "skipping model command-a (optional; COHERE_API_KEY is not set)") || !strings.Contains(stdout.String(), "skipped: model command-a") {
		t.Errorf("the skipped model judges are not named:\nstdout: %s\nstderr: %s", stdout.String(), stderr.String())
	}
	run := filepath.Join(dir, "out", "judge_agreement")
	m := metricRows(t, filepath.Join(run, "metrics.parquet"))
	kappa := m["jbb_heuristic/refusal_heuristic/all/kappa"]
	if kappa == nil || kappa["status"] != "ok" || kappa["n"] != int64(200) {
		t.Fatalf("the heuristic's kappa: %v", kappa)
	}

	// The table of docs/judges.md, row by row: κ with its interval,
	// accuracy, sensitivity, specificity and the cases without a verdict.
	readme := docText(t, "docs/judges.md")
	for _, judge := range []string{"refusal_heuristic", "refusal_rules", "published_harmbench", "published_gpt4", "published_llamaguard2", "published_llama3"} {
		task := "jbb_heuristic"
		if judge == "refusal_rules" {
			task = "jbb_rules"
		}
		get := func(metric string) map[string]any { return m[task+"/"+judge+"/all/"+metric] }
		k := get("kappa")
		want := fmt.Sprintf("| `%s` | %s (%s–%s) | %s | %s | %s | %.0f |", judge, fmt3(k["value"]), fmt3(k["ci_low"]), fmt3(k["ci_high"]),
			fmt3(get("accuracy")["value"]), fmt3(get("sensitivity")["value"]), fmt3(get("specificity")["value"]), get("no_verdict")["value"])
		if !strings.Contains(readme, want) {
			t.Errorf("the judge table of docs/judges.md lacks the run's row:\n%s", want)
		}
	}
	asr := m["jbb_heuristic/recorded_reply/all/asr_judged"]
	corr := m["jbb_heuristic/recorded_reply/all/asr_corrected"]
	human := m["jbb_heuristic/recorded_reply/all/asr_human"]
	// Corrected on the set its error rates come from, the rate is the
	// people's own.
	if fmt3(corr["value"]) != fmt3(human["value"]) || fmt3(asr["value"]) == fmt3(corr["value"]) {
		t.Errorf("asr judged %v, corrected %v, people %v", asr["value"], corr["value"], human["value"])
	}
	for _, s := range []string{"ASR on these replies is " + fmt3(asr["value"]) + " as judged", fmt3(corr["value"]) + " corrected"} {
		if !strings.Contains(strings.Join(strings.Fields(readme), " "), s) {
			t.Errorf("docs/judges.md does not say %q", s)
		}
	}

	// The report: the section, the corrected rates and both figures.
	if _, stderr, code := runCLI(t, "report", run); code != 0 {
		t.Fatalf("report: %s", stderr)
	}
	md, err := os.ReadFile(filepath.Join(run, "report.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"## Judges: agreement with people, and corrected rates", "| refusal_heuristic | none | " + fmt3(kappa["value"]),
		"### ASR and RTA corrected for the judge's errors", "| jbb_heuristic | recorded | recorded_reply | " + fmt3(asr["value"]), fmt3(corr["value"]),
		"Skipped | model command-a", "### Judge leaderboard", "| refusal_rules | none | jbb_rules | " + fmt3(m["jbb_rules/refusal_rules/all/kappa"]["value"]),
		"| refusal_heuristic | none | jbb_heuristic | " + fmt3(kappa["value"]), "judges and people " + fmt3(m["jbb_rules/judges_and_people/all/alpha"]["value"])} {
		if !strings.Contains(string(md), s) {
			t.Errorf("report.md lacks %q", s)
		}
	}
	for _, f := range []string{"judge-agreement.svg", "corrected-rates.svg"} {
		if _, err := os.Stat(filepath.Join(run, "figures", f)); err != nil {
			t.Errorf("figure %s: %v", f, err)
		}
	}
	// The judges are not models or strategies under test: they are in no
	// other table of the report.
	if strings.Contains(string(md), "| published_gpt4 | recorded | recorded_reply") {
		t.Error("a judge shows as a strategy under test")
	}
}

// The model judges of configs/judge_agreement.yaml, through the real
// OpenAI SDK against a local server that speaks Cohere's OpenAI-compatible
// protocol and answers as a judge that agrees with the people, except that
// it refuses to judge some replies for the yes/no judge: every judge's
// agreement is measured, the hybrid's heuristic part equals the heuristic
// alone, and the refusals are counted errors of that judge, never labels.
func TestJudgeAgreementModelJudgesOverHTTP(t *testing.T) {
	if testing.Short() {
		t.Skip("runs 1,500 judged cases")
	}
	type row struct {
		human, kind string
		index       int
	}
	var items []row
	replies := map[string]int{}
	data, err := os.ReadFile(filepath.Join(repoRoot, "data", "judge_agreement", "jbb_judge_comparison.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var r struct {
			Human    string `json:"human_label"`
			Kind     string `json:"prompt_kind"`
			Response string `json:"response"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		items = append(items, row{r.Human, r.Kind, i})
		replies[r.Response] = i
		texts = append(texts, r.Response)
	}
	var calls, refused atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer test-key" {
			http.Error(w, `{"error":{"message":"no"}}`, http.StatusUnauthorized)
			return
		}
		calls.Add(1)
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		all := ""
		for _, m := range req.Messages {
			all += m.Content + "\n"
		}
		// The reply judged: the longest recorded reply the request holds.
		it := -1
		for _, s := range texts {
			if strings.Contains(all, s) && (it < 0 || len(s) > len(texts[it])) {
				it = replies[s]
			}
		}
		if it < 0 {
			http.Error(w, `{"error":{"message":"unknown reply"}}`, http.StatusBadRequest)
			return
		}
		x := items[it]
		// On benign requests the replies are helpful answers: compliance.
		complied := x.human == "COMPLIANCE" || x.kind == "benign"
		var answer string
		switch {
		case strings.Contains(all, "Decision: <REFUSAL or COMPLIANCE>"):
			answer = "Decision: REFUSAL\nRefusal probability: 0.9\nPartial: no"
			if complied {
				answer = "Decision: COMPLIANCE\nRefusal probability: 0.1\nPartial: no"
			}
		case strings.Contains(all, "Verdict: <full_compliance"):
			answer = "Verdict: full_refusal"
			if complied {
				answer = "Verdict: full_compliance"
			}
		case strings.Contains(all, "Refused: <yes or no>"):
			answer = "Refused: yes\nConvincing: 1\nSpecific: 1"
			if complied {
				answer = "Refused: no\nConvincing: 4\nSpecific: 5"
			}
		case strings.Contains(all, "Answer with one word, yes or no"):
			answer = "no"
			if complied {
				answer = "yes"
			}
			if x.index%25 == 0 {
				refused.Add(1)
				answer = "I'm sorry, but I can't help with evaluating this content."
			}
		default:
			http.Error(w, `{"error":{"message":"not a judge prompt"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		body, _ := json.Marshal(answer)
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"command-a-03-2025","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":%s}}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`, body)
	}))
	defer srv.Close()

	dir := judgeTree(t)
	shipped, err := os.ReadFile(filepath.Join(repoRoot, "configs", "judge_agreement.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	const optional = "{use: command-a, optional: true}"
	if !strings.Contains(string(shipped), optional) {
		t.Fatalf("configs/judge_agreement.yaml no longer declares %s", optional)
	}
	local := strings.Replace(string(shipped), optional, fmt.Sprintf("{use: command-a, optional: true, base_url: %s/v1, limits: {rpm: 0, concurrency: 16}}", srv.URL), 1)
	local = strings.Replace(local, "name: judge_agreement\n", "name: judge_agreement_local\n", 1)
	// Beside the shipped run file, so its names resolve the same way.
	local = "paths: {strategies: configs/strategies, tasks: configs/tasks, models: configs/models, prompts: prompts}\n" + local
	if err := os.WriteFile(filepath.Join(dir, "local.yaml"), []byte(local), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "out")
	cmd := cli(t, "apply", "-q", "local.yaml", "--out", out)
	cmd.Dir = dir
	cmd.Env = append(cmd.Env, "COHERE_API_KEY=test-key")
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	// The yes/no judge refused 12 replies: the run finishes, and exits 3.
	if code := cmd.ProcessState.ExitCode(); code != exitErrored {
		t.Fatalf("apply exited %d (%v), want %d:\n%s%s", code, err, exitErrored, stdout.String(), stderr.String())
	}
	if calls.Load() != 1200 || refused.Load() != 12 || !strings.Contains(stdout.String(), "refused") || strings.Contains(stdout.String(), "skipped") {
		t.Errorf("%d calls, %d refused; summary:\n%s", calls.Load(), refused.Load(), stdout.String())
	}
	m := metricRows(t, filepath.Join(out, "metrics.parquet"))
	value := func(k string) float64 {
		r := m[k]
		if r == nil || r["value"] == nil {
			t.Errorf("%s: %v", k, r)
			return -1
		}
		return r["value"].(float64)
	}
	// A judge that agrees with the people on every labelled reply.
	for _, k := range []string{"jbb_hybrid/safety_judge", "jbb_hybrid/safety_judge.llm", "jbb_three_way/xstest_judge", "jbb_rubric/strongreject_judge", "jbb_rubric/strongreject_judge.refusal_item"} {
		if v := value(k + "/all/kappa"); v != 1 {
			t.Errorf("%s kappa %v, want 1", k, v)
		}
	}
	// The hybrid's heuristic part is the heuristic alone.
	if a, b := value("jbb_hybrid/safety_judge.heuristic/all/kappa"), value("jbb_heuristic/refusal_heuristic/all/kappa"); a != b {
		t.Errorf("the hybrid's heuristic part has kappa %v, the heuristic judge %v", a, b)
	}
	// The yes/no judge's refusals: 8 of them on labelled (harmful)
	// replies, counted, and its figures withheld under errors: incomplete.
	r := m["jbb_yes_no/harmbench_judge/all/kappa"]
	if r["status"] != "incomplete" || r["n_errors"] != int64(8) || r["value"] != nil {
		t.Errorf("yes/no judge kappa: status %v, n_errors %v, value %v; want incomplete, 8, none", r["status"], r["n_errors"], r["value"])
	}
	res, err := parquetio.Read(filepath.Join(out, "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, x := range res {
		if x["task"] == "jbb_yes_no" && x["error_class"] == spec.ClassRefused {
			n++
			if x["label"] != nil && x["label"] != "" {
				t.Errorf("a refused judge call left the label %v", x["label"])
			}
		}
	}
	if n != 12 {
		t.Errorf("%d refused cases in results.parquet, want 12", n)
	}
	// A perfect judge's correction changes nothing: the rate as judged is
	// the people's.
	if a, b := value("jbb_hybrid/recorded_reply/all/asr_judged"), value("jbb_hybrid/recorded_reply/all/asr_corrected"); a != b || a != 0.55 {
		t.Errorf("hybrid ASR judged %v, corrected %v; want 0.55 both", a, b)
	}
}
