package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/batch"
	"github.com/promoral/promoral/pipeline/fake"
	"github.com/promoral/promoral/pipeline/parquetio"
)

// batchStudy writes a run file with one model per provider, each pointed
// at its fake, running the shipped Self-Correct and Thought Experiment on
// ETHICS items; mode is the models' limits.mode.
func batchStudy(t *testing.T, dir string, servers map[string]*fake.Server, mode string, items int) string {
	t.Helper()
	root, _ := filepath.Abs("../..")
	var models strings.Builder
	for _, m := range []struct{ name, provider, id string }{
		{"oa", "openai", "gpt-4.1"}, {"an", "anthropic", "claude-sonnet-4-20250514"}, {"ge", "gemini", "gemini-2.5-pro"},
	} {
		fmt.Fprintf(&models, "  - {name: %s, provider: %s, model: %s, base_url: %q, key_env: FAKE_KEY, limits: {mode: %s, batch_poll: 15ms}, price: {input: 2, output: 8, batch_input: 1, batch_output: 4}}\n",
			m.name, m.provider, m.id, servers[m.provider].BaseURL(), mode)
	}
	run := fmt.Sprintf(`name: batchkill
models:
%stasks:
  - {use: ethics, dataset: {limit: %d}}
strategies: [zero_shot, self_correct, thought_experiment]
paths: {strategies: %s/configs/strategies, tasks: %s/configs/tasks, prompts: %s/prompts}
`, models.String(), items, root, root, root)
	path := filepath.Join(dir, "run-"+mode+".yaml")
	if err := os.WriteFile(path, []byte(run), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func fakeServers(t *testing.T) map[string]*fake.Server {
	t.Helper()
	m := map[string]*fake.Server{}
	for _, p := range []string{"openai", "anthropic", "gemini"} {
		s := fake.New(p, fake.Moral)
		t.Cleanup(s.Close)
		m[p] = s
	}
	return m
}

func jobsOf(m map[string]*fake.Server) int {
	n := 0
	for _, s := range m {
		_, c, _ := s.Counts()
		n += c
	}
	return n
}

// A real `promoral apply` in batch mode is killed with SIGKILL twice: once
// while the provider is creating a job whose id it never gets to record,
// once later with jobs in flight. The resumed runs find the unrecorded job
// by name, re-attach to the others, submit no request twice, and end with
// the results the live path gives on the same replies.
func TestBatchApplySurvivesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Setenv("FAKE_KEY", "sk-fake-KILL-91c3")
	dir := t.TempDir()
	const items = 6

	liveOut := filepath.Join(dir, "live")
	if _, stderr, code := runCLI(t, "apply", "-q", batchStudy(t, dir, fakeServers(t), "live", items), "--out", liveOut); code != 0 {
		t.Fatalf("live run failed (%d): %s", code, stderr)
	}

	servers := fakeServers(t)
	cfg := batchStudy(t, dir, servers, "batch", items)
	out := filepath.Join(dir, "batch")
	for _, s := range servers {
		s.Hold.Store(true)
	}
	created := make(chan string, 1)
	release := make(chan struct{})
	servers["openai"].BeforeCreateReply = func(job string) {
		select {
		case created <- job:
			<-release // the client is killed before it hears of the job
		default:
		}
	}

	kill := func(c *exec.Cmd) {
		c.Process.Signal(syscall.SIGKILL)
		c.Wait()
	}
	// Kill 1: mid-creation, with the other providers' first jobs in flight.
	cmd := cli(t, "apply", "-q", cfg, "--out", out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var lost string
	deadline := time.Now().Add(60 * time.Second)
	recorded := func() int {
		jobs, _ := batch.NewFile(out).Read()
		n := 0
		for _, j := range jobs {
			if j.Status == batch.StatusInFlight {
				n++
			}
		}
		return n
	}
	for lost == "" || recorded() < 2 {
		select {
		case lost = <-created:
		case <-time.After(5 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			kill(cmd)
			t.Fatalf("the first wave never went out (%d jobs)", jobsOf(servers))
		}
	}
	kill(cmd)
	close(release)
	jobs, err := batch.NewFile(out).Read()
	if err != nil {
		t.Fatal(err)
	}
	var submitting, inFlight int
	for _, j := range jobs {
		switch j.Status {
		case batch.StatusSubmitting:
			submitting++
		case batch.StatusInFlight:
			inFlight++
		}
	}
	if submitting != 1 || inFlight != 2 {
		t.Fatalf("after kill 1: %d jobs without a recorded id (want 1), %d in flight (want 2)", submitting, inFlight)
	}

	// Kill 2: later, with the next wave in flight.
	for _, s := range servers {
		s.Hold.Store(false)
	}
	before := jobsOf(servers)
	cmd = cli(t, "apply", "-q", cfg, "--out", out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline = time.Now().Add(60 * time.Second)
	for jobsOf(servers) < before+6 && time.Now().Before(deadline) {
		time.Sleep(2 * time.Millisecond)
	}
	kill(cmd)
	if _, err := os.Stat(filepath.Join(out, "results.parquet")); err == nil {
		t.Fatal("kill 2 came after the run had finished")
	}
	if jobsOf(servers) < before+6 {
		t.Fatalf("the resumed run made %d jobs", jobsOf(servers)-before)
	}

	stdout, stderr, code := runCLI(t, "batches", out)
	if code != 0 || !strings.Contains(stdout, "provider id") {
		t.Fatalf("promoral batches: %d\n%s%s", code, stdout, stderr)
	}

	// Resume to the end.
	stdout, stderr, code = runCLI(t, "apply", "-q", cfg, "--out", out)
	if code != 0 || !strings.Contains(stdout, "0 errors") {
		t.Fatalf("final resume (%d): %s\n%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "re-attached") {
		t.Errorf("the final resume re-attached to nothing:\n%s", stderr)
	}

	// No request went into two jobs.
	for name, s := range servers {
		first := map[string]string{}
		for _, l := range s.Lines() {
			if j, ok := first[l.Fingerprint]; ok && j != l.Job {
				t.Errorf("%s: a request was submitted in jobs %s and %s", name, j, l.Job)
			}
			first[l.Fingerprint] = l.Job
		}
	}
	// The job whose id was lost was found, not submitted again.
	jobs, _ = batch.NewFile(out).Read()
	foundLost := false
	for _, j := range jobs {
		if j.ID == lost {
			foundLost = true
		}
		if j.Open() {
			t.Errorf("job %s still open: %s", j.Name, j.Status)
		}
	}
	if !foundLost {
		t.Errorf("the job created while the client was killed (%s) was never found again", lost)
	}
	// Results equal the live path's; only the price differs.
	a, err := parquetio.Read(filepath.Join(liveOut, "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := parquetio.Read(filepath.Join(out, "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	// Batch prices, and a config that names other servers.
	strip := func(rows []map[string]any) []map[string]any {
		for _, r := range rows {
			delete(r, "cost_usd")
			delete(r, "config_hash")
		}
		return rows
	}
	if len(a) != 3*3*items || !reflect.DeepEqual(strip(a), strip(b)) {
		t.Fatalf("batch results after two kills differ from the live path (%d vs %d rows)", len(a), len(b))
	}
	// Every successful call is journaled once.
	f, _ := os.Open(filepath.Join(out, "journal.jsonl"))
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var rec struct {
			K string `json:"k"`
			E string `json:"e"`
		}
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("damaged journal line: %v", err)
		}
		if rec.E == "" && seen[rec.K] {
			t.Fatalf("call %s journaled twice", rec.K)
		}
		seen[rec.K] = rec.E == "" || seen[rec.K]
	}
}

// `promoral batches --cancel` stops the jobs a killed run left in flight;
// the next apply keeps what they answered and sends only the rest again.
func TestBatchesCancelThenResume(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	t.Setenv("FAKE_KEY", "sk-fake-CANCEL-5e2a")
	dir := t.TempDir()
	servers := fakeServers(t)
	cfg := batchStudy(t, dir, servers, "batch", 4)
	out := filepath.Join(dir, "out")
	for _, s := range servers {
		s.Hold.Store(true)
	}
	cmd := cli(t, "apply", "-q", cfg, "--out", out)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		jobs, _ := batch.NewFile(out).Read()
		n := 0
		for _, j := range jobs {
			if j.Status == batch.StatusInFlight {
				n++
			}
		}
		if n == 3 {
			break
		}
		time.Sleep(2 * time.Millisecond)
	}
	cmd.Process.Signal(syscall.SIGKILL)
	cmd.Wait()

	// While an apply holds the journal, --cancel refuses.
	jf, err := os.Open(filepath.Join(out, "journal.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	syscall.Flock(int(jf.Fd()), syscall.LOCK_EX)
	_, stderr, code := runCLI(t, "batches", "--cancel", out)
	jf.Close()
	if code != 1 || !strings.Contains(stderr, "an apply is running") {
		t.Fatalf("cancel under a running apply: %d %s", code, stderr)
	}
	stdout, stderr, code := runCLI(t, "batches", "--cancel", out)
	if code != 0 || strings.Count(stdout, "cancel requested") != 3 {
		t.Fatalf("batches --cancel (%d):\n%s%s", code, stdout, stderr)
	}
	for _, s := range servers {
		for _, id := range s.Jobs() {
			if st := s.JobState(id); st != "cancelling" && st != "cancelled" {
				t.Errorf("%s job %s is %s after --cancel", s.Provider, id, st)
			}
		}
	}
	for _, s := range servers {
		s.Hold.Store(false)
	}
	stdout, stderr, code = runCLI(t, "apply", "-q", cfg, "--out", out)
	if code != 0 || !strings.Contains(stdout, "0 errors") {
		t.Fatalf("apply after cancel (%d): %s\n%s", code, stdout, stderr)
	}
	// A cancelled job answered half its lines; only the other half went
	// out again.
	for name, s := range servers {
		jobs := s.Jobs()
		first := map[string]string{}
		again := 0
		for _, l := range s.Lines() {
			if j, ok := first[l.Fingerprint]; ok && j != l.Job {
				again++
				if j != jobs[0] {
					t.Errorf("%s: a request went into %s and %s, and only the cancelled job's lines may go again", name, j, l.Job)
				}
			}
			first[l.Fingerprint] = l.Job
		}
		if again == 0 {
			t.Errorf("%s: no line of the cancelled job was sent again", name)
		}
	}
}
