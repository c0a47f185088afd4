package spec

import (
	"reflect"
	"strconv"
	"testing"

	"github.com/promoral/promoral/pipeline/llm"
)

// limits.max_reply_bytes is bounded by what a journal line can hold: the
// field's max (which validation enforces and the docs print) is
// llm.MaxReplyBytesLimit, the bound the journal sizes its lines by.
func TestMaxReplyBytesBoundIsTheJournalBound(t *testing.T) {
	f, ok := reflect.TypeOf(Limits{}).FieldByName("MaxReplyBytes")
	if !ok {
		t.Fatal("Limits has no MaxReplyBytes")
	}
	got, err := strconv.ParseInt(f.Tag.Get("max"), 10, 64)
	if err != nil {
		t.Fatalf("max tag %q: %v", f.Tag.Get("max"), err)
	}
	if got != llm.MaxReplyBytesLimit {
		t.Fatalf("max_reply_bytes max is %d, want llm.MaxReplyBytesLimit = %d", got, llm.MaxReplyBytesLimit)
	}
}
