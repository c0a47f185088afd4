package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/promoral/promoral/pipeline/hub/hubtest"
	"github.com/promoral/promoral/pipeline/spec"
)

var pipelineBytes = spec.Bytes

// A study whose task names its data by hub reference, end to end against
// a loopback hub: plan counts the declared rows without a download, data
// pull fetches and locks, data list shows the cache, apply reads the
// verified cache and its manifest records the data's hash and commit.
func TestDataPullListPlanApply(t *testing.T) {
	fh := hubtest.New(t)
	t.Setenv("PROMORAL_DATA_DIR", filepath.Join(t.TempDir(), "cache"))
	rows := `{"id": "q1", "text": "I kept the wallet I found."}
{"id": "q2", "text": "I returned the wallet I found."}
{"id": "q3", "text": "I lied to spare a friend's feelings."}
`
	fh.Put("owner/set", "data/test.jsonl", []byte(rows))
	root, _ := filepath.Abs(repoRoot)
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "tasks"), 0o755)
	task := `name: toy
type: label
dataset:
  hub: {id: owner/set, files: [data/test.jsonl], rows: 3, licence: CC-BY-4.0}
  id: id
answer:
  labels: [{value: "YES"}, {value: "NO"}]
extract:
  label: [{kind: prefix, prefix: Final Answer}]
vars: {role: a judge, subject: the act}
blocks:
  scenario: "Act: {{.item.text}}"
  question: Was it wrong?
  answer_format: "End with: Final Answer: YES or NO"
  answer_format_tags: "<answer>YES</answer> or <answer>NO</answer>"
  confidence_format_tags: ""
`
	os.WriteFile(filepath.Join(dir, "tasks", "toy.yaml"), []byte(task), 0o644)
	run := `name: hubrun
models:
  - name: rule
    provider: scripted
    script:
      replies:
        - match: '(?i)kept|lied'
          text: "Final Answer: YES"
        - match: '.*'
          text: "Final Answer: NO"
tasks: [toy]
strategies: [zero_shot]
paths: {strategies: ` + filepath.Join(root, "configs", "strategies") + `, tasks: tasks, prompts: ` + filepath.Join(root, "prompts") + `}
output: out
`
	cfg := filepath.Join(dir, "run.yaml")
	os.WriteFile(cfg, []byte(run), 0o644)

	out, errOut, code := runCLI(t, "plan", cfg)
	// Lines wrap at 80 columns: compare the words.
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), "toy (owner/set [data/test.jsonl]): 3 rows (declared), size known once fetched") {
		t.Fatalf("plan before pull (exit %d):\n%s\n%s", code, out, errOut)
	}
	if fh.Count() != 0 {
		t.Fatalf("plan asked the hub %d times", fh.Count())
	}
	for _, l := range strings.Split(out, "\n") {
		if utf8.RuneCountInString(l) > 80 && !strings.Contains(l, dir) { // a path is as long as it is
			t.Errorf("plan prints a line of %d columns: %q", utf8.RuneCountInString(l), l)
		}
	}
	// validate says the data is not fetched yet and what fetches it, in
	// lines that fit 80 columns after the first (which names the file).
	out, errOut, code = runCLI(t, "validate", cfg)
	if want := cfg + ": note: toy (owner/set) not fetched yet; counted by its declared 3 rows; fetch it with `promoral data pull " + cfg + "`"; code != 0 || !strings.Contains(words(out), want) {
		t.Fatalf("validate before pull (exit %d), want %q:\n%s\n%s", code, want, out, errOut)
	}
	for _, l := range strings.Split(out, "\n")[1:] {
		if utf8.RuneCountInString(l) > 80 && !strings.Contains(l, dir) {
			t.Errorf("validate prints a line of %d columns: %q", utf8.RuneCountInString(l), l)
		}
	}
	if fh.Count() != 0 {
		t.Fatalf("validate asked the hub %d times", fh.Count())
	}
	out, errOut, code = runCLI(t, "apply", "--offline", "-q", cfg)
	if code != 1 || !strings.Contains(words(errOut), "promoral data pull "+cfg) || !strings.Contains(errOut, os.Getenv("PROMORAL_DATA_DIR")) {
		t.Fatalf("apply --offline before pull (exit %d):\n%s", code, errOut)
	}
	out, errOut, code = runCLI(t, "data", "pull", cfg)
	if code != 0 || !strings.Contains(out, "toy (owner/set [data/test.jsonl]): 3 rows") || !strings.Contains(errOut, "fetching data/test.jsonl") {
		t.Fatalf("data pull (exit %d):\n%s\n%s", code, out, errOut)
	}
	lock, err := os.ReadFile(filepath.Join(dir, "run.lock.yaml"))
	sum := sha256.Sum256([]byte(rows))
	hash := hex.EncodeToString(sum[:])
	if err != nil || !strings.Contains(string(lock), hash) || !strings.Contains(string(lock), hubtest.Commit) {
		t.Fatalf("lock (%v):\n%s", err, lock)
	}
	out, _, code = runCLI(t, "data", "list")
	if code != 0 || !strings.Contains(out, "owner/set") || !strings.Contains(out, "CC-BY-4.0") || !strings.Contains(out, "1 dataset") {
		t.Fatalf("data list (exit %d):\n%s", code, out)
	}
	out, _, code = runCLI(t, "plan", cfg)
	if code != 0 || !strings.Contains(strings.Join(strings.Fields(out), " "), "toy (owner/set [data/test.jsonl]): 3 rows, 167 B cached (commit "+hubtest.Commit[:12]+")") {
		t.Fatalf("plan after pull (exit %d):\n%s", code, out)
	}
	before := fh.Count()
	_, errOut, code = runCLI(t, "apply", "-q", cfg)
	if code != 0 {
		t.Fatalf("apply (exit %d):\n%s", code, errOut)
	}
	if fh.Count() != before {
		t.Error("apply asked the hub for cached data")
	}
	data, err := os.ReadFile(filepath.Join(dir, "out", "manifest.json"))
	if err != nil {
		t.Fatal(err)
	}
	var m struct {
		Tasks []struct {
			Name string
			Data struct {
				Hub, Commit string
				Files       []struct {
					SHA256 string
					Size   int64
				}
			}
		}
	}
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if len(m.Tasks) != 1 || m.Tasks[0].Data.Commit != hubtest.Commit || len(m.Tasks[0].Data.Files) != 1 || m.Tasks[0].Data.Files[0].SHA256 != hash {
		t.Fatalf("manifest tasks: %+v", m.Tasks)
	}
	// --update of a task that reads no hub data is refused by name.
	_, errOut, code = runCLI(t, "data", "pull", "--update", "nope", cfg)
	if code != 1 || !strings.Contains(errOut, "--update nope") {
		t.Fatalf("data pull --update nope (exit %d):\n%s", code, errOut)
	}
}

// A pull killed (SIGKILL) mid-file leaves its part, which the next pull
// resumes with a Range request; the data that lands is whole and verified.
func TestDataPullKilledMidFileResumes(t *testing.T) {
	fh := hubtest.New(t)
	cache := filepath.Join(t.TempDir(), "cache")
	t.Setenv("PROMORAL_DATA_DIR", cache)
	var rows bytes.Buffer
	for i := range 2000 {
		fmt.Fprintf(&rows, `{"id": "q%d", "text": "Scenario number %d, long enough to make the file a few dozen kilobytes."}`+"\n", i, i)
	}
	fh.Put("owner/big", "test.jsonl", rows.Bytes())
	fh.SetStall(rows.Len() / 3)
	root, _ := filepath.Abs(repoRoot)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "run.yaml")
	os.WriteFile(cfg, []byte(`name: big
models: [{name: rule, provider: scripted, script: {replies: [{match: '.*', text: "Final Answer: NO"}]}}]
tasks:
  - name: big
    dataset: {hub: {id: owner/big, files: [test.jsonl], rows: 2000}, id: id}
    answer: {labels: [{value: "YES"}, {value: "NO"}]}
    extract: {label: [{kind: prefix, prefix: Final Answer}]}
    vars: {role: a judge, subject: the act}
    blocks:
      scenario: "{{.item.text}}"
      question: Was it wrong
      answer_format: "Final Answer: YES or NO"
      answer_format_tags: ""
      confidence_format_tags: ""
strategies: [zero_shot]
paths: {strategies: `+filepath.Join(root, "configs", "strategies")+`, prompts: `+filepath.Join(root, "prompts")+`}
`), 0o644)
	cmd := cli(t, "data", "pull", cfg)
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for the part to hold the bytes the store sent, then kill.
	part := ""
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	for i := 0; i < 600 && part == ""; i++ {
		select {
		case <-exited:
			t.Fatalf("the pull ended before it was killed (stderr: %s)", errb.String())
		default:
		}
		filepath.WalkDir(cache, func(p string, d fs.DirEntry, err error) error {
			if err == nil && strings.HasSuffix(p, ".part") {
				if st, err := os.Stat(p); err == nil && st.Size() == int64(rows.Len()/3) {
					part = p
				}
			}
			return nil
		})
		time.Sleep(50 * time.Millisecond)
	}
	if part == "" {
		cmd.Process.Kill()
		<-exited
		t.Fatalf("the pull never wrote its part (stderr: %s)", errb.String())
	}
	cmd.Process.Kill()
	<-exited
	if _, err := os.Stat(strings.TrimSuffix(part, ".part")); err == nil {
		t.Fatal("a killed pull left a whole file")
	}
	fh.SetStall(0)
	out, errOut, code := runCLI(t, "data", "pull", cfg)
	if code != 0 {
		t.Fatalf("second pull (exit %d): %s\n%s", code, out, errOut)
	}
	if !strings.Contains(errOut, fmt.Sprintf("resuming at %s", pipelineBytes(int64(rows.Len()/3)))) {
		t.Errorf("second pull did not say it resumed:\n%s", errOut)
	}
	rs := fh.SeenRanges()
	if last := rs[len(rs)-1]; last != fmt.Sprintf("bytes=%d-", rows.Len()/3) {
		t.Fatalf("the second pull asked for %q, want bytes=%d-", last, rows.Len()/3)
	}
	got, err := os.ReadFile(strings.TrimSuffix(part, ".part"))
	if err != nil || !bytes.Equal(got, rows.Bytes()) {
		t.Fatalf("resumed file: %d bytes, %v", len(got), err)
	}
	if _, err := os.Stat(part); err == nil {
		t.Error("the part is still there")
	}
}

// data pull on a machine that cannot reach the hub says it is a network
// problem, not one of the config: a short line per dataset, and once how
// to work without network, every line within 80 columns.
func TestDataPullWithoutNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there: every request is refused
	t.Setenv("HF_ENDPOINT", closed)
	t.Setenv("PROMORAL_DATA_DIR", filepath.Join(t.TempDir(), "cache"))
	root, _ := filepath.Abs(repoRoot)
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "tasks"), 0o755)
	for _, name := range []string{"toy", "other_toy"} {
		task := `name: ` + name + `
type: label
dataset:
  hub: {id: owner/` + name + `, files: [data/test.jsonl], rows: 3, licence: CC-BY-4.0}
  id: id
answer:
  labels: [{value: "YES"}, {value: "NO"}]
extract:
  label: [{kind: prefix, prefix: Final Answer}]
vars: {role: a judge, subject: the act}
blocks:
  scenario: "Act: {{.item.text}}"
  question: Was it wrong?
  answer_format: "End with: Final Answer: YES or NO"
  answer_format_tags: "<answer>YES</answer> or <answer>NO</answer>"
  confidence_format_tags: ""
`
		os.WriteFile(filepath.Join(dir, "tasks", name+".yaml"), []byte(task), 0o644)
	}
	run := `name: hubrun
models:
  - {name: rule, provider: scripted, script: {replies: [{text: "Final Answer: NO"}]}}
tasks: [toy, other_toy]
strategies: [zero_shot]
paths: {strategies: ` + filepath.Join(root, "configs", "strategies") + `, tasks: tasks, prompts: ` + filepath.Join(root, "prompts") + `}
`
	cfg := filepath.Join(dir, "run.yaml")
	os.WriteFile(cfg, []byte(run), 0o644)
	_, errOut, code := runCLI(t, "data", "pull", cfg)
	if code == 0 {
		t.Fatalf("data pull without network exited 0:\n%s", errOut)
	}
	if strings.Contains(errOut, "in the config") || !strings.Contains(words(errOut), "network problem: cannot reach the dataset hub at "+closed+" (connection refused), so 2 datasets were not downloaded") {
		t.Errorf("data pull without network does not say it is a network problem:\n%s", errOut)
	}
	lines := strings.Split(strings.TrimSpace(errOut), "\n")
	for _, want := range []string{"toy owner/toy", "other_toy owner/other_toy"} {
		n := 0
		for _, l := range lines {
			if strings.Join(strings.Fields(l), " ") == want {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d lines end in %q, want 1:\n%s", n, want, errOut)
		}
	}
	if !strings.Contains(words(errOut), "Without network here: run `promoral data pull "+cfg+"` on a machine with network") {
		t.Errorf("data pull without network does not say how to work offline:\n%s", errOut)
	}
	for _, l := range lines {
		if utf8.RuneCountInString(l) > 80 && !strings.Contains(l, dir) && !strings.Contains(l, os.Getenv("PROMORAL_DATA_DIR")) {
			t.Errorf("a line of %d columns: %q", utf8.RuneCountInString(l), l)
		}
	}
}
