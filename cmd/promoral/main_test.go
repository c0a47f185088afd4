package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/promoral/promoral/internal/needs"
	"github.com/promoral/promoral/pipeline/engine"
	"github.com/promoral/promoral/pipeline/parquetio"
)

// The test binary doubles as the promoral CLI, so tests can run, kill and
// resume a real process without a separate build.
func TestMain(m *testing.M) {
	if os.Getenv("PROMORAL_TEST_AS_CLI") == "1" {
		os.Args = append([]string{"promoral"}, strings.Fields(os.Getenv("PROMORAL_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	// No test reads or writes the user's dataset cache, or reaches the
	// hub: a test that needs one starts a loopback fake (hubtest).
	dataDir, err := os.MkdirTemp("", "promoral-data-")
	if err != nil {
		panic(err)
	}
	os.Setenv("PROMORAL_DATA_DIR", dataDir)
	// Nor the user's copy of the shipped library.
	os.Setenv("PROMORAL_LIBRARY_DIR", filepath.Join(dataDir, "library"))
	os.Setenv("HF_ENDPOINT", "http://127.0.0.1:9")
	os.Setenv("HF_TOKEN_PATH", filepath.Join(dataDir, "no-token"))
	os.Unsetenv("HF_TOKEN")
	// Nor the user's response cache: the README's `promoral cache prune
	// --all` runs here, so a PROMORAL_CACHE_DIR of the user's must not reach
	// it (cli gives each test a cache of its own unless the test sets one).
	os.Unsetenv(engine.CacheEnv)
	code := m.Run()
	needs.Report(os.Stderr) // the tests skipped for a missing tool
	os.RemoveAll(dataDir)
	if quickstart.dir != "" {
		os.RemoveAll(quickstart.dir)
	}
	if built.exe != "" {
		os.RemoveAll(filepath.Dir(built.exe))
	}
	os.Exit(code)
}

func cli(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), "PROMORAL_TEST_AS_CLI=1", "PROMORAL_TEST_ARGS="+strings.Join(args, " "))
	if os.Getenv(engine.CacheEnv) == "" {
		// Each test's applies share a cache of their own, never the user's.
		cmd.Env = append(cmd.Env, engine.CacheEnv+"="+testCacheDir(t))
	}
	return cmd
}

var testCaches sync.Map // *testing.T -> its shared cache folder

// testCacheDir is the shared response cache of one test's applies.
func testCacheDir(t *testing.T) string {
	if d, ok := testCaches.Load(t); ok {
		return d.(string)
	}
	d := t.TempDir()
	testCaches.Store(t, d)
	return d
}

func runCLI(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	cmd := cli(t, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// killStudy writes a study whose scripted model takes a few milliseconds per
// call, so a kill lands mid-run.
func killStudy(t *testing.T, items int) string {
	t.Helper()
	dir := t.TempDir()
	var data strings.Builder
	for i := 0; i < items; i++ {
		verb := []string{"stole", "fed", "lied to", "helped"}[i%4]
		fmt.Fprintf(&data, `{"id":"i%03d","text":"I %s person %d.","gold":"%d"}`+"\n", i, verb, i, 1-(i%4)%2)
	}
	files := map[string]string{
		"data/items.jsonl": data.String(),
		"configs/tasks/toy.yaml": `name: toy
dataset: {path: ../../data/items.jsonl, id: id}
gold: gold
answer:
  labels:
    - {value: bad, aliases: [wrong], gold: ["1"]}
    - {value: fine, aliases: [not wrong], gold: ["0"]}
extract:
  label: [{kind: prefix, prefix: Answer}]
  confidence: [{kind: prefix, prefix: Confidence}]
`,
		"configs/strategies/once.yaml": `name: once
stages:
  - {name: ask, kind: prompt, messages: [{role: user, text: "Is it wrong? {{.item.text}}"}]}
  - {name: parse, kind: extract}
outputs: {label: stages.parse.label, confidence: stages.parse.confidence}
`,
		"configs/strategies/loop.yaml": `name: loop
stages:
  - {name: ask, kind: prompt, messages: [{role: user, text: "Is it wrong? {{.item.text}}"}]}
  - {name: parse, kind: extract}
  - {name: again, kind: prompt, continue: [again, ask], max_visits: 3, messages: [{role: user, text: "Round {{.visits.again}}: sure?"}]}
  - {name: again_parse, kind: extract}
  - name: stable
    kind: branch
    cases: [{when: "stages.again_parse.label == stages.parse.label", goto: end}]
    default: again
outputs: {label: "stages.again_parse.label ?? stages.parse.label", rounds: visits.again}
`,
		"configs/run.yaml": `name: killme
models:
  - name: slow
    provider: scripted
    script:
      latency: 3ms
      replies:
        - match: "sure"
          text: "Answer: {{if contains .all \"lied\"}}fine{{else}}{{if contains .all \"stole\"}}wrong{{else}}not wrong{{end}}{{end}}"
        - text: "Confidence: 0.{{add 5 (mod (hash .last) 5)}}\nAnswer: {{if find \"(stole|lied)\" .last}}wrong{{else}}not wrong{{end}}"
tasks: [toy]
strategies: [once, loop]
settings: {concurrency: 6}
`,
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// journalReplies counts the replies a journal holds (intents and failed
// attempts are not replies).
func journalReplies(path string) int {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		if bytes.Contains(sc.Bytes(), []byte(`,"r":{`)) {
			n++
		}
	}
	return n
}

// A run killed with SIGKILL at several points resumes to the same
// results.parquet as an uninterrupted run, and no call is journaled twice.
func TestKill9ResumesToTheSameResults(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := killStudy(t, 160)
	cfg := filepath.Join(dir, "configs/run.yaml")
	clean := filepath.Join(dir, "clean")
	if _, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", clean); code != 0 {
		t.Fatalf("uninterrupted run failed (%d): %s", code, stderr)
	}
	total := journalReplies(filepath.Join(clean, "journal.jsonl"))
	if total < 300 {
		t.Fatalf("the study is too small to kill mid-run: %d calls", total)
	}

	killed := filepath.Join(dir, "killed")
	journal := filepath.Join(killed, "journal.jsonl")
	kills := 0
	for _, frac := range []float64{0.15, 0.45, 0.8} {
		cmd := cli(t, "apply", "-q", cfg, "--out", killed)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		target := int(frac * float64(total))
		deadline := time.Now().Add(60 * time.Second)
		for journalReplies(journal) < target && time.Now().Before(deadline) {
			time.Sleep(2 * time.Millisecond)
		}
		cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() && journalReplies(journal) < total {
			kills++
		} else {
			t.Logf("kill at %.0f%% came too late: %v", frac*100, err)
		}
	}
	if kills == 0 {
		t.Fatal("no run was killed mid-run")
	}
	t.Logf("%d runs killed mid-run", kills)
	stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", killed)
	if code != 0 {
		t.Fatalf("resume failed (%d): %s", code, stderr)
	}
	if !strings.Contains(stdout, "0 errors") {
		t.Errorf("resume summary: %s", stdout)
	}

	a, err := parquetio.Read(filepath.Join(clean, "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := parquetio.Read(filepath.Join(killed, "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 320 || !reflect.DeepEqual(a, b) {
		t.Fatalf("results differ after kill -9 and resume (%d vs %d rows)", len(a), len(b))
	}

	// Nothing paid twice: every successful call is in the journal once.
	f, _ := os.Open(journal)
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var rec struct {
			K    string `json:"k"`
			E    string `json:"e"`
			Sent bool   `json:"sent"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("damaged journal line: %v", err)
		}
		if rec.Sent || rec.E != "" {
			continue // an intent, or a call lost to the kill
		}
		if seen[rec.K] {
			t.Fatalf("call %s was paid twice", rec.K)
		}
		seen[rec.K] = true
	}
	if len(seen) != total {
		t.Errorf("journal holds %d calls, the clean run made %d", len(seen), total)
	}
}

func TestCLIValidateAndApplyExitCodes(t *testing.T) {
	dir := killStudy(t, 8)
	cfg := filepath.Join(dir, "configs/run.yaml")
	out, _, code := runCLI(t, "validate", cfg)
	if code != 0 || !strings.Contains(out, "ok: 1 model, 2 strategies, 1 task, 2 cells, 16 cases") {
		t.Fatalf("validate: code %d, %q", code, out)
	}
	os.WriteFile(filepath.Join(dir, "configs/strategies/once.yaml"), []byte("name: once\nstages:\n  - {name: ask, kind: prompt, messages: [{role: user, text: hi}], temperature: warm}\noutputs: {label: stages.nope.label}\n"), 0o644)
	_, stderr, code := runCLI(t, "validate", cfg)
	if code != 1 || !strings.Contains(stderr, "once.yaml:3") || !strings.Contains(stderr, `no stage "nope"`) {
		t.Fatalf("validate of a bad config: code %d\n%s", code, stderr)
	}
	_, stderr, code = runCLI(t, "apply", cfg, "--out", filepath.Join(dir, "o"))
	if code != 1 || !strings.Contains(stderr, "expected a number") {
		t.Fatalf("apply of a bad config: code %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "o")); err == nil {
		t.Error("a bad config created the output folder")
	}
}

func TestGraphDrawsEdgesAndBounds(t *testing.T) {
	dir := killStudy(t, 4)
	out, _, code := runCLI(t, "graph", filepath.Join(dir, "configs/run.yaml"), "loop")
	// A branch's edge shows its condition.
	for _, want := range []string{"flowchart TD", `n_again["again (prompt) ≤3"]`, `n_again -->|"after 3"| n_end`, `n_stable -->|"when stages.again_parse.label == stages.parse.label"| n_end`, `n_stable -->|"else"| n_again`} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("mermaid lacks %q:\n%s", want, out)
		}
	}
	out, _, _ = runCLI(t, "graph", "--format", "dot", filepath.Join(dir, "configs/run.yaml"), "loop")
	if !strings.Contains(out, `"again" -> "end" [label="after 3"];`) || !strings.Contains(out, `"stable" [label="stable (branch)", shape=diamond];`) ||
		!strings.Contains(out, `"stable" -> "end" [label="when stages.again_parse.label == stages.parse.label"];`) {
		t.Errorf("dot output:\n%s", out)
	}
	_, stderr, code := runCLI(t, "graph", filepath.Join(dir, "configs/run.yaml"), "zzzzzz")
	if code != 1 || !strings.Contains(stderr, `no strategy "zzzzzz"`) || !strings.Contains(words(stderr), "known: loop, once") {
		t.Errorf("unknown strategy: %d %s", code, stderr)
	}
	// A misspelt strategy gets the near miss.
	_, stderr, code = runCLI(t, "graph", filepath.Join(dir, "configs/run.yaml"), "lopo")
	if code != 1 || !strings.Contains(words(stderr), `no strategy "lopo" in `) || !strings.Contains(words(stderr), `did you mean "loop"?`) {
		t.Errorf("misspelt strategy: %d %s", code, stderr)
	}
}

func TestPlanExitCodesAndJSON(t *testing.T) {
	dir := killStudy(t, 5)
	cfg := filepath.Join(dir, "configs/run.yaml")
	out := filepath.Join(dir, "out")
	stdout, _, code := runCLI(t, "plan", "--detailed-exitcode", "--out", out, cfg)
	if code != 2 || !strings.Contains(stdout, "slow") || !strings.Contains(stdout, "new calls") {
		t.Fatalf("plan with work to do: exit %d\n%s", code, stdout)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("plan created the output folder")
	}
	runCLI(t, "apply", "-q", "--out", out, cfg)
	stdout, _, code = runCLI(t, "plan", "--detailed-exitcode", "--json", "--out", out, cfg)
	var raw map[string]any
	if err := json.Unmarshal([]byte(stdout), &raw); err != nil {
		t.Fatalf("plan --json is not JSON: %v\n%s", err, stdout)
	}
	total := raw["total"].(map[string]any)
	if code != 0 || total["cases_done"].(float64) != 10 || total["calls_worst"].(float64) != 0 {
		t.Fatalf("plan after apply: exit %d, total %v", code, total)
	}
	// Without --detailed-exitcode, work to do still exits 0.
	_, _, code = runCLI(t, "plan", cfg)
	if code != 0 {
		t.Errorf("plain plan exit %d", code)
	}
}
