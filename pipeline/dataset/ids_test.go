package dataset

import (
	"fmt"
	"strings"
	"testing"
)

// Duplicate ids are found whatever their hashes: with every id hashing
// alike, distinct ids still load, and a repeated one is still reported
// with the row of its first use, whether that row was kept, filtered out
// or excluded.
func TestDuplicateIDsWhenHashesCollide(t *testing.T) {
	for name, hash := range map[string]func(string) uint64{
		"real":      idHash,
		"all alike": func(string) uint64 { return 7<<32 | 3 },
		"two tags":  func(s string) uint64 { return uint64(len(s)%2) << 32 },
	} {
		t.Run(name, func(t *testing.T) {
			defer func(h func(string) uint64) { idHash = h }(idHash)
			idHash = hash
			dir := t.TempDir()
			var b strings.Builder
			for i := range 300 {
				fmt.Fprintf(&b, "{\"id\": \"x%d\", \"n\": %d}\n", i, i)
			}
			writeFile(t, dir, "ok.jsonl", []byte(b.String()))
			items, err := Load(&Spec{Path: "ok.jsonl", ID: "id", Filter: "n % 3 != 1"}, dir)
			if err != nil {
				t.Fatalf("distinct ids: %v", err)
			}
			if len(items) != 200 || items[199].ID != "x299" {
				t.Fatalf("%d items, the last %q; want 200, x299", len(items), items[len(items)-1].ID)
			}
			// x1 and x250 were filtered out, x0 and x251 kept; row i+1 is xi.
			for _, dup := range []int{0, 1, 250, 251} {
				data := b.String() + fmt.Sprintf("{\"id\": \"x%d\", \"n\": 0}\n", dup)
				writeFile(t, dir, "dup.jsonl", []byte(data))
				_, err := Load(&Spec{Path: "dup.jsonl", ID: "id", Filter: "n % 3 != 1"}, dir)
				want := fmt.Sprintf(`row 301: id "x%d" is also the id of row %d; ids must be unique`, dup, dup+1)
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("repeat of x%d: %v, want %q", dup, err, want)
				}
			}
		})
	}
}

// Rows go into chunks of rowChunk: a dataset of a few chunks, limited
// inside one, comes out whole and in order, handed to Each one by one or
// returned together, in memory or spilled.
func TestRowsAcrossChunks(t *testing.T) {
	dir := t.TempDir()
	var b strings.Builder
	total := 2*rowChunk + 5
	for i := range total {
		fmt.Fprintf(&b, "{\"id\": %d, \"t\": \"%s\"}\n", i, strings.Repeat("w", i%7))
	}
	writeFile(t, dir, "big.jsonl", []byte(b.String()))
	defer func(v int64) { SpillAbove = v }(SpillAbove)
	for _, limit := range []int{0, rowChunk + 3} {
		for _, spill := range []bool{false, true} {
			SpillAbove = 1 << 40
			var st *Store
			if spill {
				SpillAbove = 1000
				st, _ = NewStore()
			}
			spec := &Spec{Path: "big.jsonl", ID: "id", Limit: limit}
			want := total
			if limit > 0 {
				want = limit
			}
			items, err := LoadWith(spec, dir, Options{Store: st})
			if err != nil {
				t.Fatal(err)
			}
			var each []Item
			_, err = LoadWith(spec, dir, Options{Store: st, Each: func(i, n int, it Item) {
				if i != len(each) || n != want {
					t.Fatalf("Each(%d, %d), want (%d, %d)", i, n, len(each), want)
				}
				each = append(each, it)
			}})
			if err != nil {
				t.Fatal(err)
			}
			for _, got := range [][]Item{items, each} {
				if len(got) != want {
					t.Fatalf("limit %d, spill %v: %d items, want %d", limit, spill, len(got), want)
				}
				for i, it := range got {
					f := it.Fields
					if !it.Ref.IsZero() {
						if f, err = st.Get(it.Ref); err != nil {
							t.Fatal(err)
						}
					}
					if it.ID != fmt.Sprint(i) || it.Row != i+1 || f["t"] != strings.Repeat("w", i%7) {
						t.Fatalf("limit %d, spill %v: item %d is %s, row %d, %v", limit, spill, i, it.ID, it.Row, f)
					}
				}
			}
		}
	}
}
