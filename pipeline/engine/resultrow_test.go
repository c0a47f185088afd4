package engine

import (
	"strings"
	"testing"
	"unsafe"

	"github.com/promoral/promoral/pipeline/dataset"
	"github.com/promoral/promoral/pipeline/spec"
)

// A results row may wait in the sink long after its case: the model and
// strategy it reports, read from a stored item's fields, must not be views
// of that item's buffer (which holds the whole recorded reply), or every
// waiting row keeps its item's buffer live.
func TestResultRowHoldsNoViewOfItsStoredItem(t *testing.T) {
	store, err := dataset.NewStore()
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ref, ok, err := store.Put(map[string]any{"model": "gpt-4.1", "strategy": "zero_shot", "reply": strings.Repeat("Final Answer: Acceptable. ", 40)})
	if err != nil || !ok {
		t.Fatalf("put: %v %v", ok, err)
	}
	if err := store.Flush(); err != nil {
		t.Fatal(err)
	}
	task := &spec.Task{Name: "t", Spec: &spec.TaskSpec{ReportAs: &spec.ReportAs{Model: "model", Strategy: "strategy"}}}
	stored := spec.StoredItem("x1", store, ref)
	item := &stored
	c := &spec.Case{Model: &spec.Model{Name: "recorded"}, Strategy: &spec.Strategy{Name: "rescore"}, Task: task, Item: item}
	e := &Engine{study: &spec.Study{Run: &spec.RunFile{Name: "r"}, ConfigHash: "h"}, subsets: newSubsetNames()}
	fields := item.Values()
	// The item's buffer spans its field strings.
	lo, hi := uintptr(1<<63), uintptr(0)
	for _, v := range fields {
		s := v.(string)
		p := uintptr(unsafe.Pointer(unsafe.StringData(s)))
		lo, hi = min(lo, p), max(hi, p+uintptr(len(s)))
	}
	row := e.resultValues(c, &spec.Result{Done: true, ItemFields: fields})
	for i, col := range e.baseResultColumns() {
		if col.Name != "model" && col.Name != "strategy" {
			continue
		}
		s, _ := row[i].(string)
		if want := fields[col.Name]; s != want {
			t.Fatalf("%s: %q, want the item's %q", col.Name, s, want)
		}
		if p := uintptr(unsafe.Pointer(unsafe.StringData(s))); p >= lo && p < hi {
			t.Errorf("%s %q is a view of the stored item's buffer", col.Name, s)
		}
	}
}
