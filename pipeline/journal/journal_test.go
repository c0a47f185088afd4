package journal_test

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/promoral/promoral/pipeline/journal"
	"github.com/promoral/promoral/pipeline/llm"
)

func key(s string) string {
	h := sha256.Sum256([]byte(s))
	return hex.EncodeToString(h[:])
}

func reply(text string) *llm.Response {
	return &llm.Response{Choices: []llm.Choice{{Text: text, FinishReason: llm.FinishStop}}}
}

func openJ(t testing.TB, path string) *journal.Journal {
	t.Helper()
	j, err := journal.OpenFrom(path, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// Damage anywhere but the tail is skipped, counted and left in place; only
// a torn last line is cut off; every good record is still served.
func TestJournalSkipsDamageAndTrimsOnlyATornTail(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j := openJ(t, path)
	for i := range 5 {
		if err := j.Append(&journal.Record{Key: key(fmt.Sprint(i)), Model: "m", Resp: reply(fmt.Sprint("r", i))}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	damaged := lines[0] + "\n" + "{not json\n" + lines[1] + "\x00\x00\x00\n" + `{"k":"` + key("nr") + `"}` + "\n" +
		lines[2] + `{"k":"zz"}` + "\n" + lines[3] + lines[4] + `{"k":"` + key("torn")
	os.WriteFile(path, []byte(damaged), 0o644)

	j = openJ(t, path)
	defer j.Close()
	s := j.Stats()
	if s.Replies != 5 || s.Damaged != 3 || s.NoReply != 1 || s.Trimmed != int64(len(`{"k":"`+key("torn"))) {
		t.Fatalf("stats %+v", s)
	}
	for i := range 5 {
		rec, ok, err := j.Lookup(key(fmt.Sprint(i)))
		if err != nil || !ok || rec.Resp.Text() != fmt.Sprint("r", i) {
			t.Fatalf("record %d: %v %v %v", i, rec, ok, err)
		}
	}
	if _, ok, _ := j.Lookup(key("nr")); ok {
		t.Error("a record without a response served as a reply")
	}
	w := strings.Join(j.Warnings(), "\n")
	if !strings.Contains(w, "skipped 4 line(s)") || !strings.Contains(w, "cut off a torn last line") || strings.Contains(w, "move") {
		t.Errorf("warnings:\n%s", w)
	}
	after, _ := os.ReadFile(path)
	if string(after) != strings.TrimSuffix(damaged, `{"k":"`+key("torn")) {
		t.Error("the journal was changed beyond cutting its torn tail")
	}
}

// A reply record without an answer (an older version journaled them) is a
// miss; a usable reply written after it for the same request wins.
func TestJournalTreatsEmptyRepliesAsMisses(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	os.WriteFile(path, []byte(`{"k":"`+key("a")+`","m":"m","r":{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":0}}}`+"\n"+
		`{"k":"`+key("b")+`","m":"m","r":{"choices":[{"text":"","finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":0}}}`+"\n"), 0o644)
	j := openJ(t, path)
	defer j.Close()
	for _, k := range []string{"a", "b"} {
		if _, ok, err := j.Lookup(key(k)); ok || err != nil {
			t.Fatalf("%s: served an empty reply (%v)", k, err)
		}
	}
	if j.Stats().Unusable != 2 {
		t.Errorf("unusable = %d", j.Stats().Unusable)
	}
	j.Append(&journal.Record{Key: key("a"), Resp: reply("now")})
	if rec, ok, _ := j.Lookup(key("a")); !ok || rec.Resp.Text() != "now" {
		t.Fatal("the new reply is not served")
	}
	// Appending an empty reply never indexes it.
	j.Append(&journal.Record{Key: key("c"), Resp: &llm.Response{}})
	if j.Has(key("c")) {
		t.Error("an empty reply was indexed")
	}
}

// Intents without an outcome are calls that were in flight when a process
// died: the next open counts them, settles them, and does not count them
// again.
func TestJournalCountsIntentsLeftInFlight(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j := openJ(t, path)
	for i := range 6 {
		id := j.NewAttemptID()
		k := key(fmt.Sprint(i))
		j.Append(&journal.Record{Key: k, ID: id, Model: "m", Case: "c", Attempt: 1, Sent: true})
		if i < 4 {
			j.Append(&journal.Record{Key: k, ID: id, Model: "m", Resp: reply("x")})
		}
	}
	j.Close()
	j = openJ(t, path)
	if s := j.Stats(); s.Lost != 2 || s.Replies != 4 {
		t.Fatalf("stats %+v", s)
	}
	if !j.WasLost(key("5")) || j.WasLost(key("5")) || j.WasLost(key("1")) {
		t.Error("WasLost should answer once, for a lost key only")
	}
	j.Close()
	j = openJ(t, path)
	defer j.Close()
	if s := j.Stats(); s.Lost != 0 || s.Failed != 2 {
		t.Fatalf("after settling: %+v", s)
	}
	ro, err := journal.OpenReadOnly(path)
	if err != nil || ro.Stats().Lost != 0 {
		t.Fatalf("read-only: %v %+v", err, ro.Stats())
	}
	ro.Close()
}

// Opening a journal costs memory for its index, not for its replies: three
// replies of 40 MB (over the line bound) are skipped unread.
func TestJournalMemoryIsBoundedWhateverTheRepliesHold(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 120 MB")
	}
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	f, _ := os.Create(path)
	big := bytes.Repeat([]byte("x"), 40<<20)
	for i := range 3 {
		fmt.Fprintf(f, `{"k":"%s","m":"m","r":{"choices":[{"text":"`, key(fmt.Sprint("big", i)))
		f.Write(big)
		f.WriteString(`","finish_reason":"stop"}]}}` + "\n")
		fmt.Fprintf(f, `{"k":"%s","m":"m","r":{"choices":[{"text":"small","finish_reason":"stop"}]}}`+"\n", key(fmt.Sprint("small", i)))
	}
	// A long reply within the bound is indexed without being held, and served.
	fmt.Fprintf(f, `{"k":"%s","m":"m","r":{"choices":[{"text":"%s","finish_reason":"stop"}]}}`+"\n", key("long"), big[:3<<20])
	f.Close()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	j := openJ(t, path)
	runtime.ReadMemStats(&after)
	defer j.Close()
	if s := j.Stats(); s.Oversized != 3 || s.Replies != 4 {
		t.Fatalf("stats %+v", s)
	}
	t.Logf("opening a journal of 123 MB allocated %d KB", (after.TotalAlloc-before.TotalAlloc)>>10)
	if _, ok, _ := j.Lookup(key("small2")); !ok {
		t.Fatal("a small reply after the big ones is lost")
	}
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 8<<20 {
		t.Fatalf("opening allocated %d MB for a journal of 123 MB", alloc>>20)
	}
	if rec, ok, _ := j.Lookup(key("long")); !ok || len(rec.Resp.Text()) != 3<<20 {
		t.Fatal("the long reply is not served")
	}
}

// FuzzJournal: whatever the file holds, opening it neither fails nor
// panics, and every reply it serves is usable.
func FuzzJournal(f *testing.F) {
	good := fmt.Sprintf(`{"k":"%s","i":"ab.1","m":"m","c":"c","s":"s","a":1,"t":"2025-01-01T00:00:00Z","l":1,"r":{"choices":[{"text":"hi","finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1}}}`, key("a"))
	intent := fmt.Sprintf(`{"k":"%s","i":"ab.2","m":"m","c":"c","s":"s","a":1,"t":"2025-01-01T00:00:00Z","l":0,"sent":true}`, key("b"))
	failed := fmt.Sprintf(`{"k":"%s","i":"ab.2","e":"boom"}`, key("b"))
	for _, seed := range []string{"", good + "\n", intent + "\n", intent + "\n" + failed + "\n", good + "\n\n\x00\n" + good,
		`{"k":"` + key("c") + `"}` + "\n", `{"k":"` + key("d") + `","r":{"choices":null}}` + "\n", "{\n", `{"k":5}` + "\n"} {
		f.Add([]byte(seed))
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		// One file, rewritten per input: a fresh folder per input would
		// cost the fuzzer more than the journal does.
		path := filepath.Join(dir, "journal.jsonl")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		j, err := journal.OpenFrom(path, false, nil)
		if err != nil {
			t.Fatalf("open failed on damaged content: %v", err)
		}
		defer j.Close()
		for _, k := range []string{"a", "b", "c", "d"} {
			rec, ok, err := j.Lookup(key(k))
			if err != nil {
				t.Fatal(err)
			}
			if ok && (rec.Resp == nil || rec.Resp.Problem() != "") {
				t.Fatalf("served an unusable reply: %+v", rec)
			}
		}
		if err := j.Append(&journal.Record{Key: key("z"), Resp: reply("z"), Time: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
	})
}

// Keys that share their first 8 bytes each get their own reply, after a
// reopen too, and a key never written is a miss even when another key holds
// its prefix: the index keeps prefixes, the lookup checks the whole key.
func TestJournalKeysSharingAPrefixKeepTheirOwnReplies(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	base := key("shared")
	keys := []string{base, base[:16] + key("one")[16:], base[:16] + key("two")[16:]}
	absent := base[:16] + key("never")[16:]
	j := openJ(t, path)
	for i, k := range keys {
		if err := j.Append(&journal.Record{Key: k, Resp: reply(fmt.Sprint("reply ", i)), Time: time.Unix(0, 0)}); err != nil {
			t.Fatal(err)
		}
	}
	// A later reply for the same key replaces the earlier one.
	if err := j.Append(&journal.Record{Key: keys[1], Resp: reply("reply 1 again"), Time: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	check := func(j *journal.Journal, when string) {
		t.Helper()
		for i, k := range keys {
			want := fmt.Sprint("reply ", i)
			if i == 1 {
				want = "reply 1 again"
			}
			rec, ok, err := j.Lookup(k)
			if err != nil || !ok || rec.Resp.Text() != want || rec.Key != k {
				t.Errorf("%s: key %d served %v %v %v, want %q", when, i, rec, ok, err, want)
			}
			if !j.Has(k) {
				t.Errorf("%s: key %d is not indexed", when, i)
			}
		}
		if rec, ok, _ := j.Lookup(absent); ok {
			t.Errorf("%s: a key never written was served %q", when, rec.Resp.Text())
		}
		if j.Has(absent) {
			t.Errorf("%s: a key never written is indexed", when)
		}
		if j.Len() != len(keys) {
			t.Errorf("%s: %d replies indexed, want %d", when, j.Len(), len(keys))
		}
	}
	check(j, "appended")
	j.Close()
	j = openJ(t, path)
	defer j.Close()
	check(j, "reopened")
}

// The index costs tens of bytes per reply, not the reply: at 20,000 replies
// of 2 KB (a 40 MB journal) it grows the heap by well under 200 bytes each.
func TestJournalIndexHoldsNoReplyText(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 40 MB")
	}
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Repeat("a long reply ", 160)
	const n = 20000
	for i := 0; i < n; i++ {
		fmt.Fprintf(f, `{"k":"%s","m":"m","r":{"choices":[{"text":"%s %d","finish_reason":"stop"}]}}`+"\n", key(fmt.Sprint(i)), text, i)
	}
	f.Close()
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	j := openJ(t, path)
	defer j.Close()
	runtime.GC()
	runtime.ReadMemStats(&after)
	per := (int64(after.HeapAlloc) - int64(before.HeapAlloc)) / n
	t.Logf("index: %d bytes per reply of %d", per, len(text))
	if per > 200 {
		t.Errorf("the open journal holds %d bytes per reply of %d bytes", per, len(text))
	}
	if rec, ok, _ := j.Lookup(key("19999")); !ok || !strings.HasSuffix(rec.Resp.Text(), " 19999") {
		t.Error("the last reply is not served")
	}
}

// BenchmarkJournalMillion opens a journal of PROMORAL_JOURNAL_CALLS replies
// (default 1,000,000) of about 500 tokens (2,000 bytes) each, as a re-apply
// of a finished run does, and reports the heap the open journal holds per
// reply (live heap after a collection, before vs after opening), the whole
// heap, and the time to open it; then serves every reply once by its key.
// The file (about 2 GB at the default) is written once before the timer.
//
//	go test ./pipeline/journal -run '^$' -bench JournalMillion -benchtime 1x
func BenchmarkJournalMillion(b *testing.B) {
	b.StopTimer()
	n := 1_000_000
	if v := os.Getenv("PROMORAL_JOURNAL_CALLS"); v != "" {
		if _, err := fmt.Sscan(v, &n); err != nil || n <= 0 {
			b.Fatalf("PROMORAL_JOURNAL_CALLS=%q: want a positive number", v)
		}
	}
	path := filepath.Join(b.TempDir(), "journal.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	text := strings.Repeat("a reply of ordinary length ", 74) // 1,998 bytes
	for i := 0; i < n; i++ {
		fmt.Fprintf(w, `{"k":"%s","m":"m","r":{"choices":[{"text":"%s %d","finish_reason":"stop"}]}}`+"\n", key(fmt.Sprint(i)), text, i)
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	f.Close()
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		start := time.Now()
		j := openJ(b, path)
		opened := time.Since(start)
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		for k := 0; k < n; k++ {
			if rec, ok, err := j.Lookup(key(fmt.Sprint(k))); err != nil || !ok || !strings.HasSuffix(rec.Resp.Text(), fmt.Sprint(" ", k)) {
				b.Fatalf("reply %d not served (%v)", k, err)
			}
		}
		j.Close()
		per := float64(int64(after.HeapAlloc)-int64(before.HeapAlloc)) / float64(n)
		b.Logf("%d replies of %d bytes: open %v, index %.1f bytes per reply, live heap %d MB", n, len(text), opened, per, after.HeapAlloc>>20)
		b.ReportMetric(per, "index-B/reply")
		b.ReportMetric(float64(after.HeapAlloc>>20), "heap-MB")
		b.ReportMetric(opened.Seconds(), "open-s")
	}
}

// Opened from a settled point, a journal reads only what follows it, yet
// serves every reply before it on lookup (a later reply still replacing an
// earlier one for the same key), settles the intents after it, and counts
// the same stats as a journal read whole. A point that is not a line's end
// is not trusted.
func TestJournalOpenedFromASettledPoint(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j := openJ(t, path)
	for i := range 4 {
		j.Append(&journal.Record{Key: key(fmt.Sprint(i)), Model: "m", Resp: reply(fmt.Sprint("old", i))})
	}
	j.Append(&journal.Record{Key: key("f"), Model: "m", Err: "refused"})
	settled := j.Size()
	// After the point: a newer reply for key 1, a new key, an intent left
	// in flight, and a damaged line.
	j.Append(&journal.Record{Key: key("1"), Model: "m", Resp: reply("new1")})
	j.Append(&journal.Record{Key: key("9"), Model: "m", Resp: reply("r9")})
	j.Append(&journal.Record{Key: key("lost"), ID: j.NewAttemptID(), Model: "m", Sent: true})
	j.Close()
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{not json\n")
	f.Close()

	whole := func() journal.Stats {
		ro, err := journal.OpenReadOnly(path)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		return ro.Stats()
	}()
	j, err := journal.OpenFrom(path, false, func() int64 { return settled })
	if err != nil {
		t.Fatal(err)
	}
	if s := j.Stats(); s.Lost != 1 || s.Replies != 2 || s.Damaged != 1 {
		t.Fatalf("after opening from the point: %+v (want only what follows it)", s)
	}
	if !j.WasLost(key("lost")) {
		t.Error("the intent after the point was not found lost")
	}
	for k, want := range map[string]string{"0": "old0", "1": "new1", "3": "old3", "9": "r9"} {
		rec, ok, err := j.Lookup(key(k))
		if err != nil || !ok || rec.Resp.Text() != want {
			t.Errorf("lookup %s: %v %v %+v, want %q", k, ok, err, rec, want)
		}
	}
	if _, ok, _ := j.Lookup(key("f")); ok {
		t.Error("a failed attempt was served")
	}
	s := j.Stats()
	whole.Lost, s.Lost = 0, 0
	if s.Replies != whole.Replies || s.Failed != whole.Failed || s.Damaged != whole.Damaged {
		t.Errorf("stats after reading the head %+v, journal read whole %+v", s, whole)
	}
	j.Close()

	// A point inside a line: the whole journal is read (the settlement
	// written above is found, nothing is lost any more).
	j, err = journal.OpenFrom(path, false, func() int64 { return settled - 3 })
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	if s := j.Stats(); s.Replies != 6 || s.Lost != 0 || s.Failed != 2 {
		t.Fatalf("from a point inside a line: %+v, want the journal read whole", s)
	}
}

// Valid JSON lines in another form than the journal writes (re-spaced,
// keys reordered, both, a hand-written intent and failure) are read as the
// records they are: served, never dropped without a word and paid again.
func TestJournalReadsHandEditedLines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j := openJ(t, path)
	for i := range 4 {
		if err := j.Append(&journal.Record{Key: key(fmt.Sprint(i)), ID: fmt.Sprint("x.", i), Model: "m", Case: "c", Stage: "ask", Resp: reply(fmt.Sprint("r", i))}); err != nil {
			t.Fatal(err)
		}
	}
	j.Close()
	data, _ := os.ReadFile(path)
	lines := strings.SplitAfter(string(data), "\n")
	respace := func(s string) string {
		return strings.NewReplacer(`":`, `": `, `,"`, `, "`, `{"`, `{ "`).Replace(s)
	}
	reorder := func(s string) string {
		var m map[string]any
		if err := json.Unmarshal([]byte(s), &m); err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(m) // keys sorted: "a", "c", ..., "k" no longer first
		return string(b) + "\n"
	}
	edited := respace(lines[0]) + reorder(lines[1]) + respace(reorder(lines[2])) + lines[3] +
		// a hand-written failure of another request, spaced
		`{"k": "` + key("failed") + `", "m": "m", "e": "HTTP 500"}` + "\n"
	os.WriteFile(path, []byte(edited), 0o644)

	for _, open := range []func() (*journal.Journal, error){
		func() (*journal.Journal, error) { return journal.OpenFrom(path, false, nil) },
		func() (*journal.Journal, error) { return journal.OpenReadOnly(path) },
	} {
		j, err := open()
		if err != nil {
			t.Fatal(err)
		}
		for i := range 4 {
			rec, ok, err := j.Lookup(key(fmt.Sprint(i)))
			if err != nil || !ok || rec.Resp.Choices[0].Text != fmt.Sprint("r", i) {
				t.Errorf("line %d (%s): served %v, %v", i, []string{"re-spaced", "keys reordered", "both", "as written"}[i], ok, err)
			}
			if !j.Has(key(fmt.Sprint(i))) {
				t.Errorf("line %d: Has says no", i)
			}
		}
		if _, ok, _ := j.Lookup(key("failed")); ok {
			t.Error("a failure was served")
		}
		if s := j.Stats(); s.Replies != 4 || s.Failed != 1 || s.Damaged+s.NoReply+s.Unusable != 0 {
			t.Errorf("stats %+v", s)
		}
		if w := j.Warnings(); len(w) != 0 {
			t.Errorf("warnings %q", w)
		}
		var keys []string
		j.Keys(func(k string) { keys = append(keys, k) })
		if len(keys) != 4 {
			t.Errorf("Keys lists %d, want 4", len(keys))
		}
		n := 0
		j.Each(func(*journal.Record) { n++ })
		if n != 4 {
			t.Errorf("Each gives %d replies, want 4", n)
		}
		j.Close()
	}
}
