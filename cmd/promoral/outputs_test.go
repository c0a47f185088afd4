package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A damaged journal costs only what is damaged: blank lines, a hand-edited
// line, zero bytes, a record without a response and an old record of an
// empty reply are skipped with a warning (their calls made again), a torn
// last line is cut off, nothing advises removing the journal, and the
// results are those of the undamaged run.
func TestDamagedJournalRecordsAreSkipped(t *testing.T) {
	dir := killStudy(t, 12)
	cfg := filepath.Join(dir, "configs/run.yaml")
	out := filepath.Join(dir, "out")
	if _, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	before := readRows(t, filepath.Join(out, "results.parquet"))
	jpath := filepath.Join(out, "journal.jsonl")
	data, _ := os.ReadFile(jpath)
	lines := strings.SplitAfter(strings.TrimSuffix(string(data), "\n"), "\n")
	keyRE := regexp.MustCompile(`^\{"k":"([0-9a-f]{64})"`)
	var b strings.Builder
	replaced := 0
	for i, l := range lines {
		if !strings.HasSuffix(l, "\n") {
			l += "\n"
		}
		switch i {
		case 3:
			b.WriteString("\n")                                 // a blank line
			b.WriteString(`{"k": "0123", "hand edit` + "\n")    // broken JSON
			b.WriteString("\x00\x00\x00\x00\x00\x00\x00\x00\n") // zeros
		case 5:
			// A record with valid JSON and no response, in place of a reply.
			b.WriteString(`{"k":"` + keyRE.FindStringSubmatch(l)[1] + `","m":"slow"}` + "\n")
			replaced++
			continue
		case 8:
			// An old journal's empty reply, in place of a real one.
			b.WriteString(`{"k":"` + keyRE.FindStringSubmatch(l)[1] + `","m":"slow","r":{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0}}}` + "\n")
			replaced++
			continue
		}
		b.WriteString(l)
	}
	b.WriteString(`{"k":"` + strings.Repeat("a", 30)) // torn tail
	os.WriteFile(jpath, []byte(b.String()), 0o644)

	stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{"skipped 3 line(s) that are not usable records", "cut off a torn last line", "1 journaled repl(ies) had no usable answer"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	for _, banned := range []string{"move the", "delete", "remove the journal", "start over"} {
		if strings.Contains(strings.ToLower(stderr+stdout), banned) {
			t.Errorf("output advises %q:\n%s", banned, stderr)
		}
	}
	if !strings.Contains(stdout, fmt.Sprintf("(%d new,", replaced)) {
		t.Errorf("want exactly the %d lost calls made again:\n%s", replaced, stdout)
	}
	after := readRows(t, filepath.Join(out, "results.parquet"))
	if fmt.Sprint(before) != fmt.Sprint(after) {
		t.Errorf("results changed after journal damage")
	}
	if strings.Contains(fmt.Sprint(after), "goroutine") {
		t.Error("a stack trace reached results.parquet")
	}
}

// The output set switches as one: kill -9 at any moment of applies whose
// sizes differ leaves results, calls, metrics and manifest of one and the
// same apply in force, and the next apply leaves no temporary file behind.
func TestOutputSetIsReplacedAsOne(t *testing.T) {
	if testing.Short() {
		t.Skip("spawns processes")
	}
	dir := killStudy(t, 10)
	run := `name: sets
models:
  - name: bot
    provider: scripted
    script: {replies: [{text: "Confidence: 0.7\nAnswer: {{if contains .last \"stole\"}}wrong{{else}}not wrong{{end}}"}]}
tasks: [toy]
strategies: [once]
metrics:
  - {kind: classification, name: toy, tasks: [toy]}
`
	cfg := filepath.Join(dir, "configs/sets.yaml")
	os.WriteFile(cfg, []byte(run), 0o644)
	out := filepath.Join(dir, "out")
	writeItems := func(n int) {
		var data strings.Builder
		for i := 0; i < n; i++ {
			fmt.Fprintf(&data, `{"id":"i%05d","text":"I %s person %d.","gold":"%d"}`+"\n", i, []string{"stole", "fed"}[i%2], i, 1-i%2)
		}
		os.WriteFile(filepath.Join(dir, "data/items.jsonl"), []byte(data.String()), 0o644)
	}
	writeItems(1500)
	start := time.Now()
	if _, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	took := time.Since(start)
	consistent := func(when string) {
		t.Helper()
		var m struct {
			Cases      int    `json:"cases"`
			ConfigHash string `json:"config_hash"`
		}
		data, err := os.ReadFile(filepath.Join(out, "manifest.json"))
		if err != nil || json.Unmarshal(data, &m) != nil {
			t.Fatalf("%s: manifest: %v", when, err)
		}
		results := readRows(t, filepath.Join(out, "results.parquet"))
		calls := readRows(t, filepath.Join(out, "calls.parquet"))
		metrics := readRows(t, filepath.Join(out, "metrics.parquet"))
		n := -1
		for _, r := range metrics {
			if r["metric"] == "accuracy" && r["subset"] == "all" {
				n = int(r["n"].(int64))
			}
		}
		if len(results) != m.Cases || len(calls) != m.Cases || n != m.Cases || results[0]["config_hash"] != m.ConfigHash {
			t.Fatalf("%s: a mixed set: manifest %d cases, results %d, calls %d, metrics n %d", when, m.Cases, len(results), len(calls), n)
		}
	}
	consistent("first apply")
	for i := 1; i <= 8; i++ {
		writeItems(1500 + 37*i)
		p := startCLI(t, "apply", "-q", cfg, "--out", out)
		time.Sleep(time.Duration(rand.Float64() * 1.3 * float64(took)))
		p.cmd.Process.Signal(syscall.SIGKILL)
		p.wait()
		consistent(fmt.Sprintf("kill %d", i))
	}
	if _, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	consistent("last apply")
	for _, d := range []string{out, filepath.Join(out, ".gen")} {
		for _, name := range sortedNames(d) {
			if strings.Contains(name, ".tmp-") || strings.HasPrefix(name, ".write-test") {
				t.Errorf("left behind: %s", filepath.Join(d, name))
			}
		}
	}
	if gens := sortedNames(filepath.Join(out, ".gen")); len(gens) != 2 {
		t.Errorf("generations kept: %v (want the current one and its link)", gens)
	}
}

// Keys and passwords reach no output: not the key sent (echoed back by a
// server in an error body), not the password of a base URL.
func TestSecretsReachNoOutput(t *testing.T) {
	const key = "sk-proj-Zq7TestOnlyKeyXy4z1234567890abcdef"
	fs := newFaultServer(t)
	dir := killStudy(t, 6)
	url := strings.Replace(fs.srv.URL, "http://", "http://alice:hunter2pass@", 1)
	run := fmt.Sprintf(`name: secrets
models:
  - name: local
    provider: openai-compatible
    model: m
    base_url: %s/v1
    key_env: PROMORAL_FAULTS_KEY
tasks: [toy]
strategies: [once]
`, url)
	cfg := filepath.Join(dir, "configs/secrets.yaml")
	os.WriteFile(cfg, []byte(run), 0o644)
	fs.setFault(func(text string, n int) string {
		if strings.HasSuffix(text, " person 2.") {
			return "400" // echoes the Authorization header
		}
		return ""
	})
	out := filepath.Join(dir, "out")
	cmd := cli(t, "apply", "-q", cfg, "--out", out)
	cmd.Env = append(cmd.Env, "PROMORAL_FAULTS_KEY="+key)
	var outb, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &outb, &errb
	cmd.Run()
	if cmd.ProcessState.ExitCode() != exitErrored {
		t.Fatalf("exit %d\n%s\n%s", cmd.ProcessState.ExitCode(), outb.String(), errb.String())
	}
	if !strings.Contains(fmt.Sprint(fs.auth), key) {
		t.Fatal("the key never reached the server; the test proves nothing")
	}
	texts := map[string]string{"stdout": outb.String(), "stderr": errb.String()}
	for _, f := range []string{"journal.jsonl", "manifest.json"} {
		data, _ := os.ReadFile(filepath.Join(out, f))
		texts[f] = string(data)
	}
	for _, f := range []string{"results.parquet", "calls.parquet"} {
		texts[f] = fmt.Sprint(readRows(t, filepath.Join(out, f)))
	}
	if !strings.Contains(texts["results.parquet"], "Authorization: Bearer [redacted]") {
		t.Errorf("the echoed header is not in the error as redacted:\n%s", texts["results.parquet"])
	}
	for where, text := range texts {
		if strings.Contains(text, key) || strings.Contains(text, "hunter2pass") {
			t.Errorf("%s holds a credential", where)
		}
	}
	// A key pasted into key_env is refused without being shown.
	os.WriteFile(cfg, []byte(strings.Replace(run, "PROMORAL_FAULTS_KEY", key, 1)), 0o644)
	stdout, stderr, code := runCLI(t, "validate", cfg)
	if code != 1 || !strings.Contains(stderr, "key_env") || strings.Contains(stdout+stderr, key) || strings.Contains(stdout+stderr, key[8:20]) {
		t.Fatalf("validate: exit %d\n%s%s", code, stdout, stderr)
	}
}

// Outputs are created as any tool creates files: 0666 less the umask.
func TestOutputFilesFollowTheUmask(t *testing.T) {
	for _, mask := range []int{0o022, 0o007} {
		old := syscall.Umask(mask)
		dir := killStudy(t, 4)
		out := filepath.Join(dir, "out")
		_, stderr, code := runCLI(t, "apply", "-q", filepath.Join(dir, "configs/run.yaml"), "--out", out)
		syscall.Umask(old)
		if code != 0 {
			t.Fatal(stderr)
		}
		for _, f := range []string{"results.parquet", "calls.parquet", "manifest.json", "journal.jsonl"} {
			fi, err := os.Stat(filepath.Join(out, f))
			if err != nil {
				t.Fatal(err)
			}
			if want := os.FileMode(0o666 &^ mask); fi.Mode().Perm() != want {
				t.Errorf("umask %03o: %s is %v, want %v", mask, f, fi.Mode().Perm(), want)
			}
		}
		if fi, _ := os.Stat(filepath.Join(out, ".gen")); fi.Mode().Perm() != os.FileMode(0o777&^mask) {
			t.Errorf("umask %03o: .gen is %v", mask, fi.Mode().Perm())
		}
	}
}
