package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/promoral/promoral/pipeline/fake"
)

// replyServer answers every chat completion with a reply of size bytes
// (the answer, then padding). With hold, it sends the first 8 KiB, flushes,
// and sends the rest only once release is closed: a client that reads the
// whole body waits, one that stops at its bound hangs up first.
type replyServer struct {
	srv     *httptest.Server
	size    int
	hold    bool
	release chan struct{}

	mu       sync.Mutex
	requests int
	full     int // bodies written in full
	hungUp   int // clients that hung up before the rest was sent
}

func newReplyServer(t *testing.T, size int, hold bool) *replyServer {
	t.Helper()
	rs := &replyServer{size: size, hold: hold, release: make(chan struct{})}
	rs.srv = httptest.NewServer(http.HandlerFunc(rs.handle))
	t.Cleanup(func() {
		close(rs.release)
		rs.srv.CloseClientConnections()
		rs.srv.Close()
	})
	return rs
}

func (rs *replyServer) handle(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	rs.mu.Lock()
	rs.requests++
	rs.mu.Unlock()
	head := `{"id":"x","object":"chat.completion","created":1,"model":"local-v1","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Answer: wrong\n`
	tail := `"}}],"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}}`
	body := head + strings.Repeat("x", rs.size-len(head)-len(tail)) + tail
	w.Header().Set("Content-Type", "application/json") // no Content-Length: the client cannot know the size before reading
	if rs.hold {
		w.Write([]byte(body[:8<<10]))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
			rs.mu.Lock()
			rs.hungUp++
			rs.mu.Unlock()
			return
		case <-rs.release:
		}
		body = body[8<<10:]
	}
	if _, err := w.Write([]byte(body)); err == nil {
		rs.mu.Lock()
		rs.full++
		rs.mu.Unlock()
	}
}

func (rs *replyServer) counts() (requests, full, hungUp int) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.requests, rs.full, rs.hungUp
}

// replyStudy is killStudy's toy task with one strategy against rs.
func replyStudy(t *testing.T, rs *replyServer, items int, limits string) (dir, cfg string) {
	t.Helper()
	dir = killStudy(t, items)
	run := fmt.Sprintf(`name: replies
models:
  - name: local
    provider: openai-compatible
    model: llama-local
    base_url: %s/v1
    limits: {concurrency: 2, max_attempts: 1, %s}
tasks: [toy]
strategies: [once]
`, rs.srv.URL, limits)
	cfg = filepath.Join(dir, "configs/replies.yaml")
	if err := os.WriteFile(cfg, []byte(run), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, cfg
}

// limits.max_reply_bytes is the bound the transport applies while it reads
// the reply. Raised above the bound max_tokens gives (1.3 MB here: no
// max_tokens), a 3 MB reply is accepted.
func TestMaxReplyBytesRaisedAcceptsALargeReply(t *testing.T) {
	rs := newReplyServer(t, 3<<20, false)
	dir, cfg := replyStudy(t, rs, 2, "max_reply_bytes: 4194304")
	out := filepath.Join(dir, "out")
	stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out)
	if code != 0 || !strings.Contains(stdout, "2 cases") || !strings.Contains(stdout, "0 errors") {
		t.Fatalf("a 3 MB reply under a 4 MiB limits.max_reply_bytes: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if req, full, _ := rs.counts(); req != 2 || full != 2 {
		t.Errorf("server: %d requests, %d replies written in full; want 2 and 2", req, full)
	}
}

// Lowered to 2,048 bytes, a 200,000-byte reply fails its case as
// reply_too_large once the client has read past 2,048 bytes: the client
// hangs up while the server still holds the rest of the body (today's
// client, reading to the end, would wait for it and time out instead).
func TestMaxReplyBytesLoweredStopsReadingEarly(t *testing.T) {
	rs := newReplyServer(t, 200_000, true)
	dir, cfg := replyStudy(t, rs, 2, "max_reply_bytes: 2048, timeout: 5s")
	out := filepath.Join(dir, "out")
	stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out)
	if code != exitErrored || !strings.Contains(stdout, "2 errors") || !strings.Contains(stdout, "reply_too_large") {
		t.Fatalf("a 200,000-byte reply over a 2,048-byte bound: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for id, row := range byCase(readRows(t, filepath.Join(out, "results.parquet"))) {
		if row["error_class"] != "reply_too_large" || !strings.Contains(fmt.Sprint(row["error"]), "2048") {
			t.Errorf("%s: error_class %v, error %v; want reply_too_large at the bound of 2048", id, row["error_class"], row["error"])
		}
	}
	// Every client hung up with at most the first 8 KiB sent: none of the
	// 200,000 bytes beyond that went over the wire.
	if req, full, hung := rs.counts(); req != 2 || full != 0 || hung != 2 {
		t.Errorf("server: %d requests, %d bodies written in full, %d clients hung up early; want 2, 0, 2", req, full, hung)
	}
}

// --max-cost 0 means zero: not one paid request goes out, the apply says so
// before any call and stops at the cap (exit 4), and a cap in the run file
// does not turn it into "no cap". --max-cost none runs uncapped even with
// settings.max_cost set. NaN, Inf, negative and non-numbers are refused
// before anything runs.
func TestMaxCostZeroMeansZero(t *testing.T) {
	t.Setenv("FAKE_KEY", "sk-fake-ZERO-4410")
	srv := fake.New("openai", shortReply)
	defer srv.Close()
	dir := t.TempDir()
	cfg := capStudy(t, dir, srv, 6, "live", "settings: {max_cost: 0.1}\n")
	out := filepath.Join(dir, "out")

	stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out, "--max-cost", "0")
	if code != exitCapped {
		t.Fatalf("--max-cost 0: exit %d, want %d\n%s\n%s", code, exitCapped, stdout, stderr)
	}
	if live, _, _ := srv.Counts(); live != 0 {
		t.Fatalf("--max-cost 0 sent %d paid requests", live)
	}
	for _, want := range []string{"spend cap $0", "no paid call goes out", "--max-cost none"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr does not say %q:\n%s", want, stderr)
		}
	}
	if !strings.Contains(stdout, "stopped at the spend cap of $0.0000 after 0 of 6 cases") {
		t.Errorf("summary:\n%s", stdout)
	}

	stdout, stderr, code = runCLI(t, "apply", "-q", cfg, "--out", out, "--max-cost", "none")
	if code != 0 || !strings.Contains(stderr, "no spend cap for this apply") {
		t.Fatalf("--max-cost none: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if live, _, _ := srv.Counts(); live != 6 {
		t.Fatalf("--max-cost none with settings.max_cost $0.10 (two worst cases): %d of 6 requests sent", live)
	}
	// Everything is journaled now: a zero cap replays it all for free.
	if stdout, stderr, code = runCLI(t, "apply", "-q", cfg, "--out", out, "--max-cost", "0"); code != 0 {
		t.Fatalf("--max-cost 0 over a full journal: exit %d\n%s\n%s", code, stdout, stderr)
	}

	for _, bad := range []string{"NaN", "Inf", "+Inf", "-1", "1e999", "five"} {
		stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", filepath.Join(dir, "never"), "--max-cost", bad)
		if code == 0 || !strings.Contains(stderr, "--max-cost") || !strings.Contains(words(stderr), "none to run uncapped") || strings.Contains(stderr+stdout, "spend cap $") {
			t.Errorf("--max-cost %s: exit %d\n%s\n%s", bad, code, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "never")); err == nil {
		t.Error("a refused --max-cost still ran the apply")
	}
	stdout, _, _ = runCLI(t, "apply", "--help")
	stdout = strings.Join(strings.Fields(stdout), " ") // help wraps at 80 columns
	if !strings.Contains(stdout, "none runs uncapped") || !strings.Contains(stdout, "0 sends no paid call") {
		t.Errorf("apply --help does not say how to run uncapped:\n%s", stdout)
	}
}

// The README's commands of a zero cap and of no cap.
func init() {
	readmeCommands["promoral apply configs/paper.yaml --max-cost 0"] = "not run: paper.yaml; TestMaxCostZeroMeansZero runs --max-cost 0 against a local fake"
	readmeCommands["promoral apply configs/paper.yaml --max-cost none"] = "not run: calls the providers; TestMaxCostZeroMeansZero runs --max-cost none against a local fake"
}

// A run's name cannot steer apply outside out/: validate and apply refuse
// it before anything is written, naming the file, line and field. --out is
// the way to write elsewhere, and an --out that is not a folder is refused
// with its name.
func TestRunNameIsNoPath(t *testing.T) {
	dir := killStudy(t, 2)
	cfg := filepath.Join(dir, "configs/run.yaml")
	data, _ := os.ReadFile(cfg)
	bad := strings.Replace(string(data), "name: killme", "name: ../../../../elsewhere", 1)
	os.WriteFile(cfg, []byte(bad), 0o644)
	for _, args := range [][]string{{"validate", cfg}, {"apply", "-q", cfg}} {
		stdout, stderr, code := runCLI(t, args...)
		if code == 0 || !strings.Contains(stdout+stderr, "run.yaml:1: name:") || !strings.Contains(stdout+stderr, "path separator") {
			t.Errorf("%s with a name that climbs out of out/: exit %d\n%s\n%s", args[0], code, stdout, stderr)
		}
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(dir), "elsewhere")); err == nil {
		t.Error("apply wrote outside the project")
	}
	if entries, _ := os.ReadDir(filepath.Join(dir, "out")); len(entries) > 0 {
		t.Errorf("apply wrote %d entries under out/", len(entries))
	}

	os.WriteFile(cfg, data, 0o644)
	file := filepath.Join(dir, "a-file")
	os.WriteFile(file, []byte("x"), 0o644)
	stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", file)
	if code == 0 || !strings.Contains(stderr, "output folder "+file) || !strings.Contains(stderr, "--out") {
		t.Errorf("--out naming a file: exit %d\n%s\n%s", code, stdout, stderr)
	}
	other := filepath.Join(t.TempDir(), "elsewhere", "run")
	if stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", other); code != 0 {
		t.Fatalf("--out to another folder: exit %d\n%s\n%s", code, stdout, stderr)
	}
	if _, err := os.Stat(filepath.Join(other, "results.parquet")); err != nil {
		t.Errorf("--out: %v", err)
	}
}
