package parquetio

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
)

// Rows written into buffers taken ahead at the last row group's size,
// over many row groups of varying widths (some wider than expected, some
// ending by their bytes), read back exactly as written.
func TestParquetRowsReadBackAcrossReservedRowGroups(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.parquet")
	w, err := Create(path, []Column{{"s", ColString, false}, {"d", ColString, true}, {"n", ColInt, false}, {"f", ColFloat, false}, {"b", ColBool, false}})
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	type row struct {
		s any
		d string
		n int64
		f any
		b bool
	}
	var rows []row
	for i := 0; i < 4*RowBatch+17; i++ {
		width := r.IntN(200)
		if i > 2*RowBatch {
			width *= 3 // wider than the row groups before
		}
		x := row{s: strings.Repeat(fmt.Sprint(i%10), width), d: fmt.Sprint("m", i%3), n: int64(i), f: float64(i) / 3, b: i%2 == 0}
		if i%7 == 0 {
			x.s, x.f = nil, nil
		}
		if i%1000 == 5 {
			x.s = strings.Repeat("wide ", 2<<20/5) // ends a row group by its bytes
		}
		rows = append(rows, x)
		if err := w.Append(x.s, x.d, x.n, x.f, x.b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(rows) {
		t.Fatalf("%d rows read, %d written", len(got), len(rows))
	}
	for i, g := range got {
		x := rows[i]
		if g["s"] != x.s || g["d"] != x.d || g["n"] != x.n || g["f"] != x.f || g["b"] != x.b {
			t.Fatalf("row %d: read %v, wrote %+v", i, g, x)
		}
	}
}

// Text past the buffer taken at the last row group's size grows it by
// about a quarter, never to twice what it holds (arrow's builder would go
// to the next power of two): a row group whose text moved from one column
// to another.
func TestParquetTextGrowsByAQuarter(t *testing.T) {
	w, err := Create(filepath.Join(t.TempDir(), "x.parquet"), []Column{{"a", ColString, false}, {"b", ColString, false}})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Abort()
	wide, narrow := strings.Repeat("x", 1000), "y"
	for w.Rows() < 4300 { // past parquetBatchBytes: the first row group, wide in a
		if err := w.Append(wide, narrow); err != nil {
			t.Fatal(err)
		}
	}
	b := w.rb.Field(1).(*array.StringBuilder)
	for i := 0; i < 3000; i++ { // wide in b, whose buffer was taken narrow
		if err := w.Append(narrow, wide); err != nil {
			t.Fatal(err)
		}
		if n, c := b.DataLen(), b.DataCap(); n > 64<<10 && c > n+n/4+len(wide)+64 {
			t.Fatalf("row %d of the second row group: %d bytes of text in a %d-byte buffer", i, n, c)
		}
	}
}
