package journal

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/promoral/promoral/pipeline/llm"
)

// A write that fails fails the Append whose line it carried, and every
// later one: a paid reply is never reported journaled when it is not.
func TestJournalFailedWriteFailsThisAndLaterAppends(t *testing.T) {
	j, err := OpenFrom(filepath.Join(t.TempDir(), "journal.jsonl"), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := func(id string) *Record {
		return &Record{Key: strings.Repeat(id, 64), Model: "m",
			Resp: &llm.Response{Choices: []llm.Choice{{Text: "r" + id, FinishReason: llm.FinishStop}}}}
	}
	if err := j.Append(rec("a")); err != nil {
		t.Fatal(err)
	}
	j.f.Close() // the disk goes away under the journal
	for _, id := range []string{"b", "c"} {
		if err := j.Append(rec(id)); err == nil || !strings.Contains(err.Error(), "writing the journal") {
			t.Fatalf("append %s after the failure: %v", id, err)
		}
	}
	if n := j.Len(); n != 1 {
		t.Errorf("%d replies indexed, want only the one written before the failure", n)
	}
}
