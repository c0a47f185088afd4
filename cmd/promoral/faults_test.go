package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/parquetio"
)

// faultServer is a local OpenAI-compatible server that answers like a model
// ("stole" is wrong, the rest is not) unless fault, given the request's item
// text and how often that exact request has been seen, names a failure:
//
//	"empty"  200 with no choices       "null"   200 with null content
//	"error"  200 with an error object  "400"    request rejected (context too long)
//	"401"    key refused               "500"    server error
//	"big"    a reply of 3 MB           "cut"    connection dropped mid-body
//	"hold"   no answer until release is closed (or the client goes away)
type faultServer struct {
	srv     *httptest.Server
	fault   atomic.Pointer[func(text string, n int) string]
	release chan struct{}

	mu       sync.Mutex
	seen     map[string]int // request body -> times received
	total    int
	answered int // replies written in full
	held     int // requests being held now
	auth     []string
}

func newFaultServer(t *testing.T) *faultServer {
	t.Helper()
	fs := &faultServer{seen: map[string]int{}, release: make(chan struct{})}
	none := func(string, int) string { return "" }
	fs.fault.Store(&none)
	fs.srv = httptest.NewServer(http.HandlerFunc(fs.handle))
	t.Cleanup(func() {
		fs.open()
		fs.srv.CloseClientConnections()
		fs.srv.Close()
	})
	return fs
}

func (fs *faultServer) setFault(f func(text string, n int) string) { fs.fault.Store(&f) }

// open releases every held request, now and later.
func (fs *faultServer) open() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	select {
	case <-fs.release:
	default:
		close(fs.release)
	}
}

func (fs *faultServer) counts() (total, answered, held int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	return fs.total, fs.answered, fs.held
}

var itemText = regexp.MustCompile(`I [a-z ]+ person \d+\.`)

func (fs *faultServer) handle(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Messages []struct{ Content string } `json:"messages"`
	}
	json.Unmarshal(body, &req)
	all := ""
	for _, m := range req.Messages {
		all += m.Content + "\n"
	}
	fs.mu.Lock()
	fs.seen[string(body)]++
	n := fs.seen[string(body)]
	fs.total++
	fs.auth = append(fs.auth, r.Header.Get("Authorization"))
	fs.mu.Unlock()
	text := itemText.FindString(all)
	answer := "not wrong"
	if strings.Contains(text, "stole") {
		answer = "wrong"
	}
	reply := fmt.Sprintf(`{"id":"x","object":"chat.completion","created":1,"model":"local-v1","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Confidence: 0.9\nAnswer: %s"}}],"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}}`, answer)
	w.Header().Set("Content-Type", "application/json")
	switch (*fs.fault.Load())(text, n) {
	case "empty":
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"local-v1","choices":[],"usage":{"prompt_tokens":11,"completion_tokens":0,"total_tokens":11}}`)
		return
	case "null":
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"local-v1","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":null}}]}`)
		return
	case "error":
		fmt.Fprint(w, `{"error":{"message":"the upstream worker crashed","type":"server_error"}}`)
		return
	case "400":
		w.WriteHeader(400)
		fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is 8192 tokens (echo: Authorization: %s)","type":"invalid_request_error"}}`, r.Header.Get("Authorization"))
		return
	case "401":
		w.WriteHeader(401)
		fmt.Fprint(w, `{"error":{"message":"Incorrect API key provided","type":"invalid_request_error"}}`)
		return
	case "500":
		w.WriteHeader(500)
		fmt.Fprint(w, `{"error":{"message":"boom"}}`)
		return
	case "big":
		fmt.Fprint(w, strings.Replace(reply, "Confidence: 0.9", "Confidence: 0.9 "+strings.Repeat("blah ", 600_000), 1))
		return
	case "cut":
		conn, buf, _ := w.(http.Hijacker).Hijack()
		buf.WriteString("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n" + reply[:40])
		buf.Flush()
		conn.Close()
		return
	case "hold":
		fs.mu.Lock()
		fs.held++
		fs.mu.Unlock()
		select {
		case <-fs.release:
		case <-r.Context().Done():
			fs.mu.Lock()
			fs.held--
			fs.mu.Unlock()
			return
		}
		fs.mu.Lock()
		fs.held--
		fs.mu.Unlock()
	}
	fmt.Fprint(w, reply)
	fs.mu.Lock()
	fs.answered++
	fs.mu.Unlock()
}

// faultStudy writes killStudy's toy task with a study against the server.
func faultStudy(t *testing.T, fs *faultServer, items int, extra string) (dir, cfg string) {
	t.Helper()
	dir = killStudy(t, items)
	run := fmt.Sprintf(`name: faults
models:
  - name: local
    provider: openai-compatible
    model: llama-local
    base_url: %s/v1
    price: {input: 1, output: 2}
    limits: {concurrency: 4, max_attempts: 3, backoff: 1ms%s}
tasks: [toy]
strategies: [once]
metrics:
  - {kind: classification, name: toy, tasks: [toy]}
`, fs.srv.URL, extra)
	cfg = filepath.Join(dir, "configs/faults.yaml")
	if err := os.WriteFile(cfg, []byte(run), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, cfg
}

func readRows(t *testing.T, path string) []map[string]any {
	t.Helper()
	rows, err := parquetio.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func byCase(rows []map[string]any) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, r := range rows {
		out[r["case_id"].(string)] = r
	}
	return out
}

// A server that answers 200 without an answer (no choices, null content, an
// error object) for some items: those cases fail loudly (exit 3, error
// classes with an example each, error rows, nothing journaled as a reply),
// every other case is unaffected; once the server recovers, the next apply
// sends exactly the failed requests, exits 0, and every output equals that
// of a run that never failed.
func TestServerThatRecoversRetriesExactlyTheFailedCases(t *testing.T) {
	fs := newFaultServer(t)
	dir, cfg := faultStudy(t, fs, 40, "")
	badItems := map[string]string{"person 3.": "empty", "person 7.": "null", "person 12.": "error", "person 21.": "empty"}
	fs.setFault(func(text string, n int) string {
		for suffix, f := range badItems {
			if strings.HasSuffix(text, " "+suffix) {
				return f
			}
		}
		return ""
	})
	out := filepath.Join(dir, "out")
	stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out)
	if code != exitErrored {
		t.Fatalf("apply with failing cases exited %d (want %d)\n%s\n%s", code, exitErrored, stdout, stderr)
	}
	for _, want := range []string{"40 cases", "4 errors", "4 case(s) errored; apply again retries them:", "empty_reply", "failed_reply", "e.g. local/once/toy/"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	// Three attempts per failing request (max_attempts 3), one per other.
	if total, _, _ := fs.counts(); total != 36+4*3 {
		t.Errorf("server saw %d requests, want %d", total, 36+12)
	}
	rows := byCase(readRows(t, filepath.Join(out, "results.parquet")))
	errored := 0
	for id, r := range rows {
		if r["error"] == nil {
			if r["error_class"] != nil || r["label"] == nil {
				t.Errorf("%s: good row %v", id, r)
			}
			continue
		}
		errored++
		want := "empty_reply"
		if strings.HasSuffix(id, "/i012") {
			want = "failed_reply"
		}
		if r["error_class"] != want || r["label"] != nil || r["correct"] != nil {
			t.Errorf("%s: error row %v (want class %s, no label, no correct)", id, r, want)
		}
	}
	if errored != 4 || len(rows) != 40 {
		t.Fatalf("%d error rows of %d", errored, len(rows))
	}
	// calls.parquet reads as calls: one final row per call, attempts on each.
	calls := readRows(t, filepath.Join(out, "calls.parquet"))
	finals := 0
	for _, c := range calls {
		if c["final"] == true {
			finals++
			a := c["attempts"].(int64)
			if (c["error"] == nil) != (a == 1) {
				t.Errorf("call %v: %d attempts", c["case_id"], a)
			}
		}
	}
	if len(calls) != 48 || finals != 40 {
		t.Errorf("calls.parquet: %d rows, %d final (want 48 attempts, 40 calls)", len(calls), finals)
	}

	// The server recovers: only the four failed requests go out again.
	fs.setFault(func(string, int) string { return "" })
	before, _, _ := fs.counts()
	stdout, stderr, code = runCLI(t, "apply", "-q", cfg, "--out", out)
	after, _, _ := fs.counts()
	if code != 0 || after-before != 4 || !strings.Contains(stdout, "4 new, 36 cached), 0 errors") {
		t.Fatalf("second apply: exit %d, %d new requests (want 4)\n%s\n%s", code, after-before, stdout, stderr)
	}
	// A run that never failed gives the same numbers, row for row.
	clean := filepath.Join(dir, "clean")
	if _, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", clean); code != 0 {
		t.Fatalf("clean run: %d %s", code, stderr)
	}
	for _, f := range []string{"results.parquet", "metrics.parquet"} {
		a, b := readRows(t, filepath.Join(out, f)), readRows(t, filepath.Join(clean, f))
		if len(a) == 0 || fmt.Sprint(a) != fmt.Sprint(b) {
			t.Errorf("%s differs from a run that never failed:\n%v\n%v", f, a, b)
		}
	}
}

// One 400 (a request-specific rejection) fails its case and nothing else;
// a 401 stops the model at once: every case fails with class auth and only
// the requests already in flight reach the server.
func TestRejectionFailsOneCaseAuthStopsTheModel(t *testing.T) {
	fs := newFaultServer(t)
	dir, cfg := faultStudy(t, fs, 30, "")
	fs.setFault(func(text string, n int) string {
		if strings.HasSuffix(text, " person 5.") {
			return "400"
		}
		return ""
	})
	out := filepath.Join(dir, "out")
	stdout, _, code := runCLI(t, "apply", "-q", cfg, "--out", out)
	if code != exitErrored || !strings.Contains(stdout, "30 cases") || !strings.Contains(stdout, "1 errors") || !strings.Contains(stdout, "rejected") {
		t.Fatalf("exit %d:\n%s", code, stdout)
	}
	if total, _, _ := fs.counts(); total != 30 {
		t.Errorf("server saw %d requests; a 400 is not retried and stops nothing", total)
	}
	row := byCase(readRows(t, filepath.Join(out, "results.parquet")))["local/once/toy/i005"]
	if row["error_class"] != "rejected" || !strings.Contains(row["error"].(string), "maximum context length") {
		t.Errorf("row %v", row)
	}

	fs2 := newFaultServer(t)
	_, cfg2 := faultStudy(t, fs2, 30, "")
	fs2.setFault(func(string, int) string { return "401" })
	stdout, _, code = runCLI(t, "apply", "-q", cfg2, "--out", filepath.Join(dir, "out2"))
	if code != exitErrored || !strings.Contains(stdout, "30 errors") || !strings.Contains(stdout, "auth") {
		t.Fatalf("bad key: exit %d\n%s", code, stdout)
	}
	if total, _, _ := fs2.counts(); total > 4 {
		t.Errorf("a refused key let %d requests through (concurrency 4)", total)
	}
}

// Replies over their bound fail their case without being read into memory
// or the journal; cut connections are retried.
func TestOversizedRepliesAndCutConnections(t *testing.T) {
	fs := newFaultServer(t)
	dir, cfg := faultStudy(t, fs, 12, ", max_reply_bytes: 65536")
	fs.setFault(func(text string, n int) string {
		switch {
		case strings.HasSuffix(text, " person 2."):
			return "big"
		case strings.HasSuffix(text, " person 4.") && n == 1:
			return "cut"
		}
		return ""
	})
	out := filepath.Join(dir, "out")
	stdout, _, code := runCLI(t, "apply", "-q", cfg, "--out", out)
	if code != exitErrored || !strings.Contains(stdout, "1 errors") || !strings.Contains(stdout, "reply_too_large") {
		t.Fatalf("exit %d\n%s", code, stdout)
	}
	rows := byCase(readRows(t, filepath.Join(out, "results.parquet")))
	if rows["local/once/toy/i002"]["error_class"] != "reply_too_large" || rows["local/once/toy/i004"]["error"] != nil {
		t.Errorf("rows: %v\n%v", rows["local/once/toy/i002"], rows["local/once/toy/i004"])
	}
	if fi, _ := os.Stat(filepath.Join(out, "journal.jsonl")); fi.Size() > 64<<10 {
		t.Errorf("the journal grew to %d bytes", fi.Size())
	}
	if n := fs.seen; len(n) == 0 {
		t.Fatal("no requests")
	}
}

// --offline with no journaled reply: every case is an offline_miss error,
// exit 3, and the summary says how to make the calls.
func TestOfflineMissesAreErrors(t *testing.T) {
	fs := newFaultServer(t)
	dir, cfg := faultStudy(t, fs, 5, "")
	stdout, _, code := runCLI(t, "apply", "-q", "--offline", cfg, "--out", filepath.Join(dir, "out"))
	if code != exitErrored || !strings.Contains(stdout, "5 errors") || !strings.Contains(stdout, "offline_miss") ||
		!strings.Contains(stdout, "without --offline") {
		t.Fatalf("exit %d\n%s", code, stdout)
	}
	if total, _, _ := fs.counts(); total != 0 {
		t.Fatalf("--offline sent %d requests", total)
	}
}

// An errored case never replaces an earlier good row of the same config
// and item: it keeps it, marked kept_from. After a config change it cannot
// (the earlier figure belongs to another config): the error row goes in,
// and the last outputs without errors stay on disk, named in the summary.
func TestErroredCasesKeepEarlierRowsOfTheSameConfig(t *testing.T) {
	fs := newFaultServer(t)
	dir, cfg := faultStudy(t, fs, 10, "")
	out := filepath.Join(dir, "out")
	if _, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", out); code != 0 {
		t.Fatal(stderr)
	}
	good := byCase(readRows(t, filepath.Join(out, "results.parquet")))
	// Lose two replies from the journal (as a damaged disk would).
	jpath := filepath.Join(out, "journal.jsonl")
	data, _ := os.ReadFile(jpath)
	var kept []string
	dropped := 0
	for _, line := range strings.SplitAfter(string(data), "\n") {
		if (strings.Contains(line, `"c":"local/once/toy/i001"`) || strings.Contains(line, `"c":"local/once/toy/i006"`)) && strings.Contains(line, `,"r":{`) {
			dropped++
			continue
		}
		kept = append(kept, line)
	}
	os.WriteFile(jpath, []byte(strings.Join(kept, "")), 0o644)
	if dropped != 2 {
		t.Fatalf("dropped %d replies", dropped)
	}
	// And the shared cache, which would serve them.
	if _, stderr, code := runCLI(t, "cache", "prune", "--all", "--dir", testCacheDir(t)); code != 0 {
		t.Fatal(stderr)
	}
	stdout, _, code := runCLI(t, "apply", "-q", "--offline", cfg, "--out", out)
	if code != exitErrored || !strings.Contains(stdout, "0 errors") || !strings.Contains(stdout, "2 case(s) errored") ||
		!strings.Contains(stdout, "2 of them kept their row from an earlier apply") {
		t.Fatalf("exit %d\n%s", code, stdout)
	}
	now := byCase(readRows(t, filepath.Join(out, "results.parquet")))
	for id, r := range now {
		g := good[id]
		lost := strings.HasSuffix(id, "/i001") || strings.HasSuffix(id, "/i006")
		if lost != (r["kept_from"] != nil) || r["error"] != nil || r["label"] != g["label"] || r["correct"] != g["correct"] {
			t.Errorf("%s: %v\nearlier %v", id, r, g)
		}
	}
	// A config change: the error rows replace the good ones, the last
	// complete outputs stay, and the summary says where.
	os.WriteFile(filepath.Join(dir, "configs/strategies/once.yaml"), []byte(strings.Replace(onceYAML, "Is it wrong?", "Is this wrong?", 1)), 0o644)
	stdout, _, code = runCLI(t, "apply", "-q", "--offline", cfg, "--out", out)
	if code != exitErrored || !strings.Contains(stdout, "10 errors") || !strings.Contains(stdout, "the last outputs without errors are kept in") {
		t.Fatalf("after a template edit: exit %d\n%s", code, stdout)
	}
	m := regexp.MustCompile(`kept in\s+(\S+)`).FindStringSubmatch(stdout)
	last := byCase(readRows(t, filepath.Join(m[1], "results.parquet")))
	if fmt.Sprint(last["local/once/toy/i003"]) != fmt.Sprint(good["local/once/toy/i003"]) {
		t.Errorf("the kept outputs are not the last complete ones")
	}
}

const onceYAML = `name: once
stages:
  - {name: ask, kind: prompt, messages: [{role: user, text: "Is it wrong? {{.item.text}}"}]}
  - {name: parse, kind: extract}
outputs: {label: stages.parse.label, confidence: stages.parse.confidence}
`

// No output file of a run folder is left private or half-written: files
// follow the umask, and temporary files of a killed apply are gone after
// the next one.
func sortedNames(dir string) []string {
	entries, _ := os.ReadDir(dir)
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	sort.Strings(out)
	return out
}

func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
