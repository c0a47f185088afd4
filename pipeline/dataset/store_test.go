package dataset

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// A dataset moved to the store reads back exactly as the one kept in
// memory: the same items, ids and rows, and fields of the same Go types
// (int apart from float64, []string apart from []any), through limit,
// sample, expansion and shuffling.
func TestSpilledItemsReadBackAsLoaded(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	for i := 0; i < 60; i++ {
		fmt.Fprintf(&b, `{"id":"r%02d","text":"scenario %d","gold":%d,"score":%g,"whole":2.0,"opts":["x%d","y","z"],"nested":{"k":[1,2.5,null,true]},"alt":"edited %d"}`+"\n",
			i, i, i%2, float64(i)/3, i, i)
	}
	writeFile(t, dir, "d.jsonl", []byte(b.String()))
	specs := map[string]Spec{
		"plain":   {Path: "d.jsonl", ID: "id"},
		"limit":   {Path: "d.jsonl", ID: "id", Limit: 40, Filter: "gold == 1 || score > 5"},
		"sample":  {Path: "d.jsonl", ID: "id", Sample: &Sample{N: 25, Seed: 3}},
		"shuffle": {Path: "d.jsonl", ID: "id", Shuffle: &Shuffle{List: "opts", Seed: 4}},
		"expand": {Path: "d.jsonl", ID: "id", Expand: &Expand{Link: "pair", Variants: []Variant{
			{Name: "orig", Fields: map[string]string{"text": "text"}}, {Name: "edit", Fields: map[string]string{"text": "alt"}}}}},
	}
	defer func(v int64) { SpillAbove = v }(SpillAbove)
	for name, spec := range specs {
		SpillAbove = 1 << 40
		want, err := LoadWith(&spec, dir, Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		st, err := NewStore()
		if err != nil {
			t.Fatal(err)
		}
		SpillAbove = 500 // a few rows in memory, then the store
		got, err := LoadWith(&spec, dir, Options{Store: st})
		if err != nil {
			t.Fatalf("%s (spilled): %v", name, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d items spilled, %d in memory", name, len(got), len(want))
		}
		spilled := 0
		for i := range got {
			g := got[i]
			if !g.Ref.IsZero() {
				spilled++
				if g.Fields != nil {
					t.Errorf("%s: item %s is spilled and in memory", name, g.ID)
				}
				if g.Fields, err = st.Get(g.Ref); err != nil {
					t.Fatal(err)
				}
			}
			if g.ID != want[i].ID || g.Row != want[i].Row || !reflect.DeepEqual(g.Fields, want[i].Fields) {
				t.Errorf("%s: item %d reads back as %s/%d %#v, loaded as %s/%d %#v", name, i, g.ID, g.Row, g.Fields, want[i].ID, want[i].Row, want[i].Fields)
			}
		}
		if spilled == 0 {
			t.Errorf("%s: nothing went to the store", name)
		}
		st.Close()
	}
}

func TestStoreRefusesWhatItCannotKeepExactly(t *testing.T) {
	st, err := NewStore()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, ok, err := st.Put(map[string]any{"when": struct{}{}}); ok || err != nil {
		t.Errorf("an unknown type was stored (ok %v, err %v); the item must stay in memory", ok, err)
	}
	if _, err := st.Get(makeRef(0, 3)); err == nil {
		t.Error("reading past the file's end gave no error")
	}
	// A Ref holds a length of 24 bits: a larger item stays in memory,
	// and the items after it are stored as before.
	if _, ok, err := st.Put(map[string]any{"t": strings.Repeat("x", refMaxLen)}); ok || err != nil {
		t.Errorf("an item of more than %d bytes was stored (ok %v, err %v)", refMaxLen, ok, err)
	}
	small := map[string]any{"t": strings.Repeat("y", 1000)}
	r, ok, err := st.Put(small)
	if !ok || err != nil {
		t.Fatalf("a small item after a large one: ok %v, err %v", ok, err)
	}
	if got, err := st.Get(r); err != nil || !reflect.DeepEqual(got, small) {
		t.Errorf("the small item reads back as %v (%v)", got, err)
	}
}

// Puts are gathered and written a chunk at a time: an item reads back the
// same whether its chunk was written yet or not, read between puts or
// after a flush.
func TestStoreReadsBackGatheredPuts(t *testing.T) {
	st, err := NewStore()
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	long := strings.Repeat("words of a scenario ", 40)
	var refs []Ref
	var want []map[string]any
	check := func(i int) {
		t.Helper()
		got, err := st.Get(refs[i])
		if err != nil {
			t.Fatalf("item %d: %v", i, err)
		}
		if !reflect.DeepEqual(got, want[i]) {
			t.Fatalf("item %d reads back as %#v, was %#v", i, got, want[i])
		}
	}
	for i := 0; i < 5000; i++ { // several chunks
		f := map[string]any{"id": fmt.Sprint(i), "text": long[:i%len(long)], "n": i, "x": float64(i) / 7}
		ref, ok, err := st.Put(f)
		if err != nil || !ok {
			t.Fatalf("put %d: ok %v, %v", i, ok, err)
		}
		refs, want = append(refs, ref), append(want, f)
		if i%997 == 0 {
			check(i) // the last put, still gathered
			check(i / 2)
		}
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	for i := range refs {
		check(i)
	}
}

// Flush ends a load: what Put gathered is written and the gathering buffer
// (a megabyte once items pass storeChunk) is not kept for the rest of the
// process; items read back, and a later load gathers anew.
func TestStoreKeepsNoBufferAfterFlush(t *testing.T) {
	s, err := NewStore()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var refs []Ref
	put := func(i int) {
		r, ok, err := s.Put(map[string]any{"id": fmt.Sprint(i), "reply": strings.Repeat("x", 3000)})
		if err != nil || !ok {
			t.Fatalf("put %d: %v %v", i, ok, err)
		}
		refs = append(refs, r)
	}
	for i := 0; i < 500; i++ { // 1.5 MB: past one chunk
		put(i)
	}
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if c := cap(s.pending); c != 0 {
		t.Fatalf("after Flush the store keeps a %d-byte buffer", c)
	}
	put(500)
	for i, r := range refs {
		m, err := s.Get(r)
		if err != nil || m["id"] != fmt.Sprint(i) {
			t.Fatalf("item %d reads back as %v (%v)", i, m["id"], err)
		}
	}
}
