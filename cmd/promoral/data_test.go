package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/hub/hubtest"
)

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
	if code != 0 || !strings.Contains(out, "toy (owner/set [data/test.jsonl]): 3 rows (declared), size known once fetched") {
		t.Fatalf("plan before pull (exit %d):\n%s\n%s", code, out, errOut)
	}
	if fh.Requests != 0 {
		t.Fatalf("plan asked the hub %d times", fh.Requests)
	}
	out, errOut, code = runCLI(t, "apply", "--offline", "-q", cfg)
	if code != 1 || !strings.Contains(errOut, "promoral data pull "+cfg) || !strings.Contains(errOut, os.Getenv("PROMORAL_DATA_DIR")) {
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
	if code != 0 || !strings.Contains(out, "toy (owner/set [data/test.jsonl]): 3 rows, 167 B cached (commit "+hubtest.Commit[:12]+")") {
		t.Fatalf("plan after pull (exit %d):\n%s", code, out)
	}
	before := fh.Requests
	_, errOut, code = runCLI(t, "apply", "-q", cfg)
	if code != 0 {
		t.Fatalf("apply (exit %d):\n%s", code, errOut)
	}
	if fh.Requests != before {
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
