package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/review"
	"github.com/promoral/promoral/runfolder/manifest"
)

// A run applied with its own cache (settings.cache: run) left its replies
// in its journal only: cache import copies them into the shared cache, so
// another run folder pays nothing; importing again adds nothing; a folder
// without a journal is refused by name; a scripted model's replies stay out.
func TestCacheImportRunJournal(t *testing.T) {
	srv := newCountingServer(t, 0)
	dir := killStudy(t, 6)
	iso := localRun(t, dir, "isolated.yaml", srv.URL, ", cache: run")
	old := filepath.Join(dir, "old")
	applyOK(t, iso, "--out", old)
	if srv.calls.Load() != 6 || len(cacheFiles(t, testCacheDir(t))) != 0 {
		t.Fatalf("isolated apply: %d calls, %d cache files", srv.calls.Load(), len(cacheFiles(t, testCacheDir(t))))
	}
	// Without the import, a shared run pays again: shown by plan.
	cfg := localRun(t, dir, "local.yaml", srv.URL, "")
	if _, _, code := runCLI(t, "plan", "--detailed-exitcode", cfg, "--out", filepath.Join(dir, "new")); code != 2 {
		t.Fatalf("plan before the import: exit %d, want 2 (work to do)", code)
	}

	out, stderr, code := runCLI(t, "cache", "import", old, "--dir", testCacheDir(t))
	if code != 0 || !strings.Contains(out, old+": 6 replies imported into "+testCacheDir(t)+", 0 already there (6 in its journal)") {
		t.Fatalf("cache import (%d):\n%s\n%s", code, out, stderr)
	}
	if n := len(cacheFiles(t, testCacheDir(t))); n != 6 {
		t.Fatalf("%d cache files after the import, want 6", n)
	}
	stdout, _ := applyOK(t, cfg, "--out", filepath.Join(dir, "new"))
	if srv.calls.Load() != 6 || !strings.Contains(stdout, "6 calls (0 new, 6 cached)") ||
		!strings.Contains(stdout, "6 of the cached calls came from the shared cache") {
		t.Fatalf("apply after the import: %d calls (want still 6)\n%s", srv.calls.Load(), stdout)
	}

	out, _, code = runCLI(t, "cache", "import", old, "--dir", testCacheDir(t))
	if code != 0 || !strings.Contains(out, "0 replies imported") || !strings.Contains(out, "6 already there") {
		t.Errorf("second import (%d): %s", code, out)
	}
	if _, stderr, code := runCLI(t, "cache", "import", filepath.Join(dir, "nowhere"), "--dir", testCacheDir(t)); code == 0 || !strings.Contains(words(stderr), "nowhere has no journal.jsonl") {
		t.Errorf("import of a folder without a journal: %d %s", code, stderr)
	}

	// The scripted study's replies (provider scripted) are not shared.
	scripted := filepath.Join(dir, "scripted")
	applyOK(t, filepath.Join(dir, "configs", "run.yaml"), "--out", scripted)
	out, _, code = runCLI(t, "cache", "import", scripted, "--dir", testCacheDir(t))
	if code != 0 || !strings.Contains(out, "0 replies imported") || !strings.Contains(out, "of models that call no endpoint left out") {
		t.Errorf("import of a scripted run (%d): %s", code, out)
	}
	if n := len(cacheFiles(t, testCacheDir(t))); n != 6 {
		t.Errorf("%d cache files after importing a scripted run, want still 6", n)
	}

	// prune --from takes out what the import of a folder planted.
	out, stderr, code = runCLI(t, "cache", "prune", "--from", old, "--dir", testCacheDir(t))
	if code != 0 || !strings.Contains(out, "removed 6 replies") || !strings.Contains(out, "imported from "+old) {
		t.Errorf("prune --from (%d):\n%s\n%s", code, out, stderr)
	}
	if n := len(cacheFiles(t, testCacheDir(t))); n != 0 {
		t.Errorf("%d cache files after prune --from, want 0", n)
	}
	if _, stderr, code := runCLI(t, "cache", "prune", "--from", old, "--all", "--dir", testCacheDir(t)); code == 0 || !strings.Contains(stderr, "one of") {
		t.Errorf("prune --from with --all (%d): %s", code, stderr)
	}
}

// prune's help shows every form of AGE its own error suggests.
func TestCachePruneHelpShowsAgeForms(t *testing.T) {
	out, _, code := runCLI(t, "cache", "prune", "--help")
	for _, w := range []string{"30d", "2w", "12h", "--from"} {
		if code != 0 || !strings.Contains(out, w) {
			t.Errorf("cache prune --help lacks %q:\n%s", w, out)
		}
	}
	if _, stderr, _ := runCLI(t, "cache", "prune", "--older-than", "soon"); !strings.Contains(stderr, "weeks (2w)") {
		t.Errorf("the error: %s", stderr)
	}
}

// merge sums the shards' calls_shared, and diff counts replies of the
// shared cache as free, as plan does.
func TestSharedCacheMergeAndDiff(t *testing.T) {
	srv := newCountingServer(t, 0)
	dir := killStudy(t, 6)
	cfg := localRun(t, dir, "local.yaml", srv.URL, "")
	applyOK(t, cfg, "--out", filepath.Join(dir, "first"))
	if srv.calls.Load() != 6 {
		t.Fatalf("first apply: %d calls", srv.calls.Load())
	}
	s0, s1 := filepath.Join(dir, "s0"), filepath.Join(dir, "s1")
	applyOK(t, cfg, "--out", s0, "--shard", "0/2")
	applyOK(t, cfg, "--out", s1, "--shard", "1/2")
	if srv.calls.Load() != 6 {
		t.Fatalf("shards: %d calls, want still 6", srv.calls.Load())
	}
	shared := 0
	for _, s := range []string{s0, s1} {
		m, err := review.ShardManifest(s)
		if err != nil {
			t.Fatal(err)
		}
		if m.CallsShared == 0 {
			t.Fatalf("%s: no calls from the shared cache", s)
		}
		shared += m.CallsShared
	}
	merged := filepath.Join(dir, "merged")
	stdout, stderr, code := runCLI(t, "merge", merged, s0, s1)
	if code != 0 {
		t.Fatalf("merge (%d):\n%s\n%s", code, stdout, stderr)
	}
	var m manifest.Manifest
	data, _ := os.ReadFile(filepath.Join(merged, "manifest.json"))
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatal(err)
	}
	if shared != 6 || m.CallsShared != shared || m.SharedCache != testCacheDir(t) || len(m.MergedFrom) != 2 || m.MergedFrom[0].CallsShared+m.MergedFrom[1].CallsShared != shared {
		t.Errorf("merged manifest: calls_shared %d (shards %d), shared_cache %q, shards %+v", m.CallsShared, shared, m.SharedCache, m.MergedFrom)
	}
	if !strings.Contains(words(stdout), "6 of the cached calls came from the shared cache "+testCacheDir(t)) {
		t.Errorf("merge summary:\n%s", stdout)
	}

	// diff: a run folder whose journal holds 3 items' replies; the new
	// config adds 3 more, whose replies are in the shared cache only.
	small := filepath.Join(dir, "configs", "small.yaml")
	body, _ := os.ReadFile(cfg)
	os.WriteFile(small, []byte(strings.Replace(string(body), "tasks: [toy]", "tasks: [{use: toy, dataset: {limit: 3}}]", 1)), 0o644)
	part := filepath.Join(dir, "part")
	applyOK(t, small, "--out", part)
	if n := journalReplies(filepath.Join(part, "journal.jsonl")); n != 3 || srv.calls.Load() != 6 {
		t.Fatalf("the small run's journal holds %d replies (want 3); %d calls (want 6)", n, srv.calls.Load())
	}
	stdout, stderr, code = runCLI(t, "diff", small, cfg, "--out", part)
	if code != 0 || !strings.Contains(stdout, "0 cases it invalidates, 0 it adds") ||
		!strings.Contains(stdout, "free: 3 cases finish on 3 replies in the shared cache "+testCacheDir(t)) {
		t.Errorf("diff with the added cases' replies in the shared cache (%d):\n%s\n%s", code, stdout, stderr)
	}
	// Isolated, the same change costs its 3 calls.
	iso := filepath.Join(dir, "configs", "iso.yaml")
	os.WriteFile(iso, []byte(strings.Replace(string(body), "concurrency: 4", "concurrency: 4, cache: run", 1)), 0o644)
	stdout, _, _ = runCLI(t, "diff", small, iso, "--out", part)
	if !strings.Contains(stdout, "3 it adds") || !strings.Contains(stdout, "3 cases to run, 3 new calls") || strings.Contains(stdout, "free:") {
		t.Errorf("diff to an isolated config:\n%s", stdout)
	}
}
