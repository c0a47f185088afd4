package batch

import (
	"os"
	"path/filepath"
	"testing"
)

// A process killed mid-write leaves a torn last line: reading ignores it,
// and the next append cuts it off first so the record stays one entry per
// line.
func TestFileToleratesATornTail(t *testing.T) {
	dir := t.TempDir()
	f := NewFile(dir)
	if err := f.Append(&Entry{T: EntrySubmit, Batch: "pma", Model: "m", Lines: []LineRec{{ID: "pma-0", Key: "k0"}}}); err != nil {
		t.Fatal(err)
	}
	fd, _ := os.OpenFile(filepath.Join(dir, FileName), os.O_APPEND|os.O_WRONLY, 0)
	fd.WriteString(`{"t":"created","batch":"pma","id":"bat`)
	fd.Close()
	jobs, err := f.Read()
	if err != nil || len(jobs) != 1 || jobs[0].Status != StatusSubmitting {
		t.Fatalf("read with a torn tail: %v %+v", err, jobs)
	}
	f2 := NewFile(dir) // a new process
	if err := f2.Append(&Entry{T: EntryCreated, Batch: "pma", ID: "batch_1"}); err != nil {
		t.Fatal(err)
	}
	jobs, err = f2.Read()
	if err != nil || len(jobs) != 1 || jobs[0].Status != StatusInFlight || jobs[0].ID != "batch_1" || !jobs[0].Open() {
		t.Fatalf("after append: %v %+v", err, jobs)
	}
	if k := f2.Known(); !k["batch_1"] || len(k) != 1 {
		t.Errorf("known ids %v", k)
	}
	f2.Append(&Entry{T: EntryEnded, Batch: "pma", State: "completed", OK: 1})
	jobs, _ = f2.Read()
	if jobs[0].Open() || jobs[0].State != "completed" || jobs[0].OK != 1 {
		t.Errorf("ended job: %+v", jobs[0])
	}
	// A damaged line in the middle is an error, not silently skipped.
	os.WriteFile(filepath.Join(dir, FileName), []byte("{\"t\":\"submit\"}\nnot json\n{}\n"), 0o644)
	if _, err := NewFile(dir).Read(); err == nil {
		t.Error("a damaged entry was accepted")
	}
}
