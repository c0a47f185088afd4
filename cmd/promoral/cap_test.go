package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/fake"
	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/runfolder/manifest"
)

// capStudy writes a study of n one-call cases against a fake OpenAI
// server: every request may write 50 tokens at $1,000 per million output
// tokens (input free), so its worst case is exactly $0.05.
func capStudy(t *testing.T, dir string, srv *fake.Server, n int, mode, settings string) string {
	t.Helper()
	var items strings.Builder
	for i := range n {
		fmt.Fprintf(&items, "{\"id\":\"i%02d\",\"text\":\"Deed number %d.\",\"gold\":\"1\"}\n", i, i)
	}
	files := map[string]string{
		"data/items.jsonl": items.String(),
		"configs/tasks/deeds.yaml": `name: deeds
type: label
dataset: {path: ../../data/items.jsonl, id: id}
gold: gold
answer:
  labels:
    - {value: bad, gold: ["1"]}
    - {value: fine, gold: ["0"]}
extract:
  label: [{kind: prefix, prefix: Answer}]
blocks: {question: "Is this wrong? {{.item.text}}"}
`,
		"configs/strategies/ask.yaml": `name: ask
stages:
  - {name: ask, kind: prompt, max_tokens: 50, messages: [{role: user, text: "{{.task.question}}"}]}
  - {name: parse, kind: extract}
outputs: {label: stages.parse.label}
`,
		"configs/run.yaml": fmt.Sprintf(`name: capped
models:
  - {name: oa, provider: openai, model: gpt-4.1, base_url: %q, key_env: FAKE_KEY, limits: {concurrency: 1, mode: %s, batch_poll: 10ms}, price: {input: 0, output: 1000, batch_input: 0, batch_output: 500}}
tasks: [deeds]
strategies: [ask]
%s`, srv.BaseURL(), mode, settings),
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "configs/run.yaml")
}

func shortReply(c fake.Call) []string { return []string{"Answer: bad"} }

// journalBills lists what each reply in a journal was billed, in journal
// order, at the study's price ($0.001 per output token).
func journalBills(t *testing.T, path string) []float64 {
	t.Helper()
	j, err := journal.OpenReadOnly(path)
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	var bills []float64
	j.Each(func(r *journal.Record) {
		bills = append(bills, float64(r.Resp.Usage.CompletionTokens)*0.001)
	})
	return bills
}

// The spend cap: with one call in flight at a time, every request went out
// only while what was billed before it plus its own worst case ($0.05)
// fitted in the cap, and the apply stopped at the first that did not fit.
// It exits 4, writes nothing but the journal, and a second apply (the cap
// from settings.max_cost this time) continues; a last one without a cap
// finishes, and no request was ever sent twice.
func TestSpendCapStopsWithinItsBound(t *testing.T) {
	t.Setenv("FAKE_KEY", "sk-fake-CAP-7731")
	srv := fake.New("openai", shortReply)
	defer srv.Close()
	dir := t.TempDir()
	const n, capUSD, worst = 30, 0.1, 0.05
	cfg := capStudy(t, dir, srv, n, "live", "")
	out := filepath.Join(dir, "out")

	stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out, "--max-cost", fmt.Sprint(capUSD))
	if code != exitCapped {
		t.Fatalf("exit %d, want %d (capped)\n%s\n%s", code, exitCapped, stdout, stderr)
	}
	for _, p := range []string{"stopped at the spend cap of $0.1000", "cases left", "apply again continues", "counts from zero"} {
		if !strings.Contains(words(stdout), p) {
			t.Errorf("summary does not say %q:\n%s", p, stdout)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "manifest.json")); err == nil {
		t.Errorf("a capped apply wrote outputs")
	}
	live, _, _ := srv.Counts()
	bills := journalBills(t, filepath.Join(out, "journal.jsonl"))
	if live == 0 || live >= n || len(bills) != live {
		t.Fatalf("%d requests sent, %d replies journaled, of %d cases", live, len(bills), n)
	}
	spent := 0.0
	for i, b := range bills {
		if spent+worst > capUSD+1e-9 {
			t.Fatalf("request %d went out with $%.4f billed: its worst case passes the cap", i+1, spent)
		}
		spent += b
	}
	if spent+worst <= capUSD {
		t.Fatalf("stopped with $%.4f billed although another request ($%.2f at worst) fitted", spent, worst)
	}

	// Again, the cap from the run file: the journal's replies are free.
	cfg2 := capStudy(t, t.TempDir(), srv, n, "live", fmt.Sprintf("settings: {max_cost: %g}\n", capUSD))
	stdout, stderr, code = runCLI(t, "apply", "-q", cfg2, "--out", out)
	if code != exitCapped && code != 0 {
		t.Fatalf("second apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	live2, _, _ := srv.Counts()
	if live2 <= live {
		t.Fatalf("the second apply sent nothing new (%d then %d requests)", live, live2)
	}
	spent2 := 0.0
	for _, b := range journalBills(t, filepath.Join(out, "journal.jsonl"))[live:] {
		spent2 += b
	}
	if spent2 > capUSD {
		t.Fatalf("the second apply spent $%.4f over its cap", spent2)
	}

	stdout, stderr, code = runCLI(t, "apply", "-q", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("uncapped apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if final, _, _ := srv.Counts(); final != n {
		t.Fatalf("%d requests for %d one-call cases: some went out twice", final, n)
	}
	var man manifest.Manifest
	data, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err := json.Unmarshal(data, &man); err != nil || man.Cases != n || man.Capped != nil {
		t.Fatalf("final manifest: %v cases %d capped %+v", err, man.Cases, man.Capped)
	}
}

// Batch mode: the wave's worst case is counted before it is submitted, so
// the provider never receives more lines than the cap covers at worst.
func TestSpendCapBoundsABatchWave(t *testing.T) {
	t.Setenv("FAKE_KEY", "sk-fake-CAP-7732")
	srv := fake.New("openai", shortReply)
	defer srv.Close()
	dir := t.TempDir()
	cfg := capStudy(t, dir, srv, 30, "batch", "")
	out := filepath.Join(dir, "out")
	// Worst case of a line: 50 tokens at the higher of live and batch
	// prices, $0.05; the cap covers three.
	stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out, "--max-cost", "0.15")
	if code != exitCapped {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitCapped, stdout, stderr)
	}
	lines := len(srv.Lines())
	if lines == 0 || lines > 3 {
		t.Fatalf("%d batch lines submitted under a cap worth 3 worst cases", lines)
	}
	stdout, stderr, code = runCLI(t, "apply", "-q", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("uncapped apply: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if got := len(srv.Lines()); got != 30 {
		t.Fatalf("%d lines for 30 one-call cases", got)
	}
}

// The CLI end to end: plan takes the selection flags (repeated or comma
// lists); apply --shard k/N writes each shard into its own folder beside the
// run's; promoral merge joins them; an apply on the merged folder finds
// every reply in its journal.
func TestShardsAndMergeFromTheCLI(t *testing.T) {
	t.Setenv("FAKE_KEY", "sk-fake-SHARD-5120")
	srv := fake.New("openai", shortReply)
	defer srv.Close()
	dir := t.TempDir()
	cfg := capStudy(t, dir, srv, 12, "live", "")

	stdout, stderr, code := runCLI(t, "plan", "--json", cfg, "--model", "oa", "--strategy", "ask,ask", "--task", "deeds", "--limit", "5")
	if code != 0 {
		t.Fatalf("plan: exit %d\n%s", code, stderr)
	}
	var p review.Plan
	if err := json.Unmarshal([]byte(stdout), &p); err != nil || p.Selection == nil || p.Selection.Cases != 5 || p.Total.Cases != 5 {
		t.Fatalf("plan with a selection: %v %+v", err, p.Selection)
	}
	if _, stderr, code := runCLI(t, "plan", cfg, "--model", "gpt"); code == 0 || !strings.Contains(stderr, "--model gpt") {
		t.Fatalf("plan --model gpt: exit %d\n%s", code, stderr)
	}

	var shards []string
	for k := range 3 {
		stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--shard", fmt.Sprintf("%d/3", k))
		if code != 0 {
			t.Fatalf("shard %d: exit %d\n%s\n%s", k, code, stdout, stderr)
		}
		d := filepath.Join(dir, "out", fmt.Sprintf("capped-shard-%d-of-3", k))
		if _, err := os.Stat(filepath.Join(d, "journal.jsonl")); err != nil {
			t.Fatalf("shard %d did not write its own folder: %v\n%s", k, err, stderr)
		}
		shards = append(shards, d)
	}
	merged := filepath.Join(dir, "merged")
	stdout, stderr, code = runCLI(t, append([]string{"merge", merged}, shards...)...)
	if code != 0 || !strings.Contains(stdout, "12 cases") || !strings.Contains(stdout, "shard 2/3") {
		t.Fatalf("merge: exit %d\n%s\n%s", code, stdout, stderr)
	}
	sent, _, _ := srv.Counts()
	if sent != 12 {
		t.Fatalf("%d requests for 12 cases over three shards", sent)
	}
	// The readers work on the merged folder as on any run.
	if stdout, stderr, code := runCLI(t, "report", merged); code != 0 {
		t.Fatalf("report on the merged folder: exit %d\n%s\n%s", code, stdout, stderr)
	}
	html, err := os.ReadFile(filepath.Join(merged, "report.html"))
	if err != nil || !strings.Contains(string(html), "Merged from") {
		t.Fatalf("the report does not say the run was merged: %v", err)
	}
	// A shard's own report says it is a part.
	if stdout, stderr, code := runCLI(t, "report", shards[1]); code != 0 {
		t.Fatalf("report on a shard: exit %d\n%s\n%s", code, stdout, stderr)
	}
	html, err = os.ReadFile(filepath.Join(shards[1], "report.html"))
	if err != nil || !strings.Contains(string(html), ">partial<") || !strings.Contains(string(html), "--shard 1/3") {
		t.Fatalf("a shard's report does not say it covers part of the study: %v", err)
	}
	stdout, stderr, code = runCLI(t, "diff", shards[0], merged)
	if code != 0 || !strings.Contains(stdout, "the old run covers part of its study (--shard 0/3") {
		t.Fatalf("diff of a shard and the merged run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", merged); code != 0 {
		t.Fatalf("apply on the merged folder: exit %d\n%s", code, stderr)
	}
	if again, _, _ := srv.Counts(); again != sent {
		t.Fatalf("apply on the merged folder sent %d requests", again-sent)
	}
	if _, stderr, code := runCLI(t, "merge", filepath.Join(dir, "m2"), shards[0], shards[2]); code == 0 || !strings.Contains(stderr, "shard 1/3 missing") {
		t.Fatalf("merge of two of three shards: exit %d\n%s", code, stderr)
	}
}

// The commands of docs/running.md (selection, spend cap) and
// docs/batch-and-shards.md (shards).
func init() {
	for c, why := range map[string]string{
		"promoral apply configs/paper.yaml --max-cost 50":                                                                           "not run: calls the providers; cap_test.go runs --max-cost and settings.max_cost against a local fake",
		"promoral apply configs/paper.yaml --model gpt-4.1 --limit 20":                                                              "not run: calls the providers; selection_test.go and cap_test.go cover the filters",
		"promoral plan configs/paper.yaml --model gpt-4.1 --limit 20":                                                               "not run: seconds of token counting on the paper's prompts; cap_test.go runs plan with the filters on a small study",
		"promoral apply configs/paper.yaml --model gpt-4.1,claude-sonnet-4 --strategy zero_shot --strategy self_correct --limit 20": "not run: calls the providers; the filters are tested on small studies",
		"promoral apply configs/paper.yaml --task ethics":                                                                           "not run: calls the providers; the filters are tested on small studies",
		"promoral apply configs/paper.yaml --shard 2/8":                                                                             "not run: calls the providers; shards_test.go and cap_test.go run shards",
		"promoral apply configs/paper.yaml --shard 0/4":                                                                             "not run: calls the providers; shards_test.go and cap_test.go run shards",
		"promoral apply configs/paper.yaml --shard 3/4":                                                                             "not run: calls the providers; shards_test.go and cap_test.go run shards",
		"promoral merge out/paper out/paper-shard-*-of-4":                                                                           "not run: needs the paper's shards; TestShardsAndMergeFromTheCLI merges shards of a small study",
	} {
		readmeCommands[c] = why
	}
}
