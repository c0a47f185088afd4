package journal_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/promoral/promoral/pipeline/journal"
)

// Appends from many goroutines at once go out in shared writes (group
// commit); every line must still land whole, once, and be served by its own
// key, both from the index built as lines were written and after reopening.
func TestJournalConcurrentAppendsEachLandWhole(t *testing.T) {
	path := filepath.Join(t.TempDir(), "journal.jsonl")
	j := openJ(t, path)
	const workers, each = 32, 150
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := fmt.Sprint(w, "/", i)
				// Intents (not indexed) interleave with replies.
				if err := j.Append(&journal.Record{Key: key(id), Model: "m", Sent: true, ID: id, Attempt: 1}); err != nil {
					errs <- err
					return
				}
				if err := j.Append(&journal.Record{Key: key(id), Model: "m", ID: id, Attempt: 1, Resp: reply("reply " + id)}); err != nil {
					errs <- err
					return
				}
				if rec, ok, err := j.Lookup(key(id)); err != nil || !ok || rec.Resp.Text() != "reply "+id {
					errs <- fmt.Errorf("%s right after its append: %v %v", id, ok, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if j.Len() != workers*each {
		t.Fatalf("%d replies indexed, want %d", j.Len(), workers*each)
	}
	size := j.Size()
	if err := j.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var lines, bytes int
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		lines++
		bytes += len(sc.Bytes()) + 1
	}
	f.Close()
	if lines != 2*workers*each || int64(bytes) != size {
		t.Fatalf("%d lines, %d bytes on disk; want %d lines and the journal's size %d", lines, bytes, 2*workers*each, size)
	}
	j = openJ(t, path)
	defer j.Close()
	if s := j.Stats(); s.Damaged != 0 || s.Replies != workers*each {
		t.Fatalf("reopened: %+v", s)
	}
	for w := range workers {
		for i := range each {
			id := fmt.Sprint(w, "/", i)
			if rec, ok, err := j.Lookup(key(id)); err != nil || !ok || rec.Resp.Text() != "reply "+id {
				t.Fatalf("%s after reopening: %v %v", id, ok, err)
			}
		}
	}
}
