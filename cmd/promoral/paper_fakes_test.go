package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/fake"
	"github.com/promoral/promoral/pipeline/parquetio"
	"github.com/promoral/promoral/pipeline/review"
)

// TestPaperOnFakes runs configs/paper.yaml, unchanged but for where its
// models live, against fake providers: live, then in batch mode, and
// prints what plan predicted and what calls.parquet reports for each. It
// is a measurement, not a check, and takes minutes: it runs only with
// PROMORAL_PAPER_FAKES=1 (and PROMORAL_PAPER_LIMIT=N to keep the first N
// items of each task).
func TestPaperOnFakes(t *testing.T) {
	if os.Getenv("PROMORAL_PAPER_FAKES") != "1" {
		t.Skip("a measurement: set PROMORAL_PAPER_FAKES=1")
	}
	root, _ := filepath.Abs("../..")
	paper, err := os.ReadFile(filepath.Join(root, "configs/paper.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	// The paper's own model list (names only, one per line), so a model
	// the paper changes is faked as it is named there.
	block := regexp.MustCompile(`(?s)\nmodels:\n(.*?)\ntasks:`).FindSubmatch(paper)
	if block == nil {
		t.Fatal("configs/paper.yaml: no models: list before tasks:")
	}
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  - ([\w.\-]+)`).FindAllSubmatch(block[1], -1) {
		names = append(names, string(m[1]))
	}
	if len(names) < 5 {
		t.Fatalf("configs/paper.yaml lists %d models (%q): expected four under test and a judge", len(names), names)
	}
	servers := map[string]*fake.Server{}
	for _, name := range names {
		provider := map[string]string{"claude-sonnet-4": "anthropic", "gemini-2.5-pro": "gemini"}[name]
		if provider == "" {
			provider = "openai"
		}
		s := fake.New(provider, fake.Moral)
		t.Cleanup(s.Close)
		servers[name] = s
	}
	// Cohere's compatibility API has no batch endpoint; Together's has.
	servers["command-a"].NoBatch = true
	t.Setenv("FAKE_PAPER_KEY", "sk-fake-paper")
	// The overlay keeps every model's own file (prices included) and only
	// moves it to its fake, without the live rate limits.
	var models strings.Builder
	models.WriteString("models:\n")
	for _, name := range names {
		extra := ""
		if n := os.Getenv("PROMORAL_PAPER_CASES"); n != "" {
			extra = ", batch_cases: " + n
		}
		fmt.Fprintf(&models, "  - {use: %s, base_url: %q, key_env: FAKE_PAPER_KEY, limits: {rpm: 1000000, concurrency: 64, batch_poll: 50ms%s}}\n", name, servers[name].BaseURL(), extra)
	}
	text := regexp.MustCompile(`(?s)\nmodels:\n.*?\ntasks:`).ReplaceAllString(string(paper), "\n"+models.String()+"tasks:")
	if limit := os.Getenv("PROMORAL_PAPER_LIMIT"); limit != "" {
		text = strings.Replace(text, "  - ethics\n  - ethics_contrast\n", fmt.Sprintf("  - {use: ethics, dataset: {limit: %s}}\n  - {use: ethics_contrast, dataset: {limit: %s}}\n", limit, limit), 1)
		text = strings.Replace(text, "  - scruples\n", fmt.Sprintf("  - {use: scruples, dataset: {limit: %s}}\n", limit), 1)
		text = strings.Replace(text, "  - {use: wildjailbreak, judge:", fmt.Sprintf("  - {use: wildjailbreak, dataset: {limit: %s}, judge:", limit), 1)
	}
	// Scruples and WildJailbreak are not shipped: the measurement runs
	// their invented fixtures (dataset.hub.fixture), read only with this.
	if !strings.Contains(text, "\nsettings:\n") {
		t.Fatal("configs/paper.yaml: no settings: block to allow the Scruples fixture in")
	}
	text = strings.Replace(text, "\nsettings:\n", "\nsettings:\n  allow_fixtures: true\n", 1)
	text += fmt.Sprintf("paths: {strategies: %s/configs/strategies, tasks: %s/configs/tasks, models: %s/configs/models, prompts: %s/prompts}\n", root, root, root, root)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "paper-fakes.yaml")
	os.WriteFile(cfg, []byte(text), 0o644)

	modes := []string{"live", "batch"}
	if m := os.Getenv("PROMORAL_PAPER_MODES"); m != "" {
		modes = strings.Fields(m)
	}
	for _, mode := range modes {
		out := filepath.Join(dir, mode)
		planArgs := []string{"plan", "--json", "--out", out, cfg}
		applyArgs := []string{"apply", "-q", "--out", out, cfg}
		if mode == "batch" {
			planArgs = append([]string{"plan", "--batch"}, planArgs[1:]...)
			applyArgs = append([]string{"apply", "--batch"}, applyArgs[1:]...)
		}
		stdout, stderr, code := runCLI(t, planArgs...)
		if code != 0 {
			t.Fatalf("plan: %s", stderr)
		}
		var p review.Plan
		if err := json.Unmarshal([]byte(stdout), &p); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		cmd := cli(t, applyArgs...)
		var ob, eb bytes.Buffer
		cmd.Stdout, cmd.Stderr = &ob, &eb
		if logPath := os.Getenv("PROMORAL_PAPER_LOG"); logPath != "" {
			lf, err := os.Create(logPath + "." + mode)
			if err != nil {
				t.Fatal(err)
			}
			defer lf.Close()
			cmd.Stderr = io.MultiWriter(&eb, lf)
		}
		if err := cmd.Run(); err != nil {
			t.Fatalf("apply %s: %v: %s\n%s", mode, err, ob.String(), lastLines(eb.String(), 20))
		}
		stdout = ob.String()
		took := time.Since(start)
		rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss / 1024
		calls, err := parquetio.Read(filepath.Join(out, "calls.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		cost := map[string]float64{}
		n := map[string]int{}
		batched := map[string]int{}
		total := 0.0
		for _, r := range calls {
			m := r["model"].(string)
			if c, ok := r["cost_usd"].(float64); ok {
				cost[m] += c
				total += c
			}
			n[m]++
			if r["batch_id"] != nil {
				batched[m]++
			}
		}
		t.Logf("%s: apply took %s, peak RSS %d MiB; %s", mode, took.Round(time.Second), rss, strings.TrimSpace(stdout[:strings.Index(stdout+"\n", "\n")]))
		t.Logf("%s: plan %.2f–%.2f USD (live price of the same calls %.2f–%.2f), waves %d–%d; calls.parquet %.2f USD over %d rows",
			mode, p.Total.CostBest, p.Total.CostWorst, p.Total.LiveCostBest, p.Total.LiveCostWorst, p.Total.WavesBest, p.Total.WavesWorst, total, len(calls))
		for _, r := range p.Models {
			t.Logf("  %-16s plan %8.2f–%8.2f  calls.parquet %8.2f  (%d rows, %d from batch jobs)", r.Model, r.CostBest, r.CostWorst, cost[r.Model], n[r.Model], batched[r.Model])
		}
		results, err := parquetio.Read(filepath.Join(out, "results.parquet"))
		if err != nil {
			t.Fatal(err)
		}
		unparsed := map[string]int{}
		var example map[string]any
		for _, r := range results {
			if r["parsed"] != true && r["error"] == nil {
				unparsed[r["task"].(string)]++
				if example == nil {
					example = r
				}
			}
		}
		t.Logf("%s: unparsed by task %v", mode, unparsed)
		if example != nil {
			t.Logf("  e.g. %v: label %v, outputs %.300v, judge %.300v", example["case_id"], example["label"], example["outputs"], example["judge"])
		}
		jobs := 0
		for _, s := range servers {
			_, c, _ := s.Counts()
			jobs += c
		}
		t.Logf("%s: %d batch jobs created on the fakes so far", mode, jobs)
	}
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
