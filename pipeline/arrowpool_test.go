package pipeline

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"
)

// Reused buffers come back zeroed, a growth keeps what was written, and
// what is not one of the pool's sizes is left to the collector.
func TestBufferPoolHandsOutZeroedMemory(t *testing.T) {
	p := &bufferPool{}
	b := p.Allocate(100)
	if len(b) != 100 || cap(b) != 128 {
		t.Fatalf("len %d cap %d, want 100 and 128", len(b), cap(b))
	}
	for i := range b {
		b[i] = 0xAB
	}
	p.Free(b)
	c := p.Allocate(120)
	if &c[0] != &b[0] {
		t.Fatal("a freed buffer of the same class was not reused")
	}
	for i, x := range c {
		if x != 0 {
			t.Fatalf("byte %d of a reused buffer is %x, not zero", i, x)
		}
	}
	for i := range c {
		c[i] = byte(i)
	}
	c = p.Reallocate(128, c[:100])
	for i := 100; i < 128; i++ {
		if c[i] != 0 {
			t.Fatalf("byte %d after growing in place is %x, not zero", i, c[i])
		}
	}
	d := p.Reallocate(1000, c)
	for i := 0; i < 100; i++ {
		if d[i] != byte(i) {
			t.Fatalf("byte %d lost in a growth: %d", i, d[i])
		}
	}
	for i := 128; i < 1000; i++ {
		if d[i] != 0 {
			t.Fatalf("byte %d of a grown buffer is %x", i, d[i])
		}
	}
	p.Free(make([]byte, 100)) // not a pool size: ignored
	if p.held != 128 {
		t.Fatalf("the pool holds %d bytes, want the one 128-byte buffer Reallocate freed", p.held)
	}
	for i := 0; i < 2*poolHeld/(1<<20); i++ {
		p.Free(make([]byte, 1<<20))
	}
	if p.held > poolHeld {
		t.Fatalf("the pool holds %d bytes, over its bound %d", p.held, poolHeld)
	}
}

// Rows written through the pooled builders, over many row groups of
// varying widths, read back exactly as written.
func TestParquetThroughThePoolReadsBack(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.parquet")
	w, err := CreateParquet(path, []Column{{"s", ColString, false}, {"d", ColString, true}, {"n", ColInt, false}, {"f", ColFloat, false}, {"b", ColBool, false}})
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
	for i := 0; i < 3*parquetBatch+17; i++ {
		x := row{s: strings.Repeat(fmt.Sprint(i), r.IntN(200)), d: fmt.Sprint("m", i%3), n: int64(i), f: float64(i) / 3, b: i%2 == 0}
		if i%7 == 0 {
			x.s, x.f = nil, nil
		}
		if i%1000 == 5 {
			x.s = strings.Repeat("wide ", 2<<20/5) // a row that ends a row group by its bytes
		}
		rows = append(rows, x)
		if err := w.Append(x.s, x.d, x.n, x.f, x.b); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Commit(); err != nil {
		t.Fatal(err)
	}
	got, err := ReadParquet(path)
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
