package engine

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/llm"
	"github.com/promoral/promoral/pipeline/spec"
)

func testKey(i int) string {
	s := sha256.Sum256([]byte(fmt.Sprint("request ", i)))
	return hex.EncodeToString(s[:])
}

func testReply(i int) *journal.Record {
	return &journal.Record{Key: testKey(i), Model: "m", Case: fmt.Sprint("case", i), Stage: "ask", Attempt: 1,
		Time: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC), LatencyMS: 12.5,
		Resp: &llm.Response{Choices: []llm.Choice{{Text: fmt.Sprintf("Answer: %d", i), FinishReason: "stop"}}, Usage: llm.Usage{PromptTokens: 9, CompletionTokens: 4}}}
}

func TestSharedCacheRoundTripAndDamage(t *testing.T) {
	c, err := OpenSharedCache(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := c.Get(testKey(0)); ok {
		t.Fatal("an empty cache served a reply")
	}
	for i := range 6 {
		c.Put(testReply(i))
	}
	// Not stored: failures, intents, replies without an answer.
	c.Put(&journal.Record{Key: testKey(100), Err: "boom"})
	c.Put(&journal.Record{Key: testKey(101), Sent: true})
	c.Put(&journal.Record{Key: testKey(102), Resp: &llm.Response{}})
	for _, i := range []int{100, 101, 102} {
		if _, ok := c.Get(testKey(i)); ok {
			t.Errorf("record %d without a usable reply was stored", i)
		}
	}
	if len(c.Warnings()) != 0 {
		t.Fatalf("warnings before any damage: %v", c.Warnings())
	}
	got, ok := c.Get(testKey(3))
	if !ok || got.Resp.Choices[0].Text != "Answer: 3" || got.Key != testKey(3) || got.LatencyMS != 12.5 || got.ID != "" {
		t.Fatalf("round trip: %+v %v", got, ok)
	}

	damage := map[int]func([]byte) []byte{
		0: func(b []byte) []byte { return b[:len(b)-5] },                       // torn
		1: func(b []byte) []byte { return append(b, "x"...) },                  // too long
		2: func(b []byte) []byte { b[len(b)-10] ^= 1; return b },               // a changed byte
		3: func(b []byte) []byte { return []byte(strings.ToUpper(string(b))) }, // no header
		4: func(b []byte) []byte { return nil },                                // empty (a crash before the data reached the disk)
	}
	for i, f := range damage {
		p := c.path(testKey(i))
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(p, f(b), 0o644)
	}
	// Another key's whole, valid file under this key's name.
	b, _ := os.ReadFile(c.path(testKey(5)))
	os.MkdirAll(filepath.Dir(c.path(testKey(7))), 0o777)
	os.WriteFile(c.path(testKey(7)), b, 0o644)
	for i := range 8 {
		_, ok := c.Get(testKey(i))
		if want := i == 5; ok != want {
			t.Errorf("record %d: served %v, want %v", i, ok, want)
		}
	}
	w := c.Warnings()
	if len(w) != 1 || !strings.Contains(w[0], "6 file(s) were not whole records") {
		t.Errorf("warnings: %v", w)
	}
	// A new reply replaces a damaged file.
	c.Put(testReply(2))
	if _, ok := c.Get(testKey(2)); !ok {
		t.Error("a damaged file was not replaced by the next reply")
	}
}

// Writers and readers of the same keys at once (as two processes sharing
// the cache would be): a reader finds a whole record or none, never a
// damaged one.
func TestSharedCacheConcurrentWritersAndReaders(t *testing.T) {
	root := t.TempDir()
	var wg sync.WaitGroup
	caches := make([]*SharedCache, 6)
	for w := range caches {
		c, err := OpenSharedCache(root, false)
		if err != nil {
			t.Fatal(err)
		}
		caches[w] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			for round := range 20 {
				for i := range 30 {
					if w%2 == 0 {
						c.Put(testReply(i))
					} else if rec, ok := c.Get(testKey(i)); ok && rec.Resp.Choices[0].Text != fmt.Sprintf("Answer: %d", i) {
						t.Errorf("round %d: key %d served %q", round, i, rec.Resp.Choices[0].Text)
					}
				}
			}
		}()
	}
	wg.Wait()
	for w, c := range caches {
		if n := c.damaged.Load() + c.writeErrs.Load(); n != 0 {
			t.Errorf("cache user %d: %v", w, c.Warnings())
		}
	}
	cs, err := CacheInfo(root)
	if err != nil || cs.Entries != 30 || cs.Temp != 0 || cs.Bytes <= 0 || cs.Disk <= 0 {
		t.Errorf("cache info %+v %v", cs, err)
	}
}

func TestPruneCacheByLastUse(t *testing.T) {
	root := t.TempDir()
	c, _ := OpenSharedCache(root, false)
	for i := range 4 {
		c.Put(testReply(i))
	}
	old := time.Now().Add(-40 * 24 * time.Hour)
	for _, i := range []int{0, 1, 2} {
		os.Chtimes(c.path(testKey(i)), old, old)
	}
	// A read marks a reply used: it survives.
	if _, ok := c.Get(testKey(2)); !ok {
		t.Fatal("miss")
	}
	// Partial files: a killed write's (old) goes, a write in progress stays.
	dir := filepath.Dir(c.path(testKey(0)))
	stale, fresh := filepath.Join(dir, ".tmp-1"), filepath.Join(dir, ".tmp-2")
	os.WriteFile(stale, []byte("partial"), 0o644)
	os.WriteFile(fresh, []byte("partial"), 0o644)
	os.Chtimes(stale, old, old)
	n, freed, err := PruneCache(root, time.Now().Add(-30*24*time.Hour))
	if err != nil || n != 2 || freed <= 0 {
		t.Fatalf("prune: %d removed, %d bytes, %v", n, freed, err)
	}
	for i, want := range []bool{false, false, true, true} {
		if _, ok := c.Get(testKey(i)); ok != want {
			t.Errorf("reply %d kept %v, want %v", i, ok, want)
		}
	}
	if _, err := os.Stat(stale); err == nil {
		t.Error("a killed write's partial file was kept")
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("a write in progress was removed")
	}
	if n, _, err := PruneCache(root, time.Time{}); err != nil || n != 2 {
		t.Errorf("prune all: %d, %v", n, err)
	}
	cs, _ := CacheInfo(root)
	if cs.Entries != 0 {
		t.Errorf("%d entries after prune all", cs.Entries)
	}
	// A cache never made is empty, not an error.
	if cs, err := CacheInfo(filepath.Join(root, "none")); err != nil || cs.Entries != 0 {
		t.Errorf("missing cache: %+v %v", cs, err)
	}
}

func TestResolveCacheDir(t *testing.T) {
	env := t.TempDir()
	t.Setenv(CacheEnv, env)
	st := &spec.Study{File: "/proj/configs/run.yaml", Run: &spec.RunFile{}}
	if d, err := ResolveCacheDir(st); err != nil || d != env {
		t.Errorf("default: %q %v, want $%s", d, err, CacheEnv)
	}
	st.Run.Settings.CacheDir = "../cache"
	if d, _ := ResolveCacheDir(st); d != "/proj/cache" {
		t.Errorf("settings.cache_dir: %q, want it relative to the run file", d)
	}
	st.Run.Settings.Cache = spec.CacheRun
	if d, err := ResolveCacheDir(st); d != "" || err != nil {
		t.Errorf("settings.cache: run: %q %v", d, err)
	}
	// A test binary never falls back to the user's cache folder.
	t.Setenv(CacheEnv, "")
	if _, err := DefaultCacheDir(); err == nil || !strings.Contains(err.Error(), CacheEnv) {
		t.Errorf("no %s under test: %v", CacheEnv, err)
	}
}

// BenchmarkSharedCacheGet measures a look-up in a cache of 100,000 replies:
// a hit (read, checksum, decode, mark used) and a miss (one failed open).
func BenchmarkSharedCacheGet(b *testing.B) {
	const n = 100_000
	c, err := OpenSharedCache(b.TempDir(), false)
	if err != nil {
		b.Fatal(err)
	}
	for i := range n {
		c.Put(testReply(i))
	}
	b.Run("hit", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, ok := c.Get(testKey(i % n)); !ok {
				b.Fatal("miss")
			}
		}
	})
	b.Run("miss", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, ok := c.Get(testKey(n + i)); ok {
				b.Fatal("hit")
			}
		}
	})
	b.Run("put", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			c.Put(testReply(i % n))
		}
	})
}

// A cache entry larger than any reply the journal could hold (here a
// sparse 64 MiB file) is not read into memory: it is a miss, counted in a
// warning, and the call is made again.
func TestSharedCacheOversizeEntryIsNotRead(t *testing.T) {
	c, err := OpenSharedCache(t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	c.Put(testReply(0))
	p := c.path(testKey(0))
	if err := os.Truncate(p, 64<<20); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, ok := c.Get(testKey(0))
	runtime.ReadMemStats(&after)
	if ok {
		t.Fatal("an oversize entry was served")
	}
	if n := after.TotalAlloc - before.TotalAlloc; n > 1<<20 {
		t.Errorf("looking up a 64 MiB entry allocated %d bytes (bound 1 MiB)", n)
	}
	w := strings.Join(c.Warnings(), "\n")
	if !strings.Contains(w, "1 file(s) larger than") || !strings.Contains(w, "were not read") {
		t.Errorf("warnings: %q", w)
	}
	// plan's look-ups are bounded the same way.
	src := &ReplySource{j: nil, shared: &SharedCache{root: c.root}}
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, ok = src.shared.get(testKey(0), false, 0)
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; ok || n > 1<<20 {
		t.Errorf("plan's look-up: served %v, allocated %d bytes", ok, n)
	}
}

// A request's own reply bound (limits.max_reply_bytes, else the bound its
// max_tokens gives) bounds the cache entry read for it, plus the record's
// frame: a larger entry is a miss with a warning, a smaller one is served.
func TestSharedCacheReadIsBoundedByTheRequest(t *testing.T) {
	c, _ := OpenSharedCache(t.TempDir(), false)
	big := testReply(1)
	big.Resp.Choices[0].Text = strings.Repeat("x", 300<<10)
	c.Put(big)
	if _, ok := c.get(testKey(1), false, 200<<10); ok {
		t.Error("a 300 KiB reply was served to a request bounded at 200 KiB")
	}
	if w := strings.Join(c.Warnings(), "\n"); !strings.Contains(w, "larger than") {
		t.Errorf("warnings: %q", w)
	}
	if _, ok := c.get(testKey(1), false, 300<<10); !ok {
		t.Error("a 300 KiB reply was missed by a request bounded at 300 KiB (the frame is extra)")
	}
}

// Prune, even --all, removes only what the cache wrote (reply files and
// partial writes in their folders), and counts only replies; other files
// in the cache folder stay.
func TestPruneRemovesOnlyWhatTheCacheWrote(t *testing.T) {
	root := t.TempDir()
	c, _ := OpenSharedCache(root, false)
	c.Put(testReply(0))
	c.Put(testReply(1))
	k := testKey(0)
	other := []string{
		"notes.txt",
		filepath.Join(repliesDir, "README"),
		filepath.Join(repliesDir, k[:2], "notes.txt"),
		filepath.Join(repliesDir, k[:2], strings.ToUpper(k)),
		filepath.Join(repliesDir, "zz", testKey(9)),
		filepath.Join(repliesDir, k[:2], "sub", testKey(8)),
	}
	if testKey(1)[:2] != k[:2] {
		other = append(other, filepath.Join(repliesDir, testKey(1)[:2], k)) // a key in another key's folder
	}
	for _, f := range other {
		os.MkdirAll(filepath.Dir(filepath.Join(root, f)), 0o777)
		if err := os.WriteFile(filepath.Join(root, f), []byte("mine"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if cs, _ := CacheInfo(root); cs.Entries != 2 {
		t.Errorf("cache info counts %d entries, want the 2 replies", cs.Entries)
	}
	n, _, err := PruneCache(root, time.Time{})
	if err != nil || n != 2 {
		t.Errorf("prune all: %d removed, %v; want the 2 replies", n, err)
	}
	for _, f := range other {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			t.Errorf("%s was removed", f)
		}
	}
	for i := range 2 {
		if _, err := os.Stat(c.path(testKey(i))); err == nil {
			t.Errorf("reply %d was kept", i)
		}
	}
}

// cache import records where each reply it planted came from, so prune
// --from removes exactly those: not a reply a run stored itself, not one
// stored again since the import.
func TestPruneFromRemovesWhatAnImportPlanted(t *testing.T) {
	root := t.TempDir()
	run := filepath.Join(t.TempDir(), "edited-run")
	os.MkdirAll(run, 0o777)
	j, err := journal.OpenFrom(filepath.Join(run, "journal.jsonl"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 3 {
		if err := j.Append(testReply(i)); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	ci, err := ImportToCache(root, run)
	if err != nil || ci.Imported != 3 {
		t.Fatalf("import: %+v %v", ci, err)
	}
	c, _ := OpenSharedCache(root, false)
	c.Put(testReply(5)) // a run's own reply
	again := testReply(2)
	again.Resp.Choices[0].Text = "Answer: paid again"
	c.Put(again) // stored again since the import
	if _, _, err := PruneImported(root, filepath.Join(t.TempDir(), "never-imported")); err == nil || !strings.Contains(err.Error(), "no import from") {
		t.Errorf("prune --from a folder never imported: %v", err)
	}
	n, freed, err := PruneImported(root, run)
	if err != nil || n != 2 || freed <= 0 {
		t.Fatalf("prune --from: %d removed, %d bytes, %v; want 2", n, freed, err)
	}
	for i, want := range map[int]bool{0: false, 1: false, 2: true, 5: true} {
		if _, ok := c.Get(testKey(i)); ok != want {
			t.Errorf("reply %d kept %v, want %v", i, ok, want)
		}
	}
	// The record is used up; prune --all leaves nothing of the cache's.
	if _, _, err := PruneImported(root, run); err == nil {
		t.Error("a second prune --from found the import again")
	}
	if n, _, err := PruneCache(root, time.Time{}); err != nil || n != 2 {
		t.Errorf("prune all: %d, %v", n, err)
	}
}

// prune --all takes the import records with the replies.
func TestPruneAllRemovesImportRecords(t *testing.T) {
	root := t.TempDir()
	run := t.TempDir()
	j, _ := journal.OpenFrom(filepath.Join(run, "journal.jsonl"), false, nil)
	j.Append(testReply(0))
	j.Close()
	if _, err := ImportToCache(root, run); err != nil {
		t.Fatal(err)
	}
	if n, _, err := PruneCache(root, time.Time{}); err != nil || n != 1 {
		t.Fatalf("prune all: %d %v", n, err)
	}
	if _, _, err := PruneImported(root, run); err == nil {
		t.Error("the import record outlived prune --all")
	}
}
