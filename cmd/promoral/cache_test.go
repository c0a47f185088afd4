package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/engine"
)

// countingServer is a local OpenAI-compatible server that counts the
// requests it answers, in all and per prompt.
type countingServer struct {
	*httptest.Server
	calls atomic.Int64
	mu    sync.Mutex
	per   map[string]int
}

func newCountingServer(t *testing.T, delay time.Duration) *countingServer {
	s := &countingServer{per: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Messages []struct{ Content string } `json:"messages"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		prompt := req.Messages[len(req.Messages)-1].Content
		s.calls.Add(1)
		s.mu.Lock()
		s.per[prompt]++
		s.mu.Unlock()
		time.Sleep(delay)
		answer := "not wrong"
		if strings.Contains(prompt, "stole") {
			answer = "wrong"
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"local-v1","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"Confidence: 0.9\nAnswer: %s"}}],"usage":{"prompt_tokens":11,"completion_tokens":5,"total_tokens":16}}`, answer)
	}))
	t.Cleanup(s.Close)
	return s
}

// localRun writes a run file of the toy study against srv; extra is added
// to its settings.
func localRun(t *testing.T, dir, name, url, extra string) string {
	t.Helper()
	run := fmt.Sprintf(`name: local
models:
  - name: local
    provider: openai-compatible
    model: llama-local
    base_url: %s/v1
    price: {input: 1, output: 2}
tasks: [toy]
strategies: [once]
settings: {concurrency: 4%s}
`, url, extra)
	p := filepath.Join(dir, "configs", name)
	if err := os.WriteFile(p, []byte(run), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func applyOK(t *testing.T, args ...string) (string, string) {
	t.Helper()
	stdout, stderr, code := runCLI(t, append([]string{"apply", "-q"}, args...)...)
	if code != 0 {
		t.Fatalf("apply %v failed (%d):\n%s\n%s", args, code, stdout, stderr)
	}
	return stdout, stderr
}

// The done-when: a finished run's folder renamed, apply again
// makes no call; so does --out to a new folder, and --offline; the run's
// new journal holds every reply it used. settings.cache: run pays again.
// A damaged cache file is a miss, paid again, never served. prune empties
// the cache.
func TestSharedCacheAcrossRunFolders(t *testing.T) {
	srv := newCountingServer(t, 0)
	dir := killStudy(t, 6)
	cfg := localRun(t, dir, "local.yaml", srv.URL, "")
	out := filepath.Join(dir, "out")
	stdout, _ := applyOK(t, cfg, "--out", out)
	if srv.calls.Load() != 6 || !strings.Contains(stdout, "6 cases, 6 calls (6 new, 0 cached)") || strings.Contains(stdout, "shared cache") {
		t.Fatalf("first apply: %d calls\n%s", srv.calls.Load(), stdout)
	}

	// Renamed: the old path is empty, apply again there.
	if err := os.Rename(out, filepath.Join(dir, "renamed")); err != nil {
		t.Fatal(err)
	}
	// plan sees there is nothing to pay for, and says where the replies are.
	plan, stderr, code := runCLI(t, "plan", "--detailed-exitcode", cfg, "--out", out)
	if code != 0 || !strings.Contains(plan, "6 of the journaled calls are in the shared cache") {
		t.Fatalf("plan after the rename: exit %d (want 0: no work)\n%s\n%s", code, plan, stderr)
	}
	stdout, _ = applyOK(t, cfg, "--out", out)
	if srv.calls.Load() != 6 || !strings.Contains(stdout, "6 calls (0 new, 6 cached)") ||
		!strings.Contains(words(stdout), "6 of the cached calls came from the shared cache "+testCacheDir(t)) {
		t.Fatalf("apply after the rename: %d calls (want still 6)\n%s", srv.calls.Load(), stdout)
	}
	if n := journalReplies(filepath.Join(out, "journal.jsonl")); n != 6 {
		t.Errorf("the new run's journal holds %d replies, want the 6 it used", n)
	}
	var m engine.Summary
	data, _ := os.ReadFile(filepath.Join(out, "manifest.json"))
	if err := json.Unmarshal(data, &m); err != nil || m.CallsShared != 6 || m.SharedCache != testCacheDir(t) {
		t.Errorf("manifest: calls_shared %d, shared_cache %q (%v)", m.CallsShared, m.SharedCache, err)
	}
	// Applied again in place: the journal serves, not the shared cache.
	stdout, _ = applyOK(t, cfg, "--out", out)
	if srv.calls.Load() != 6 || strings.Contains(stdout, "from the shared cache") {
		t.Errorf("re-apply in place: %d calls\n%s", srv.calls.Load(), stdout)
	}

	// --out to a new folder, and offline to another.
	applyOK(t, cfg, "--out", filepath.Join(dir, "elsewhere"))
	stdout, _ = applyOK(t, cfg, "--out", filepath.Join(dir, "offline"), "--offline")
	if srv.calls.Load() != 6 || !strings.Contains(stdout, "0 errors") {
		t.Fatalf("--out to new folders: %d calls (want still 6)\n%s", srv.calls.Load(), stdout)
	}

	// Isolated: the run's own journal is its only cache.
	iso := localRun(t, dir, "isolated.yaml", srv.URL, ", cache: run")
	stdout, _ = applyOK(t, iso, "--out", filepath.Join(dir, "isolated"))
	if srv.calls.Load() != 12 || !strings.Contains(stdout, "6 new, 0 cached") {
		t.Fatalf("settings.cache: run: %d calls (want 12)\n%s", srv.calls.Load(), stdout)
	}

	// `promoral cache` shows the six replies.
	info, stderr, code := runCLI(t, "cache", "--dir", testCacheDir(t))
	if code != 0 || !strings.Contains(info, testCacheDir(t)) || !strings.Contains(info, "6 replies") {
		t.Fatalf("cache (%d): %s %s", code, info, stderr)
	}

	// A cache file cut short, another with one byte changed: both missed
	// and paid again, with a warning; never served.
	files := cacheFiles(t, testCacheDir(t))
	if len(files) != 6 {
		t.Fatalf("%d cache files, want 6", len(files))
	}
	cut, _ := os.ReadFile(files[0])
	os.WriteFile(files[0], cut[:len(cut)-7], 0o644)
	flip, _ := os.ReadFile(files[1])
	i := strings.Index(string(flip), "Answer: ")
	flip[i+8] ^= 0x20 // "wrong" -> "Wrong": same length, bad checksum
	os.WriteFile(files[1], flip, 0o644)
	stdout, stderr = applyOK(t, cfg, "--out", filepath.Join(dir, "after-damage"))
	if srv.calls.Load() != 14 || !strings.Contains(stdout, "2 new, 4 cached") || !strings.Contains(stderr, "2 file(s) were not whole records") {
		t.Fatalf("damaged cache files: %d calls (want 14)\n%s\n%s", srv.calls.Load(), stdout, stderr)
	}
	// The calls made again mended the cache.
	applyOK(t, cfg, "--out", filepath.Join(dir, "mended"))
	if srv.calls.Load() != 14 {
		t.Errorf("after mending: %d calls, want 14", srv.calls.Load())
	}

	// Prune: nothing is 30 days old; --all empties it, and the next run pays.
	pr, stderr, code := runCLI(t, "cache", "prune", "--older-than", "30d", "--dir", testCacheDir(t))
	if code != 0 || !strings.Contains(pr, "removed 0 replies") {
		t.Fatalf("prune --older-than 30d (%d): %s %s", code, pr, stderr)
	}
	if _, stderr, code := runCLI(t, "cache", "prune", "--dir", testCacheDir(t)); code == 0 || !strings.Contains(words(stderr), "--older-than AGE (e.g. 30d or 2w), --all or --from RUN_DIR") {
		t.Errorf("prune without a choice: %d %s", code, stderr)
	}
	if _, stderr, code := runCLI(t, "cache", "prune", "--older-than", "soon", "--dir", testCacheDir(t)); code == 0 || !strings.Contains(stderr, `--older-than "soon"`) {
		t.Errorf("prune --older-than soon: %d %s", code, stderr)
	}
	pr, _, code = runCLI(t, "cache", "prune", "--all", "--dir", testCacheDir(t))
	if code != 0 || !strings.Contains(pr, "removed 6 replies") {
		t.Fatalf("prune --all (%d): %s", code, pr)
	}
	applyOK(t, cfg, "--out", filepath.Join(dir, "after-prune"))
	if srv.calls.Load() != 20 {
		t.Errorf("after prune --all: %d calls, want 20", srv.calls.Load())
	}
}

// Two applies sharing one cache at once, against one server: both finish,
// no cache file is damaged, and no request is paid more than once by each
// process; a third apply then pays nothing.
func TestSharedCacheConcurrentApplies(t *testing.T) {
	srv := newCountingServer(t, 5*time.Millisecond)
	const items = 40
	dir := killStudy(t, items)
	cfg := localRun(t, dir, "local.yaml", srv.URL, "")
	var wg sync.WaitGroup
	outs := make([]string, 2)
	errs := make([]string, 2)
	for p := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			stdout, stderr, code := runCLI(t, "apply", "-q", cfg, "--out", filepath.Join(dir, fmt.Sprint("out", p)))
			outs[p] = stdout
			if code != 0 {
				errs[p] = fmt.Sprintf("apply %d failed (%d): %s", p, code, stderr)
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		if e != "" {
			t.Fatal(e)
		}
	}
	total := srv.calls.Load()
	if total < items || total > 2*items {
		t.Errorf("%d calls for %d requests from two processes", total, items)
	}
	srv.mu.Lock()
	if len(srv.per) != items {
		t.Errorf("%d distinct requests, want %d", len(srv.per), items)
	}
	for p, n := range srv.per {
		if n > 2 {
			t.Errorf("request %q paid %d times by two processes", p, n)
		}
	}
	srv.mu.Unlock()
	// What each process did not pay for came from the cache.
	re := regexp.MustCompile(`(\d+) new, (\d+) cached`)
	var paid int
	for _, o := range outs {
		m := re.FindStringSubmatch(o)
		if m == nil {
			t.Fatalf("no call counts in %q", o)
		}
		var n, c int
		fmt.Sscan(m[1], &n)
		fmt.Sscan(m[2], &c)
		if n+c != items {
			t.Errorf("%d new + %d cached, want %d calls", n, c, items)
		}
		paid += n
	}
	if int64(paid) != total {
		t.Errorf("the summaries count %d new calls, the server answered %d", paid, total)
	}
	if n := len(cacheFiles(t, testCacheDir(t))); n != items {
		t.Errorf("%d cache files, want %d", n, items)
	}
	stdout, stderr := applyOK(t, cfg, "--out", filepath.Join(dir, "third"))
	if srv.calls.Load() != total || !strings.Contains(stdout, fmt.Sprintf("%d of the cached calls came from the shared cache", items)) || strings.Contains(stderr, "warning") {
		t.Errorf("third apply: %d calls (want %d)\n%s\n%s", srv.calls.Load(), total, stdout, stderr)
	}
}

// cacheFiles lists a shared cache's reply files.
func cacheFiles(t *testing.T, root string) []string {
	t.Helper()
	var files []string
	filepath.Walk(filepath.Join(root, "replies-v1"), func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() && !strings.HasPrefix(info.Name(), ".tmp-") {
			files = append(files, p)
		}
		return nil
	})
	return files
}
